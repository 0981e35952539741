import DoorCore
import TestSupport
import XCTest

/// The store actions a tap needs (issue 34 Move A): the machine asks for them
/// (`DoorEffect.store`) where their place is and finishes the tap with the
/// store's answer (`DoorInput.storeAnswered`) — no copy of the machine asks
/// "would it open?" first. A guest pass's use is asked for only where the
/// door would open (or ask an approver); a SUN counter before the door does
/// anything else with the tap; `last_seen` for any tap of ours granted.
final class TapStoreTests: XCTestCase {
    let uid = TagUID(hex: "04A1B2C3D4E5F6")!
    var guest: TagPresentation {
        TagPresentation(
            uid: uid, content: .ours, verdict: .grant(action: 0, reason: "valid_v2"),
            needs: StoreNeeds(guestPass: true))
    }

    func harness(_ settings: DoorSettings = DoorSettings()) -> MachineHarness {
        var h = MachineHarness(settings: settings)
        h.start()
        return h
    }

    func testAGuestPassOpensOnlyOnceItsUseIsTaken() {
        var h = harness()
        XCTAssertEqual(h.send(.tagArrived(guest)), [.store(.takeGuestUse(uid))], "nothing moves before the use")
        let fx = h.send(.storeAnswered(.guestUse(uid, .done)))
        XCTAssertEqual(fx.drives, [.drive(output: "strike", .unlocked)])
        XCTAssertEqual(fx.events.map(\.reason), ["valid_v2"])
        XCTAssertEqual(fx.eventKinds, [.accessGranted])
    }

    /// The answer is meant to come in the turn the use was asked for; if a
    /// lockdown came first, the use taken does not open the door.
    func testALockdownBeforeTheUseIsAnsweredKeepsTheDoorShut() {
        var h = harness()
        XCTAssertEqual(h.send(.tagArrived(guest)), [.store(.takeGuestUse(uid))])
        _ = h.send(.admin(.setMode(.lockdown)))
        let fx = h.send(.storeAnswered(.guestUse(uid, .done)))
        XCTAssertFalse(fx.drives.contains(.drive(output: "strike", .unlocked)), "\(fx)")
        XCTAssertEqual(fx.events.first?.reason, "lockdown", "\(fx)")
    }

    func testAGuestPassWithoutUsesOrWithoutAStoreIsDenied() {
        for (answer, reason, counted) in [
            (StoreAnswer.Outcome.refused, "no_uses_left", false), (.failed, "registry_unavailable", true),
        ] {
            var settings = DoorSettings()
            settings.lockout.perTagThreshold = 1
            var h = harness(settings)
            XCTAssertEqual(h.send(.tagArrived(guest)), [.store(.takeGuestUse(uid))])
            let fx = h.send(.storeAnswered(.guestUse(uid, answer)))
            XCTAssertEqual(fx.drives, [], reason)
            XCTAssertEqual(
                fx.events.first, DoorEvent(.accessDenied, reason: reason, uid: uid, source: "tag"), reason)
            XCTAssertEqual(fx.eventKinds.contains(.lockout), counted, "\(reason) counts toward lockout: \(counted)")
        }
    }

    func testNoUseIsAskedForWhereTheDoorWouldNotOpen() {
        var h = harness()
        h.send(.admin(.setMode(.lockdown)))
        let fx = h.send(.tagArrived(guest))
        XCTAssertFalse(fx.contains(.store(.takeGuestUse(uid))), "lockdown: no use taken")
        XCTAssertEqual(fx.events.map(\.reason), ["lockdown"])
        // The same tag again within the quiet time: ignored, no use taken.
        var quiet = harness()
        quiet.send(.tagArrived(guest))
        quiet.send(.storeAnswered(.guestUse(uid, .done)))
        quiet.send(.tagDeparted(uid))
        XCTAssertEqual(quiet.send(.tagArrived(guest)), [])
    }

    func testAGuestPassNeedingApprovalTakesItsUseAtTheRequest() {
        var settings = DoorSettings()
        settings.actions[0].approval = ApprovalPolicy(timeout: .seconds(30), by: [.phone])
        var h = harness(settings)
        h.machine.supplyRandom(Array(repeating: 7, count: 32))
        XCTAssertEqual(h.send(.tagArrived(guest)), [.store(.takeGuestUse(uid))])
        let fx = h.send(.storeAnswered(.guestUse(uid, .done)))
        XCTAssertEqual(fx.eventKinds, [.approvalRequested])
        XCTAssertEqual(fx.drives, [])
    }

    func testASUNCounterIsAcceptedBeforeAnythingElseAndAReplayIsAFailedProof() {
        let tap = TagPresentation(
            uid: uid, content: .ours, verdict: .grant(action: 0, reason: "ntag424"),
            needs: StoreNeeds(sunCounter: 9, touchLastSeen: true))
        var h = harness()
        XCTAssertEqual(h.send(.tagArrived(tap)), [.store(.acceptSUNCounter(uid, 9))])
        let fx = h.send(.storeAnswered(.sunCounter(uid, .done)))
        XCTAssertEqual(fx.drives, [.drive(output: "strike", .unlocked)])
        XCTAssertTrue(fx.contains(.store(.touchLastSeen(uid))))
        XCTAssertEqual(fx.events.map(\.reason), ["ntag424"])

        var settings = DoorSettings()
        settings.lockout.globalThreshold = 1
        var replay = harness(settings)
        replay.send(.tagArrived(tap))
        let denied = replay.send(.storeAnswered(.sunCounter(uid, .refused)))
        XCTAssertEqual(denied.drives, [])
        XCTAssertFalse(denied.contains(.store(.touchLastSeen(uid))))
        XCTAssertEqual(denied.events.first?.reason, "counter_replay")
        XCTAssertEqual(
            denied.events.last, DoorEvent(.lockout, reason: "global"), "a replayed counter is a failed proof")
        // An answer for no waiting tap (stale) does nothing.
        XCTAssertEqual(replay.send(.storeAnswered(.sunCounter(uid, .done))), [])
    }
}
