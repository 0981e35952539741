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
        let action = try p.int("action")
        guard let definition = configuration.door.action(action) else {
            throw DaemonError.request("no action \(action) (actions 0…\(configuration.door.actions.count - 1))")
        }
        let label = try p.string("label", default: "")
        guard label.utf8.count <= 64 else { throw DaemonError.request("the label is at most 64 bytes") }
        let until = p["valid_until"] != nil ? Int64(try p.int("valid_until")) : nil
        do {
            try store.enrollUIDTag(uid: u, action: action, label: label, limits: TagLimits(validUntil: until), now: now)
        } catch let error as RegistryError {
            throw DaemonError.request("\(error)")
        }
        runtime.note(
            DoorEvent(.provisioningWritten, reason: "uid_enrolled", action: action, uid: u, source: source),
            detail: "kind uid (weak credential)")
        var answer: [(String, JSONValue)] = [
            ("enrolled", .string(u.hex)), ("action", .int(action)), ("kind", .string("uid")),
        ]
        if !definition.credentials.contains(.uid) {
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
