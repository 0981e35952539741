import DoorCore
import TestSupport
import XCTest

/// The door contact's watch (DoorContact.swift, docs/policy.md "Door
/// contact"): held-open escalation T1/T2/T3, forced open as an alarm state,
/// the request-to-exit shunt.
final class DoorContactTests: XCTestCase {
    let grant = AccessVerdict.grant(action: 0, reason: "valid_v2")
    let uid = "04A1B2C3D4E5F6"

    func harness(
        warn: Int = 10, alert: Int = 30, escalate: Int = 120, rex: RequestToExitPolicy = RequestToExitPolicy()
    ) -> MachineHarness {
        var s = DoorSettings()
        s.doorContact = DoorContactPolicy(
            enabled: true, heldOpenAfter: .seconds(alert), openGrace: .seconds(10), warnAfter: .seconds(warn),
            escalateAfter: .seconds(escalate))
        s.requestToExit = rex
        var h = MachineHarness(settings: s)
        h.start()
        return h
    }

    /// Opened by a grant: no alarm. Held open: the pattern at T1 (and the
    /// ambient pattern while it lasts), the alert at T2 (the alarm state), the
    /// site at T3; closing stops the pattern and publishes the clear.
    func testHeldOpenEscalatesInThreeStagesAndClosingClearsIt() {
        var h = harness()
        h.send(MachineHarness.tag(uid, grant))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened])
        XCTAssertEqual(h.machine.doorAlarm, .none)
        XCTAssertEqual(h.advance(.seconds(9)).eventKinds, [.actionCompleted])
        let t1 = h.advance(.seconds(1))
        XCTAssertEqual(t1.eventKinds, [.doorHeldOpenWarning])
        XCTAssertTrue(t1.contains(.feedback(.heldOpen)), "\(t1)")
        XCTAssertEqual(h.machine.heldOpenStage, .warning)
        XCTAssertEqual(h.machine.ambientFeedback, .heldOpen, "the pattern comes back after a tap's")
        XCTAssertEqual(h.machine.doorAlarm, .none, "a warning at the door is not yet an alarm")
        XCTAssertEqual(h.advance(.seconds(19)).eventKinds, [])
        XCTAssertEqual(h.advance(.seconds(1)).eventKinds, [.doorHeldOpen])
        XCTAssertEqual(h.machine.doorAlarm, .heldOpen)
        XCTAssertEqual(h.advance(.seconds(89)).eventKinds, [])
        XCTAssertEqual(h.advance(.seconds(1)).eventKinds, [.doorHeldOpenEscalated])
        XCTAssertEqual(h.machine.heldOpenStage, .escalated)
        XCTAssertEqual(h.advance(.seconds(3600)).eventKinds, [], "nothing after the last stage")
        let close = h.send(.doorContact(open: false))
        XCTAssertEqual(
            close,
            [
                .cancelTimer(.doorHeldOpen(generation: 1)), .emit(DoorEvent(.doorClosed)), .stopFeedback(.heldOpen),
                .emit(DoorEvent(.doorAlarmCleared, reason: "held_open")),
            ])
        XCTAssertEqual(h.machine.doorAlarm, .none)
        XCTAssertEqual(h.machine.heldOpenStage, .none)
        XCTAssertEqual(h.machine.ambientFeedback, .heartbeat)
    }

    /// Each stage is off at zero; the old single `held_open_s` is the alert
    /// alone, as before the stages (no pattern, no escalation).
    func testStagesAtZeroAreOffAndTheAlertAloneBehavesAsBefore() {
        var h = harness(warn: 0, alert: 30, escalate: 0)
        h.send(MachineHarness.tag(uid, grant))
        h.send(.doorContact(open: true))
        let all = h.advance(.seconds(600))
        XCTAssertEqual(all.eventKinds, [.actionCompleted, .doorHeldOpen])
        XCTAssertFalse(all.contains(.feedback(.heldOpen)))
        XCTAssertEqual(h.send(.doorContact(open: false)).eventKinds, [.doorClosed, .doorAlarmCleared])
        XCTAssertFalse(h.log.contains(.stopFeedback(.heldOpen)), "no pattern was started")

        var off = harness(warn: 0, alert: 0, escalate: 60)
        off.send(MachineHarness.tag(uid, grant))
        off.send(.doorContact(open: true))
        XCTAssertEqual(off.advance(.seconds(60)).eventKinds, [.actionCompleted, .doorHeldOpenEscalated])
        XCTAssertEqual(off.machine.doorAlarm, .heldOpen, "escalated without an alert stage: still an alarm")
    }

    /// A door closed before T1 publishes nothing more than its close; the
    /// next opening counts from zero.
    func testClosingBeforeTheFirstStageEndsTheCount() {
        var h = harness()
        h.send(MachineHarness.tag(uid, grant))
        h.send(.doorContact(open: true))
        h.advance(.seconds(9))
        XCTAssertEqual(h.send(.doorContact(open: false)).eventKinds, [.doorClosed])
        XCTAssertEqual(h.advance(.seconds(600)).eventKinds, [])
        h.send(.tagDeparted(TagUID(hex: uid)!))
        h.advance(.seconds(2))
        h.send(MachineHarness.tag(uid, grant))
        h.send(.doorContact(open: true))
        XCTAssertEqual(h.advance(.seconds(9)).eventKinds, [.actionCompleted])
        XCTAssertEqual(h.advance(.seconds(1)).eventKinds, [.doorHeldOpenWarning])
    }

    /// Forced open: the alarm state at once (not only the event), kept while
    /// the door stays open, ended by the close with its clear.
    func testForcedOpenIsAnAlarmStateUntilTheDoorCloses() {
        var h = harness(warn: 0, alert: 30, escalate: 0)
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened, .doorForcedOpen])
        XCTAssertEqual(h.machine.doorAlarm, .forcedOpen)
        XCTAssertEqual(h.advance(.seconds(30)).eventKinds, [.doorHeldOpen])
        XCTAssertEqual(h.machine.doorAlarm, .forcedOpen, "forced stays the alarm shown")
        XCTAssertEqual(
            h.send(.doorContact(open: false)).events,
            [DoorEvent(.doorClosed), DoorEvent(.doorAlarmCleared, reason: "forced_open,held_open")])
        XCTAssertEqual(h.machine.doorAlarm, .none)
        // A grant, passage and a fire alarm explain an opening.
        h.send(.admin(.setMode(.passage)))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened])
        XCTAssertEqual(h.machine.doorAlarm, .none)
    }

    /// A request to exit marks the next opening as an exit for its grace
    /// (shunt only by default: the strike does not move); after the grace,
    /// or once an opening has spent it, an opening is forced again.
    func testRequestToExitShuntsTheNextOpeningForItsGrace() {
        var h = harness(rex: RequestToExitPolicy(grace: .seconds(5)))
        let press = h.send(.requestToExit(pressed: true))
        XCTAssertEqual(press.eventKinds, [.requestToExit])
        XCTAssertEqual(press.drives, [], "shunt only: no output moves")
        h.send(.requestToExit(pressed: false))
        h.advance(.seconds(4))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened], "an exit, not forced")
        h.send(.doorContact(open: false))
        XCTAssertEqual(
            h.send(.doorContact(open: true)).eventKinds, [.doorOpened, .doorForcedOpen], "the exit was spent")
        h.send(.doorContact(open: false))

        h.send(.requestToExit(pressed: true))
        h.send(.requestToExit(pressed: false))
        h.advance(.seconds(5))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened, .doorForcedOpen], "grace over")
        h.send(.doorContact(open: false))

        // A PIR held active covers the opening whatever its length.
        h.send(.requestToExit(pressed: true))
        h.advance(.seconds(60))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened])
    }

    /// With an action, a press also runs it (the strike), in lockdown too.
    func testRequestToExitWithAnActionPulsesTheStrikeEvenInLockdown() {
        var h = harness(rex: RequestToExitPolicy(grace: .seconds(5), action: 0))
        h.send(.admin(.setMode(.lockdown)))
        let press = h.send(.requestToExit(pressed: true))
        XCTAssertEqual(press.drives, [.drive(output: "strike", .unlocked)])
        XCTAssertEqual(press.events, [DoorEvent(.exitRequest, action: 0, source: "request_to_exit")])
        XCTAssertEqual(h.advance(.seconds(3)).drives, [.drive(output: "strike", .locked)])
    }

    /// Entering passage with the door held open stops the pattern and clears
    /// the held-open stage; another mode change (lockdown) keeps the count.
    func testPassageClearsTheHeldOpenStageAndLockdownKeepsTheCount() {
        var h = harness()
        h.send(MachineHarness.tag(uid, grant))
        h.send(.doorContact(open: true))
        h.advance(.seconds(10))
        XCTAssertEqual(h.machine.heldOpenStage, .warning)
        let passage = h.send(.admin(.setMode(.passage)))
        XCTAssertTrue(passage.contains(.stopFeedback(.heldOpen)), "\(passage)")
        XCTAssertEqual(passage.eventKinds, [.doorAlarmCleared, .modeChanged])
        XCTAssertEqual(h.advance(.seconds(600)).eventKinds, [])
        h.send(.admin(.setMode(.normal)))
        XCTAssertEqual(h.advance(.seconds(15)).eventKinds, [.doorHeldOpenWarning])
        h.send(.admin(.setMode(.lockdown)))
        XCTAssertEqual(h.advance(.seconds(15)).eventKinds, [.doorHeldOpen], "the count went on through lockdown")
    }

    /// A fire alarm (issue 36 follow-up): doors stand propped for the
    /// evacuation, so no held-open stage runs while the alarm holds the
    /// outputs released, cleared but not reset included; the reset starts
    /// the count afresh for a door still open (before: the warning, the alert
    /// and the escalation went out during the fire).
    func testNoHeldOpenStageDuringAFireAlarmAndTheCountStartsAfreshAtItsReset() {
        var h = harness()
        h.send(.fireAlarm(active: true))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened], "not forced in a fire")
        let during = h.advance(.seconds(3600))
        XCTAssertEqual(during.eventKinds, [], "\(during)")
        XCTAssertFalse(during.contains(.feedback(.heldOpen)), "no buzzer during the evacuation")
        XCTAssertEqual(h.machine.heldOpenStage, .none)
        XCTAssertEqual(h.machine.doorAlarm, .none)
        XCTAssertEqual(h.send(.fireAlarm(active: false)).eventKinds, [.fireCleared])
        XCTAssertEqual(h.advance(.seconds(3600)).eventKinds, [], "cleared, not reset: still released, still no count")
        XCTAssertEqual(h.send(.admin(.fireReset(who: "uid=1000"))).eventKinds, [.fireReset])
        XCTAssertEqual(h.advance(.seconds(9)).eventKinds, [])
        XCTAssertEqual(h.advance(.seconds(1)).eventKinds, [.doorHeldOpenWarning], "counted from the reset")
        XCTAssertEqual(h.advance(.seconds(20)).eventKinds, [.doorHeldOpen])
        XCTAssertEqual(h.advance(.seconds(90)).eventKinds, [.doorHeldOpenEscalated])
    }

    /// A door already held open when the alarm comes: the pattern stops, the
    /// stage reached is cleared (published), nothing escalates; the site's
    /// signal does the same as the door's own input.
    func testAFireAlarmStopsAHeldOpenCountAlreadyRunning() {
        for alarm in [DoorInput.fireAlarm(active: true), .siteFire(active: true, by: "alice")] {
            var h = harness()
            h.send(MachineHarness.tag(uid, grant))
            h.send(.doorContact(open: true))
            XCTAssertEqual(h.advance(.seconds(30)).eventKinds, [.actionCompleted, .doorHeldOpenWarning, .doorHeldOpen])
            XCTAssertEqual(h.machine.doorAlarm, .heldOpen)
            let fire = h.send(alarm)
            XCTAssertTrue(fire.contains(.stopFeedback(.heldOpen)), "\(fire)")
            XCTAssertEqual(fire.eventKinds, [.fireAlarm, .doorAlarmCleared], "\(alarm)")
            XCTAssertEqual(fire.events.last?.reason, "held_open")
            XCTAssertEqual(h.machine.doorAlarm, .none)
            XCTAssertEqual(h.machine.ambientFeedback, .heartbeat)
            XCTAssertEqual(h.advance(.seconds(3600)).eventKinds, [], "no escalation during the fire (\(alarm))")
        }
    }

    /// The stages in time order whatever their names' order, zero ones left out.
    func testStagesAreOrderedByTime() {
        let p = DoorContactPolicy(
            enabled: true, heldOpenAfter: .seconds(30), warnAfter: .seconds(5), escalateAfter: .zero)
        XCTAssertEqual(p.heldOpenStages.map(\.stage), [.warning, .alert])
        XCTAssertEqual(p.heldOpenStages.map(\.after), [.seconds(5), .seconds(30)])
    }
}
