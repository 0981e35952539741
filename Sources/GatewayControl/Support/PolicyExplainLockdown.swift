import DoorCore

// `policy explain` and the lockdown (docs/policy.md "Lockdown"): the door's
// own rule (`Lockdown.denies`), asked of the running door's mode and lockdown.
extension PolicyExplain {
    /// "lockdown" when the door's lockdown keeps this action shut; nil otherwise.
    static func lockdownReason(_ action: ActionDefinition, _ lockdown: (mode: DoorMode, held: Lockdown?)?) -> String? {
        guard let lockdown else { return nil }
        let inLockdown = lockdown.mode == .lockdown || lockdown.held != nil
        return Lockdown.denies(action, inLockdown: inLockdown) ? Denial.lockdown.reason : nil
    }

    /// The answer's `lockdown`: who holds it and whether this action is exempt (nil: not in lockdown).
    static func lockdownField(_ action: ActionDefinition, _ lockdown: (mode: DoorMode, held: Lockdown?)?) -> JSONValue?
    {
        guard let lockdown, lockdown.mode == .lockdown || lockdown.held != nil else { return nil }
        var fields: [(String, JSONValue)] = [("exempt", .bool(action.lockdownExempt))]
        if let held = lockdown.held {
            fields += [
                ("by", .string(held.by)), ("source", .string(held.source)),
                ("since", .string(UTCTime.iso8601(held.since))),
            ]
        } else {
            fields.append(("source", .string("mode")))
        }
        return .object(fields)
    }

    /// The text form's line.
    static func lockdownLine(_ v: JSONValue) -> String? {
        guard let l = v["lockdown"], let exempt = l["exempt"]?.boolValue else { return nil }
        let held =
            l["by"]?.stringValue.map {
                "since \(l["since"]?.stringValue ?? "?") by \($0) (\(l["source"]?.stringValue ?? "?"))"
            }
            ?? "by `gatewayctl mode lockdown`"
        let verdict =
            exempt
            ? "this action is lockdown_exempt: its credentials open" : "only lockdown_exempt actions open, not this one"
        return "lockdown: in force \(held) — \(verdict); the exit button and `gatewayctl open` still work"
    }
}
