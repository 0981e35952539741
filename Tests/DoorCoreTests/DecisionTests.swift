import DoorCore
import TestSupport
import XCTest

/// The core's two decision paths: a tap (sticker + registry view +
/// revocations + clock → verdict) and a remote message (message + key +
/// replay record + clock → verdict + the record to persist).
final class TapJudgeTests: XCTestCase {
    let uid = TagUID(hex: "04A1B2C3D4E5F6")!
    let key = [UInt8](repeating: 7, count: 32)
    var secrets: [StickerSecret] { [StickerSecret(id: 1, action: 1, key: key, origin: .generated)] }

    typealias Registry = FixedRegistry

    func sticker(_ uid: TagUID) -> NDEFMessage {
        NDEFMessage(records: [.uri(StickerSigner.signV2(action: 1, timestamp: 1_700_000_000, key: key, uid: uid).text)])
    }

    func judge(_ registry: Registry, message: NDEFMessage? = nil, now: Int64 = 1_800_000_000) -> TapJudge.Result {
        TapJudge.judge(
            uid: uid, message: message ?? sticker(uid), secrets: secrets, actionCount: 4, registry: registry, now: now)
    }

    func reason(_ r: TapJudge.Result) -> String {
        switch r.presentation.verdict {
        case .grant(let action, let reason): return "grant \(action) \(reason)"
        case .deny(let reason, let counts): return "deny \(reason)\(counts ? "" : " (not counted)")"
        }
    }

    func testBlankAndForeignTagsAreDeniedWithoutCountingTowardLockout() {
        let blank = TapJudge.judge(
            uid: uid, message: nil, secrets: secrets, actionCount: 4, registry: Registry(), now: 0)
        XCTAssertEqual(blank.presentation.content, .blank)
        XCTAssertEqual(reason(blank), "deny blank (not counted)")
        let foreign = judge(Registry(), message: NDEFMessage(records: [.uri("https://example.com/")]))
        XCTAssertEqual(foreign.presentation.content, .foreign)
        XCTAssertEqual(reason(foreign), "deny not_ours (not counted)")
        XCTAssertNil(foreign.sticker)
    }

    func testAV2StickerNeedsItsUIDActiveInTheRegistry() {
        XCTAssertEqual(reason(judge(Registry(row: IssuedTagView(state: .active)))), "grant 1 valid_v2")
        XCTAssertEqual(reason(judge(Registry(row: nil))), "deny not_issued")
        for state in [RegistryState.pending, .revoked, .failed] {
            XCTAssertEqual(reason(judge(Registry(row: IssuedTagView(state: state)))), "deny tag_\(state.rawValue)")
        }
    }

    func testRevocationExpiryAndAnUnreadableRegistryDeny() {
        XCTAssertEqual(reason(judge(Registry(row: IssuedTagView(state: .active), revoked: true))), "deny revoked")
        let expiring = Registry(row: IssuedTagView(state: .active, validUntil: 1_800_000_000))
        XCTAssertEqual(reason(judge(expiring, now: 1_800_000_000)), "grant 1 valid_v2", "valid up to its second")
        XCTAssertEqual(reason(judge(expiring, now: 1_800_000_001)), "deny expired")
        XCTAssertEqual(reason(judge(Registry(unreadable: true))), "deny registry_unavailable", "fails closed")
    }

    func testASignatureBoundToAnotherUIDIsDeniedBeforeTheRegistryIsAsked() {
        let other = TagUID(hex: "04A1B2C3D4E5F7")!
        let r = judge(Registry(row: IssuedTagView(state: .active)), message: sticker(other))
        XCTAssertEqual(reason(r), "deny uid_mismatch")
        XCTAssertEqual(r.sticker?.isValid, false)
    }
}

final class RemoteJudgeTests: XCTestCase {
    let compatKey = Hex.decode("000102030405060708090a0b0c0d0e0f")!
    let nativeKey = [UInt8](repeating: 0x42, count: 32)
    let now: Int64 = 1_700_000_000
    var clock: WallClock { WallClock(unixSeconds: now, synchronised: true) }

    func policy(haOpen: Bool = false) -> RemotePolicy {
        RemotePolicy(commands: CommandJudge(deviceID: "front-door"), homeAssistantOpen: haOpen)
    }

    func compat(_ ts: Int64, command: Int = 1) throws -> [UInt8] {
        let block = try OTPBlock.make(timestamp: UInt32(ts), random: try Crypto.randomBytes(11), key: compatKey)
        return Array(#"{"command": \#(command), "otp-auth": "\#(block)"}"#.utf8)
    }

    func native(action: Int64, ts: Int64) throws -> [UInt8] {
        Array(
            NativeCommandText.make(
                action: action, ts: ts, nonce: try NativeCommandText.nonce(), device: "front-door", key: nativeKey
            ).utf8)
    }

    func code(_ j: RemoteJudgement) -> String? {
        if case .rejected(let c, _, _)? = j.outcome { return c }
        return nil
    }

    func testAnAcceptedCommandReturnsTheRecordToPersistAndItsReplayIsRefused() throws {
        let message = RemoteMessage(channel: .compat, payload: try compat(now), retained: false)
        let first = RemoteJudge.judge(
            message, policy: policy(), key: .key(compatKey), replay: ReplayGuard(), now: clock)
        XCTAssertEqual(first.outcome, .accepted(.action(0), source: .compat))
        let record = try XCTUnwrap(first.replay, "the new record is handed back to be saved")
        XCTAssertEqual(record.entries.count, 1)
        XCTAssertEqual(record.highest["compat"], now)
        // The same message against the saved record: a replay, and nothing new to save.
        let again = RemoteJudge.judge(message, policy: policy(), key: .key(compatKey), replay: record, now: clock)
        XCTAssertEqual(code(again), "replay")
        XCTAssertNil(again.replay)
        // Against the old record (the save was lost) it would pass: the record is the guard.
        XCTAssertNotNil(
            RemoteJudge.judge(message, policy: policy(), key: .key(compatKey), replay: ReplayGuard(), now: clock).replay
        )
    }

    func testNativeCommandsSourcesAndKeys() throws {
        let payload = try native(action: 2, ts: now)
        let ok = RemoteJudge.judge(
            RemoteMessage(channel: .native, payload: payload, retained: false), policy: policy(),
            key: .key(nativeKey), replay: ReplayGuard(), now: clock)
        XCTAssertEqual(ok.outcome, .accepted(.action(2), source: .native))
        XCTAssertEqual(ok.verdict?.kind, .native)
        let noKey = RemoteJudge.judge(
            RemoteMessage(channel: .native, payload: payload, retained: false), policy: policy(), key: .absent,
            replay: ReplayGuard(), now: clock)
        XCTAssertEqual(code(noKey), "no_key")
        let unreadable = RemoteJudge.judge(
            RemoteMessage(channel: .native, payload: payload, retained: false), policy: policy(),
            key: .unreadable("disk I/O error"), replay: ReplayGuard(), now: clock)
        XCTAssertEqual(unreadable.outcome, .rejected(code: "no_key", detail: "store: disk I/O error", source: .native))
        XCTAssertNil(unreadable.replay)
        let unsynchronised = RemoteJudge.judge(
            RemoteMessage(channel: .native, payload: payload, retained: false), policy: policy(),
            key: .key(nativeKey), replay: ReplayGuard(), now: WallClock(unixSeconds: now, synchronised: false))
        XCTAssertEqual(code(unsynchronised), "clock_unsynchronised")
        XCTAssertNil(unsynchronised.replay, "a refused command leaves the record as it was")
        XCTAssertEqual(
            ok.replayNotSaved("disk full"),
            .rejected(code: "store", detail: "replay record not saved: disk full", source: .native))
    }

    func testADeviceReportOnACompatTopicIsNoCommandAndRetainedMessagesAreRefused() throws {
        let report = RemoteMessage(
            channel: .compat, payload: Array(#"{"TT_ID":"other","event_timestamp":1}"#.utf8), retained: false)
        XCTAssertNil(
            RemoteJudge.judge(report, policy: policy(), key: .key(compatKey), replay: ReplayGuard(), now: clock).outcome
        )
        for channel in RemoteChannel.allCases {
            let j = RemoteJudge.judge(
                RemoteMessage(channel: channel, payload: try compat(now), retained: true), policy: policy(haOpen: true),
                key: .key(compatKey), replay: ReplayGuard(), now: clock)
            XCTAssertEqual(code(j), "retained", "\(channel)")
            if case .rejected(_, _, let source)? = j.outcome { XCTAssertEqual(source, channel.source) }
        }
    }

    func testHomeAssistantLockOpensOnlyWhenAllowedAndLockHasItsOwnAnswer() {
        func lock(_ text: String, open: Bool) -> RemoteOutcome? {
            RemoteJudge.judge(
                RemoteMessage(channel: .homeAssistantLock, payload: Array(text.utf8), retained: false),
                policy: policy(haOpen: open), key: .absent, replay: ReplayGuard(), now: clock
            ).outcome
        }
        for payload in ["OPEN", "UNLOCK"] {
            XCTAssertEqual(lock(payload, open: true), .accepted(.action(0), source: .homeAssistant), payload)
            guard case .rejected("ha_open_disabled", _, .homeAssistant)? = lock(payload, open: false) else {
                return XCTFail(
                    "\(payload) with home_assistant_open = false: \(String(describing: lock(payload, open: false)))")
            }
        }
        for open in [false, true] {
            guard case .rejected("lock_is_automatic", _, _)? = lock("LOCK", open: open) else { return XCTFail() }
            guard case .rejected("malformed", _, _)? = lock("JAM", open: open) else { return XCTFail() }
        }
    }

    func testHomeAssistantControls() {
        func send(_ channel: RemoteChannel, _ text: String, open: Bool = true) -> RemoteOutcome? {
            RemoteJudge.judge(
                RemoteMessage(channel: channel, payload: Array(text.utf8), retained: false),
                policy: policy(haOpen: open),
                key: .absent, replay: ReplayGuard(), now: clock
            ).outcome
        }
        XCTAssertEqual(send(.homeAssistantMode, "passage"), .accepted(.mode(.passage), source: .homeAssistant))
        XCTAssertEqual(send(.homeAssistantLockoutClear, "PRESS"), .accepted(.clearLockout, source: .homeAssistant))
        XCTAssertEqual(send(.homeAssistantAction, "3"), .accepted(.action(3), source: .homeAssistant))
        guard case .rejected("malformed", _, _)? = send(.homeAssistantMode, "open sesame"),
            case .rejected("unknown_action", _, _)? = send(.homeAssistantAction, "4"),
            case .rejected("unknown_action", _, _)? = send(.homeAssistantAction, "-1"),
            case .rejected("ha_open_disabled", _, _)? = send(.homeAssistantLockoutClear, "PRESS", open: false)
        else { return XCTFail() }
    }
}
