import Arguments
import DoorCore
import GatewayControl
@preconcurrency import Glibc

/// `gatewayctl lockdown start|end|status` (docs/policy.md "Lockdown"), and
/// `fire signal alarm|clear` (the site's fire alarm). With `--site-key` the
/// command is signed here with the site's private key (it never leaves
/// this process) for every door of the site: gatewayd judges it as every
/// door will, applies it, and sends it on the fleet's topic (or key).
struct LockdownCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lockdown",
        abstract: "Lock the door (or, with --site-key, every door of the site): only lockdown_exempt actions open.",
        subcommands: [Start.self, End.self, Status.self])

    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "start",
            abstract: "Start the lockdown: the door locks, its passage schedule stops (audited, survives a restart).")
        @OptionGroup var site: SiteCommandOptions
        func run() throws { try site.run(local: .lockdownStart, signed: .lockdownStart) }
    }

    struct End: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "end", abstract: "End the lockdown (the door stays normal until its schedule's next edge).")
        @OptionGroup var site: SiteCommandOptions
        func run() throws { try site.run(local: .lockdownEnd, signed: .lockdownEnd) }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status", abstract: "Whether a lockdown holds, since when and by whom.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.lockdownStatus) }
    }
}

/// `gatewayctl fire signal alarm|clear --site-key FILE`: the site's fire alarm,
/// signed for every door (docs/policy.md "Fire alarm").
struct FireSignal: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signal",
        abstract:
            "Send the site's fire alarm (alarm) or its end (clear) to every door, signed with the site key; a door's outputs stay released until its own input is clear and `fire reset`."
    )
    @Argument(help: "alarm | clear") var state: String
    @OptionGroup var site: SiteCommandOptions
    func run() throws {
        guard state == "alarm" || state == "clear" else { throw ValidationError("alarm or clear") }
        guard site.siteKey != nil else { throw ValidationError("--site-key is required: the signal is the site's") }
        try site.run(local: nil, signed: state == "alarm" ? .fireAlarm : .fireClear)
    }
}

/// What the lockdown and fire signal commands share: this door, or the site signed.
struct SiteCommandOptions: ParsableArguments {
    @OptionGroup var socket: SocketOptions
    @Option(
        help:
            "The site's private key file (mode 0600; `fleet keygen`): sign the command for every door of the site.")
    var siteKey: String?
    @Option(help: "Who signs it off, recorded at every door (default: the user running gatewayctl).")
    var by: String?
    @OptionGroup var config: ConfigOptions

    func fail(_ text: String) -> ExitCode {
        fputs("gatewayctl: \(text)\n", stderr)
        return ExitCode(1)
    }

    func run(local: ControlMethod?, signed kind: SiteCommandKind) throws {
        guard let siteKey else {
            if let local { try socket.call(local) }
            return
        }
        let seed: [UInt8]
        do { seed = try SiteKeyFile.read(siteKey) } catch { throw fail("\(error)") }
        let configuration = try config.load()
        let fleet = configuration.fleet
        guard fleet.enabled else { throw fail("the fleet is off in \(config.path()) ([fleet] enabled = false)") }
        guard try Crypto.Ed25519.publicKey(seed: seed) == fleet.sitePublicKey else {
            throw fail("site key \(siteKey) is not the private key of [fleet] site_public_key: nothing signed")
        }
        let by = self.by ?? SiteKeyFile.userName()
        guard !by.isEmpty, by.utf8.count <= 64, !by.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw fail("--by: 1…64 bytes, no control characters")
        }
        let command = SiteCommand(
            site: fleet.siteID, kind: kind, by: by, timestamp: Int64(time(nil)),
            nonce: Hex.encode(try Crypto.randomBytes(16)))
        let bytes = try command.signed(seed: seed)
        try socket.call(.siteCommand, [("command", .string(Base64URL.encode(bytes)))])
    }
}
