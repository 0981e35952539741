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
    @OptionGroup var terms: EnrollOptions
    @Argument(help: "The fob's UID (hex, 4, 7 or 10 bytes).") var uid: String

    func validate() throws {
        guard TagUID(hex: uid) != nil else { throw ValidationError("the UID must be 4, 7 or 10 bytes of hex") }
        try terms.validateUntil()
    }

    func run() throws {
        try socket.call(.tagsEnrollUID, terms.parameters(("uid", .string(uid))))
    }
}
