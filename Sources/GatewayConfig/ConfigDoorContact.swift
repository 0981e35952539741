import DoorCore

extension GatewayConfiguration {
    /// `[door_contact]` (docs/policy.md "Door contact"):
    ///
    ///     [door_contact]
    ///     warn_s = 15       # T1: the held_open pattern at the door, until it closes (0: off)
    ///     alert_s = 30      # T2: door_held_open, Home Assistant's door alarm (0: off)
    ///     escalate_s = 120  # T3: door_held_open_escalated, for the site (0: off)
    ///     open_grace_s = 10
    ///
    /// `held_open_s`, the one timer before the stages, is still read: it is
    /// `alert_s` (the event it always raised), and a file that has it is from
    /// before the stages, so its warning and escalation default to off — an
    /// old file behaves as it did. Both names at once are refused. The
    /// stages given must come in order (warn before alert before escalate);
    /// a stage left to its default that would not is off.
    static func readDoorContact(_ root: TableReader, hasDoorContact: Bool) -> DoorContactPolicy {
        let c = root.table("door_contact")
        let enabled = c?.bool("enabled", hasDoorContact) ?? hasDoorContact
        if enabled && !hasDoorContact {
            c?.fail("enabled", "true needs a contact line in [inputs.door_contact]")
        }
        let old = c?.optionalInt("held_open_s", 1...3600)
        let new = c?.optionalInt("alert_s", 0...3600)
        let legacy = c?.has("held_open_s") == true
        if legacy && c?.has("alert_s") == true {
            c?.fail("held_open_s", "is the old name of alert_s: give only alert_s")
        }
        let alert = new ?? old ?? 30
        let givenWarn = c?.optionalInt("warn_s", 0...3600)
        let givenEscalate = c?.optionalInt("escalate_s", 0...86_400)
        var warn = givenWarn ?? (legacy ? 0 : 15)
        var escalate = givenEscalate ?? (legacy ? 0 : 120)
        if warn > 0 && alert > 0 && warn >= alert {
            if givenWarn != nil {
                c?.fail(
                    "warn_s", "\(warn) s must be shorter than alert_s (\(alert) s): the door warns before it alerts")
            }
            warn = 0
        }
        if escalate > 0 && escalate <= max(warn, alert) {
            if givenEscalate != nil {
                c?.fail(
                    "escalate_s",
                    "\(escalate) s must be longer than warn_s and alert_s (\(max(warn, alert)) s): the site hears last")
            }
            escalate = 0
        }
        let policy = DoorContactPolicy(
            enabled: enabled && hasDoorContact, heldOpenAfter: .seconds(alert),
            openGrace: .seconds(c?.int("open_grace_s", 10, 0...600) ?? 10), warnAfter: .seconds(warn),
            escalateAfter: .seconds(escalate))
        c?.finish()
        return policy
    }

    /// `[request_to_exit]`: the request-to-exit input's grace (the next
    /// opening is an exit, not forced) and whether a press also runs an
    /// action (`action = 0`; default `"none"`: shunt only, as for a maglock
    /// with its own hardware REX, board/wiring.md).
    static func readRequestToExit(_ root: TableReader, actionExists: (Int) -> Bool)
        -> RequestToExitPolicy
    {
        // Without [inputs.request_to_exit] the table is inert (the example has it).
        guard let t = root.table("request_to_exit") else { return RequestToExitPolicy() }
        var action: ActionIndex?
        if let n = t.node("action") {
            switch n {
            case .string("none"): action = nil
            case .int(let i) where actionExists(i): action = i
            case .int(let i): t.fail("action", "there is no action \(i)")
            default: t.fail("action", "expected an action index or \"none\", found \(n.typeName)")
            }
        }
        let policy = RequestToExitPolicy(grace: .seconds(t.int("grace_s", 10, 1...600)), action: action)
        t.finish()
        return policy
    }
}

extension GatewayConfiguration {
    /// The summary's held-open stages: `warn 15 s, alert 30 s, escalate 120 s` (those on).
    func heldOpenSummary(_ p: DoorContactPolicy) -> String {
        let names: [HeldOpenStage: String] = [.warning: "warn", .alert: "alert", .escalated: "escalate"]
        let on = p.heldOpenStages.map { "\(names[$0.stage] ?? $0.stage.rawValue) \($0.after.components.seconds) s" }
        return on.isEmpty ? "no alarm" : on.joined(separator: ", ")
    }
}
