import DoorCore
import TestSupport
import XCTest

/// The machine lists effects in the order they must run (issue 34 Move A):
/// in every batch the outputs move first, then the feedback, the events and
/// the timers as decided. The runtime runs them as listed (RelayOrderTests).
final class EffectOrderTests: XCTestCase {
    let grant = AccessVerdict.grant(action: 0, reason: "valid_v2")
    let uid = "04A1B2C3D4E5F6"

    /// Whether no `.drive` comes after any other effect in `batch`.
    func outputsFirst(_ batch: [DoorEffect]) -> Bool {
        func isDrive(_ effect: DoorEffect) -> Bool {
            if case .drive = effect { return true }
            return false
        }
        guard let firstOther = batch.firstIndex(where: { !isDrive($0) }) else { return true }
        return !batch[firstOther...].contains(where: isDrive)
    }

    func testAGrantedTapMovesTheRelayBeforeItsFeedbackAndEvent() {
        var h = MachineHarness()
        h.start()
        XCTAssertEqual(
            h.send(MachineHarness.tag(uid, grant)),
            [
                .drive(output: "strike", .unlocked),
                .feedback(.granted),
                .emit(DoorEvent(.accessGranted, reason: "valid_v2", action: 0, uid: TagUID(hex: uid), source: "tag")),
                .startTimer(.step(run: 1, step: 0), after: .seconds(3)),
            ])
    }

    func testEveryBatchListsItsOutputsFirst() {
        var settings = DoorSettings()
        settings.doorContact.enabled = true
        settings.button.exitAction = 0
        var h = MachineHarness(settings: settings)
        var batches: [(String, [DoorEffect])] = [("start", h.start())]
        func send(_ name: String, _ input: DoorInput) { batches.append((name, h.send(input))) }
        func advance(_ name: String, _ d: Duration) { batches.append((name, h.advance(d))) }
        send("tap", MachineHarness.tag(uid, grant))
        send("door opened", .doorContact(open: true))
        advance("pulse ends", .seconds(4))
        send("door closed", .doorContact(open: false))
        send("button down", .button(pressed: true))
        advance("held briefly", .milliseconds(200))
        send("button up", .button(pressed: false))
        send("admin open", .admin(.open(0)))
        send("passage", .admin(.setMode(.passage)))
        send("remote open in passage", .remoteCommand(.accepted(.action(0), source: .compat)))
        send("normal", .admin(.setMode(.normal)))
        send("tap again", .tagDeparted(TagUID(hex: uid)!))
        advance("quiet time", .seconds(5))
        send("tap after quiet", MachineHarness.tag(uid, grant))
        send("lockdown while running", .admin(.setMode(.lockdown)))
        advance("everything ends", .seconds(30))
        for (name, batch) in batches {
            XCTAssertTrue(outputsFirst(batch), "\(name): \(batch)")
        }
        XCTAssertGreaterThan(batches.filter { !$0.1.drives.isEmpty }.count, 5, "the scenario moves outputs")
    }
}
