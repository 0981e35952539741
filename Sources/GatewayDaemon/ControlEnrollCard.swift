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
        let action = try p.int("action")
        guard let definition = configuration.door.action(action) else {
            throw DaemonError.request("no action \(action) (actions 0…\(configuration.door.actions.count - 1))")
        }
        let label = try p.string("label", default: "")
        guard label.utf8.count <= 64 else { throw DaemonError.request("the label is at most 64 bytes") }
        let until = p["valid_until"] != nil ? Int64(try p.int("valid_until")) : nil
        do {
            try store.enrollCard(card, action: action, label: label, limits: TagLimits(validUntil: until), now: now)
        } catch let error as RegistryError {
            throw DaemonError.request("\(error)")
        }
        let key = card.registryKey
        runtime.note(
            DoorEvent(.provisioningWritten, reason: "card_enrolled", action: action, uid: key, source: source),
            detail: "kind wiegand (weak credential), card \(card)")
        var answer: [(String, JSONValue)] = [
            ("enrolled", .string(key.hex)), ("card", .string(card.description)), ("action", .int(action)),
            ("kind", .string(CredentialKind.wiegand.rawValue)),
        ]
        if !definition.credentials.contains(.wiegand) && !definition.credentials.contains(.osdp)
            && !definition.credentials.contains(.cardPIN)
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
