import ArgumentParser
import DoorCore
import Foundation

/// Options every command that talks to the running daemon takes.
struct SocketOptions: ParsableArguments {
    @Option(help: "The daemon's control socket (default: $RUNTIME_DIRECTORY/control.sock or /run/doorgateway/control.sock).")
    var socket: String?

    @Flag(help: "Print the daemon's answer as JSON.")
    var json = false

    var path: String {
        if let socket { return socket }
        let env = ProcessInfo.processInfo.environment
        if let s = env["DOORGATEWAY_SOCKET"], !s.isEmpty { return s }
        if let r = env["RUNTIME_DIRECTORY"]?.split(separator: ":").first { return "\(r)/control.sock" }
        return "/run/doorgateway/control.sock"
    }

    /// One request; prints the answer (JSON, or `render` for people).
    func call(_ method: String, _ params: [(String, JSONValue)] = [], render: (JSONValue) -> String = { $0.pretty }) throws {
        let result: JSONValue
        do {
            let client = try ControlClient(path: path)
            result = try client.call(method, .object(params))
        } catch {
            fputs("gatewayctl: \(error)\n", stderr)
            throw ExitCode(1)
        }
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
                case .object(let inner) where !inner.isEmpty: return ["\(indent)\(key):"] + value.prettyLines(indent: indent + "  ")
                case .array(let items) where !items.isEmpty: return ["\(indent)\(key):"] + value.prettyLines(indent: indent + "  ")
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
        commandName: "status", abstract: "State, mode, reader, broker, outbox, clock sync, lockout and the last events.")
    @OptionGroup var socket: SocketOptions
    func run() throws { try socket.call("status") }
}

struct OpenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "open", abstract: "Run an action now (admin open; works in lockdown).")
    @OptionGroup var socket: SocketOptions
    @Option(help: "Action index.") var action = 0
    func run() throws { try socket.call("open", [("action", .int(action))]) }
}

struct ModeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "mode", abstract: "Set the door mode: normal, passage or lockdown.")
    @OptionGroup var socket: SocketOptions
    @Argument(help: "normal | passage | lockdown") var mode: String
    func validate() throws {
        guard DoorMode(rawValue: mode) != nil else { throw ValidationError("mode must be normal, passage or lockdown") }
    }
    func run() throws { try socket.call("mode", [("mode", .string(mode))]) }
}

struct ProvisionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "provision",
        abstract: "Arm provisioning: the next blank sticker (or one of ours) is written for the action.",
        subcommands: [Arm.self, Cancel.self], defaultSubcommand: Arm.self)

    struct Arm: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "arm", abstract: "Arm provisioning (the default).")
        @OptionGroup var socket: SocketOptions
        @Option(help: "Action index.") var action: Int
        @Option(help: "Label stored in the registry.") var label = ""
        @Flag(help: "Password-protect writes (PWD/PACK from the device key, COMPAT §4).") var protect = false
        @Flag(help: "Overwrite a foreign tag.") var overwrite = false
        func run() throws {
            try socket.call("provision", [
                ("action", .int(action)), ("label", .string(label)), ("protect", .bool(protect)), ("overwrite", .bool(overwrite)),
            ])
        }
    }

    struct Cancel: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "cancel", abstract: "Disarm provisioning.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call("provision.cancel") }
    }
}

struct LockoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lockout", abstract: "Lockout after repeated bad stickers.", subcommands: [Status.self, Clear.self])
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Locked-out UIDs and the global lockout.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call("lockout.status") }
    }
    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "clear", abstract: "End every lockout now.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call("lockout.clear") }
    }
}

struct FeedbackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feedback", abstract: "Feedback patterns on the LEDs and buzzer.", subcommands: [Play.self])
    struct Play: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "play", abstract: "Play a pattern (granted, denied, …).")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Pattern name.") var pattern: String
        func run() throws { try socket.call("feedback.play", [("pattern", .string(pattern))]) }
    }
}

struct SecretsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secrets", abstract: "Sticker secrets (per action; generated or imported).",
        subcommands: [List.self, New.self, Rotate.self, Remove.self, Import.self, Export.self])
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List secrets (never their keys).")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call("secrets.list") }
    }
    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "new", abstract: "Generate a secret for an action.")
        @OptionGroup var socket: SocketOptions
        @Option(help: "Action index.") var action: Int
        @Option(help: "Label.") var label = ""
        func run() throws { try socket.call("secrets.new", [("action", .int(action)), ("label", .string(label))]) }
    }
    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate", abstract: "Generate a new secret that signs from now on; old stickers stay valid until their secret is removed.")
        @OptionGroup var socket: SocketOptions
        @Option(help: "Action index.") var action: Int
        func run() throws { try socket.call("secrets.rotate", [("action", .int(action))]) }
    }
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a secret: its stickers stop opening.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Secret id.") var id: Int
        func run() throws { try socket.call("secrets.remove", [("id", .int(id))]) }
    }
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import", abstract: "Import an smpshare:// link read from standard input (COMPAT §2).")
        @OptionGroup var socket: SocketOptions
        func run() throws {
            guard let line = readLine(strippingNewline: true)?.filter({ !$0.isWhitespace }), !line.isEmpty else {
                throw ValidationError("give the smpshare:// link on standard input")
            }
            try socket.call("secrets.import", [("link", .string(line))])
        }
    }
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export", abstract: "Print a secret's smpshare:// link for the phone app (optionally as a QR code).")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Secret id.") var id: Int
        @Flag(help: "Draw the link as a QR code in the terminal.") var qr = false
        func run() throws {
            try socket.call("secrets.export", [("id", .int(id))]) { answer in
                let link = answer["link"]?.stringValue ?? ""
                return qr ? (terminalQR(link) ?? link) + "\n" + link : link
            }
        }
    }
}

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Remote-command keys: otp (COMPAT §3 timestamp key) and command (§5 native key).",
        discussion: "gatewayctl keys otp|command new|import|export [--qr]; import reads the key (hex) from standard input.")
    @OptionGroup var socket: SocketOptions
    @Argument(help: "otp | command") var name: String
    @Argument(help: "new | import | export") var verb: String
    @Flag(help: "Draw an exported key as a QR code.") var qr = false

    func validate() throws {
        guard ["otp", "command"].contains(name) else { throw ValidationError("key name must be otp or command") }
        guard ["new", "import", "export"].contains(verb) else { throw ValidationError("verb must be new, import or export") }
    }

    func run() throws {
        var params: [(String, JSONValue)] = [("name", .string(name))]
        if verb == "import" {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                throw ValidationError("give the key as hex on standard input")
            }
            params.append(("key", .string(line)))
        }
        try socket.call("keys.\(verb)", params) { answer in
            guard verb == "export", let key = answer["key"]?.stringValue else { return answer.pretty }
            return qr ? (terminalQR(key) ?? key) + "\n" + key : key
        }
    }
}

struct SimCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim", abstract: "Drive the simulated board and pn532-sim (board.kind = \"sim\").",
        subcommands: [Tap.self, Remove.self, Reinsert.self, Dump.self, Press.self, Door.self])
    struct Tap: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tap", abstract: "Put an NTAG213 holding URL (or a dump file, or nothing) on the reader.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "The URL the tag holds.") var url: String?
        @Option(help: "A tag dump file (COMPAT §6) instead of a URL.") var dump: String?
        @Flag(help: "A blank tag (empty NDEF message).") var blank = false
        @Option(help: "The tag's UID (hex, 7 bytes); random when absent.") var uid: String?
        func validate() throws {
            guard [url != nil, dump != nil, blank].filter({ $0 }).count == 1 else {
                throw ValidationError("give one of URL, --dump FILE and --blank")
            }
        }
        func run() throws {
            var params: [(String, JSONValue)] = []
            if let url { params.append(("url", .string(url))) }
            if blank { params.append(("blank", .bool(true))) }
            if let dump {
                guard let data = FileManager.default.contents(atPath: dump) else { throw ValidationError("cannot read \(dump)") }
                params.append(("dump", .string(Hex.encode(Array(data)))))
            }
            if let uid { params.append(("uid", .string(uid))) }
            try socket.call("sim.tap", params)
        }
    }
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Take the tag off the reader.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call("sim.remove") }
    }
    struct Reinsert: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "reinsert", abstract: "Put the last tag back on the reader.")
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call("sim.reinsert") }
    }
    struct Dump: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "dump", abstract: "Save the tag on the reader as a dump file.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "Output file.") var file: String
        func run() throws {
            try socket.call("sim.dump") { answer in
                guard let hex = answer["dump"]?.stringValue, let bytes = Hex.decode(hex) else { return "no dump" }
                FileManager.default.createFile(atPath: file, contents: Data(bytes))
                return "\(bytes.count) bytes to \(file)"
            }
        }
    }
    struct Press: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "press", abstract: "Press the button (and hold it).")
        @OptionGroup var socket: SocketOptions
        @Option(help: "Seconds to hold.") var hold: Double = 0.1
        func run() throws { try socket.call("sim.press", [("hold", .double(hold))]) }
    }
    struct Door: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "door", abstract: "Set the door contact: open or closed.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "open | closed") var state: String
        func run() throws { try socket.call("sim.door", [("state", .string(state))]) }
    }
}
