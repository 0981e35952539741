import DoorCore
import GatewayConfig

/// `gatewayctl policy explain` (docs/policy.md): would an authentic
/// credential for `action` (and, when given, this tag's registry row, its
/// revocation and the door's lockout) open at `at`, and why. The door's own
/// rules (`TapDecision.explain`, the `RegistryRules` a tap is decided by),
/// with the clock taken as synchronised (the question names the time). The
/// daemon answers it with its registry; offline (`--config`) there is none.
package enum PolicyExplain {
    package struct Failure: Error, CustomStringConvertible { package let description: String }

    /// What the registry says of the tag: nil when not asked; `.some(nil)` when unknown.
    /// `fire`: the running door's fire alarm (nil offline): not `.normal`, the
    /// answer says which outputs stand released whatever the tap's verdict.
    package static func explain(
        configuration: GatewayConfiguration, zone: TimeZoneRules, action: Int, tag: (uid: TagUID, row: IssuedTagView?)?,
        at: Int64, note: String?, registryConsulted: Bool, revoked: Bool = false, lockedOutUntil: Int64? = nil,
        fire: FireState? = nil, lockdown: (mode: DoorMode, held: Lockdown?)? = nil, passage: PassageFacts? = nil
    ) throws -> JSONValue {
        guard let definition = configuration.door.actions.first(where: { $0.index == action }) else {
            throw Failure(
                description:
                    "no action \(action) (actions: \(configuration.door.actions.map { String($0.index) }.joined(separator: ", ")))"
            )
        }
        let policy = AccessPolicy(schedules: configuration.door.schedules, zone: zone)
        let asked = tag.flatMap { tag in
            registryConsulted
                ? TapDecision.ExplainedTag(row: tag.row, revoked: revoked, lockedOutUntil: lockedOutUntil) : nil
        }
        var reason =
            TapDecision.explain(
                action: definition, tag: asked,
                policy: TapPolicy(
                    policy: policy, actions: configuration.door.actions,
                    wall: WallClock(unixSeconds: at, synchronised: true)))?.reason ?? "granted"
        // Anti-passback (issue 36): the door's rule on a tap that would open, at the reader asked about.
        let passback = passage.map { Passback.verdict(definition.passback, passage: $0, now: at) }
        if reason == "granted" {
            if passback == .hard { reason = Denial.passback.reason }
            if passback == .unreadable { reason = Denial.registryUnavailable.reason }
        }
        // The lockdown, as the door: only a tap that would open is shut by it.
        if reason == "granted", let held = Self.lockdownReason(definition, lockdown) { reason = held }
        var names = [definition.schedule, tag?.row?.schedule].compactMap { $0 }
        if names.isEmpty, let p = configuration.door.passageSchedule { names = [p] }
        let schedules: [JSONValue] = names.map { name in
            guard let s = policy.schedule(named: name) else {
                return .object([("name", .string(name)), ("known", .bool(false))])
            }
            return .object([
                ("name", .string(name)), ("active", .bool(s.isActive(at: at, zone: zone))),
                ("next_change", .optional(s.nextChange(after: at, zone: zone).map(UTCTime.iso8601))),
                (
                    "next_change_local",
                    .optional(s.nextChange(after: at, zone: zone).map { zone.local($0).description })
                ),
                ("passage", .bool(name == configuration.door.passageSchedule)),
                ("first_person_in", .bool(s.firstPersonIn)),
            ])
        }
        var fields: [(String, JSONValue)] = [
            ("allowed", .bool(reason == "granted")), ("reason", .string(reason)), ("action", .int(action)),
            ("action_schedule", .optional(definition.schedule)),
            ("at", .string(UTCTime.iso8601(at))), ("local", .string(zone.local(at).description)),
            ("zone", .string(zone.name)), ("schedules", .array(schedules)),
            // docs/policy.md "Approval": an allowed tap waits for one of these approvers.
            (
                "approval",
                definition.approval.map { a in
                    .object([
                        ("timeout_s", .int(Int(a.timeout.components.seconds))),
                        ("by", .array(a.by.map(\.rawValue).sorted().map(JSONValue.string))),
                    ])
                } ?? .null
            ),
        ]
        if let tag {
            fields.append(("uid", .string(tag.uid.hex)))
            if registryConsulted, let row = tag.row {
                fields.append(("tag_state", .string(row.state.rawValue)))
                fields.append(("tag_schedule", .optional(row.schedule)))
                fields.append(("uses_left", row.usesLeft.map { .int($0) } ?? .null))
            }
            if !registryConsulted {
                fields.append(("registry", .string("not consulted offline: the tag's own limits are the daemon's")))
            }
        }
        if let passage {
            fields.append(
                (
                    "passback",
                    .object([
                        ("mode", .string(definition.passback.mode.rawValue)), ("side", .string(passage.side.rawValue)),
                        ("inside", .bool(passage.last?.inside ?? false)),
                        ("since", .optional(passage.last.map { UTCTime.iso8601($0.since) })),
                        ("reader", .optional(passage.last?.reader)),
                        ("reset_after_minutes", definition.passback.resetAfter.map { .int(Int($0 / 60)) } ?? .null),
                        // "soft": opens, granted `passback` (audited); "hard": denied `passback`.
                        (
                            "verdict",
                            .string(
                                passback == .soft && reason == "granted"
                                    ? "soft" : passback == .hard && reason == "passback" ? "hard" : "clear")
                        ),
                    ])
                ))
        }
        if let note { fields.append(("note", .string(note))) }
        fields += DoorContactExplain.fields(configuration)
        if let l = Self.lockdownField(definition, lockdown) { fields.append(("lockdown", l)) }
        if let fire, fire != .normal {
            let released = configuration.door.outputs.filter { $0.onFire == .release }.map(\.name)
            fields.append(
                (
                    "fire",
                    .object([
                        ("state", .string(fire.rawValue)), ("released", .array(released.map(JSONValue.string))),
                    ])
                ))
        }
        return .object(fields)
    }

    /// The text form.
    package static func render(_ v: JSONValue) -> String {
        let allowed = v["allowed"]?.boolValue ?? false
        let approval = v["approval"].flatMap { $0 == .null ? nil : $0 }
        let needsApproval = approval != nil
        var lines = [
            "\(allowed ? (needsApproval ? "opens once approved" : "opens") : "stays shut"): \(v["reason"]?.stringValue ?? "?") — action \(v["action"]?.intValue ?? 0) at \(v["local"]?.stringValue ?? "?") (\(v["zone"]?.stringValue ?? "?"); \(v["at"]?.stringValue ?? "?"))"
        ]
        for s in v["schedules"]?.arrayValue ?? [] {
            let name = s["name"]?.stringValue ?? "?"
            if s["known"]?.boolValue == false {
                lines.append("schedule \(name): not in this configuration")
                continue
            }
            let state = s["active"]?.boolValue == true ? "inside a window" : "outside every window"
            let next = s["next_change_local"]?.stringValue.map { ", changes at \($0)" } ?? ", no change within 15 days"
            lines.append(
                "schedule \(name)\(s["passage"]?.boolValue == true ? DoorContactExplain.passage(s) : ""): \(state)\(next)"
            )
        }
        if let approval {
            let by = (approval["by"]?.arrayValue ?? []).compactMap(\.stringValue).joined(separator: ", ")
            lines.append(
                "approval: needed — a tap waits up to \(approval["timeout_s"]?.intValue ?? 0) s for \(by); no answer or a no denies it not_approved"
            )
        }
        if let u = v["uses_left"]?.intValue { lines.append("uses left: \(u)") }
        if let r = v["registry"]?.stringValue { lines.append("registry: \(r)") }
        if let p = v["passback"], let mode = p["mode"]?.stringValue {
            let whereabouts =
                p["inside"]?.boolValue == true
                ? "in since \(p["since"]?.stringValue ?? "?") (\(p["reader"]?.stringValue ?? "?"))" : "not in"
            let verdict: String
            switch p["verdict"]?.stringValue {
            case "soft"?: verdict = "a second entry: opens, audited passback"
            case "hard"?: verdict = "a second entry without an exit: denied"
            default: verdict = "no passback"
            }
            lines.append(
                "passback \(mode) at an \(p["side"]?.stringValue ?? "?") reader: \(whereabouts) — \(verdict)")
        }
        if let n = v["note"]?.stringValue { lines.append("note: \(n)") }
        lines += DoorContactExplain.lines(v)
        if let line = lockdownLine(v) { lines.append(line) }
        if let fire = v["fire"], let state = fire["state"]?.stringValue {
            let released = (fire["released"]?.arrayValue ?? []).compactMap(\.stringValue)
            let outputs =
                released.isEmpty ? "no output (none is on_fire = \"release\")" : released.joined(separator: ", ")
            lines.append(
                "fire: \(state == "alarm" ? "the alarm holds" : "the input cleared, not yet reset") — released: \(outputs), over every schedule, lockdown, lockout and tap, until the input clears and `gatewayctl fire reset`"
            )
        }
        return lines.joined(separator: "\n")
    }
}
