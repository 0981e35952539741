import Arguments
import DoorCore
import GatewayControl

/// `gatewayctl tags enroll-uid --action N UID` (docs/ntag424.md "uid fobs"):
/// a plain key fob or card, known by its UID only, enrolled for an action.
struct TagsEnrollUID: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll-uid",
        abstract: "Enrol a plain key fob or card by its UID (weak: a UID is trivially cloned).",
        discussion: """
            The fob opens the action only when its `credentials` list "uid" (gateway.toml); \
            each grant is audited as weak_credential. Nothing is written to the fob. \
            A fob's first tap shows its UID in the audit log (gatewayctl log); `gatewayctl tags revoke UID` undoes this.
            """)
    @OptionGroup var socket: SocketOptions
    @Option(help: "Action index.") var action: Int
    @Option(help: "Label stored in the registry.") var label = ""
    @Option(help: "Valid until (UTC: YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds).") var until: String?
    @Argument(help: "The fob's UID (hex, 4, 7 or 10 bytes).") var uid: String

    func validate() throws {
        guard TagUID(hex: uid) != nil else { throw ValidationError("the UID must be 4, 7 or 10 bytes of hex") }
        if let until, parseUTCDate(until) == nil {
            throw ValidationError("--until: give YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds")
        }
    }

    func run() throws {
        var p: [(String, JSONValue)] = [("uid", .string(uid)), ("action", .int(action)), ("label", .string(label))]
        if let u = until.flatMap(parseUTCDate) { p.append(("valid_until", .int(Int(u)))) }
        try socket.call(.tagsEnrollUID, p)
    }
}
