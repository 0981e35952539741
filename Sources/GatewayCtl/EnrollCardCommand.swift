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
    @Option(help: "Action index.") var action: Int
    @Option(help: "Label stored in the registry.") var label = ""
    @Option(help: "Valid until (UTC: YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds).") var until: String?
    @Argument(
        help: "The card: 26:FACILITY:NUMBER, 34:…, 37:…, raw:BITS:HEX, fmt:DIGITS, or the audit log's key (CA…, CB…).")
    var card: String

    func validate() throws {
        guard CardNumber(text: card) != nil || TagUID(hex: card)?.card != nil else {
            throw ValidationError(
                "the card is 26:FACILITY:NUMBER (facility 0–255, number 0–65535), 34:F:N, 37:F:N, raw:BITS:HEX, "
                    + "fmt:DIGITS (1–32 printable characters) or the key the audit log shows (CA…, CB…)")
        }
        if let until, parseUTCDate(until) == nil {
            throw ValidationError("--until: give YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds")
        }
    }

    func run() throws {
        var p: [(String, JSONValue)] = [("card", .string(card)), ("action", .int(action)), ("label", .string(label))]
        if let u = until.flatMap(parseUTCDate) { p.append(("valid_until", .int(Int(u)))) }
        try socket.call(.tagsEnrollCard, p)
    }
}
