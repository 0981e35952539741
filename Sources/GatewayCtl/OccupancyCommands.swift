import Arguments
import DoorCore
import GatewayControl
@preconcurrency import Glibc

/// `gatewayctl occupancy` and `gatewayctl passback reset` (issue 36, docs/policy.md "Entry, exit
/// and anti-passback"): who is in at a door with an entry and an exit reader, from the door's own
/// store (no broker, no network: a roll call works with the site offline).
struct OccupancyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "occupancy", abstract: "Who is in (a door with an entry and an exit reader).",
        subcommands: [List.self, Export.self], defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List who is in: label, since when, at which reader.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.occupancy, render: OccupancyCommand.render) }
    }

    enum Format: String, CaseIterable, ExpressibleByArgument { case csv, json }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write the roll call for an evacuation (CSV or JSON) to standard output or --output.",
            discussion: """
                CSV columns: label, uid, since (UTC, RFC 3339), since_local (the door's zone), reader. \
                A label that a spreadsheet would read as a formula (=, +, -, @) is written with a leading '. \
                With --from-store the store is read directly (root, read-only, --config names the file): \
                the roll call still comes when gatewayd is stopped or does not answer.
                """)
        @OptionGroup var socket: SocketOptions
        @OptionGroup var config: ConfigOptions
        @Option(help: "csv or json.") var format: Format = .csv
        @Flag(
            help:
                "Read the door's store itself (as root, read-only) instead of asking gatewayd: when it does not answer."
        )
        var fromStore = false
        @Option(help: "Write to this file (created with mode 0600) instead of standard output.") var output: String?

        func run() throws {
            let answer: JSONValue
            if fromStore {
                let configuration = try config.load()
                do { answer = try OccupancyReport.fromStore(configuration, now: Int64(time(nil))) } catch {
                    fputs(
                        "gatewayctl: occupancy export --from-store reads the door's store itself, as root: \(error)\n",
                        stderr)
                    throw ExitCode(1)
                }
            } else {
                answer = try socket.request(.occupancy)
            }
            let text = format == .csv ? OccupancyCommand.csv(answer) : answer.serialized + "\n"
            guard let output else {
                print(text, terminator: "")
                return
            }
            let fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else {
                fputs("gatewayctl: \(output): \(String(cString: strerror(errno)))\n", stderr)
                throw ExitCode(1)
            }
            defer { close(fd) }
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    fputs("gatewayctl: \(output): \(String(cString: strerror(errno)))\n", stderr)
                    throw ExitCode(1)
                }
                bytes = bytes.dropFirst(n)
            }
            fputs("\(answer["count"]?.intValue ?? 0) in, written to \(output)\n", stderr)
        }
    }

    /// `3 in (at 2026-12-07T15:00:00Z)` then one line per person.
    static func render(_ v: JSONValue) -> String {
        if v["tracked"]?.boolValue == false { return "not counted: \(v["note"]?.stringValue ?? "")" }
        let people = v["people"]?.arrayValue ?? []
        var lines = ["\(v["count"]?.intValue ?? people.count) in (at \(v["at"]?.stringValue ?? "?"))"]
        for p in people {
            let label = p["label"]?.stringValue ?? ""
            lines.append(
                "\(label.isEmpty ? "(no label)" : label)  \(p["uid"]?.stringValue ?? "?")  since \(p["since_local"]?.stringValue ?? "?")  at \(p["reader"]?.stringValue ?? "?")"
            )
        }
        return lines.joined(separator: "\n")
    }

    /// RFC 4180: a field with a comma, a quote or a line break is quoted, quotes doubled.
    static func csv(_ v: JSONValue) -> String {
        func field(_ s: String) -> String {
            var s = s
            if let first = s.first, "=+-@\t\r".contains(first) { s = "'" + s }
            guard s.contains(where: { ",\"\n\r".contains($0) }) else { return s }
            return "\"" + s.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
        }
        var rows = ["label,uid,since,since_local,reader"]
        for p in v["people"]?.arrayValue ?? [] {
            rows.append(
                ["label", "uid", "since", "since_local", "reader"].map { field(p[$0]?.stringValue ?? "") }
                    .joined(separator: ","))
        }
        return rows.map { $0 + "\r\n" }.joined()
    }
}

struct PassbackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passback", abstract: "Anti-passback: let a credential in again.", subcommands: [Reset.self])

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Forget a credential's passage (or everyone's with --all): it counts as out (audited).")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "The tag's UID (hex) or a card number (26:FACILITY:NUMBER).") var uid: String?
        @Flag(help: "Everyone (the door then counts nobody in).") var all = false

        func validate() throws {
            if all == (uid != nil) { throw ValidationError("give a UID or --all") }
        }

        func run() throws {
            try socket.call(.passbackReset, all ? [("all", .bool(true))] : [("uid", .string(uid ?? ""))])
        }
    }
}
