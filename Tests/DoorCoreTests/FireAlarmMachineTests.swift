import DoorCore
import TestSupport
import XCTest

/// docs/policy.md "Fire alarm": the machine's half (the board releases on
/// its own input thread first; DoorIOTests and the gpio VM check that).
final class FireAlarmMachineTests: XCTestCase {
    let grant = AccessVerdict.grant(action: 0, reason: "valid_v2")
    let forged = AccessVerdict.deny(reason: "bad_signature", countsTowardLockout: true)
    let a = "04A1B2C3D4E5F6"

    /// A maglock (locked energised: released by default), a fail-secure
    /// strike (kept by default) and a gate said explicitly to release.
    var settings: DoorSettings {
        var s = DoorSettings(outputs: [
            OutputDefinition(name: "maglock", lockedLevel: .energised),
            OutputDefinition(name: "strike", lockedLevel: .deenergised),
            OutputDefinition(name: "gate", lockedLevel: .deenergised, onFire: .release),
        ])
        s.doorContact = DoorContactPolicy(enabled: true)
        return s
    }

    func harness(_ s: DoorSettings? = nil) -> MachineHarness {
        var h = MachineHarness(settings: s ?? settings)
        h.start()
        return h
    }

    func testTheDefaultReleasesWhatLocksEnergisedAndKeepsAFailSecureStrike() {
        XCTAssertEqual(OutputDefinition(name: "m", lockedLevel: .energised).onFire, .release)
        XCTAssertEqual(OutputDefinition(name: "s", lockedLevel: .deenergised).onFire, .keep)
        XCTAssertEqual(OutputDefinition(name: "s", lockedLevel: .deenergised, onFire: .release).onFire, .release)
        XCTAssertEqual(OutputDefinition(name: "m", lockedLevel: .energised, onFire: .keep).onFire, .keep)
    }

    func testAlarmReleasesAtOnceAndHoldsUntilTheInputClearsAndAnOperatorResets() {
        var h = harness()
        let alarm = h.send(.fireAlarm(active: true))
        XCTAssertEqual(
            alarm,
            [
                .fireHold(true), .drive(output: "maglock", .unlocked), .drive(output: "gate", .unlocked),
                .saveFire(FireLatch(state: .alarm)),
                .emit(DoorEvent(.fireAlarm, reason: "maglock,gate", source: "input")),
            ])
        XCTAssertEqual(h.machine.fire, .alarm)
        XCTAssertEqual(h.outputs["strike"], .locked, "a fail-secure strike is kept")

        // Hours later, the panel clears: nothing moves.
        XCTAssertEqual(h.advance(.seconds(7200)), [])
        let cleared = h.send(.fireAlarm(active: false))
        XCTAssertEqual(
            cleared, [.saveFire(FireLatch(state: .cleared)), .emit(DoorEvent(.fireCleared, source: "input"))])
        XCTAssertEqual(h.machine.fire, .cleared)
        XCTAssertEqual(h.outputs["maglock"], .unlocked)

        let reset = h.send(.admin(.fireReset(who: "uid=1000")))
        XCTAssertEqual(
            reset,
            [
                .drive(output: "maglock", .locked), .drive(output: "gate", .locked), .fireHold(false),
                .saveFire(.normal), .emit(DoorEvent(.fireReset, source: "gatewayctl", who: "uid=1000")),
            ])
        XCTAssertEqual(h.machine.fire, .normal)
        XCTAssertEqual(reset.events.first?.approvalDetail, "by=uid=1000", "the audit row names who reset")
    }

    func testAResetIsRefusedWhileTheInputIsInAlarmAndWithoutAnAlarm() {
        var h = harness()
        XCTAssertEqual(
            h.send(.admin(.fireReset(who: "uid=0"))),
            [.emit(DoorEvent(.fireResetRefused, reason: "no_alarm", source: "gatewayctl", who: "uid=0"))])
        h.send(.fireAlarm(active: true))
        let refused = h.send(.admin(.fireReset(who: "uid=1000")))
        XCTAssertEqual(
            refused,
            [.emit(DoorEvent(.fireResetRefused, reason: "input_active", source: "gatewayctl", who: "uid=1000"))])
        XCTAssertEqual(h.machine.fire, .alarm)
        XCTAssertEqual(h.outputs["maglock"], .unlocked)
        // In alarm again after it cleared: a reset is refused again.
        h.send(.fireAlarm(active: false))
        XCTAssertEqual(h.send(.fireAlarm(active: true)).eventKinds, [.fireAlarm])
        XCTAssertEqual(h.send(.admin(.fireReset(who: "uid=1000"))).eventKinds, [.fireResetRefused])
        XCTAssertEqual(h.outputs["maglock"], .unlocked)
    }

    /// Nothing the door's other rules do locks a released output: a passage
    /// schedule's end, a lockdown, a tap's pulse ending, a lockout.
    func testOverridesSchedulesLockdownTapsAndLockout() {
        var s = settings
        s.lockout = LockoutPolicy(perTagThreshold: 2, globalThreshold: 2, duration: .seconds(30), cap: .seconds(100))
        var h = harness(s)
        h.send(.admin(.scheduledMode(.passage)))
        h.send(.fireAlarm(active: true))
        var after: [DoorEffect] = []
        after += h.send(.admin(.scheduledMode(.normal)))
        after += h.send(.admin(.setMode(.lockdown)))
        after += h.send(.admin(.setMode(.normal)))
        after += h.send(MachineHarness.tag(a, grant))
        after += h.runAllTimers()
        after += h.send(.tagDeparted(TagUID(hex: a)!))
        after += h.advance(.seconds(2))
        for _ in 0..<3 {
            after += h.send(MachineHarness.tag(a, forged))
            after += h.send(.tagDeparted(TagUID(hex: a)!))
            after += h.advance(.seconds(2))
        }
        XCTAssertTrue(after.eventKinds.contains(.lockout), "the lockout happened")
        XCTAssertTrue(after.eventKinds.contains(.modeChanged))
        XCTAssertFalse(after.contains(.drive(output: "maglock", .locked)), "\(after.drives)")
        XCTAssertFalse(after.contains(.drive(output: "gate", .locked)), "\(after.drives)")
        XCTAssertEqual(h.outputs["maglock"], .unlocked)
        h.send(.fireAlarm(active: false))
        XCTAssertEqual(
            h.send(.admin(.fireReset(who: "uid=1000"))).drives,
            [
                .drive(output: "maglock", .locked), .drive(output: "gate", .locked),
            ])
    }

    /// A reset gives the outputs back to whatever else holds them: passage keeps them open.
    func testAResetInPassageLeavesThemToPassage() {
        var h = harness()
        h.send(.admin(.setMode(.passage)))
        h.send(.fireAlarm(active: true))
        h.send(.fireAlarm(active: false))
        let reset = h.send(.admin(.fireReset(who: "uid=1000")))
        XCTAssertEqual(reset.drives, [])
        XCTAssertTrue(reset.contains(.fireHold(false)))
        XCTAssertEqual(h.outputs["maglock"], .unlocked)
        XCTAssertEqual(h.send(.admin(.setMode(.normal))).drives.count, 3)
    }

    /// A machine made on an alarm not yet reset (a reload; a start with the
    /// input in alarm) holds the outputs released from its first effect:
    /// never driven locked on the way.
    func testAMachineStartedInAlarmNeverLocksTheReleasedOutputs() {
        var s = settings
        s.initialFire = .cleared
        var h = MachineHarness(settings: s)
        let fx = h.start()
        XCTAssertEqual(
            Array(fx.prefix(4)),
            [
                .fireHold(true), .drive(output: "maglock", .unlocked), .drive(output: "gate", .unlocked),
                .drive(output: "strike", .locked),
            ])
        XCTAssertFalse(fx.contains(.drive(output: "maglock", .locked)))
        XCTAssertEqual(h.machine.fire, .cleared)
        XCTAssertEqual(h.send(.admin(.fireReset(who: "uid=1000"))).eventKinds, [.fireReset])
    }

    /// A reload's new machine keeps what held the alarm (review finding): with
    /// the site's signal and the input both in alarm, the input clearing after
    /// a reload leaves the site's alarm holding; a reset is refused until the
    /// site's clear (before: the new machine knew no sources, the input's
    /// clear cleared the alarm and a reset relocked the maglock).
    func testAReloadKeepsWhatHoldsTheAlarm() {
        var h = harness()
        h.send(.siteFire(active: true, by: "site-admin"))
        h.send(.fireAlarm(active: true))
        XCTAssertEqual(h.machine.fireSources.count, 2)
        var s = settings
        (s.initialFire, s.initialFireSources) = (h.machine.fire, h.machine.fireSources)
        var reloaded = MachineHarness(settings: s)
        reloaded.start()
        XCTAssertEqual(reloaded.send(.fireAlarm(active: false)).eventKinds, [])
        XCTAssertEqual(reloaded.machine.fire, .alarm, "the site's signal still holds it")
        XCTAssertEqual(reloaded.send(.admin(.fireReset(who: "uid=0"))).eventKinds, [.fireResetRefused])
        XCTAssertEqual(reloaded.send(.siteFire(active: false, by: "site-admin")).eventKinds, [.fireCleared])
        XCTAssertEqual(reloaded.send(.admin(.fireReset(who: "uid=0"))).eventKinds, [.fireReset])
    }

    /// The board delivers the input in alarm before the runtime starts the
    /// machine (a gatewayd started during an alarm): start keeps them released.
    func testAnAlarmBeforeStartIsKeptByStart() {
        var h = MachineHarness(settings: settings)
        h.send(.fireAlarm(active: true))
        let fx = h.start()
        XCTAssertFalse(fx.contains(.drive(output: "maglock", .locked)), "\(fx)")
        XCTAssertEqual(h.outputs["maglock"], .unlocked)
    }

    /// What a restart must keep (FireLatch.swift) is saved each time it
    /// changes, after the outputs moved and before the events: the site's
    /// signal joining an alarm the input holds and leaving it, the clear, the
    /// reset; nothing for what changes nothing (a refused reset, a second alarm).
    func testEachChangeOfWhatARestartKeepsIsSavedAfterTheOutputsMoved() throws {
        var h = harness()
        func saves(_ fx: [DoorEffect]) -> [FireLatch] {
            fx.compactMap { if case .saveFire(let l) = $0 { return l } else { return nil } }
        }
        let alarm = h.send(.fireAlarm(active: true))
        XCTAssertEqual(saves(alarm), [FireLatch(state: .alarm)])
        XCTAssertLessThan(
            try XCTUnwrap(alarm.lastIndex(of: .drive(output: "gate", .unlocked))),
            try XCTUnwrap(alarm.firstIndex(of: .saveFire(FireLatch(state: .alarm)))),
            "the release waits for no store")
        XCTAssertEqual(saves(h.send(.siteFire(active: true, by: "alice"))), [FireLatch(state: .alarm, site: true)])
        XCTAssertEqual(saves(h.send(.siteFire(active: true, by: "alice"))), [], "nothing changed")
        XCTAssertEqual(saves(h.send(.fireAlarm(active: false))), [], "the site's signal still holds it")
        XCTAssertEqual(saves(h.send(.admin(.fireReset(who: "uid=0")))), [], "refused")
        XCTAssertEqual(saves(h.send(.siteFire(active: false, by: "alice"))), [FireLatch(state: .cleared)])
        XCTAssertEqual(saves(h.send(.admin(.fireReset(who: "uid=0")))), [.normal])
        XCTAssertEqual(saves(h.send(.admin(.fireReset(who: "uid=0")))), [], "no alarm")
        // The site first, then the input, then the site's clear while the input holds.
        h.send(.siteFire(active: true, by: "alice"))
        h.send(.fireAlarm(active: true))
        XCTAssertEqual(saves(h.send(.siteFire(active: false, by: "alice"))), [FireLatch(state: .alarm)])
    }

    /// A machine started on a saved latch (a restart): the site's alarm holds
    /// the outputs released from the first effect on, a reset is refused
    /// until the site's clear; an alarm cleared and not reset waits for the
    /// reset; an alarm the input held starts cleared (the board reads the
    /// input again and puts it back in alarm if it still is); a store that
    /// could not say starts released, waiting for a reset.
    func testAMachineStartedOnASavedLatchKeepsTheOutputsReleasedUntilTheSitesClearAndAReset() {
        func started(_ latch: FireLatch) -> (MachineHarness, [DoorEffect]) {
            var s = settings
            s.restoreFire(latch)
            var h = MachineHarness(settings: s)
            let fx = h.start()
            return (h, fx)
        }
        let fx: [DoorEffect]
        var site: MachineHarness
        (site, fx) = started(FireLatch(state: .alarm, site: true))
        XCTAssertEqual(
            Array(fx.prefix(3)),
            [.fireHold(true), .drive(output: "maglock", .unlocked), .drive(output: "gate", .unlocked)])
        XCTAssertFalse(fx.contains(.drive(output: "maglock", .locked)), "\(fx)")
        XCTAssertEqual(site.machine.fire, .alarm)
        XCTAssertEqual(site.machine.fireLatch, FireLatch(state: .alarm, site: true))
        XCTAssertEqual(site.send(.admin(.fireReset(who: "uid=0"))).eventKinds, [.fireResetRefused])
        XCTAssertEqual(site.outputs["maglock"], .unlocked)
        XCTAssertEqual(site.send(.siteFire(active: false, by: "alice")).eventKinds, [.fireCleared])
        XCTAssertEqual(site.outputs["maglock"], .unlocked, "the clear alone locks nothing")
        XCTAssertEqual(
            site.send(.admin(.fireReset(who: "uid=0"))).drives.filter { $0 == .drive(output: "maglock", .locked) }
                .count, 1)

        for latch in [FireLatch(state: .cleared), FireLatch(state: .alarm), FireLatch.unknown] {
            let fx: [DoorEffect]
            var h: MachineHarness
            (h, fx) = started(latch)
            XCTAssertFalse(fx.contains(.drive(output: "maglock", .locked)), "\(latch): \(fx)")
            XCTAssertEqual(h.machine.fire, .cleared, "\(latch)")
            XCTAssertEqual(h.outputs["maglock"], .unlocked)
            XCTAssertEqual(h.outputs["strike"], .locked, "on_fire keep stays locked (\(latch))")
            XCTAssertEqual(h.send(.admin(.fireReset(who: "uid=0"))).eventKinds, [.fireReset], "\(latch)")
            XCTAssertEqual(h.outputs["maglock"], .locked)
        }
        // The input still in alarm at the restart: in alarm again, a reset refused.
        var input = started(FireLatch(state: .alarm)).0
        XCTAssertEqual(input.send(.fireAlarm(active: true)).eventKinds, [.fireAlarm])
        XCTAssertEqual(input.send(.admin(.fireReset(who: "uid=0"))).eventKinds, [.fireResetRefused])

        let start: [DoorEffect]
        var none: MachineHarness
        (none, start) = started(.normal)
        XCTAssertEqual(none.machine.fire, .normal)
        XCTAssertTrue(start.contains(.drive(output: "maglock", .locked)))
        XCTAssertEqual(none.send(.admin(.fireReset(who: "uid=0"))).eventKinds, [.fireResetRefused])
    }

    /// People leave through the door in an alarm: it opening is not forced.
    func testTheDoorOpeningInAnAlarmIsNotForced() {
        var h = harness()
        h.send(.fireAlarm(active: true))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened])
    }
}
