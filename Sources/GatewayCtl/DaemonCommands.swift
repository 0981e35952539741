import Arguments
import DoorCore
import GatewayConfig
import GatewayControl
import GatewayStore
import TerminalQR
@preconcurrency import Glibc

/// Options every command that talks to the running daemon takes.
struct SocketOptions: ParsableArguments {
    @Option(
        help: "The daemon's control socket (default: $RUNTIME_DIRECTORY/control.sock or /run/doorgateway/control.sock)."
    )
    var socket: String?

    @Flag(help: "Print the daemon's answer as JSON.")
    var json = false

    var path: String { Self.path(socket) }

    /// `--socket`, else the environment's, else the default.
    static func path(_ socket: String?) -> String {
        if let socket { return socket }
        let env = Environment.current
        if let s = env["DOORGATEWAY_SOCKET"], !s.isEmpty { return s }
        if let r = env["RUNTIME_DIRECTORY"]?.split(separator: ":").first { return "\(r)/control.sock" }
        return "/run/doorgateway/control.sock"
    }

    /// One request; its result, or exit 1 with the daemon's error.
    func request(_ method: ControlMethod, _ params: [(String, JSONValue)] = []) throws -> JSONValue {
        do {
            return try ControlClient(path: path).call(method, .object(params))
        } catch {
            fputs("gatewayctl: \(error)\n", stderr)
            throw ExitCode(1)
        }
    }

    /// One request; prints the answer (JSON, or `render` for people).
    func call(
        _ method: ControlMethod, _ params: [(String, JSONValue)] = [], render: (JSONValue) -> String = { $0.pretty }
    )
        throws
    {
        let result = try request(method, params)
        print(json ? result.serialized : render(result))
    }
}

extension JSONValue {
    /// `key: value` lines for people; nested values indented.
    var pretty: String { prettyLines(indent: "").joined(separator: "\n") }

    private func prettyLines(indent: String) -> [String] {
        switch self {
        case .object(let fields):
            return fields.flatMap { key, value -> [String] in
                switch value {
                case .object(let inner) where !inner.isEmpty:
                    return ["\(indent)\(key):"] + value.prettyLines(indent: indent + "  ")
                case .array(let items) where !items.isEmpty:
                    return ["\(indent)\(key):"] + value.prettyLines(indent: indent + "  ")
                default: return ["\(indent)\(key): \(value.scalarText)"]
                }
            }
        case .array(let items):
            return items.flatMap { item -> [String] in
                let lines = item.prettyLines(indent: indent + "  ")
                guard let first = lines.first else { return [] }
                return ["\(indent)- " + first.dropFirst(indent.count + 2)] + lines.dropFirst()
            }
        default: return [indent + scalarText]
        }
    }

    private var scalarText: String {
        switch self {
        case .string(let s): return s
        case .null: return "-"
        case .object, .array: return serialized
        default: return serialized
        }
    }
}

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "State, mode, reader, broker, outbox, clock sync, lockout and the last events."
    )
    @OptionGroup var socket: SocketOptions
    func run() throws { try socket.call(.status) { Self.human($0) } }

    /// For people: the answer without the daemon's internals (`--json` keeps them).
    static func human(_ status: JSONValue) -> String {
        guard case .object(let fields) = status else { return status.pretty }
        return JSONValue.object(fields.filter { !internals.contains($0.0) }).pretty
    }
    static let internals: Set<String> = ["last_unlock_monotonic_ns", "last_event_durable_monotonic_ns"]
}

/// Columns padded to their widest cell, two spaces apart, for people.
enum TextTable {
    static func render(_ header: [String], _ rows: [[String]]) -> [String] {
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
        }
        return ([header] + rows).map { row in
            row.enumerated().map { i, cell in
                i == row.count - 1 ? cell : cell.padded(to: widths[i])
            }.joined(separator: "  ")
        }
    }
}

struct OpenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open", abstract: "Run an action now (admin open; works in lockdown).")
    @OptionGroup var socket: SocketOptions
    @Option(help: "Action index.") var action = 0
    func run() throws { try socket.call(.open, [("action", .int(action))]) }
}

struct ModeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mode", abstract: "Set the door mode: normal, passage or lockdown.")
    @OptionGroup var socket: SocketOptions
    @Argument(help: "normal | passage | lockdown") var mode: String
    func validate() throws {
        guard DoorMode(rawValue: mode) != nil else { throw ValidationError("mode must be normal, passage or lockdown") }
    }
    func run() throws { try socket.call(.mode, [("mode", .string(mode))]) }
}

struct ProvisionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provision",
        abstract: "Arm provisioning: the next blank sticker (or one of ours) is written for the action.",
        subcommands: [Arm.self, Cancel.self, Reset.self], defaultSubcommand: Arm.self)

    struct Arm: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "arm", abstract: "Arm provisioning (the default).")
        @OptionGroup var socket: SocketOptions
        @Option(help: "Action index.") var action: Int
        @Option(help: "Label stored in the registry.") var label = ""
        @Flag(help: "Password-protect writes (NTAG PWD/PACK derived from the device key).") var protect = false
        @Flag(help: "Overwrite a foreign tag.") var overwrite = false
        @Flag(help: "A guest pass: limited uses (default 1; docs/policy.md).") var guest = false
        @Option(help: "How many opens (1…100000).") var uses: Int?
        @Option(help: "Valid from: YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds.") var from: String?
        @Option(help: "Valid until: YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds.") var until: String?
        @Option(help: "A [[schedules]] name the tag is held to.") var schedule: String?
        @Option(
            help:
                "Re-issue the NTAG 424 DNA with this UID (hex) that the registry already holds: new keys, its row replaced; any other tag is refused."
        ) var reissue: String?
        func validate() throws {
            try TagsIssue.validateLimits(uses: uses, from: from, until: until)
            if let reissue, TagUID(hex: reissue) == nil {
                throw ValidationError("--reissue: a UID in hex (4, 7 or 10 bytes)")
            }
        }
        func run() throws {
            try socket.call(
                .provision,
                TagsIssue.limits(action: action, guest: guest, uses: uses, from: from, until: until, schedule: schedule)
                    + [("label", .string(label)), ("protect", .bool(protect)), ("overwrite", .bool(overwrite))]
                    + (reissue.map { [("reissue", JSONValue.string($0))] } ?? []))
        }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Disarm provisioning.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.provisionCancel) }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Return the NTAG 424 DNA on the reader (one of this site's) to factory keys; its row is marked.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.provisionReset) }
    }
}

struct LockoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lockout", abstract: "Lockout after repeated bad stickers.",
        subcommands: [Status.self, Clear.self])
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status", abstract: "Locked-out UIDs and the global lockout.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.lockoutStatus) }
    }
    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "clear", abstract: "End every lockout now.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.lockoutClear) }
    }
}

struct FeedbackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedback", abstract: "Feedback patterns on the LEDs and buzzer.", subcommands: [Play.self])
    struct Play: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "play", abstract: "Play a pattern (granted, denied, …).")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Pattern name.") var pattern: String
        func run() throws { try socket.call(.feedbackPlay, [("pattern", .string(pattern))]) }
    }
}

struct SecretsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secrets", abstract: "Sticker secrets (per action; generated or imported).",
        subcommands: [List.self, New.self, Rotate.self, Remove.self, Import.self, Export.self])
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List secrets (never their keys).")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.secretsList) }
    }
    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new", abstract: "Generate a secret for an action.")
        @OptionGroup var socket: SocketOptions
        @Option(help: "Action index.") var action: Int
        @Option(help: "Label.") var label = ""
        func run() throws { try socket.call(.secretsNew, [("action", .int(action)), ("label", .string(label))]) }
    }
    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate",
            abstract:
                "Generate a new secret that signs from now on; old stickers stay valid until their secret is removed.")
        @OptionGroup var socket: SocketOptions
        @Option(help: "Action index.") var action: Int
        func run() throws { try socket.call(.secretsRotate, [("action", .int(action))]) }
    }
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove a secret: its stickers stop opening.",
            discussion: """
                The secret stays listed, inactive, as history; its key's tombstone (a SHA-256) is \
                kept, so it cannot be imported again, and the next fleet push carries the removal: \
                every door deactivates it, and no door's push brings it back.
                """)
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Secret id.") var id: Int
        func run() throws { try socket.call(.secretsRemove, [("id", .int(id))]) }
    }
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import an smpshare:// link (the phone app's share link) read from standard input.")
        @OptionGroup var socket: SocketOptions
        func run() throws {
            guard let line = readLine(strippingNewline: true)?.filter({ !$0.isWhitespace }), !line.isEmpty else {
                throw ValidationError("give the smpshare:// link on standard input")
            }
            try socket.call(.secretsImport, [("link", .string(line))])
        }
    }
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Print a secret's smpshare:// link for the phone app (optionally as a QR code).",
            discussion: """
                An imported secret exports as is. A secret this gateway generated exports only with \
                --allow-v1: the link cannot carry its origin, so whoever imports it accepts v1 stickers \
                signed with it.
                """)
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Secret id.") var id: Int
        @Flag(help: "Draw the link as a QR code in the terminal.") var qr = false
        @Flag(help: "Export a gateway-generated secret anyway. \(ShareLinkWarning.generated)")
        var allowV1 = false
        func run() throws {
            let answer = try socket.request(.secretsExport, [("id", .int(id)), ("allow_v1", .bool(allowV1))])
            if let warning = answer["warning"]?.stringValue { printError("gatewayctl: warning: \(warning)\n") }
            if socket.json { return print(answer.serialized) }
            let link = answer["link"]?.stringValue ?? ""
            print(qr ? (terminalQR(link) ?? link) + "\n" + link : link)
        }
    }
}

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Remote-command keys: otp (the phone app's timestamp key) and command (the native command key).",
        discussion: """
            gatewayctl keys otp|command new|import|export [--qr]; import reads the key (hex) from standard \
            input. The command key held (and shared by the fleet) is the site's; `keys command export` \
            prints the key of one door derived from it (this door, or --device ID), which makes native \
            commands for that door only. The otp key is this door's own (the phone's OTP blocks \
            name no door); `fleet push` shares it only with --share-otp-key.
            """)
    @OptionGroup var socket: SocketOptions
    @Argument(help: "otp | command") var name: String
    @Argument(help: "new | import | export") var verb: String
    @Flag(help: "Draw an exported key as a QR code.") var qr = false
    @Option(help: "With `command export`: the device id of the door whose key to print (default: this door).")
    var device: String?

    func validate() throws {
        guard ["otp", "command"].contains(name) else { throw ValidationError("key name must be otp or command") }
        guard ["new", "import", "export"].contains(verb) else {
            throw ValidationError("verb must be new, import or export")
        }
        if device != nil, name != "command" || verb != "export" {
            throw ValidationError("--device goes with `keys command export` only")
        }
    }

    func run() throws {
        var params: [(String, JSONValue)] = [("name", .string(name))]
        if let device { params.append(("device", .string(device))) }
        if verb == "import" {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw ValidationError("give the key as hex on standard input")
            }
            params.append(("key", .string(line)))
        }
        let method: ControlMethod = verb == "new" ? .keysNew : verb == "import" ? .keysImport : .keysExport
        try socket.call(method, params) { answer in
            guard verb == "export", let key = answer["key"]?.stringValue else { return answer.pretty }
            return qr ? (terminalQR(key) ?? key) + "\n" + key : key
        }
    }
}

struct SimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim", abstract: "Drive the simulated board and pn532-sim (board.kind = \"sim\").",
        subcommands: [Tap.self, Remove.self, Reinsert.self, Dump.self, Tear.self, Press.self, Door.self])
    struct Tap: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tap", abstract: "Put an NTAG213 holding URL (or a dump file, or nothing) on the reader.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "The URL the tag holds.") var url: String?
        @Option(help: "A tag dump file (its pages from page 0, 4 bytes each) instead of a URL.") var dump: String?
        @Flag(help: "A blank tag (empty NDEF message).") var blank = false
        @Flag(help: "A factory-fresh NTAG 424 DNA (all keys zero, empty NDEF file).") var ntag424 = false
        @Option(help: "The tag's UID (hex, 7 bytes); random when absent.") var uid: String?
        @Option(help: "The tag leaves after this many exchanges (a torn tap or write).") var tearAfter: Int?
        func validate() throws {
            guard [url != nil, dump != nil, blank, ntag424].filter({ $0 }).count == 1 else {
                throw ValidationError("give one of URL, --dump FILE, --blank and --ntag424")
            }
        }
        func run() throws {
            var params: [(String, JSONValue)] = []
            if let url { params.append(("url", .string(url))) }
            if blank { params.append(("blank", .bool(true))) }
            if ntag424 { params.append(("ntag424", .bool(true))) }
            if let dump {
                guard let data = Files.contents(dump) else {
                    throw ValidationError("cannot read \(dump)")
                }
                params.append(("dump", .string(Hex.encode(Array(data)))))
            }
            if let uid { params.append(("uid", .string(uid))) }
            if let tearAfter { params.append(("tear_after", .int(tearAfter))) }
            try socket.call(.simTap, params)
        }
    }
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Take the tag off the reader.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.simRemove) }
    }
    struct Reinsert: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reinsert", abstract: "Put the last tag back on the reader.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.simReinsert) }
    }
    struct Dump: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "dump", abstract: "Save the tag on the reader as a dump file.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Output file.") var file: String
        func run() throws {
            let answer = try socket.request(.simDump)
            guard let hex = answer["dump"]?.stringValue, let bytes = Hex.decode(hex),
                (try? Files.write(file, bytes)) != nil
            else {
                fputs("gatewayctl: could not write \(file)\n", stderr)
                throw ExitCode(1)
            }
            let result = JSONValue.object([("file", .string(file)), ("bytes", .int(bytes.count))])
            print(socket.json ? result.serialized : "\(bytes.count) bytes to \(file)")
        }
    }
    struct Tear: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tear", abstract: "The tag on the reader leaves after N more exchanges (to test torn writes).")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Exchanges before the tag leaves.") var after: Int
        func run() throws { try socket.call(.simTear, [("after", .int(after))]) }
    }
    struct Press: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "press", abstract: "Press the button (and hold it).")
        @OptionGroup var socket: SocketOptions
        @Option(help: "Seconds to hold.") var hold: Double = 0.1
        @Option(help: "button | request_to_exit") var input: String = "button"
        func run() throws { try socket.call(.simPress, [("hold", .double(hold)), ("input", .string(input))]) }
    }
    struct Door: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "door", abstract: "Set the door contact: open or closed.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "open | closed") var state: String
        func run() throws { try socket.call(.simDoor, [("state", .string(state))]) }
    }
}

struct TagsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tags", abstract: "The issued-tag registry and revocations.",
        subcommands: [
            List.self, TagsIssue.self, Revoke.self, Expire.self, Forget.self, TagsEnrollUID.self, TagsEnrollCard.self,
        ])
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "Issued tags and revocations.")
        @OptionGroup var socket: SocketOptions
        func run() throws {
            try socket.call(.tagsList) { answer in
                let tags = (answer["tags"]?.arrayValue ?? []).map { t in
                    [
                        t["uid"], t["state"], t["action"], t["label"], t["issued"], t["valid_until"],
                        TagsCommand.uses(t), t["schedule"], t["last_seen"], TagsCommand.kind(t),
                    ]
                    .map { v -> String in
                        guard let v, v != .null else { return "-" }
                        let text = v.stringValue ?? v.serialized
                        return text.isEmpty ? "-" : text
                    }
                }
                let revoked = (answer["revocations"]?.arrayValue ?? []).map {
                    "revoked " + ($0["uid"]?.stringValue ?? "signature " + ($0["signature"]?.stringValue ?? "?"))
                }
                let header = [
                    "UID", "STATE", "ACTION", "LABEL", "ISSUED", "VALID-UNTIL", "USES-LEFT", "SCHEDULE", "LAST-SEEN",
                    "KIND",
                ]
                return (TextTable.render(header, tags) + revoked).joined(separator: "\n")
            }
        }
    }
    /// The credential kind, with an NTAG 424's key version (`ntag424 v2`).
    static func kind(_ t: JSONValue) -> JSONValue? {
        guard let kind = t["kind"]?.stringValue else { return nil }
        if let card = t["card"]?.stringValue { return .string("\(kind) \(card)") }
        guard let version = t["key_version"]?.intValue else { return .string(kind) }
        return .string("\(kind) v\(version)")
    }
    /// `2/5` for a guest pass (left of issued), nil otherwise.
    static func uses(_ t: JSONValue) -> JSONValue? {
        guard let left = t["uses_left"]?.intValue else { return nil }
        return .string("\(left)/\(t["uses"]?.intValue ?? left)")
    }
    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke", abstract: "Revoke a tag by UID, or a v1 sticker by its signature.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "The tag's UID (hex).") var uid: String?
        @Option(help: "A v1 sticker's signature (64 hex digits).") var signature: String?
        func validate() throws {
            guard (uid == nil) != (signature == nil) else { throw ValidationError("give a UID or --signature HEX") }
        }
        func run() throws {
            try socket.call(.tagsRevoke, uid.map { [("uid", .string($0))] } ?? [("signature", .string(signature!))])
        }
    }
    struct Expire: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "expire", abstract: "Make an issued tag expire at a date.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "The tag's UID (hex).") var uid: String
        @Option(help: "YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z (UTC) or Unix seconds.") var at: String
        func run() throws {
            guard let time = parseUTCDate(at) else {
                throw ValidationError("--at: give YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds")
            }
            try socket.call(.tagsExpire, [("uid", .string(uid)), ("at", .int(time))])
        }
    }
    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget", abstract: "Remove a UID from the registry and its revocation.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "The tag's UID (hex).") var uid: String
        func run() throws { try socket.call(.tagsForget, [("uid", .string(uid))]) }
    }
}

struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log", abstract: "The audit log: every decision with its reason, hash-chained.")
    @OptionGroup var socket: SocketOptions
    @Option(help: "How many of the newest rows.") var limit = 20
    @Flag(help: "Keep printing new rows.") var follow = false
    @Flag(
        help:
            "Check the chain (exit 1 when broken). With the audit key readable (root), every row's MAC, reading the store directly; otherwise gatewayd checks the links only, and says so."
    ) var verify = false
    @Option(help: "The audit key for --verify (default: /etc/doorgateway/audit.key when readable).")
    var key: String?
    /// The configuration naming the store, for --verify with the key.
    @OptionGroup var config: ConfigOptions

    func run() throws {
        if verify {
            let keyPath = key ?? AuditKeyFile.defaultPath
            if key != nil || access(keyPath, R_OK) == 0 {
                try verifyWithKey(keyPath)
                return
            }
            let client = try connect()
            let answer = try client.call(.logVerify)
            print(socket.json ? answer.serialized : answer.pretty)
            if answer["intact"]?.boolValue != true { throw ExitCode(1) }
            return
        }
        if follow {
            let client = try connect()
            try client.follow(.logFollow, .object([("limit", .int(limit))])) { row in
                print(socket.json ? row.serialized : Self.line(row))
                fflush(stdout)
            }
            return
        }
        try socket.call(.log, [("limit", .int(limit))]) { rows in
            (rows.arrayValue ?? []).map(Self.line).joined(separator: "\n")
        }
    }

    /// Every row, MACs included, from the store itself (as root: the store
    /// and the key are not the caller's otherwise).
    private func verifyWithKey(_ keyPath: String) throws {
        func fail(_ text: String) -> ExitCode {
            printError("gatewayctl: \(text)\n")
            return ExitCode(1)
        }
        var auditKey: [UInt8]
        do { auditKey = try AuditKeyFile.read(keyPath) } catch { throw fail("\(error)") }
        defer { AuditKeyFile.wipe(&auditKey) }
        let configuration = try config.load()
        let check: AuditCheck
        do {
            check = try GatewayStore.forRootTool(stateDirectory: configuration.paths.stateDirectory).checkAudit(
                key: auditKey)
        } catch {
            throw fail("log --verify with the audit key reads the door's store itself, so it runs as root: \(error)")
        }
        let answer = AuditReport.json(check, keyFile: keyPath)
        print(socket.json ? answer.serialized : answer.pretty)
        if answer["intact"]?.boolValue != true { throw ExitCode(1) }
    }

    private func connect() throws -> ControlClient {
        do { return try ControlClient(path: socket.path) } catch {
            fputs("gatewayctl: \(error)\n", stderr)
            throw ExitCode(1)
        }
    }

    static func line(_ row: JSONValue) -> String {
        ["time", "kind", "reason", "action", "uid", "source"].compactMap { key -> String? in
            guard let v = row[key] else { return nil }
            let text = v.stringValue ?? v.serialized
            return key == "time" || key == "kind" ? text : "\(key)=\(text)"
        }.joined(separator: " ")
    }
}

struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract:
            "A consistent snapshot of the store, keys and secrets included, to FILE (0600) or - (standard output).",
        discussion: """
            The daemon streams the snapshot over the control socket and gatewayctl writes it, \
            as the user who runs it: any path that user can write works (the daemon's sandbox \
            hides /root, /home and /tmp from the daemon, not from gatewayctl). FILE must not \
            exist; an interrupted backup leaves no file.
            """)
    @OptionGroup var socket: SocketOptions
    @Argument(help: "The backup file (must not exist), or - for standard output.") var file: String
    func run() throws {
        let toStdout = file == "-"
        if toStdout && isatty(STDOUT_FILENO) == 1 {
            fputs(
                "gatewayctl: refusing to write the backup (every secret) to a terminal; redirect it to a file\n", stderr
            )
            throw ExitCode(2)
        }
        let path = toStdout || file.hasPrefix("/") ? file : Files.currentDirectory + "/" + file
        let fd = toStdout ? STDOUT_FILENO : open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            fputs(
                "gatewayctl: \(path): \(String(cString: strerror(errno)))\(errno == EEXIST ? " (not overwriting it)" : "")\n",
                stderr)
            throw ExitCode(1)
        }
        var written = 0
        var end: Int?
        func abandon(_ message: String) -> ExitCode {
            if !toStdout {
                close(fd)
                unlink(path)
            }
            fputs("gatewayctl: backup failed: \(message)\(toStdout ? "" : " (\(path) removed)")\n", stderr)
            return ExitCode(1)
        }
        do {
            if !toStdout { fchmod(fd, 0o600) }  // whatever the umask
            let client = try ControlClient(path: socket.path)
            _ = try client.chunks(.backup) { event in
                if let bytes = event["end"].flatMap({ _ in event["bytes"]?.intValue }) {
                    end = bytes
                    return
                }
                guard end == nil, let text = event["data"]?.stringValue, let data = Base64URL.decode(text) else {
                    throw ControlClientError.io("an unexpected event in the backup stream")
                }
                try Self.writeAll(fd, data)
                written += data.count
            }
        } catch let e as ExitCode {
            throw e
        } catch {
            throw abandon("\(error)")
        }
        guard let end, end == written, written > 0 else {
            throw abandon("the stream ended after \(written) bytes\(end.map { " of \($0)" } ?? " without its end")")
        }
        if toStdout { return }
        guard fsync(fd) == 0 else { throw abandon("fsync: \(String(cString: strerror(errno)))") }
        close(fd)
        do { try GatewayStore.checkBackup(path) } catch {
            unlink(path)
            fputs("gatewayctl: backup failed: \(error) (\(path) removed)\n", stderr)
            throw ExitCode(1)
        }
        if socket.json {
            print(JSONValue.object([("path", .string(path)), ("bytes", .int(Int64(written)))]).serialized)
        } else {
            print("\(written) bytes to \(path)")
        }
        fputs("gatewayctl: warning: \(path) holds every sticker secret and command key; keep it offline\n", stderr)
    }

    static func writeAll(_ fd: Int32, _ data: [UInt8]) throws {
        var done = 0
        while done < data.count {
            let n = data.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw ControlClientError.io("write: \(String(cString: strerror(errno)))") }
            done += n
        }
    }
}

struct ClockCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock", abstract: "The clock floor sticker expiry is judged at.", subcommands: [ResetFloor.self])
    struct ResetFloor: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-floor",
            abstract: "Lower a clock floor a bad time source raised to the synchronised clock (audited).",
            discussion: """
                Expiry is judged no earlier than the latest time the door read with its clock \
                synchronised. A far-future answer from a time server leaves that floor ahead and \
                every sticker with an expiry before it denied. Once the clock is right and \
                synchronised again, this lowers the floor to it; with the clock unsynchronised \
                it is refused.
                """)
        @OptionGroup var socket: SocketOptions
        func run() throws {
            try socket.call(.clockResetFloor) { answer in
                let floor = answer["clock_floor"]?.stringValue ?? "-"
                if answer["reset"]?.boolValue == true {
                    return "clock floor lowered from \(answer["from"]?.stringValue ?? "?") to \(floor)"
                }
                return "clock floor \(floor) is not ahead of the clock: nothing to reset"
            }
        }
    }
}

struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup into a fresh state directory (with the daemon stopped).",
        discussion: """
            Run as root, the restored store (and the state directory) is given to the daemon's \
            user, mode 0600 (0700): --owner, else the state directory's owner when that is not \
            root, else the doorgateway account; gatewayd runs as that user under the unit.
            """)
    @Argument(help: "The backup file.") var file: String
    @Option(help: "The state directory (default: $STATE_DIRECTORY or /var/lib/doorgateway).") var stateDir: String?
    @Option(help: "The user who owns the restored store, with its primary group (default: see above).") var owner:
        String?
    func run() throws {
        let env = Environment.current
        let dir =
            stateDir ?? env["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init) ?? "/var/lib/doorgateway"
        if let owner, getuid() == 0, Self.owner(owner, of: dir) == nil {
            fputs("gatewayctl: no user \(owner) for --owner\n", stderr)
            throw ExitCode(2)
        }
        let path: String
        do {
            // The store is opened (newer migrations run) and closed again before
            // it is handed over.
            path = try GatewayStore.restore(backup: file, into: dir).path
        } catch {
            fputs("gatewayctl: \(error)\n", stderr)
            throw ExitCode(1)
        }
        guard getuid() == 0 else {
            print("restored \(file) into \(path)")
            return
        }
        guard let (name, uid, gid) = Self.owner(owner, of: dir) else {
            print("restored \(file) into \(path)")
            fputs(
                "gatewayctl: warning: \(path) stays owned by root (no doorgateway account here): give --owner USER, the daemon's user\n",
                stderr)
            return
        }
        do { try GatewayStore.handOver(stateDirectory: dir, uid: uid, gid: gid) } catch {
            fputs("gatewayctl: restored \(file) into \(path), but: \(error)\n", stderr)
            throw ExitCode(1)
        }
        print("restored \(file) into \(path) (owner \(name), mode 0600)")
    }

    /// The restored store's owner: `--owner`, else the state directory's
    /// owner when it is not root, else the doorgateway account.
    static func owner(_ requested: String?, of dir: String) -> (String, UInt32, UInt32)? {
        let users = Accounts.load().users
        if let requested {
            return users.first { $0.name == requested }.map { ($0.name, $0.uid, $0.gid) }
        }
        var st = stat()
        if stat(dir, &st) == 0, st.st_uid != 0 {
            let name = users.first { $0.uid == st.st_uid }?.name ?? "uid \(st.st_uid)"
            return (name, st.st_uid, st.st_gid)
        }
        return users.first { $0.name == "doorgateway" }.map { ($0.name, $0.uid, $0.gid) }
    }
}

/// YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS][Z] (UTC) or Unix seconds; nil otherwise.
/// Days from the civil date (Howard Hinnant's algorithm), no locale, no ICU.
func parseUTCDate(_ text: String) -> Int64? {
    if let n = Int64(text), n >= 0 { return n }
    var s = Substring(text)
    if s.hasSuffix("Z") { s = s.dropLast() }
    let parts = s.split(separator: "T", maxSplits: 1, omittingEmptySubsequences: false)
    let date = parts[0].split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
    guard date.count == 3, let y = date[0], let m = date[1], let d = date[2], parts[0].count == 10,
        (1...12).contains(m), (1...31).contains(d), (1970...9999).contains(y)
    else { return nil }
    var seconds = 0
    if parts.count == 2 {
        let t = parts[1].split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        guard (2...3).contains(t.count), let h = t[0], let mi = t[1], (0...23).contains(h), (0...59).contains(mi) else {
            return nil
        }
        let sec = t.count == 3 ? t[2] : 0
        guard let sec, (0...59).contains(sec) else { return nil }
        seconds = h * 3600 + mi * 60 + sec
    }
    let yy = m <= 2 ? y - 1 : y
    let era = yy / 400
    let yoe = yy - era * 400
    let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146_097 + doe - 719_468
    return Int64(days) * 86_400 + Int64(seconds)
}

struct FireCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fire", abstract: "The fire alarm (docs/policy.md \"Fire alarm\").",
        subcommands: [Reset.self, FireSignal.self])
    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "End a fire alarm whose input has cleared: the released outputs lock again (audited).")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.fireReset) }
    }
}
