import DoorCore
import TestSupport
import XCTest

/// Approvals as remote commands (docs/mqtt.md "Approval"): the phone's
/// native answer, MAC'd with its command key and under the replay guard, and
/// Home Assistant's buttons.
final class ApprovalCommandTests: XCTestCase {
    let judge = CommandJudge(tolerance: 5, deviceID: "front-door", actionCount: 2)
    let key = Array(repeating: UInt8(7), count: 32)

    func wall(_ s: Int64, synced: Bool = true) -> WallClock { WallClock(unixSeconds: s, synchronised: synced) }

    func nonce(_ n: Int) -> String { String(repeating: String(format2(n)), count: 16) }
    func format2(_ n: Int) -> String {
        let h = String(n, radix: 16)
        return h.count == 1 ? "0" + h : String(h.suffix(2))
    }

    func testASignedAnswerNamesItsRequestAndIsNotReplayable() {
        var replay = ReplayGuard()
        let yes = CommandJudge.approvalCommand(
            key: key, device: "front-door", code: "K7M2QX", approve: true, ts: 2000, nonce: nonce(1))
        let v = judge.judgeNative(payload: yes, retained: false, key: key, now: wall(2001), replay: &replay)
        XCTAssertNil(v.rejection)
        XCTAssertEqual(v.target, .approval(code: "K7M2QX", approve: true))
        // The same message again: the replay guard refuses it before the door sees it.
        let again = judge.judgeNative(payload: yes, retained: false, key: key, now: wall(2002), replay: &replay)
        XCTAssertEqual(again.rejection?.code, .replay)
        let no = CommandJudge.approvalCommand(
            key: key, device: "front-door", code: "K7M2QX", approve: false, ts: 2000, nonce: nonce(2))
        XCTAssertEqual(
            judge.judgeNative(payload: no, retained: false, key: key, now: wall(2000), replay: &replay).target,
            .approval(code: "K7M2QX", approve: false))
    }

    func testForgedStaleMisaddressedAndMalformedAnswersAreRejected() {
        var replay = ReplayGuard()
        func run(_ p: [UInt8], now: Int64 = 2000, synced: Bool = true, key k: [UInt8]? = nil) -> CommandRejection.Code?
        {
            judge.judgeNative(
                payload: p, retained: false, key: k ?? key, now: wall(now, synced: synced), replay: &replay
            )
            .rejection?.code
        }
        let other = Array(repeating: UInt8(8), count: 32)
        XCTAssertEqual(
            run(
                CommandJudge.approvalCommand(
                    key: other, device: "front-door", code: "K7M2QX", approve: true, ts: 2000, nonce: nonce(3))),
            .badMAC)
        // A MAC over "deny" does not carry "approve".
        let denyMAC = Crypto.hmacSHA256(
            key: key,
            message: CommandJudge.approvalMACMessage(
                device: "front-door", code: "K7M2QX", answer: "deny", ts: 2000, nonce: nonce(4)))
        let flipped = JSONValue.object([
            ("approval", .string("K7M2QX")), ("answer", .string("approve")), ("ts", .int(2000)),
            ("nonce", .string(nonce(4))), ("device", .string("front-door")), ("mac", .string(Hex.encode(denyMAC))),
        ])
        XCTAssertEqual(run(Array(flipped.serialized.utf8)), .badMAC)
        XCTAssertEqual(
            run(
                CommandJudge.approvalCommand(
                    key: key, device: "back-door", code: "K7M2QX", approve: true, ts: 2000, nonce: nonce(5))),
            .wrongDevice)
        XCTAssertEqual(
            run(
                CommandJudge.approvalCommand(
                    key: key, device: "front-door", code: "K7M2QX", approve: true, ts: 1900, nonce: nonce(6))),
            .stale)
        XCTAssertEqual(
            run(
                CommandJudge.approvalCommand(
                    key: key, device: "front-door", code: "K7M2QX", approve: true, ts: 2000, nonce: nonce(7)),
                synced: false),
            .clockUnsynchronised)
        XCTAssertEqual(
            run(
                CommandJudge.approvalCommand(
                    key: key, device: "front-door", code: "K7M2Q0", approve: true, ts: 2000, nonce: nonce(8))),
            .malformed, "0 is not in the code alphabet")
        XCTAssertEqual(run(Array(#"{"approval":"K7M2QX","answer":"maybe"}"#.utf8)), .malformed)
        XCTAssertEqual(
            judge.judgeNative(
                payload: CommandJudge.approvalCommand(
                    key: key, device: "front-door", code: "K7M2QX", approve: true, ts: 2000, nonce: nonce(9)),
                retained: true, key: key, now: wall(2000), replay: &replay
            ).rejection?.code, .retained)
    }

    func testHomeAssistantButtons() {
        func judge(_ text: String, retained: Bool = false) -> RemoteOutcome? {
            RemoteJudge.judge(
                RemoteMessage(channel: .homeAssistantApproval, payload: Array(text.utf8), retained: retained),
                policy: RemotePolicy(commands: self.judge, homeAssistantOpen: false), key: .absent,
                replay: ReplayGuard(), now: wall(2000)
            ).outcome
        }
        // Not gated by home_assistant_open: the action's `by` decides.
        XCTAssertEqual(judge("APPROVE"), .accepted(.approval(code: nil, approve: true), source: .homeAssistant))
        XCTAssertEqual(judge("DENY"), .accepted(.approval(code: nil, approve: false), source: .homeAssistant))
        XCTAssertEqual(
            judge("APPROVE k7m2qx"), .accepted(.approval(code: "K7M2QX", approve: true), source: .homeAssistant))
        XCTAssertEqual(judge("APPROVE", retained: true)?.rejectionCode, "retained")
        XCTAssertEqual(judge("YES")?.rejectionCode, "malformed")
        XCTAssertEqual(judge("APPROVE AB")?.rejectionCode, "malformed")
    }
}

extension RemoteOutcome {
    fileprivate var rejectionCode: String? {
        if case .rejected(let code, _, _) = self { return code }
        return nil
    }
}
