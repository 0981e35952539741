import DoorCore
import GatewayControl
import GatewayStore
import Logging

/// The fire alarm's daemon glue (docs/policy.md "Fire alarm"): `gatewayctl
/// fire reset`, the fire state in `status`, and the alarm a restart keeps
/// (FireLatch.swift, in the store's site_state). The release itself is the
/// board's (its input thread) and the decisions DoorMachine's.
extension DoorRuntime {
    /// A starting door takes the store's fire alarm: an alarm nobody has reset
    /// (the site's signal still holding it, or cleared and waiting for the
    /// reset) keeps the `release` outputs released from the machine's first
    /// effect on. Unreadable, a door that can hear a fire alarm (`[fire_alarm]`
    /// or the fleet's site signal) starts released too (`FireLatch.unknown`: a
    /// fire may be on; the fail-safe side for people inside), waiting for
    /// `gatewayctl fire reset`; the reason is returned for the audit row.
    static func restoreFire(
        _ door: inout DoorSettings, store: GatewayStore, canAlarm: Bool, log: Logger
    ) -> String? {
        do {
            let latch = try store.fireLatch()
            if latch.state != .normal {
                log.critical(
                    "fire alarm kept from before the start (\(latch.site ? "the site's signal holds it" : "waiting for `gatewayctl fire reset`")): outputs released"
                )
            }
            door.restoreFire(latch)
            return nil
        } catch {
            guard canAlarm else {
                log.error("fire: the store's fire alarm state is unreadable (\(error)); this door hears no fire alarm")
                return nil
            }
            log.critical(
                "fire: the store's fire alarm state is unreadable (\(error)); starting with the outputs released until `gatewayctl fire reset`"
            )
            door.restoreFire(.unknown)
            return "the store's fire alarm state is unreadable (\(error)); released until `gatewayctl fire reset`"
        }
    }

    /// On `queue`, after the machine started: the release of an unreadable
    /// fire state, audited (`fire_alarm`, source `store`).
    func recordFireUnknown(_ why: String) {
        let released = machine.fireOutputs.map(\.name).joined(separator: ",")
        record(
            DoorEvent(.fireAlarm, reason: released.isEmpty ? "none" : released, source: "store"),
            detail: String(why.prefix(256)))
    }

    /// `DoorEffect.saveFire`, on `queue` after the outputs moved. Not saved,
    /// the door goes on as decided (the release never waits for the store);
    /// a restart then starts from what was saved before.
    func saveFire(_ latch: FireLatch) {
        do { try store.saveFireLatch(latch) } catch {
            log.error(
                "fire: the alarm's state (\(latch.state.rawValue)) not saved, a restart would not know it: \(error)")
        }
    }
}

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
