import Arguments
import DoorCore
import GatewayControl
@preconcurrency import Glibc

/// `gatewayctl pins` (issue 35): keypad PINs. A PIN is read from the
/// terminal with echo off (asked twice), or as one line on stdin; it is
/// never an argument (the process list and shell history would show it),
/// never printed, and the daemon stores only its scrypt hash.
struct PinsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pins", abstract: "Keypad PINs of outdoor readers: a card's PIN, PIN-only codes.",
        subcommands: [Set.self, AddCode.self, Remove.self])

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Set the PIN of an enrolled card (for actions whose credentials list \"card+pin\").",
            discussion: "The PIN (4–12 digits) is read from the terminal without echo, or as one line on stdin.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "The card: 26:FACILITY:NUMBER, 34:…, 37:…, raw:BITS:HEX, or its registry key.") var card: String
        func run() throws {
            let pin = try PinsCommand.readPIN()
            try socket.call(.pinsSet, [("uid", .string(card)), ("pin", .string(pin))])
        }
    }

    struct AddCode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add-code",
            abstract: "Add a PIN-only code for an action (a guest's: --uses, --from, --until, --schedule).",
            discussion: """
                The code opens the action when its credentials list "pin". A --duress code opens too, \
                and raises a silent `duress` event (MQTT/NATS, Home Assistant); typed after a card \
                that waits for its PIN, it opens for that card. Remove a code with \
                `gatewayctl tags forget KEY` (KEY as this command prints it).
                """)
        @OptionGroup var socket: SocketOptions
        @Option(help: "Action index.") var action: Int
        @Option(help: "Label stored in the registry.") var label = ""
        @Option(help: "How many opens (1…100000).") var uses: Int?
        @Option(help: "Valid from (UTC).") var from: String?
        @Option(help: "Valid until (UTC).") var until: String?
        @Option(help: "A [[schedules]] name the code is held to.") var schedule: String?
        @Flag(help: "A duress code: opens and raises a silent alarm.") var duress = false
        func validate() throws { try TagsIssue.validateLimits(uses: uses, from: from, until: until) }
        func run() throws {
            let pin = try PinsCommand.readPIN()
            try socket.call(
                .pinsAddCode,
                TagsIssue.limits(action: action, guest: false, uses: uses, from: from, until: until, schedule: schedule)
                    + [("label", .string(label)), ("duress", .bool(duress)), ("pin", .string(pin))])
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a card's PIN.")
        @OptionGroup var socket: SocketOptions
        @Argument(help: "The card (26:FACILITY:NUMBER, raw:BITS:HEX) or its registry key.") var card: String
        func run() throws { try socket.call(.pinsRemove, [("uid", .string(card))]) }
    }

    /// The PIN: from a terminal, typed twice with echo off; else one line of stdin.
    static func readPIN() throws -> String {
        guard isatty(STDIN_FILENO) == 1 else {
            guard let line = readLine(strippingNewline: true), PIN(line) != nil else {
                throw ValidationError("stdin: one line of 4 to 12 digits")
            }
            return line
        }
        let first = try prompt("PIN (4–12 digits): ")
        let second = try prompt("Again: ")
        guard first == second else { throw ValidationError("the two PINs differ") }
        guard PIN(first) != nil else { throw ValidationError("a PIN is 4 to 12 digits") }
        return first
    }

    private static func prompt(_ text: String) throws -> String {
        FileHandleOut.stderr(text)
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { throw ValidationError("cannot read the terminal") }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO)
        _ = tcsetattr(STDIN_FILENO, TCSANOW, &quiet)
        defer {
            _ = tcsetattr(STDIN_FILENO, TCSANOW, &saved)
            FileHandleOut.stderr("\n")
        }
        return readLine(strippingNewline: true) ?? ""
    }
}

/// Prompts on stderr (stdout stays the answer).
enum FileHandleOut {
    static func stderr(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
