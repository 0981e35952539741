import DoorCore
import Foundation
import TestSupport
import XCTest

final class CommandTests: XCTestCase {
    let vectors = CompatVectors.load()
    let judge = CommandJudge(deviceID: "front-door")

    func clock(_ t: Int, synced: Bool = true) -> WallClock { WallClock(unixSeconds: Int64(t), synchronised: synced) }

    func compat(
        _ message: String, key: String?, now: Int, retained: Bool = false, tolerance: Int64 = 5,
        replay: inout ReplayGuard
    ) -> CommandVerdict {
        CommandJudge(tolerance: tolerance, deviceID: "front-door")
            .judgeCompat(
                payload: Array(message.utf8), retained: retained, key: key.flatMap(Hex.decode),
                now: clock(now), replay: &replay)
    }

    func testOTPVectorsDecryptAndEncrypt() throws {
        for v in vectors.otp {
            let key = Hex.decode(v.key)!
            let block = try OTPBlock.decrypt(hex: v.otp_auth, key: key)
            XCTAssertEqual(Hex.encode(block.plain), v.plain)
            XCTAssertEqual(block.timestamp, Int64(v.ts))
            XCTAssertEqual(block.checksumOK, v.bad_checksum != true)
            XCTAssertEqual(
                Hex.encode(try Crypto.aes128ECB(.encrypt, key: key, block: Hex.decode(v.plain)!)), v.otp_auth)
            if v.bad_checksum == true {
                var replay = ReplayGuard()
                let msg = #"{"command": 1, "otp-auth": "\#(v.otp_auth)"}"#
                XCTAssertEqual(compat(msg, key: v.key, now: v.ts, replay: &replay).rejection?.code, .badChecksum)
            }
        }
    }

    func testOTPCases() {
        for c in vectors.otp_cases {
            var replay = ReplayGuard()
            let v = compat(c.message, key: c.key, now: c.now, tolerance: Int64(c.tolerance), replay: &replay)
            XCTAssertEqual(v.accepted, c.accept, "\(c.why): \(String(describing: v.rejection))")
            let expected: CommandRejection.Code? =
                switch c.why {
                case "6 s late", "an hour late": .stale
                case "60 s in the future": .future
                case "wrong key": .badChecksum
                default: nil
                }
            XCTAssertEqual(v.rejection?.code, expected, c.why)
        }
        // The vector messages carry their command number to the mapped action.
        var replay = ReplayGuard()
        let first = vectors.otp[0]
        XCTAssertEqual(compat(first.message!, key: first.key, now: first.ts, replay: &replay).target, .action(0))
    }

    func testReplayAndHighestTimestamp() throws {
        let key = Array(repeating: UInt8(7), count: 16)
        let keyHex = Hex.encode(key)
        func msg(_ ts: UInt32, _ r: UInt8) throws -> String {
            #"{"command":1,"otp-auth":"\#(try OTPBlock.make(timestamp: ts, random: Array(repeating: r, count: 11), key: key))"}"#
        }
        var replay = ReplayGuard()
        let a = try msg(1000, 1)
        XCTAssertTrue(compat(a, key: keyHex, now: 1000, replay: &replay).accepted)
        XCTAssertEqual(compat(a, key: keyHex, now: 1002, replay: &replay).rejection?.code, .replay)
        // A later block raises the highest accepted timestamp to 1030 …
        XCTAssertTrue(compat(try msg(1030, 2), key: keyHex, now: 1030, replay: &replay).accepted)
        // … so a logged block from 1020 is dead even if the clock is moved back to 1020.
        XCTAssertEqual(
            compat(try msg(1020, 3), key: keyHex, now: 1020, replay: &replay).rejection?.code, .olderThanHighest)
        // Within the window of the highest, a different block is fine.
        XCTAssertTrue(compat(try msg(1026, 4), key: keyHex, now: 1027, replay: &replay).accepted)
        // The replay of `a` is still refused after its entry expired, by the highest rule.
        XCTAssertNotNil(compat(a, key: keyHex, now: 1000, replay: &replay).rejection)
        // Boundary: with the highest at 1030, ts = 1030 − (5 + 1) is dead even with the clock
        // moved to it, while ts = 1030 − 5 still passes.
        XCTAssertEqual(
            compat(try msg(1024, 5), key: keyHex, now: 1024, replay: &replay).rejection?.code, .olderThanHighest)
        XCTAssertTrue(compat(try msg(1025, 6), key: keyHex, now: 1025, replay: &replay).accepted)
    }

    func testReplayRecordSurvivesEncoding() throws {
        var replay = ReplayGuard(capacity: 8)
        XCTAssertNil(replay.admit(keyID: "compat", fingerprint: "aa", timestamp: 100, now: 100, tolerance: 5))
        let restored = try JSONDecoder().decode(ReplayGuard.self, from: JSONEncoder().encode(replay))
        XCTAssertEqual(restored, replay)
        var again = restored
        XCTAssertEqual(
            again.admit(keyID: "compat", fingerprint: "aa", timestamp: 100, now: 101, tolerance: 5)?.code, .replay)
        // Rows from the store can rebuild it too.
        var rebuilt = ReplayGuard(entries: replay.entries, highest: replay.highest, capacity: 8)
        XCTAssertEqual(
            rebuilt.admit(keyID: "compat", fingerprint: "bb", timestamp: 90, now: 95, tolerance: 5)?.code,
            .olderThanHighest)
    }

    func testPruningFollowsTheKeysHighestTimestampNotTheClock() {
        var replay = ReplayGuard()
        XCTAssertNil(replay.admit(keyID: "native", fingerprint: "n1", timestamp: 1000, now: 1000, tolerance: 5))
        replay.prune(tolerance: 5)
        XCTAssertEqual(replay.entries.count, 1, "nothing newer accepted: kept, however late it is")
        XCTAssertNil(replay.admit(keyID: "native", fingerprint: "n2", timestamp: 1010, now: 900, tolerance: 5))
        XCTAssertEqual(replay.entries.count, 2, "exactly two windows older than the highest: kept")
        XCTAssertNil(replay.admit(keyID: "native", fingerprint: "n3", timestamp: 1011, now: 5000, tolerance: 5))
        XCTAssertEqual(replay.entries.map(\.fingerprint), ["n2", "n3"])
        XCTAssertEqual(
            replay.admit(keyID: "native", fingerprint: "n1", timestamp: 1000, now: 1000, tolerance: 5)?.code,
            .olderThanHighest, "what is forgotten, the highest rule refuses")
        XCTAssertEqual(replay.highest["native"], 1011, "the highest timestamp outlives the entries")
    }

    /// Issue 24 L1: the wall clock steps forward by more than two windows (a
    /// bad NTP answer), a command on the other key is accepted then, and the
    /// clock steps back. A compat block captured before the step must still
    /// be refused: the record forgets an entry only once its own key's
    /// highest accepted timestamp has moved two windows past it, never
    /// because of the wall clock.
    func testAClockStepForwardThenBackDoesNotForgetACapturedCommand() throws {
        let compatKey = Array(repeating: UInt8(7), count: 16)
        let nativeKey = Array(repeating: UInt8(5), count: 32)
        var clock = ManualClock(unixSeconds: 1_760_000_000)
        let t0 = clock.unixSeconds
        var replay = ReplayGuard()
        let captured =
            #"{"command":1,"otp-auth":"\#(try OTPBlock.make(timestamp: UInt32(t0), random: Array(repeating: 1, count: 11), key: compatKey))"}"#
        XCTAssertTrue(
            compat(captured, key: Hex.encode(compatKey), now: Int(clock.unixSeconds), replay: &replay).accepted)

        clock.setWall(unixSeconds: t0 + 100)
        let native = nativeMessage(
            action: 0, ts: clock.unixSeconds, nonce: String(repeating: "ab", count: 16), device: "front-door",
            key: nativeKey)
        XCTAssertTrue(
            judge.judgeNative(
                payload: Array(native.utf8), retained: false, key: nativeKey, now: clock.now.wall, replay: &replay
            ).accepted)

        clock.setWall(unixSeconds: t0)
        clock.advance(.seconds(2))
        let again = compat(captured, key: Hex.encode(compatKey), now: Int(clock.unixSeconds), replay: &replay)
        XCTAssertEqual(again.rejection?.code, .replay, "the captured block is still remembered")

        // The same on one key: an entry goes only when that key's highest
        // timestamp is two windows past it, and then the highest rule refuses it.
        var one = ReplayGuard()
        XCTAssertNil(one.admit(keyID: "compat", fingerprint: "c", timestamp: t0, now: t0, tolerance: 5))
        XCTAssertNil(one.admit(keyID: "native", fingerprint: "n", timestamp: t0 + 100, now: t0 + 100, tolerance: 5))
        XCTAssertEqual(one.entries.count, 2, "another key's commands prune nothing of this key")
        XCTAssertEqual(
            one.admit(keyID: "compat", fingerprint: "c", timestamp: t0, now: t0 + 1, tolerance: 5)?.code, .replay)
    }

    /// Timestamps and tolerances at the ends of Int64: nothing traps, and each
    /// message is still judged by the rules (the window clamped to 0…30 s).
    func testExtremeValuesNeverTrap() {
        var replay = ReplayGuard()
        // The oldest message there can be: recorded, and kept by pruning (its
        // horizon, Int64.min minus two windows, would underflow).
        XCTAssertNil(replay.admit(keyID: "k", fingerprint: "a", timestamp: .min, now: .max, tolerance: .max))
        replay.prune(tolerance: .max)
        XCTAssertEqual(replay.entries.map(\.timestamp), [.min])
        // The newest, with a negative tolerance (a window of 0): recorded; the
        // oldest is now far below the horizon and pruned.
        XCTAssertNil(replay.admit(keyID: "k", fingerprint: "b", timestamp: .max, now: .min, tolerance: .min))
        replay.prune(tolerance: .min)
        XCTAssertEqual(replay.entries.map(\.timestamp), [.max])
        XCTAssertEqual(replay.highest["k"], .max)
        // Against a highest of Int64.max: the same message is a replay, one more
        // than a window older is refused, one a window older is accepted.
        XCTAssertEqual(
            replay.admit(keyID: "k", fingerprint: "b", timestamp: .max, now: .max, tolerance: 30)?.code, .replay)
        XCTAssertEqual(
            replay.admit(keyID: "k", fingerprint: "c", timestamp: .max - 31, now: .max, tolerance: .max)?.code,
            .olderThanHighest)
        XCTAssertNil(replay.admit(keyID: "k", fingerprint: "d", timestamp: .max - 30, now: .max, tolerance: .max))
        replay.prune(tolerance: .max)
        XCTAssertEqual(replay.entries.map(\.fingerprint), ["b", "d"])
    }

    func testFullReplayRecordRejectsInsteadOfEvicting() throws {
        let key = Array(repeating: UInt8(9), count: 16)
        var replay = ReplayGuard(capacity: 2)
        for r in 1...2 {
            let m =
                #"{"command":1,"otp-auth":"\#(try OTPBlock.make(timestamp: 500, random: Array(repeating: UInt8(r), count: 11), key: key))"}"#
            XCTAssertTrue(compat(m, key: Hex.encode(key), now: 500, replay: &replay).accepted)
        }
        let third =
            #"{"command":1,"otp-auth":"\#(try OTPBlock.make(timestamp: 500, random: Array(repeating: 3, count: 11), key: key))"}"#
        XCTAssertEqual(
            compat(third, key: Hex.encode(key), now: 501, replay: &replay).rejection?.code, .replayRecordFull)
        XCTAssertEqual(replay.entries.count, 2)
        // Two windows later the entries are pruned and there is room again.
        let later =
            #"{"command":1,"otp-auth":"\#(try OTPBlock.make(timestamp: 520, random: Array(repeating: 4, count: 11), key: key))"}"#
        XCTAssertTrue(compat(later, key: Hex.encode(key), now: 520, replay: &replay).accepted)
    }

    func testScreeningAndClock() {
        let v = vectors.otp[0]
        var replay = ReplayGuard()
        XCTAssertEqual(
            compat(v.message!, key: v.key, now: v.ts, retained: true, replay: &replay).rejection?.code, .retained)
        XCTAssertEqual(
            compat(#"{"TT_ID":"x","command":1}"#, key: v.key, now: v.ts, replay: &replay).rejection?.code, .deviceReport
        )
        let unsynced = judge.judgeCompat(
            payload: Array(v.message!.utf8), retained: false, key: Hex.decode(v.key),
            now: clock(v.ts, synced: false), replay: &replay)
        XCTAssertEqual(unsynced.rejection?.code, .clockUnsynchronised)
        XCTAssertTrue(replay.entries.isEmpty, "a refused command leaves no trace")
        XCTAssertEqual(compat(#"{"command":5}"#, key: nil, now: 0, replay: &replay).target, .report)
        XCTAssertTrue(compat(#"{"command":5}"#, key: nil, now: 0, replay: &replay).accepted)
        XCTAssertEqual(
            compat(#"{"command":9,"otp-auth":"00"}"#, key: v.key, now: 0, replay: &replay).rejection?.code,
            .unknownCommand)
        XCTAssertEqual(
            compat(#"{"command":1,"otp-auth":"\#(v.otp_auth)"}"#, key: nil, now: v.ts, replay: &replay).rejection?.code,
            .noKey)
        for bad in [
            "", "{", "[]", #"{"command":"1","otp-auth":"x"}"#, #"{"command":1.5}"#, #"{"command":1,"otp-auth":12}"#,
            #"{"command":1,"otp-auth":"zz"}"#, #"{"command":1,"command":1}"#,
            #"{"command":1,"x":1,"otp-auth":"\#(v.otp_auth)"}"#,
        ] {
            XCTAssertEqual(compat(bad, key: v.key, now: v.ts, replay: &replay).rejection?.code, .malformed, bad)
        }
    }

    func nativeMessage(action: Int64, ts: Int64, nonce: String, device: String, key: [UInt8], macAction: Int64? = nil)
        -> String
    {
        NativeCommandText.make(
            action: action, ts: ts, nonce: nonce, device: device, key: key, macAction: macAction, spaced: true)
    }

    func testNativeCommands() {
        let key = Array(repeating: UInt8(5), count: 32)
        var replay = ReplayGuard()
        func run(_ m: String, now: Int = 2000, synced: Bool = true) -> CommandVerdict {
            judge.judgeNative(
                payload: Array(m.utf8), retained: false, key: key, now: clock(now, synced: synced), replay: &replay)
        }
        /// A command MAC'd with `key` for "front-door" unless said, its nonce `pair` sixteen times.
        func message(
            _ action: Int64, ts: Int64, nonce pair: String, device: String = "front-door", macAction: Int64? = nil
        ) -> String {
            nativeMessage(
                action: action, ts: ts, nonce: String(repeating: pair, count: 16), device: device, key: key,
                macAction: macAction)
        }
        let good = message(2, ts: 2000, nonce: "ab")
        XCTAssertEqual(run(good).target, .action(2))
        XCTAssertEqual(run(good).rejection?.code, .replay)
        XCTAssertEqual(run(message(3, ts: 2000, nonce: "cd", macAction: 2)).rejection?.code, .badMAC)
        XCTAssertEqual(run(message(0, ts: 2000, nonce: "ef", device: "back-door")).rejection?.code, .wrongDevice)
        XCTAssertEqual(run(message(0, ts: 1900, nonce: "01")).rejection?.code, .stale)
        XCTAssertEqual(run(message(0, ts: 2060, nonce: "02")).rejection?.code, .future)
        XCTAssertEqual(run(message(0, ts: 2001, nonce: "03"), synced: false).rejection?.code, .clockUnsynchronised)
        XCTAssertEqual(run(message(9, ts: 2000, nonce: "04")).rejection?.code, .unknownAction)
        XCTAssertEqual(run(#"{"action":1}"#).rejection?.code, .malformed)
        // A correctly MACed ts far from now is stale or future, never an overflow trap.
        for (i, (ts, code)) in [
            (Int64.min + 2000, CommandRejection.Code.stale), (Int64.min, .stale),
            (Int64.max, .future),
        ].enumerated() {
            XCTAssertEqual(run(message(0, ts: ts, nonce: "1\(i)")).rejection?.code, code, "\(ts)")
        }
    }

    func testToleranceIsClampedToThirtySeconds() {
        XCTAssertEqual(CommandJudge(tolerance: 300, deviceID: "d").tolerance, 30)
        XCTAssertEqual(CommandJudge(tolerance: -1, deviceID: "d").tolerance, 0)
    }
}
