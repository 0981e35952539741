import DoorCore
import GatewayConfig

/// What `policy explain` adds for the door contact and first person in
/// (docs/policy.md "Door contact", "First person in"): the held-open stages,
/// what makes an opening forced, the request-to-exit input; a passage
/// schedule that waits for its first person.
package enum DoorContactExplain {
    /// `door_contact`: `{warn_s, alert_s, escalate_s, request_to_exit}` (0: off;
    /// `request_to_exit`: null without the input, else `shunt` or the action), when the contact's alarms are on.
    static func fields(_ c: GatewayConfiguration) -> [(String, JSONValue)] {
        let p = c.door.doorContact
        guard p.enabled else { return [] }
        func s(_ d: Duration) -> JSONValue { .int(Int(d.components.seconds)) }
        let rex: JSONValue =
            c.requestToExit == nil
            ? .null : c.door.requestToExit.action.map { .string("action \($0)") } ?? .string("shunt")
        return [
            (
                "door_contact",
                .object([
                    ("warn_s", s(p.warnAfter)), ("alert_s", s(p.heldOpenAfter)), ("escalate_s", s(p.escalateAfter)),
                    ("open_grace_s", s(p.openGrace)), ("request_to_exit", rex),
                    ("request_to_exit_grace_s", s(c.door.requestToExit.grace)),
                ])
            )
        ]
    }

    static func passage(_ schedule: JSONValue) -> String {
        schedule["first_person_in"]?.boolValue == true
            ? " (passage mode after the first grant inside a window: first person in)" : " (passage mode)"
    }

    static func lines(_ v: JSONValue) -> [String] {
        guard let d = v["door_contact"] else { return [] }
        let stages = [("warns at the door", "warn_s"), ("alerts", "alert_s"), ("escalates to the site", "escalate_s")]
            .compactMap { what, key in
                (d[key]?.intValue).flatMap { $0 > 0 ? "\(what) after \($0) s" : nil }
            }
        // Not counted in passage mode nor during a fire alarm (until its reset).
        let held =
            stages.isEmpty
            ? "no held-open alarm"
            : "held open (not in passage nor in a fire alarm), it " + stages.joined(separator: ", ")
        let rex: String
        if let how = d["request_to_exit"]?.stringValue {
            rex =
                "; a request to exit (\(how == "shunt" ? "shunt only" : "runs \(how)")) makes an opening within \(d["request_to_exit_grace_s"]?.intValue ?? 0) s an exit"
        } else {
            rex = ""
        }
        return [
            "door contact: \(held); an opening without a grant (or \(d["open_grace_s"]?.intValue ?? 0) s after one), passage, a fire alarm or a request to exit is forced: an alarm until it closes\(rex)"
        ]
    }
}
