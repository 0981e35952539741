import Arguments
import DoorCore
import GatewayControl
import Glibc

/// `gatewayctl otp …`: offline inspection of a phone-style remote command.
struct OTPCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "otp", abstract: "Make and inspect phone-style remote commands.",
        subcommands: [OTPInspect.self, OTPMake.self])
}

struct OTPInspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Decrypt and judge a compat command message (the phone app's otp-auth block), offline.",
        discussion: """
            Exit status: 0 accepted (a command-5 report request counts as accepted), 1 rejected \
            (a {"TT_ID"… device report is not a command: 1).
            """)

    @Argument(help: #"The message, e.g. '{"command": 1, "otp-auth": "…"}'."#)
    var message: String

    @Option(help: "The 16-byte timestamp key as 32 hex digits (throwaway test values only).")
    var key: String?

    @Option(name: .customLong("key-file"), help: "A file holding the timestamp key as 32 hex digits.")
    var keyFile: String?

    @Option(help: "Judge as if the time were this Unix time (default: now).")
    var now: Int64?

    @Option(help: "Freshness window in seconds (at most 30).")
    var tolerance: Int64 = 5

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        guard (key == nil) != (keyFile == nil) else {
            throw ValidationError("give exactly one of --key and --key-file")
        }
        guard (0...CommandJudge.maximumTolerance).contains(tolerance) else {
            throw ValidationError("--tolerance must be 0…\(CommandJudge.maximumTolerance) seconds")
        }
    }

    func run() throws {
        var keyText = key ?? ""
        if let keyFile {
            guard let data = Files.contents(keyFile) else {
                throw ValidationError("cannot read key file \(keyFile)")
            }
            keyText = String(decoding: data, as: UTF8.self).trimmed
        }
        guard keyText.utf8.count == 32, let keyBytes = Hex.decode(keyText) else {
            throw ValidationError("the timestamp key is 32 hex digits")
        }
        let at = now ?? Int64(time(nil))
        var replay = ReplayGuard()
        let verdict = CommandJudge(tolerance: tolerance, deviceID: "offline")
            .judgeCompat(
                payload: Array(message.utf8), retained: false, key: keyBytes,
                now: WallClock(unixSeconds: at, synchronised: true), replay: &replay)
        if json {
            print(
                JSONValue.object([
                    ("command", verdict.command.map { .int($0) } ?? .null),
                    ("target", .optional(verdict.target?.description)),
                    ("timestamp", verdict.timestamp.map { .int($0) } ?? .null),
                    ("time", .optional(verdict.timestamp.map(UTCTime.iso8601))),
                    ("now", .int(at)),
                    ("skew", verdict.skew.map { .int($0) } ?? .null),
                    ("checksum_ok", verdict.checksumOK.map { .bool($0) } ?? .null),
                    ("accepted", .bool(verdict.accepted)),
                    ("reason", .optional(verdict.rejection?.code.rawValue)),
                    ("description", .optional(verdict.rejection?.detail)),
                ]).serialized)
        } else {
            if let c = verdict.command { print("command:   \(c)" + (verdict.target.map { " → \($0)" } ?? "")) }
            if let ts = verdict.timestamp { print("timestamp: \(ts) (\(UTCTime.iso8601(ts)))") }
            print("now:       \(at) (\(UTCTime.iso8601(at)))")
            if let s = verdict.skew { print("skew:      \(s) s (window ±\(tolerance) s)") }
            if let ok = verdict.checksumOK { print("checksum:  \(ok ? "ok" : "bad")") }
            if let r = verdict.rejection {
                print("verdict:   rejected — \(r.code.rawValue): \(r.detail)")
            } else {
                print("verdict:   accepted")
            }
        }
        if !verdict.accepted { throw ExitCode(1) }
    }
}

/// `gatewayctl otp make`: the message the phone app sends for a template with
/// `%T` (docs/formats.md §3), for testing a door from a shell with mosquitto_pub.
struct OTPMake: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "make",
        abstract: "Print a fresh compat command message (as the phone app's %T makes it) with the timestamp key.")

    @Option(name: .customLong("key-file"), help: "A file holding the timestamp key as 32 hex digits.")
    var keyFile: String

    @Option(help: "Command number (1 = open).")
    var command: Int = 1

    @Option(help: "Unix time to put in the block (default: now).")
    var now: Int64?

    func run() throws {
        guard let data = Files.contents(keyFile) else {
            throw ValidationError("cannot read key file \(keyFile)")
        }
        let text = String(decoding: data, as: UTF8.self).filter { !$0.isWhitespace }
        guard text.utf8.count == 32, let key = Hex.decode(text) else {
            throw ValidationError("the timestamp key is 32 hex digits")
        }
        let at = now ?? Int64(time(nil))
        guard let ts = UInt32(exactly: at) else { throw ValidationError("--now must fit in 32 bits") }
        let block = try OTPBlock.make(timestamp: ts, random: try Crypto.randomBytes(11), key: key)
        print(JSONValue.object([("command", .int(command)), ("otp-auth", .string(block))]).serialized)
    }
}
