import DoorCore
import TestSupport
import XCTest

/// The approval desk's rules (issue 27, consent-first; DoorMachine keeps one).
final class ApprovalTests: XCTestCase {
    let uid = TagUID(hex: "04A1B2C3D4E5F6")!
    let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)
    var random = SeededRandom(seed: 0xA99)

    func bytes() -> [UInt8] { (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) } }

    struct NoRequest: Error {}

    func open(_ desk: inout ApprovalDesk, policy: ApprovalPolicy = ApprovalPolicy(), at: MonotonicInstant? = nil)
        throws -> ApprovalRequest
    {
        guard case .waiting(let r, _) = desk.open(uid: uid, action: 0, policy: policy, random: bytes(), at: at ?? t0)
        else { throw NoRequest() }
        return r
    }

    func testCodesAreSixUnambiguousCharactersWithoutBias() {
        var counts: [Character: Int] = [:]
        for _ in 0..<5000 {
            let code = ApprovalDesk.code(from: bytes())!
            XCTAssertEqual(code.count, 6)
            for c in code { counts[c, default: 0] += 1 }
        }
        XCTAssertEqual(Set(counts.keys), Set(ApprovalDesk.alphabet))
        XCTAssertFalse(counts.keys.contains { "01ILO".contains($0) })
        // 30 000 draws over 31 letters: each near 968; a biased modulo would skew the first eight.
        for (c, n) in counts { XCTAssertTrue((800...1140).contains(n), "\(c): \(n)") }
        XCTAssertNil(ApprovalDesk.code(from: [255, 255, 255, 1, 2]), "too few usable bytes")
    }

    func testApprovedWithinTheTimeoutByAListedApprover() throws {
        var desk = ApprovalDesk()
        let r = try open(&desk)
        XCTAssertEqual(r.deadline, t0 + .seconds(120))
        let outcome = desk.answer(code: r.code.lowercased(), approve: true, by: .gatewayctl, at: t0 + .seconds(119))
        XCTAssertEqual(outcome, .approved(r, by: .gatewayctl))
        XCTAssertNil(desk.pending)
    }

    func testDeniedAndTimedOut() throws {
        var desk = ApprovalDesk()
        let r = try open(&desk)
        XCTAssertEqual(
            desk.answer(code: r.code, approve: false, by: .homeAssistant, at: t0), .denied(r, by: .homeAssistant))
        let s = try open(&desk)
        XCTAssertNil(desk.expire(at: t0 + .seconds(119)))
        XCTAssertEqual(desk.expire(at: t0 + .seconds(120)), s)
        XCTAssertEqual(
            desk.answer(code: s.code, approve: true, by: .phone, at: t0 + .seconds(121)),
            .refused("replayed", expired: nil))
        // An answer arriving after the deadline, before the timer: expired, never an open.
        let late = try open(&desk)
        XCTAssertEqual(
            desk.answer(code: late.code, approve: true, by: .phone, at: t0 + .seconds(120)),
            .refused("expired", expired: late))
    }

    func testReplayUnknownAndWrongTransport() throws {
        var desk = ApprovalDesk()
        let r = try open(&desk, policy: ApprovalPolicy(timeout: .seconds(30), by: [.phone]))
        XCTAssertEqual(
            desk.answer(code: r.code, approve: true, by: .homeAssistant, at: t0),
            .refused("wrong_transport", expired: nil))
        XCTAssertEqual(desk.pending, r, "still waiting for an approver the action lists")
        XCTAssertEqual(
            desk.answer(code: "ZZZZZZ", approve: true, by: .phone, at: t0), .refused("unknown_request", expired: nil))
        XCTAssertEqual(desk.answer(code: r.code, approve: true, by: .phone, at: t0), .approved(r, by: .phone))
        XCTAssertEqual(desk.answer(code: r.code, approve: true, by: .phone, at: t0), .refused("replayed", expired: nil))
    }

    /// One request at a time: a second tap replaces the first, whose code no longer opens.
    func testASecondTapReplacesTheFirst() throws {
        var desk = ApprovalDesk()
        let first = try open(&desk)
        guard
            case .waiting(let second, let replaced) = desk.open(
                uid: TagUID(hex: "04010203040506")!, action: 1, policy: ApprovalPolicy(), random: bytes(),
                at: t0 + .seconds(5))
        else { return XCTFail("no second request") }
        XCTAssertEqual(replaced, first)
        XCTAssertNotEqual(second.code, first.code)
        XCTAssertGreaterThan(second.id, first.id)
        XCTAssertEqual(
            desk.answer(code: first.code, approve: true, by: .gatewayctl, at: t0 + .seconds(6)),
            .refused("replayed", expired: nil))
        XCTAssertEqual(
            desk.answer(code: second.code, approve: true, by: .gatewayctl, at: t0 + .seconds(6)),
            .approved(second, by: .gatewayctl))
    }
}
