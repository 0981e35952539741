import Arguments
import DoorCore
import GatewayControl

/// `gatewayctl tags enroll-card --action N CARD` (issue 35, board/wiring.md):
/// a card number an outdoor reader (Wiegand, OSDP) sends, enrolled for an action.
struct TagsEnrollCard: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll-card",
        abstract: "Enrol a card number an outdoor reader (Wiegand, OSDP) sends.",
        discussion: """
            CARD is 26:FACILITY:NUMBER (H10301; also 34 and 37 bits), raw:BITS:HEX, or fmt:DIGITS for \
            an OSDP reader that sends the card number as characters (osdp_FMT), the form \
            the audit log shows for a card the door does not know (gatewayctl log). \
            The card opens the action only when its `credentials` list "wiegand" (any reader; \
            audited weak_credential) or "osdp" (an OSDP reader with Secure Channel). \
            `gatewayctl tags revoke CARD` undoes this.
            """)
    @OptionGroup var socket: SocketOptions
    @OptionGroup var terms: EnrollOptions
    @Argument(
        help: "The card: 26:FACILITY:NUMBER, 34:…, 37:…, raw:BITS:HEX, fmt:DIGITS, or the audit log's key (CA…, CB…).")
    var card: String

    func validate() throws {
        guard CardNumber(text: card) != nil || TagUID(hex: card)?.card != nil else {
            throw ValidationError(
                "the card is 26:FACILITY:NUMBER (facility 0–255, number 0–65535), 34:F:N, 37:F:N, raw:BITS:HEX, "
                    + "fmt:DIGITS (1–32 printable characters) or the key the audit log shows (CA…, CB…)")
        }
        try terms.validateUntil()
    }

    func run() throws {
        try socket.call(.tagsEnrollCard, terms.parameters(("card", .string(card))))
    }
}
