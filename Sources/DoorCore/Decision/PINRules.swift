/// Which credentials `gatewayctl pins set` gives a PIN (issue 35). A PIN is
/// read only where the door asks for it: a card number (a `wiegand` row,
/// `gatewayctl tags enroll-card`) whose action lists "card+pin" waits at the
/// reader's keypad for it (`KeypadDesk`). A PIN on anything else — a
/// sticker, an NTAG 424, a UID fob, a card whose action opens without one —
/// is never asked for: storing it would read as protection the door does not
/// give. A PIN-only code's PIN is the code itself, set once by `pins add-code`
/// (where the codes' shared salt and their uniqueness are kept); `pins set`
/// on one would bypass both.
public enum PINRules {
    /// Why `row` (the registry's view of `key`) takes no PIN; nil when it does.
    public static func refusal(key: TagUID, row: IssuedTagView?, actions: [ActionDefinition]) -> String? {
        if PINCode.isKey(key) || row?.kind == .pin {
            return "\(key.hex) is a PIN-only code: its PIN is the code (remove it with `gatewayctl tags forget` "
                + "and add a new one with `gatewayctl pins add-code`)"
        }
        guard let row else { return "\(key.hex) is not enrolled here (`gatewayctl tags enroll-card` first)" }
        guard row.kind == .wiegand else {
            return "\(key.hex) is \(row.kind.map { "a \($0.rawValue) credential" } ?? "a sticker"), not a card number: "
                + "the door asks a PIN only after a card read at an outdoor reader"
        }
        guard row.state != .revoked else { return "\(key.hex) is revoked" }
        guard let index = row.action, let action = actions.first(where: { $0.index == index }) else {
            return "\(key.hex)'s action is not configured"
        }
        guard action.credentials.contains(.cardPIN) else {
            return "action \(index) does not list \"card+pin\" in its credentials: this card opens without a PIN "
                + "and its PIN would never be asked (add \"card+pin\" to the action first)"
        }
        return nil
    }
}
