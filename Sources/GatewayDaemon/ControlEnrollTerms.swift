import DoorCore
import GatewayControl
import GatewayStore

/// What `tags.enroll_uid` and `tags.enroll_card` take besides the credential:
/// an action that exists, a label of at most 64 bytes and an optional
/// `valid_until`, read in that order.
struct EnrollTerms {
    var action: ActionIndex
    var definition: ActionDefinition
    var label: String
    var limits: TagLimits
}

extension ControlService {
    func enrollTerms(_ p: [String: JSONValue]) throws -> EnrollTerms {
        let action = try p.int("action")
        guard let definition = configuration.door.action(action) else {
            throw DaemonError.request("no action \(action) (actions 0…\(configuration.door.actions.count - 1))")
        }
        let label = try p.string("label", default: "")
        guard label.utf8.count <= 64 else { throw DaemonError.request("the label is at most 64 bytes") }
        let until = p["valid_until"] != nil ? Int64(try p.int("valid_until")) : nil
        return EnrollTerms(action: action, definition: definition, label: label, limits: TagLimits(validUntil: until))
    }

    /// Runs the store's enrolment; its refusal (`RegistryError`: revoked,
    /// enrolled already) is the request's error.
    func enrolling(_ write: () throws -> Void) throws {
        do { try write() } catch let error as RegistryError { throw DaemonError.request("\(error)") }
    }
}
