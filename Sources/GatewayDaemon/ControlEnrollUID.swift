import DoorCore
import GatewayControl
import GatewayStore

extension ControlService {
    /// `tags.enroll_uid`: an active `uid` row for an action that exists. The
    /// answer says when the action does not list "uid" (the fob opens nothing yet).
    func enrollUID(
        _ p: [String: JSONValue], now: Int64, source: String, uid: () throws -> TagUID
    ) throws -> JSONValue {
        let u = try uid()
        let terms = try enrollTerms(p)
        let action = terms.action
        try enrolling {
            try store.enrollUIDTag(uid: u, action: action, label: terms.label, limits: terms.limits, now: now)
        }
        runtime.note(
            DoorEvent(.provisioningWritten, reason: "uid_enrolled", action: action, uid: u, source: source),
            detail: "kind uid (weak credential)")
        var answer: [(String, JSONValue)] = [
            ("enrolled", .string(u.hex)), ("action", .int(action)), ("kind", .string("uid")),
        ]
        if !terms.definition.credentials.contains(.uid) {
            answer.append(
                (
                    "warning",
                    .string(
                        "action \(action) does not list \"uid\" in its credentials: this fob opens nothing until it does"
                    )
                ))
        }
        return .object(answer)
    }
}
