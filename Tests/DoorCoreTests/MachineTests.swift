import DoorCore
import TestSupport
import XCTest

final class MachineTests: XCTestCase {
    let grant = AccessVerdict.grant(action: 0, reason: "valid_v2")
    let forged = AccessVerdict.deny(reason: "bad_signature", countsTowardLockout: true)
    let foreign = AccessVerdict.deny(reason: "not_ours", countsTowardLockout: false)
    let a = "04A1B2C3D4E5F6", b = "04000000000001"

    func harness(_ settings: DoorSettings = DoorSettings()) -> MachineHarness {
        var h = MachineHarness(settings: settings)
        h.start()
        return h
    }

    func testStartLocksEveryOutputBeforeAnythingElse() {
        var h = MachineHarness(
            settings: DoorSettings(outputs: [
                OutputDefinition(name: "strike"),
                OutputDefinition(name: "gate", lockedLevel: .energised),
            ]))
        XCTAssertEqual(
            h.start(),
            [
                .drive(output: "strike", .locked), .drive(output: "gate", .locked),
                .emit(DoorEvent(.started, reason: "normal")),
                .feedback(.heartbeat),
            ])
        XCTAssertEqual(h.machine.state, .idle)
    }

    func testGrantedTapPulsesThenLocksInOrder() {
        var h = harness()
        let fx = h.send(MachineHarness.tag(a, grant))
        XCTAssertEqual(
            fx,
            [
                .drive(output: "strike", .unlocked),
                .feedback(.granted),
                .emit(DoorEvent(.accessGranted, reason: "valid_v2", action: 0, uid: TagUID(hex: a), source: "tag")),
                .startTimer(.step(run: 1, step: 0), after: .seconds(3)),
            ])
        XCTAssertEqual(h.advance(.milliseconds(2999)), [])
        XCTAssertEqual(
            h.advance(.milliseconds(1)),
            [
                .drive(output: "strike", .locked),
                .emit(DoorEvent(.actionCompleted, action: 0, source: "tag")),
            ])
    }

    func testDeniedTapNeverDrives() {
        var h = harness()
        let fx = h.send(MachineHarness.tag(a, forged))
        XCTAssertEqual(
            fx,
            [
                .feedback(.denied),
                .emit(DoorEvent(.accessDenied, reason: "bad_signature", uid: TagUID(hex: a), source: "tag")),
            ])
    }

    func testMultiStepActionsAndClamping() {
        let steps: [OutputStep] = [
            .pulse(output: "open", duration: .milliseconds(500)), .wait(.seconds(10)),
            .pulse(output: "stop", duration: .seconds(600)), .pulse(output: "nowhere", duration: .seconds(1)),
        ]
        var h = harness(
            DoorSettings(
                outputs: [OutputDefinition(name: "open"), OutputDefinition(name: "stop")],
                actions: [ActionDefinition(index: 0, name: "garage", steps: steps)]))
        h.send(MachineHarness.tag(a, grant))
        XCTAssertEqual(h.outputs["open"], .unlocked)
        h.advance(.milliseconds(500))
        XCTAssertEqual(h.outputs["open"], .locked)
        XCTAssertNil(h.outputs["stop"].flatMap { $0 == .unlocked ? $0 : nil })
        h.advance(.seconds(10))
        XCTAssertEqual(h.outputs["stop"], .unlocked)
        // 600 s is clamped to the 10 s default maximum.
        let fx = h.advance(.seconds(10))
        XCTAssertEqual(fx.drives, [.drive(output: "stop", .locked)])
        XCTAssertEqual(fx.eventKinds, [.actionCompleted], "the unknown output's step is skipped")
        XCTAssertTrue(h.timers.isEmpty)
    }

    func testATagLeftOnTheReaderFiresOnce() {
        var h = harness()
        XCTAssertEqual(h.send(MachineHarness.tag(a, grant)).eventKinds, [.accessGranted])
        XCTAssertEqual(h.send(MachineHarness.tag(a, grant)), [], "still present")
        h.send(.tagDeparted(TagUID(hex: a)!))
        h.advance(.milliseconds(900))
        XCTAssertEqual(h.send(MachineHarness.tag(a, grant)), [], "back within 1 s: the same tap")
        h.send(.tagDeparted(TagUID(hex: a)!))
        h.advance(.seconds(1))
        XCTAssertEqual(h.send(MachineHarness.tag(a, grant)).eventKinds, [.accessGranted])
        // Another tag is not held back by the first.
        XCTAssertEqual(h.send(MachineHarness.tag(b, forged)).eventKinds, [.accessDenied])
    }

    func testRepeatedGrantsDoNotRestartARunningAction() {
        var h = harness()
        h.send(MachineHarness.tag(a, grant))
        h.advance(.seconds(2))
        let fx = h.send(MachineHarness.tag(b, grant))
        XCTAssertEqual(fx.eventKinds, [.accessGranted])
        XCTAssertEqual(fx.drives, [])
        XCTAssertEqual(h.advance(.seconds(1)).drives, [.drive(output: "strike", .locked)])
    }

    func testShortPressOpensOnReleaseAndAHoldNeverOpens() {
        var h = harness()
        XCTAssertEqual(h.send(.button(pressed: true)).drives, [])
        h.advance(.milliseconds(4900))
        let release = h.send(.button(pressed: false))
        XCTAssertEqual(release.eventKinds, [.exitRequest])
        XCTAssertEqual(release.drives, [.drive(output: "strike", .unlocked)])
        h.runAllTimers()

        h.send(.button(pressed: true))
        let atHold = h.advance(.seconds(5))
        XCTAssertEqual(atHold.eventKinds, [.provisioningArmed])
        XCTAssertTrue(atHold.contains(.feedback(.provisioningArmed)))
        h.advance(.seconds(3))
        let late = h.send(.button(pressed: false))
        XCTAssertEqual(late.drives, [])
        XCTAssertEqual(late.eventKinds, [])
        // Noise shorter than the minimum press does nothing either.
        h.send(.button(pressed: true))
        h.advance(.milliseconds(20))
        XCTAssertEqual(h.send(.button(pressed: false)).drives, [])
    }

    func testHoldWithArmingDisabledStillNeverOpens() {
        var s = DoorSettings()
        s.provisioning.buttonArmed = false
        var h = harness(s)
        h.send(.button(pressed: true))
        XCTAssertEqual(h.advance(.seconds(6)).events.map(\.reason), ["button_arming_disabled"])
        XCTAssertEqual(h.send(.button(pressed: false)).drives, [])
    }

    func testProvisioningWritesBlankOrOursRefusesForeignAndTimesOut() {
        var h = harness()
        h.send(.admin(.armProvisioning(ProvisioningJob(action: 1, label: "front"))))
        let refused = h.send(MachineHarness.tag(a, foreign, content: .foreign))
        XCTAssertEqual(refused.events.map(\.reason), ["foreign_content"])
        let fx = h.send(MachineHarness.tag(b, .deny(reason: "not_ours", countsTowardLockout: false), content: .blank))
        XCTAssertEqual(fx.eventKinds, [.provisioningWriting])
        XCTAssertTrue(fx.contains(.writeTag(ProvisioningJob(action: 1, label: "front", uid: TagUID(hex: b)))))
        XCTAssertEqual(fx.drives, [], "a tag being provisioned never opens")
        // One tag per arming: another tag during the write is ignored.
        XCTAssertEqual(h.send(MachineHarness.tag("04000000000009", grant)), [])
        let done = h.send(.writeResult(uid: TagUID(hex: b)!, .written))
        XCTAssertEqual(done.eventKinds, [.provisioningWritten])
        XCTAssertTrue(done.contains(.feedback(.tagWritten)))
        XCTAssertEqual(h.machine.provisioning, .idle)

        h.send(.admin(.armProvisioning(ProvisioningJob(action: 0))))
        XCTAssertEqual(h.advance(.seconds(59)).eventKinds, [])
        let timeout = h.advance(.seconds(1))
        XCTAssertEqual(timeout.events.map(\.reason), ["timeout"])
        XCTAssertTrue(timeout.contains(.stopFeedback(.provisioningArmed)))
        XCTAssertEqual(h.machine.provisioning, .idle)
    }

    /// `provision --reissue UID` (docs/ntag424.md "Re-issuing a tag"): any
    /// other tag is refused and the job stays armed; the named one is written.
    func testAReissueJobTakesOnlyTheTagItNames() {
        var h = harness()
        var job = ProvisioningJob(action: 1, label: "again")
        job.reissue = TagUID(hex: b)
        h.send(.admin(.armProvisioning(job)))
        let other = h.send(MachineHarness.tag(a, grant, content: .ours))
        XCTAssertEqual(other.events.map(\.reason), ["not_reissue_tag"])
        XCTAssertFalse(other.contains { if case .writeTag = $0 { return true } else { return false } })
        guard case .armed = h.machine.provisioning else { return XCTFail("the job did not stay armed") }
        let named = h.send(MachineHarness.tag(b, grant, content: .ours))
        XCTAssertEqual(named.eventKinds, [.provisioningWriting])
        var written = job
        written.uid = TagUID(hex: b)
        XCTAssertTrue(named.contains(.writeTag(written)))
    }

    func testProvisioningFailureAndOverwrite() {
        var h = harness()
        h.send(.admin(.armProvisioning(ProvisioningJob(action: 0, overwrite: true))))
        XCTAssertEqual(h.send(MachineHarness.tag(a, foreign, content: .foreign)).eventKinds, [.provisioningWriting])
        let failed = h.send(.writeResult(uid: TagUID(hex: a)!, .failed("tag_lost")))
        XCTAssertEqual(failed.events.first?.reason, "tag_lost")
        XCTAssertTrue(failed.contains(.feedback(.writeFailed)))
        // A stale timeout from that arming is ignored.
        XCTAssertEqual(h.advance(.seconds(120)).eventKinds, [])
    }

    func testButtonArmingRefusedInLockdownAndLockdownCancelsArming() {
        var h = harness()
        h.send(.admin(.armProvisioning(ProvisioningJob(action: 0))))
        let lock = h.send(.admin(.setMode(.lockdown)))
        XCTAssertEqual(lock.eventKinds, [.provisioningCancelled, .modeChanged])
        h.send(.button(pressed: true))
        XCTAssertEqual(h.advance(.seconds(5)).events.map(\.reason), ["lockdown"])
    }

    func testLockoutPerTagCountsOnlyOurStickersAndSparesTheExitButton() {
        var h = harness()
        for _ in 0..<5 {
            h.send(MachineHarness.tag(b, foreign, content: .foreign))
            h.send(.tagDeparted(TagUID(hex: b)!))
            h.advance(.seconds(2))
        }
        XCTAssertTrue(h.machine.lockoutStatus(at: h.clock.monotonic).tags.isEmpty, "foreign tags are not an attack")
        var kinds: [DoorEvent.Kind] = []
        for _ in 0..<3 {
            kinds += h.send(MachineHarness.tag(a, forged)).eventKinds
            h.send(.tagDeparted(TagUID(hex: a)!))
            h.advance(.seconds(2))
        }
        XCTAssertEqual(kinds, [.accessDenied, .accessDenied, .accessDenied, .lockout])
        // Even a valid sticker on that UID is refused while locked out …
        let locked = h.send(MachineHarness.tag(a, grant))
        XCTAssertEqual(locked.events.map(\.reason), ["locked_out"])
        XCTAssertTrue(locked.contains(.feedback(.lockedOut)))
        XCTAssertEqual(locked.drives, [])
        h.send(.tagDeparted(TagUID(hex: a)!))
        // … but another tag, the exit button and remote commands still work.
        XCTAssertEqual(h.send(MachineHarness.tag(b, grant)).eventKinds, [.accessGranted])
        h.runAllTimers()
        h.send(.button(pressed: true))
        h.advance(.milliseconds(200))
        XCTAssertEqual(h.send(.button(pressed: false)).eventKinds, [.exitRequest])
        h.runAllTimers()
        XCTAssertEqual(h.send(.remoteCommand(.accepted(.action(0), source: .native))).eventKinds, [.remoteAccepted])
    }

    func testLockoutExpiresDoublesAndIsCapped() {
        var s = DoorSettings()
        s.lockout = LockoutPolicy(perTagThreshold: 1, globalThreshold: 100, duration: .seconds(30), cap: .seconds(100))
        var h = harness(s)
        func deny() -> [DoorEffect] {
            let fx = h.send(MachineHarness.tag(a, forged))
            h.send(.tagDeparted(TagUID(hex: a)!))
            return fx
        }
        XCTAssertTrue(deny().contains(.startTimer(.lockoutEnd(generation: 1), after: .seconds(30))))
        XCTAssertEqual(h.advance(.seconds(30)).eventKinds, [.lockoutEnded])
        XCTAssertTrue(deny().contains(.startTimer(.lockoutEnd(generation: 2), after: .seconds(60))))
        h.advance(.seconds(60))
        XCTAssertTrue(deny().contains(.startTimer(.lockoutEnd(generation: 3), after: .seconds(100))), "capped")
        let cleared = h.send(.admin(.clearLockout))
        XCTAssertEqual(cleared.eventKinds, [.lockoutCleared])
        XCTAssertEqual(h.advance(.seconds(100)).eventKinds, [], "the stale expiry timer does nothing")
        XCTAssertEqual(h.send(MachineHarness.tag(a, grant)).eventKinds, [.accessGranted])
    }

    func testGlobalLockoutBlocksEveryTag() {
        var s = DoorSettings()
        s.lockout = LockoutPolicy(perTagThreshold: 100, globalThreshold: 3)
        var h = harness(s)
        for n in 1...3 { h.send(MachineHarness.tag("0400000000000\(n)", forged)) }
        XCTAssertNotNil(h.machine.lockoutStatus(at: h.clock.monotonic).globalUntil)
        XCTAssertEqual(h.send(MachineHarness.tag("04000000000009", grant)).events.map(\.reason), ["locked_out"])
        h.advance(.seconds(30))
        XCTAssertEqual(h.send(MachineHarness.tag("04000000000008", grant)).eventKinds, [.accessGranted])
    }

    /// Issue 32 L-2 / docs/security.md L8: unknown, revoked or expired tags
    /// (a factory NTAG 424 is `unknown_tag`) count toward their own UID's
    /// lockout only; the global threshold counts failed proofs alone.
    func testOnlyFailedProofsCountTowardTheGlobalLockout() {
        var s = DoorSettings()
        s.lockout = LockoutPolicy(perTagThreshold: 3, globalThreshold: 3)
        var h = harness(s)
        for (i, reason) in ["unknown_tag", "revoked", "expired", "not_issued", "tag_revoked"].enumerated() {
            for n in 1...3 {
                let uid = "040000000001\(i)\(n)"
                h.send(MachineHarness.tag(uid, .deny(reason: reason, countsTowardLockout: true)))
                h.send(.tagDeparted(TagUID(hex: uid)!))
            }
            XCTAssertNil(h.machine.lockoutStatus(at: h.clock.monotonic).globalUntil, reason)
        }
        XCTAssertEqual(h.send(MachineHarness.tag("04000000000009", grant)).eventKinds, [.accessGranted])
        // One UID denied again and again is locked out on its own.
        let unknown = AccessVerdict.deny(reason: "unknown_tag", countsTowardLockout: true)
        var kinds: [DoorEvent.Kind] = []
        for _ in 1...3 {
            kinds += h.send(MachineHarness.tag(b, unknown)).eventKinds
            h.send(.tagDeparted(TagUID(hex: b)!))
            h.advance(.seconds(2))
        }
        XCTAssertEqual(kinds.filter { $0 == .lockout }.count, 1)
        XCTAssertEqual(Array(h.machine.lockoutStatus(at: h.clock.monotonic).tags.keys), [TagUID(hex: b)!])
        XCTAssertNil(h.machine.lockoutStatus(at: h.clock.monotonic).globalUntil)
        // Failed proofs of different UIDs still lock the reader out.
        for (i, reason) in ["auth_failed", "sun_invalid", "uid_mismatch"].enumerated() {
            let uid = "0400000000002\(i)"
            h.send(MachineHarness.tag(uid, .deny(reason: reason, countsTowardLockout: true)))
            h.send(.tagDeparted(TagUID(hex: uid)!))
        }
        XCTAssertNotNil(h.machine.lockoutStatus(at: h.clock.monotonic).globalUntil)
    }

    func testModes() {
        var h = harness()
        let passage = h.send(.admin(.setMode(.passage)))
        XCTAssertEqual(passage.drives, [.drive(output: "strike", .unlocked)])
        // A tap in passage is granted and logged; the action's own pulse does not lock the held output.
        XCTAssertEqual(h.send(MachineHarness.tag(a, grant)).drives, [])
        XCTAssertEqual(h.runAllTimers().drives, [])
        XCTAssertEqual(h.outputs["strike"], .unlocked)
        let lockdown = h.send(.admin(.setMode(.lockdown)))
        XCTAssertEqual(lockdown.drives, [.drive(output: "strike", .locked)])
        h.send(.tagDeparted(TagUID(hex: a)!))
        h.advance(.seconds(2))
        XCTAssertEqual(h.send(MachineHarness.tag(a, grant)).events.map(\.reason), ["lockdown"])
        XCTAssertEqual(
            h.send(.remoteCommand(.accepted(.action(0), source: .native))).events.map(\.reason), ["lockdown"])
        XCTAssertEqual(h.send(.admin(.open(0))).eventKinds, [.adminOpen])
        h.runAllTimers()
        h.send(.button(pressed: true))
        h.advance(.milliseconds(300))
        XCTAssertEqual(h.send(.button(pressed: false)).eventKinds, [.exitRequest])
        XCTAssertEqual(h.send(.admin(.setMode(.lockdown))), [], "no change, no event")
    }

    func testInitialPassageModeLocksFirstThenUnlocks() {
        var h = MachineHarness(settings: DoorSettings(initialMode: .passage))
        XCTAssertEqual(h.start().drives, [.drive(output: "strike", .locked), .drive(output: "strike", .unlocked)])
    }

    func testRemoteCommands() {
        var h = harness()
        let ok = h.send(.remoteCommand(.accepted(.action(0), source: .compat)))
        XCTAssertEqual(ok.eventKinds, [.remoteAccepted])
        XCTAssertEqual(ok.drives, [.drive(output: "strike", .unlocked)])
        let rejected = h.send(.remoteCommand(.rejected(code: "replay", detail: "seen", source: .compat)))
        XCTAssertEqual(rejected, [.emit(DoorEvent(.remoteRejected, reason: "replay", source: "compat"))])
        XCTAssertEqual(h.send(.remoteCommand(.accepted(.report, source: .compat))).first, .publishReport)
        XCTAssertEqual(
            h.send(.remoteCommand(.accepted(.action(9), source: .native))).events.map(\.reason), ["unknown_action"])
    }

    /// Home Assistant's mode selector and lockout button: the same effects as
    /// the admin's, audited with their source; no remote mode change leaves
    /// lockdown (only admins and the exit button act there).
    func testRemoteModeAndLockoutClear() {
        var s = DoorSettings()
        s.lockout = LockoutPolicy(perTagThreshold: 100, globalThreshold: 3)
        var h = harness(s)
        let passage = h.send(.remoteCommand(.accepted(.mode(.passage), source: .homeAssistant)))
        XCTAssertEqual(passage.drives, [.drive(output: "strike", .unlocked)])
        XCTAssertEqual(passage.events, [DoorEvent(.modeChanged, reason: "passage", source: "homeassistant")])
        XCTAssertNil(passage.events.first?.accessSource, "a mode change is not an access")
        XCTAssertEqual(
            h.send(.remoteCommand(.accepted(.mode(.normal), source: .homeAssistant))).drives,
            [.drive(output: "strike", .locked)])
        for n in 1...3 { h.send(MachineHarness.tag("0400000000000\(n)", forged)) }
        XCTAssertTrue(h.machine.lockoutStatus(at: h.clock.monotonic).isActive)
        XCTAssertEqual(
            h.send(.remoteCommand(.accepted(.clearLockout, source: .homeAssistant))).events,
            [DoorEvent(.lockoutCleared, source: "homeassistant")])
        XCTAssertFalse(h.machine.lockoutStatus(at: h.clock.monotonic).isActive)
        h.send(.admin(.setMode(.lockdown)))
        let undo = h.send(.remoteCommand(.accepted(.mode(.normal), source: .homeAssistant)))
        XCTAssertEqual(undo, [.emit(DoorEvent(.remoteRejected, reason: "lockdown", source: "homeassistant"))])
        XCTAssertEqual(h.machine.mode, .lockdown)
        XCTAssertEqual(h.send(.admin(.setMode(.normal))).events.map(\.source), ["admin"])
    }

    func testAccessSourceCountsEveryOpenButNotReportsOrModes() {
        XCTAssertEqual(DoorEvent(.accessGranted, reason: "valid_v2", action: 0).accessSource, "tag")
        XCTAssertEqual(DoorEvent(.exitRequest, action: 0, source: "button").accessSource, "button")
        XCTAssertEqual(DoorEvent(.adminOpen, action: 0, source: "admin").accessSource, "admin")
        XCTAssertEqual(DoorEvent(.remoteAccepted, action: 1, source: "homeassistant").accessSource, "homeassistant")
        XCTAssertNil(DoorEvent(.remoteAccepted, reason: "report", source: "compat").accessSource)
        XCTAssertNil(DoorEvent(.accessDenied, reason: "bad_signature").accessSource)
        XCTAssertNil(DoorEvent(.modeChanged, reason: "passage", source: "homeassistant").accessSource)
    }

    func testReaderFaultAndRecovery() {
        var h = harness()
        h.send(MachineHarness.tag(a, grant))
        let fault = h.send(.readerFault("no answer"))
        XCTAssertEqual(
            fault, [.feedback(.readerFault), .emit(DoorEvent(.readerFault, reason: "no answer"))],
            "a fault never drives")
        XCTAssertFalse(h.machine.readerHealthy)
        XCTAssertEqual(h.machine.state, .readerFault)
        XCTAssertEqual(h.send(.readerFault("still")).count, 1, "the pattern is not restarted")
        XCTAssertEqual(
            h.advance(.seconds(3)).drives, [.drive(output: "strike", .locked)], "the running pulse still ends")
        XCTAssertEqual(
            h.send(.readerRecovered),
            [.stopFeedback(.readerFault), .feedback(.heartbeat), .emit(DoorEvent(.readerRecovered))])
        XCTAssertEqual(h.machine.state, .idle)
        XCTAssertEqual(h.send(.readerRecovered), [])
    }

    func testDoorContactAlarms() {
        var s = DoorSettings()
        // The one alert of before the stages (DoorContactTests has the stages).
        s.doorContact = DoorContactPolicy(
            enabled: true, heldOpenAfter: .seconds(30), openGrace: .seconds(10), warnAfter: .zero, escalateAfter: .zero)
        var h = harness(s)
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened, .doorForcedOpen])
        XCTAssertEqual(h.advance(.seconds(30)).eventKinds, [.doorHeldOpen])
        // The close publishes the clear of both alarms (DoorContactTests has the stages).
        XCTAssertEqual(h.send(.doorContact(open: false)).eventKinds, [.doorClosed, .doorAlarmCleared])
        h.send(MachineHarness.tag(a, grant))
        h.advance(.seconds(5))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened], "opened within the grant's grace")
        XCTAssertEqual(h.send(.doorContact(open: false)).eventKinds, [.doorClosed])
        XCTAssertEqual(h.advance(.seconds(60)).eventKinds, [], "held-open timer cancelled on close")
    }

    func testStaleTimersAreIgnored() {
        var h = harness()
        XCTAssertEqual(h.send(.timerFired(.step(run: 42, step: 0))), [])
        XCTAssertEqual(h.send(.timerFired(.buttonHold(press: 7))), [])
        XCTAssertEqual(h.send(.timerFired(.provisioningTimeout(arming: 3))), [])
        XCTAssertEqual(h.send(.timerFired(.doorHeldOpen(generation: 5))), [])
        h.send(MachineHarness.tag(a, grant))
        XCTAssertEqual(h.send(.timerFired(.step(run: 1, step: 5))), [], "a step the run is not at")
    }

    func testStatusFollowsRunsAndProvisioning() {
        var h = harness()
        h.send(.remoteCommand(.accepted(.action(0), source: .native)))
        XCTAssertEqual(h.machine.state, .running)
        XCTAssertEqual(h.machine.running, [DoorMachine.RunningAction(action: 0, source: "native")])
        h.send(.admin(.armProvisioning(ProvisioningJob(action: 0))))
        XCTAssertEqual(h.machine.state, .provisioningArmed)
        h.send(MachineHarness.tag(a, grant, content: .ours))
        XCTAssertEqual(h.machine.state, .writing)
        h.send(.writeResult(uid: TagUID(hex: a)!, .written))
        h.runAllTimers()
        XCTAssertEqual(h.machine.state, .idle)
        XCTAssertEqual(h.machine.running, [])
    }

    /// Lockdown ends what a sticker or remote command started (its output is
    /// locked at once) and keeps what the exit button or an admin started.
    func testLockdownStopsTagAndRemoteRunsButNotExitOrAdmin() {
        let settings = DoorSettings(
            outputs: [OutputDefinition(name: "strike"), OutputDefinition(name: "gate")],
            actions: [
                ActionDefinition(index: 0, name: "door", steps: [.pulse(output: "strike", duration: .seconds(3))]),
                ActionDefinition(
                    index: 1, name: "gate", steps: [.wait(.seconds(1)), .pulse(output: "gate", duration: .seconds(2))]),
            ])
        var h = harness(settings)
        h.send(MachineHarness.tag(a, .grant(action: 1, reason: "valid_v2")))
        h.send(.button(pressed: true))
        h.advance(.milliseconds(200))
        h.send(.button(pressed: false))
        XCTAssertEqual(h.outputs["strike"], .unlocked)
        let lockdown = h.send(.admin(.setMode(.lockdown)))
        XCTAssertEqual(
            lockdown,
            [
                .cancelTimer(.step(run: 1, step: 0)),
                .emit(DoorEvent(.actionCancelled, reason: "lockdown", action: 1, source: "tag")),
                .emit(DoorEvent(.modeChanged, reason: "lockdown", source: "admin")),
            ])
        XCTAssertEqual(h.machine.running, [DoorMachine.RunningAction(action: 0, source: "button")])
        XCTAssertEqual(h.runAllTimers().drives, [.drive(output: "strike", .locked)], "the gate's step never comes")

        // A pulse under way is locked at once.
        h.send(.admin(.setMode(.normal)))
        h.send(.remoteCommand(.accepted(.action(0), source: .native)))
        XCTAssertEqual(
            h.send(.admin(.setMode(.lockdown))),
            [
                .drive(output: "strike", .locked),
                .cancelTimer(.step(run: 3, step: 0)),
                .emit(DoorEvent(.actionCancelled, reason: "lockdown", action: 0, source: "native")),
                .emit(DoorEvent(.modeChanged, reason: "lockdown", source: "admin")),
            ])
        XCTAssertEqual(h.send(.timerFired(.step(run: 3, step: 0))), [], "a firing of the cancelled step is stale")
    }

    func testPassageToLockdownLocksOnceEvenWithARunHoldingTheOutput() {
        var h = harness()
        h.send(.admin(.setMode(.passage)))
        h.send(MachineHarness.tag(a, grant))
        XCTAssertEqual(h.send(.admin(.setMode(.lockdown))).drives, [.drive(output: "strike", .locked)])
        XCTAssertEqual(h.runAllTimers().drives, [])
        XCTAssertEqual(h.outputs["strike"], .locked)
    }

    func testLeavingPassageWithTheDoorOpenStartsTheHeldOpenCount() {
        var s = DoorSettings()
        s.doorContact = DoorContactPolicy(
            enabled: true, heldOpenAfter: .seconds(30), warnAfter: .zero, escalateAfter: .zero)
        var h = harness(s)
        h.send(.admin(.setMode(.passage)))
        XCTAssertEqual(h.send(.doorContact(open: true)).eventKinds, [.doorOpened], "open is expected in passage")
        XCTAssertEqual(h.advance(.seconds(120)).eventKinds, [])
        h.send(.admin(.setMode(.normal)))
        XCTAssertEqual(h.advance(.seconds(29)).eventKinds, [])
        XCTAssertEqual(h.advance(.seconds(1)).eventKinds, [.doorHeldOpen])
        // Back to passage with the door still open: no further alarm.
        h.send(.admin(.setMode(.passage)))
        h.send(.admin(.setMode(.normal)))
        h.send(.admin(.setMode(.passage)))
        XCTAssertEqual(h.advance(.seconds(60)).eventKinds, [])
    }

    func testLockoutCountsOnlyDenialsWithinTheWindow() {
        var h = harness()  // 3 denials of one UID within 60 s
        func deny() -> [DoorEvent.Kind] {
            let kinds = h.send(MachineHarness.tag(a, forged)).eventKinds
            h.send(.tagDeparted(TagUID(hex: a)!))
            return kinds
        }
        _ = deny()
        h.advance(.seconds(31))
        _ = deny()
        h.advance(.seconds(30))
        XCTAssertEqual(deny(), [.accessDenied], "the first denial has left the window")
        h.advance(.seconds(2))
        XCTAssertEqual(deny(), [.accessDenied, .lockout])
    }

    func testManualClockKeepsWallTimeInStepWithMonotonicTime() {
        var clock = ManualClock(unixSeconds: 100)
        clock.advance(.milliseconds(600))
        clock.advance(.milliseconds(600))
        XCTAssertEqual(clock.unixSeconds, 101)
        clock.advance(.seconds(-5))
        XCTAssertEqual(clock.now.monotonic, MonotonicInstant(nanoseconds: 2_200_000_000), "never goes back")
        clock.setWall(unixSeconds: 50)
        clock.advance(.seconds(2))
        XCTAssertEqual(clock.now.wall, WallClock(unixSeconds: 52, synchronised: true))
    }

    /// Random inputs at random times. After every step: the outputs the
    /// effects left unlocked are exactly those the machine holds, and in
    /// lockdown only runs of the exit button or an admin exist. At the end,
    /// outside passage mode, every output's last drive is `.locked` once all
    /// timers have fired.
    func testRandomSequencesKeepLockdownAndAlwaysEndLocked() {
        var rng = SeededRandom(seed: 11)
        let names = ["strike", "gate"]
        let settings = DoorSettings(
            outputs: names.map { OutputDefinition(name: $0) },
            actions: [
                ActionDefinition(index: 0, name: "door", steps: [.pulse(output: "strike", duration: .seconds(3))]),
                ActionDefinition(
                    index: 1, name: "gate",
                    steps: [
                        .pulse(output: "gate", duration: .seconds(1)), .wait(.seconds(2)),
                        .pulse(output: "strike", duration: .seconds(1)),
                    ]),
            ],
            doorContact: DoorContactPolicy(enabled: true))
        let uids = ["04000000000001", "04000000000002", "04000000000003"]
        func check(_ h: MachineHarness, _ round: Int) {
            for name in names {
                XCTAssertEqual(
                    h.outputs[name] ?? .locked, h.machine.outputState(name),
                    "round \(round): effects and state agree on \(name)")
            }
            if h.machine.mode == .lockdown {
                XCTAssertTrue(
                    h.machine.running.allSatisfy { ["button", "admin"].contains($0.source) },
                    "round \(round): \(h.machine.running)")
            }
        }
        var lockdownSteps = 0
        for round in 0..<300 {
            var h = harness(settings)
            for _ in 0..<60 {
                let uid = uids[Int.random(in: 0..<3, using: &rng)]
                let input: DoorInput
                switch Int.random(in: 0..<14, using: &rng) {
                case 0, 1:
                    input = MachineHarness.tag(
                        uid, .grant(action: Int.random(in: 0...2, using: &rng), reason: "valid_v2"))
                case 2: input = MachineHarness.tag(uid, .deny(reason: "bad_signature", countsTowardLockout: true))
                case 3: input = .tagDeparted(TagUID(hex: uid)!)
                case 4: input = .button(pressed: Bool.random(using: &rng))
                case 5: input = .remoteCommand(.accepted(.action(Int.random(in: 0...1, using: &rng)), source: .native))
                case 6: input = .admin(.setMode([.normal, .lockdown, .passage][Int.random(in: 0...2, using: &rng)]))
                case 7: input = .admin(.open(Int.random(in: 0...1, using: &rng)))
                case 8: input = .admin(.armProvisioning(ProvisioningJob(action: 0)))
                case 9: input = .writeResult(uid: TagUID(hex: uid)!, Bool.random(using: &rng) ? .written : .failed("x"))
                case 10: input = .doorContact(open: Bool.random(using: &rng))
                case 11: input = .admin(.clearLockout)
                case 12: input = .readerRecovered
                default: input = .readerFault("x")
                }
                let lockdown = h.machine.mode == .lockdown
                let fx = h.send(input)
                if lockdown, h.machine.mode == .lockdown {
                    lockdownSteps += 1
                    switch input {
                    case .button, .admin(.open): break
                    default:
                        XCTAssertEqual(
                            fx.drives.filter {
                                $0 != .drive(output: "strike", .locked) && $0 != .drive(output: "gate", .locked)
                            }, [],
                            "round \(round): \(input) unlocked in lockdown")
                    }
                }
                check(h, round)
                h.advance(.milliseconds(Int64.random(in: 0...4000, using: &rng)))
                check(h, round)
            }
            let passage = h.machine.mode == .passage
            if passage {
                XCTAssertEqual(names.map { h.outputs[$0] }, [.unlocked, .unlocked], "round \(round)")
                h.send(.admin(.setMode(.normal)))
            }
            h.runAllTimers()
            XCTAssertEqual(
                names.map { h.outputs[$0] }, [.locked, .locked], "round \(round), ended in passage: \(passage)")
            XCTAssertTrue(h.machine.running.isEmpty)
            XCTAssertTrue(h.timers.isEmpty)
        }
        XCTAssertGreaterThan(lockdownSteps, 100, "the sequences spend time in lockdown")
    }
}
