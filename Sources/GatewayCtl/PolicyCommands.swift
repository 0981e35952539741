import Arguments
import DoorCore
import GatewayConfig
import GatewayControl
import Glibc

/// `gatewayctl policy …` (docs/policy.md).
struct PolicyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy", abstract: "Schedules and guest passes: explain a decision.",
        subcommands: [Explain.self])

    struct Explain: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "explain",
            abstract: "Would a sticker for the action (and this tag) open at TIME, and why.",
            discussion: """
                TIME is RFC 3339 with an offset or Z (2026-03-30T06:30:00Z), or a local time without \
                one (2026-03-29T02:30), read in the door's zone (clock.time_zone, else /etc/localtime). \
                A local time the clocks skip is an error; one they repeat is read as the first. \
                With --config FILE the configuration is read offline (no daemon; the tag's registry row \
                is not consulted); otherwise the daemon answers with its registry. \
                JSON: allowed (boolean), reason (the denial reason or granted), and the schedules with \
                their next change.
                """)
        @OptionGroup var socket: SocketOptions
        @Option(help: "Action index.") var action: Int
        @Option(help: "The tag's UID (hex): its schedule, guest window and uses count too.") var tag: String?
        @Option(help: "RFC 3339 time, or a local YYYY-MM-DDTHH:MM[:SS].") var at: String
        @Option(help: "Read this configuration offline instead of asking the daemon.") var config: String?
        @Option(help: "At this reader of [[readers]]: its side and the tag's passage (anti-passback).")
        var reader: String?

        /// Offline, `--reader` gives the side only: who is in is the daemon's store.
        func offlinePassage(_ configuration: GatewayConfiguration) throws -> PassageFacts? {
            guard let reader else { return nil }
            guard let side = configuration.passageSide(reader: reader) else {
                throw ValidationError("\"\(reader)\" is no reader of a door with an entry and an exit reader")
            }
            return PassageFacts(side: side, last: nil)
        }

        func validate() throws {
            if let tag, TagUID(hex: tag) == nil { throw ValidationError("--tag must be 4, 7 or 10 bytes of hex") }
        }

        func run() throws {
            guard let config else {
                try socket.call(
                    .policyExplain,
                    [("action", .int(action)), ("at", .string(at))] + (tag.map { [("uid", .string($0))] } ?? [])
                        + (reader.map { [("reader", .string($0))] } ?? []),
                    render: PolicyExplain.render)
                return
            }
            let configuration = try ConfigOptions.load(file: config, environment: nil)
            let result: JSONValue
            do {
                let zone = try Zones.load(configuration.timeZone)
                let (unix, note) = try Zones.parseTime(at, zone: zone)
                result = try PolicyExplain.explain(
                    configuration: configuration, zone: zone, action: action,
                    tag: tag.flatMap(TagUID.init(hex:)).map { ($0, nil) }, at: unix, note: note,
                    registryConsulted: false, passage: try offlinePassage(configuration))
            } catch {
                printError("gatewayctl: \(error)\n")
                throw ExitCode(1)
            }
            print(socket.json ? result.serialized : PolicyExplain.render(result))
        }
    }
}

/// `gatewayctl tags issue`: arm provisioning for a tag with limits — a
/// guest pass (`--guest`, `--uses`, `--from`, `--until`) or a schedule.
struct TagsIssue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "issue",
        abstract: "Arm provisioning for the next sticker, with a guest pass's or a schedule's limits.",
        discussion: """
            A guest pass (--guest) opens at most --uses times (default 1) between --from and --until; \
            each use is counted on disk before the door opens, so a power cut never gives one back. \
            --schedule NAME holds the tag to a [[schedules]] window. Times: YYYY-MM-DD, \
            YYYY-MM-DDTHH:MM[:SS]Z (UTC) or Unix seconds.
            """)
    @OptionGroup var socket: SocketOptions
    @Option(help: "Action index.") var action: Int
    @Option(help: "Label stored in the registry.") var label = ""
    @Flag(help: "A guest pass: limited uses (default 1).") var guest = false
    @Option(help: "How many opens (1…100000).") var uses: Int?
    @Option(help: "Valid from (UTC).") var from: String?
    @Option(help: "Valid until (UTC).") var until: String?
    @Option(help: "A [[schedules]] name the tag is held to.") var schedule: String?
    @Flag(help: "Password-protect writes (NTAG PWD/PACK derived from the device key).") var protect = false
    @Flag(help: "Overwrite a foreign tag.") var overwrite = false

    func validate() throws { try Self.validateLimits(uses: uses, from: from, until: until) }

    static func validateLimits(uses: Int?, from: String?, until: String?) throws {
        if let uses, !(1...100_000).contains(uses) { throw ValidationError("--uses must be 1…100000") }
        if let from, parseUTCDate(from) == nil { throw ValidationError("--from: give YYYY-MM-DD, …Z or Unix seconds") }
        if let until, parseUTCDate(until) == nil {
            throw ValidationError("--until: give YYYY-MM-DD, …Z or Unix seconds")
        }
        if let f = from.flatMap(parseUTCDate), let u = until.flatMap(parseUTCDate), u <= f {
            throw ValidationError("--until must be after --from")
        }
    }

    func run() throws {
        try socket.call(
            .provision,
            Self.limits(action: action, guest: guest, uses: uses, from: from, until: until, schedule: schedule)
                + [("label", .string(label)), ("protect", .bool(protect)), ("overwrite", .bool(overwrite))])
    }

    static func limits(
        action: Int, guest: Bool, uses: Int?, from: String?, until: String?, schedule: String?
    ) -> [(String, JSONValue)] {
        var p: [(String, JSONValue)] = [("action", .int(action))]
        if let u = uses ?? (guest ? 1 : nil) { p.append(("uses", .int(u))) }
        if let f = from.flatMap(parseUTCDate) { p.append(("valid_from", .int(Int(f)))) }
        if let u = until.flatMap(parseUTCDate) { p.append(("valid_until", .int(Int(u)))) }
        if let schedule { p.append(("schedule", .string(schedule))) }
        return p
    }
}
