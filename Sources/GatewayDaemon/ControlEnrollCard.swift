import DoorCore
import GatewayControl
import GatewayStore

extension ControlService {
    /// `tags.enroll_card` (issue 35): an active `wiegand` row for a card
    /// number (`26:FACILITY:NUMBER`, `34:…`, `37:…` or `raw:BITS:HEX`) and an
    /// action that exists. The answer warns when the action lists neither
    /// "wiegand" nor "osdp" (the card opens nothing yet).
    func enrollCard(_ p: [String: JSONValue], now: Int64, source: String) throws -> JSONValue {
        let text = try p.string("card")
        guard let card = CardNumber(text: text) ?? TagUID(hex: text)?.card else {
            throw DaemonError.request(
                "a card is 26:FACILITY:NUMBER (also 34 and 37), raw:BITS:HEX, fmt:DIGITS or the key the audit log shows (CA…), "
                    + "not \"\(text.prefix(40))\"")
        }
        let terms = try enrollTerms(p)
        let action = terms.action
        try enrolling { try store.enrollCard(card, action: action, label: terms.label, limits: terms.limits, now: now) }
        let key = card.registryKey
        runtime.note(
            DoorEvent(.provisioningWritten, reason: "card_enrolled", action: action, uid: key, source: source),
            detail: "kind wiegand (weak credential), card \(card)")
        var answer: [(String, JSONValue)] = [
            ("enrolled", .string(key.hex)), ("card", .string(card.description)), ("action", .int(action)),
            ("kind", .string(CredentialKind.wiegand.rawValue)),
        ]
        if !terms.definition.credentials.contains(.wiegand) && !terms.definition.credentials.contains(.osdp)
            && !terms.definition.credentials.contains(.cardPIN)
        {
            answer.append(
                (
                    "warning",
                    .string(
                        "action \(action) lists none of \"wiegand\", \"osdp\", \"card+pin\" in its credentials: "
                            + "this card opens nothing until it does"
                    )
                ))
        }
        return .object(answer)
    }
}
