import DoorCore
import TestSupport
import XCTest

/// Consent-first approval in the door machine (docs/policy.md "Approval"),
/// on the manual clock: a tap for an action that needs approval waits; only
/// a listed approver's yes within the timeout opens.
final class ApprovalMachineTests: XCTestCase {
    let a = "04A1B2C3D4E5F6", b = "04000000000001"
    let grant = AccessVerdict.grant(action: 0, reason: "valid_v2")

    func harness(by: Set<Approver> = [.gatewayctl, .phone, .homeAssistant], timeout: Duration = .seconds(120))
        -> MachineHarness
    {
        var settings = DoorSettings()
        settings.actions[0].approval = ApprovalPolicy(timeout: timeout, by: by)
        var h = MachineHarness(settings: settings)
        h.start()
        return h
    }

    /// A tap that asks; returns the code its request event carries.
    func tap(_ h: inout MachineHarness, _ uid: String? = nil) -> String? {
        h.machine.supplyRandom(bytesFor(h))
        // A new UID per tap unless named (the same tag left on the reader is one tap).
        let n = String(h.log.count, radix: 16, uppercase: true)
        let fresh = "0410" + String(repeating: "0", count: 10 - n.count) + n
        let fx = h.send(MachineHarness.tag(uid ?? fresh, grant))
        return fx.events.first { $0.kind == .approvalRequested }?.code
    }

    func bytesFor(_ h: MachineHarness) -> [UInt8] {
        var r = SeededRandom(seed: UInt64(h.log.count) &+ 0x5eed)
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &r) }
    }

    func answer(_ code: String?, _ approve: Bool, by: Approver, who: String = "test") -> DoorInput {
        .approval(ApprovalAnswer(code: code, approve: approve, by: by, who: who))
    }

    func testATapWaitsWithoutDrivingThenAListedApproverOpensIt() throws {
        var h = harness()
        h.machine.supplyRandom(bytesFor(h))
        let fx = h.send(MachineHarness.tag(a, grant))
        XCTAssertEqual(fx.drives, [], "a tap needing approval never drives an output by itself")
        XCTAssertEqual(fx.eventKinds, [.approvalRequested])
        XCTAssertTrue(fx.contains(.feedback(.awaitingApproval)))
        XCTAssertEqual(h.machine.state, .awaitingApproval)
        let code = try XCTUnwrap(fx.events.first?.code)
        XCTAssertEqual(code.count, 6)
        XCTAssertEqual(fx.events.first?.uid, TagUID(hex: a))
        h.advance(.seconds(119))
        let yes = h.send(answer(code, true, by: .gatewayctl, who: "uid=0"))
        XCTAssertEqual(yes.eventKinds, [.approvalGranted, .accessGranted])
        XCTAssertEqual(yes.events.first?.source, "gatewayctl")
        XCTAssertEqual(yes.events.first?.who, "uid=0")
        XCTAssertEqual(yes.events.dropFirst().first?.reason, "approved")
        XCTAssertTrue(yes.contains(.stopFeedback(.awaitingApproval)))
        XCTAssertTrue(yes.contains(.drive(output: "strike", .unlocked)), "the same relay path as a grant")
        XCTAssertEqual(h.outputs["strike"], .unlocked)
        h.advance(.seconds(3))
        XCTAssertEqual(h.outputs["strike"], .locked)
        XCTAssertEqual(h.machine.state, .idle)
    }

    /// The approved grant names the reader the tap came from (review finding:
    /// it said `tag`, so an approved visitor at an entry reader never counted
    /// as in — missing from the roll call, and hard passback never saw them).
    func testTheApprovedGrantNamesTheTapsReader() throws {
        var h = harness()
        h.machine.supplyRandom(bytesFor(h))
        let fx = h.send(
            .tagArrived(TagPresentation(uid: TagUID(hex: a)!, content: .ours, verdict: grant, reader: "street")))
        let code = try XCTUnwrap(fx.events.first { $0.kind == .approvalRequested }?.code)
        let yes = h.send(answer(code, true, by: .gatewayctl))
        let granted = try XCTUnwrap(yes.events.first { $0.kind == .accessGranted })
        XCTAssertEqual(granted.source, "reader:street")
        XCTAssertEqual(granted.reason, "approved")
    }

    func testEachApproverOverItsOwnTransport() throws {
        for (approver, input) in [
            (Approver.gatewayctl, { (c: String) in self.answer(c, true, by: .gatewayctl) }),
            (.phone, { c in .remoteCommand(.accepted(.approval(code: c, approve: true), source: .native)) }),
            (
                .homeAssistant,
                { _ in .remoteCommand(.accepted(.approval(code: nil, approve: true), source: .homeAssistant)) }
            ),
        ] {
            var h = harness(by: [approver])
            let code = try XCTUnwrap(tap(&h))
            let fx = h.send(input(code))
            XCTAssertEqual(fx.eventKinds, [.approvalGranted, .accessGranted], "\(approver)")
            XCTAssertEqual(fx.events.first?.source, approver.rawValue)
            XCTAssertEqual(h.outputs["strike"], .unlocked, "\(approver)")
        }
    }

    func testDenyAndTimeoutDenyNotApprovedWithFeedback() throws {
        var h = harness(timeout: .seconds(30))
        let code = try XCTUnwrap(tap(&h))
        let no = h.send(answer(code, false, by: .phone))
        XCTAssertEqual(no.eventKinds, [.approvalDenied, .accessDenied])
        XCTAssertEqual(no.events.dropFirst().first?.reason, "not_approved")
        XCTAssertTrue(no.contains(.feedback(.denied)))
        XCTAssertEqual(no.drives, [])

        _ = try XCTUnwrap(tap(&h, b))
        XCTAssertEqual(h.advance(.milliseconds(29_999)).events, [])
        let timeout = h.advance(.milliseconds(1))
        XCTAssertEqual(timeout.eventKinds, [.approvalTimedOut, .accessDenied])
        XCTAssertEqual(timeout.events.dropFirst().first?.reason, "not_approved")
        XCTAssertEqual(timeout.events.dropFirst().first?.uid, TagUID(hex: b))
        XCTAssertTrue(timeout.contains(.feedback(.denied)))
        XCTAssertEqual(h.machine.state, .idle)
        XCTAssertNil(h.outputs["strike"].flatMap { $0 == .unlocked ? $0 : nil })
    }

    func testAnAnswerAfterTheTimeoutNeverOpens() throws {
        var h = harness(timeout: .seconds(30))
        let code = try XCTUnwrap(tap(&h))
        // The timer has not fired yet (a loaded queue), but the deadline passed.
        h.clock.advance(.seconds(31))
        let late = h.send(answer(code, true, by: .gatewayctl))
        XCTAssertEqual(late.eventKinds, [.approvalRefused, .approvalTimedOut, .accessDenied])
        XCTAssertEqual(late.events.first?.reason, "expired")
        XCTAssertEqual(late.drives, [])
        XCTAssertEqual(h.machine.state, .idle)
    }

    func testReplayedAndUnaskedApprovalsAreRefused() throws {
        var h = harness()
        // Nothing asked: neither a code nor HA's button opens.
        let unasked = h.send(answer("ABCDEF", true, by: .gatewayctl))
        XCTAssertEqual(unasked.eventKinds, [.approvalRefused])
        XCTAssertEqual(unasked.events.first?.reason, "unknown_request")
        let button = h.send(.remoteCommand(.accepted(.approval(code: nil, approve: true), source: .homeAssistant)))
        XCTAssertEqual(button.events.map(\.reason), ["no_request"])
        // Approved once; the same answer again is a replay and opens nothing more.
        let code = try XCTUnwrap(tap(&h))
        XCTAssertEqual(h.send(answer(code, true, by: .gatewayctl)).eventKinds, [.approvalGranted, .accessGranted])
        h.advance(.seconds(5))
        let again = h.send(answer(code, true, by: .gatewayctl))
        XCTAssertEqual(again.eventKinds, [.approvalRefused])
        XCTAssertEqual(again.events.first?.reason, "replayed")
        XCTAssertEqual(again.drives, [])
        // A code never issued while another waits: refused, the request keeps waiting.
        let other = try XCTUnwrap(tap(&h))
        let wrong = h.send(answer(other == "ABCDEF" ? "ABCDEG" : "ABCDEF", true, by: .gatewayctl))
        XCTAssertEqual(wrong.events.map(\.reason), ["unknown_request"])
        XCTAssertEqual(h.machine.pendingApproval?.code, other)
    }

    func testAnApproverTheActionDoesNotListIsRefusedAndTheRequestKeepsWaiting() throws {
        var h = harness(by: [.gatewayctl])
        let code = try XCTUnwrap(tap(&h))
        for input in [
            answer(code, true, by: .phone),
            .remoteCommand(.accepted(.approval(code: code, approve: true), source: .native)),
            .remoteCommand(.accepted(.approval(code: nil, approve: true), source: .homeAssistant)),
            .remoteCommand(.accepted(.approval(code: code, approve: true), source: .compat)),
        ] {
            let fx = h.send(input)
            XCTAssertEqual(fx.events.map(\.reason), ["wrong_transport"])
            XCTAssertEqual(fx.drives, [])
        }
        XCTAssertEqual(h.machine.pendingApproval?.code, code)
        XCTAssertEqual(h.send(answer(code, true, by: .gatewayctl)).eventKinds, [.approvalGranted, .accessGranted])
    }

    func testASecondTapReplacesTheRequest() throws {
        var h = harness()
        let first = try XCTUnwrap(tap(&h))
        h.machine.supplyRandom(bytesFor(h))
        let fx = h.send(MachineHarness.tag(b, grant))
        XCTAssertEqual(fx.eventKinds, [.approvalCancelled, .approvalRequested])
        XCTAssertEqual(fx.events.first?.reason, "replaced")
        XCTAssertEqual(fx.events.first?.code, first)
        let second = try XCTUnwrap(fx.events.dropFirst().first?.code)
        XCTAssertNotEqual(first, second)
        XCTAssertEqual(h.send(answer(first, true, by: .gatewayctl)).events.map(\.reason), ["replayed"])
        // The first request's timer no longer ends the second.
        h.advance(.seconds(119))
        XCTAssertEqual(h.machine.pendingApproval?.code, second)
        let yes = h.send(answer(second, true, by: .gatewayctl))
        XCTAssertEqual(yes.events.dropFirst().first?.uid, TagUID(hex: b))
    }

    func testLockdownCancelsTheRequestAndNoRandomnessDenies() throws {
        var h = harness()
        let code = try XCTUnwrap(tap(&h))
        let fx = h.send(.admin(.setMode(.lockdown)))
        XCTAssertEqual(fx.eventKinds, [.approvalCancelled, .accessDenied, .modeChanged])
        XCTAssertEqual(h.send(answer(code, true, by: .gatewayctl)).events.map(\.reason), ["replayed"])
        h.send(.admin(.setMode(.normal)))
        // No random bytes supplied: fail closed, no request.
        let bare = h.send(MachineHarness.tag(b, grant))
        XCTAssertEqual(bare.eventKinds, [.accessDenied])
        XCTAssertEqual(bare.events.first?.reason, "not_approved")
    }

    func testActionsWithoutApprovalOpenAtOnce() {
        var settings = DoorSettings()
        settings.actions[1].approval = ApprovalPolicy(by: [.gatewayctl])
        var h = MachineHarness(settings: settings)
        h.start()
        let fx = h.send(MachineHarness.tag(a, grant))
        XCTAssertEqual(fx.eventKinds, [.accessGranted])
    }
}
