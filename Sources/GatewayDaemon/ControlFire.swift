import DoorCore
import GatewayControl

/// The fire alarm's daemon glue (docs/policy.md "Fire alarm"): `gatewayctl
/// fire reset` and the fire state in `status`. The release itself is the
/// board's (its input thread) and the decisions DoorMachine's.
extension ControlService {
    /// `gatewayctl fire reset`: answered `reset`, or an error naming why the
    /// door refused (the input still in alarm, no alarm); either is audited
    /// with who asked.
    func fireReset(peer: Peer) throws -> JSONValue {
        let events = runtime.handleNow(.admin(.fireReset(who: "uid=\(peer.uid)")))
        if let refused = events.first(where: { $0.kind == .fireResetRefused }) {
            switch refused.reason {
            case "input_active"?:
                throw DaemonError.request(
                    "refused: the fire alarm input is still in alarm; the outputs stay released until it clears")
            default:
                throw DaemonError.request("refused: there is no fire alarm to reset")
            }
        }
        guard events.contains(where: { $0.kind == .fireReset }) else {
            throw DaemonError.request("the door is stopping")
        }
        return .object([("fire", .string(FireState.normal.rawValue)), ("reset", .bool(true))])
    }

    /// `status`'s `fire`: the machine's state and the outputs it releases.
    static func fireStatus(_ machine: DoorMachine) -> JSONValue {
        .object([
            ("state", .string(machine.fire.rawValue)),
            ("releases", .array(machine.fireOutputs.map { .string($0.name) })),
        ])
    }
}
