import DoorCore
import TestSupport
import XCTest

/// docs/policy.md "Lockdown": the machine's half. The site's lockdown locks
/// the door (passage and running actions stop), only a `lockdown_exempt`
/// action's credentials open, no mode change lifts it but `lockdown end`,
/// a fire alarm still releases, and a machine started with the persisted
/// lockdown starts locked down.
final class LockdownMachineTests: XCTestCase {
    let uid = TagUID(hex: "04A1B2C3D4E5F6")!
    let other = TagUID(hex: "04A1B2C3D4E5F7")!

    /// A maglock (released by a fire alarm); action 0 for staff, action 1
    /// (security) exempt.
    var settings: DoorSettings {
        var s = DoorSettings(outputs: [OutputDefinition(name: "maglock", lockedLevel: .energised)])
        s.actions = [
            ActionDefinition(index: 0, name: "staff", steps: [.pulse(output: "maglock", duration: .seconds(3))]),
            ActionDefinition(index: 1, name: "security", steps: [.pulse(output: "maglock", duration: .seconds(3))]),
        ]
        s.actions[1].lockdownExempt = true
        return s
    }

    func tap(_ uid: TagUID, action: ActionIndex) -> DoorInput {
        .tagArrived(
            TagPresentation(uid: uid, content: .ours, verdict: .grant(action: action, reason: "valid_v2")))
    }

    func events(_ fx: [DoorEffect]) -> [DoorEvent] {
        fx.compactMap { if case .emit(let e) = $0 { return e } else { return nil } }
    }

    func testLockdownStopsPassageAndRunsAndOnlyAnExemptActionOpens() {
        var h = MachineHarness(settings: settings)
        h.start()
        h.send(.admin(.setMode(.passage)))
        XCTAssertEqual(h.outputs["maglock"], .unlocked)

        let started = h.send(.lockdown(.start(by: "uid=1000", source: "gatewayctl", at: 1_799_000_000)))
        XCTAssertEqual(started.first, .drive(output: "maglock", .locked), "the relay moves first")
        XCTAssertEqual(
            events(started),
            [
                DoorEvent(.modeChanged, reason: "lockdown", source: "gatewayctl"),
                DoorEvent(.lockdownStarted, source: "gatewayctl", who: "uid=1000"),
            ])
        XCTAssertEqual(h.machine.mode, .lockdown)
        XCTAssertEqual(h.machine.lockdown?.by, "uid=1000")
        XCTAssertTrue(h.machine.inLockdown)

        let denied = h.send(tap(uid, action: 0))
        XCTAssertEqual(
            events(denied), [DoorEvent(.accessDenied, reason: "lockdown", action: 0, uid: uid, source: "tag")])
        XCTAssertEqual(h.outputs["maglock"], .locked)

        let exempt = h.send(tap(other, action: 1))
        XCTAssertEqual(exempt.first, .drive(output: "maglock", .unlocked))
        XCTAssertEqual(events(exempt).first?.kind, .accessGranted)
        h.advance(.seconds(3))
        XCTAssertEqual(h.outputs["maglock"], .locked)

        // A second start (the site command heard again) changes nothing.
        XCTAssertEqual(h.send(.lockdown(.start(by: "alice", source: "site", at: 1_799_000_100))), [])
        XCTAssertEqual(h.machine.lockdown?.by, "uid=1000")

        // No mode change lifts it: an admin's, a schedule's, Home Assistant's.
        let refused = h.send(.admin(.setMode(.normal)))
        XCTAssertEqual(events(refused), [DoorEvent(.lockdownRefused, reason: "mode_normal", source: "admin")])
        XCTAssertEqual(events(h.send(.admin(.scheduledMode(.passage)))).first?.kind, .lockdownRefused)
        XCTAssertEqual(h.machine.mode, .lockdown)
        XCTAssertEqual(h.outputs["maglock"], .locked)

        let ended = h.send(.lockdown(.end(by: "alice", source: "site")))
        XCTAssertEqual(
            events(ended),
            [
                DoorEvent(.modeChanged, reason: "normal", source: "site"),
                DoorEvent(.lockdownEnded, source: "site", who: "alice"),
            ])
        XCTAssertNil(h.machine.lockdown)
        XCTAssertEqual(h.machine.mode, .normal, "never back to passage: the schedule's next edge decides")
        XCTAssertEqual(h.outputs["maglock"], .locked)
        XCTAssertEqual(events(h.send(.lockdown(.end(by: "alice", source: "site")))), [], "no lockdown to end")
        h.send(.tagDeparted(uid))
        h.advance(.seconds(2))
        XCTAssertEqual(events(h.send(tap(uid, action: 0))).first?.kind, .accessGranted)
    }

    func testAFireAlarmStillReleasesInLockdown() {
        var h = MachineHarness(settings: settings)
        h.start()
        h.send(.lockdown(.start(by: "alice", source: "site", at: 1_799_000_000)))
        let alarm = h.send(.fireAlarm(active: true))
        XCTAssertEqual(alarm.prefix(2), [.fireHold(true), .drive(output: "maglock", .unlocked)])
        XCTAssertEqual(h.outputs["maglock"], .unlocked)
        // Ending or restarting the lockdown takes nothing from the fire's hold.
        h.send(.lockdown(.end(by: "alice", source: "site")))
        h.send(.lockdown(.start(by: "alice", source: "site", at: 1_799_000_010)))
        XCTAssertEqual(h.outputs["maglock"], .unlocked)
    }

    func testAnAdminsLockdownOutlivesTheSitesAndAPersistedOneHoldsFromStart() {
        var h = MachineHarness(settings: settings)
        h.start()
        h.send(.admin(.setMode(.lockdown)))
        h.send(.lockdown(.start(by: "alice", source: "site", at: 1_799_000_000)))
        h.send(.lockdown(.end(by: "alice", source: "site")))
        XCTAssertEqual(h.machine.mode, .lockdown, "the admin's own lockdown stays")
        XCTAssertEqual(events(h.send(tap(uid, action: 1))).first?.kind, .accessGranted, "exempt in any lockdown")

        var s = settings
        s.initialMode = .passage
        s.initialLockdown = Lockdown(by: "alice", source: "site", since: 1_799_000_000)
        var restarted = MachineHarness(settings: s)
        let start = restarted.start()
        XCTAssertEqual(start.first, .drive(output: "maglock", .locked))
        XCTAssertFalse(start.contains(.drive(output: "maglock", .unlocked)), "passage never opens in lockdown")
        XCTAssertEqual(restarted.machine.mode, .lockdown)
        XCTAssertEqual(restarted.machine.lockdown?.by, "alice")
        XCTAssertEqual(events(restarted.send(tap(uid, action: 0))).first?.reason, "lockdown")
    }
}
