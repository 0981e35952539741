import DoorCore
import Foundation
import TestSupport
import XCTest

final class SupportTests: XCTestCase {
    func testHexRoundTripAndRejects() {
        XCTAssertEqual(Hex.encode([0x00, 0xAB, 0xFF]), "00abff")
        XCTAssertEqual(Hex.encode([0xAB], uppercase: true), "AB")
        XCTAssertEqual(Hex.decode("00AbfF"), [0x00, 0xAB, 0xFF])
        XCTAssertNil(Hex.decode("abc"))
        XCTAssertNil(Hex.decode("zz"))
        XCTAssertEqual(Hex.decode(""), [])
    }

    func testJSONDoesNotEscapeSlashesAndKeepsKeyOrder() {
        let v = JSONValue.object([
            ("url", .string("smp://action?idx=1")), ("n", .int(-3)), ("ok", .bool(true)),
            ("none", .null), ("list", .array([.string("a\"b\\c\n\u{01}"), .double(1.5)])),
        ])
        XCTAssertEqual(
            v.serialized,
            #"{"url":"smp://action?idx=1","n":-3,"ok":true,"none":null,"list":["a\"b\\c\n\u0001",1.5]}"#)
        // Foundation agrees it is valid JSON with the same content.
        let parsed = try? JSONSerialization.jsonObject(with: Data(v.serialized.utf8)) as? [String: Any]
        XCTAssertEqual(parsed?["url"] as? String, "smp://action?idx=1")
        XCTAssertEqual((parsed?["list"] as? [Any])?.first as? String, "a\"b\\c\n\u{01}")
    }

    func testJSONStringRunsAroundEscapesKeepEveryScalar() {
        // A combining accent right after an escaped quote (one Character across
        // the escape), non-ASCII runs, control characters at both ends.
        let text = "\u{1F}\"\u{301}é😀\\x\u{7F}\t"
        XCTAssertEqual(JSONValue.string(text).serialized, "\"\\u001f\\\"\u{301}é😀\\\\x\u{7F}\\t\"")
        XCTAssertEqual(try? JSONValue.parse(JSONValue.string(text).serialized), .string(text))
        for s in ["", "plain", "\"", "\\\\", "\n\n", "é"] {
            XCTAssertEqual(try? JSONValue.parse(JSONValue.string(s).serialized), .string(s), s)
        }
    }

    func testUTCTimeMatchesFoundationOverAWideRange() {
        var rng = SeededRandom(seed: 7)
        let f = ISO8601DateFormatter()
        f.timeZone = TimeZone(identifier: "UTC")
        for _ in 0..<2000 {
            let t = Int64.random(in: -2_000_000_000...4_000_000_000, using: &rng)
            XCTAssertEqual(UTCTime.iso8601(t), f.string(from: Date(timeIntervalSince1970: TimeInterval(t))), "t=\(t)")
        }
        XCTAssertEqual(UTCTime.iso8601(0), "1970-01-01T00:00:00Z")
        XCTAssertEqual(UTCTime.iso8601(1_758_686_540), "2025-09-24T04:02:20Z")
    }

    /// Issue 24 L6: every Int64 is a time (a signed fleet `valid_until`, a
    /// control-socket `tags.expire`); the extremes print, never trap.
    func testUTCTimeIsTotalAtTheInt64Extremes() {
        XCTAssertEqual(UTCTime.iso8601(Int64.min), "-292277022657-01-27T08:29:52Z")
        XCTAssertEqual(UTCTime.iso8601(Int64.min + 1), "-292277022657-01-27T08:29:53Z")
        XCTAssertEqual(UTCTime.iso8601(Int64.max), "292277026596-12-04T15:30:07Z")
        XCTAssertEqual(UTCTime.iso8601(-1), "1969-12-31T23:59:59Z")
        XCTAssertEqual(UTCTime.iso8601(253_402_300_799), "9999-12-31T23:59:59Z")
        XCTAssertEqual(UTCTime.iso8601(-62_135_596_801), "0000-12-31T23:59:59Z")
    }

    func testMonotonicArithmeticSaturates() {
        let t = MonotonicInstant(nanoseconds: 1_000_000_000)
        XCTAssertEqual((t + .milliseconds(500)).nanoseconds, 1_500_000_000)
        XCTAssertEqual((t + .seconds(-5)).nanoseconds, 0)
        XCTAssertEqual((t + .seconds(2)).since(t), .seconds(2))
        XCTAssertEqual(t.since(t + .seconds(2)), .zero)
    }

    func testPulseClamp() {
        let limits = PulseLimits(minimum: .milliseconds(50), maximum: .seconds(60))
        XCTAssertEqual(limits.clamp(.seconds(45)), PulseLimits.absoluteMaximum)
        XCTAssertEqual(limits.clamp(.milliseconds(1)), .milliseconds(50))
        XCTAssertEqual(PulseLimits().clamp(.seconds(3)), .seconds(3))
    }
}

final class ClockFloorTests: XCTestCase {
    func testOnlyASynchronisedClockRaisesTheFloor() {
        var floor = ClockFloor()
        floor.observe(WallClock(unixSeconds: 5_000, synchronised: false))
        XCTAssertEqual(floor.unix, 0, "an unsynchronised reading says nothing")
        floor.observe(WallClock(unixSeconds: 4_000, synchronised: true))
        floor.observe(WallClock(unixSeconds: 3_000, synchronised: true))
        XCTAssertEqual(floor.unix, 4_000, "a clock set back does not lower it")
    }

    func testExpiryIsJudgedNoEarlierThanTheFloor() {
        let floor = ClockFloor(unix: 10_000)
        // Set back 3 h, synchronised or not: expiry is judged at the floor.
        XCTAssertEqual(floor.expiryTime(WallClock(unixSeconds: 10_000 - 10_800, synchronised: true)), 10_000)
        XCTAssertEqual(floor.expiryTime(WallClock(unixSeconds: 0, synchronised: false)), 10_000)
        // Ahead of the floor: the wall clock (expiry only comes sooner).
        XCTAssertEqual(floor.expiryTime(WallClock(unixSeconds: 20_000, synchronised: false)), 20_000)
    }

    /// A sticker whose registry expiry passed stays expired after the clock goes back.
    func testAnExpiredTagStaysExpiredWhenTheClockGoesBack() throws {
        var floor = ClockFloor()
        let until: Int64 = 1_800_000_000
        floor.observe(WallClock(unixSeconds: until + 60, synchronised: true))
        let setBack = WallClock(unixSeconds: until - 3 * 3600, synchronised: true)
        floor.observe(setBack)
        XCTAssertGreaterThan(floor.expiryTime(setBack), until)
    }

    /// A floor a far-future time raised comes down to a synchronised
    /// reading only, and a reset never raises it.
    func testAResetLowersTheFloorToASynchronisedReadingOnly() {
        let future: Int64 = 2_000_000_000
        let now: Int64 = 1_800_000_000
        var floor = ClockFloor()
        floor.observe(WallClock(unixSeconds: future, synchronised: true))

        XCTAssertEqual(floor.reset(to: WallClock(unixSeconds: now, synchronised: false)), .clockUnsynchronised)
        XCTAssertEqual(floor.unix, future, "refused: the floor stays")

        XCTAssertEqual(
            floor.reset(to: WallClock(unixSeconds: now, synchronised: true)), .lowered(from: future, to: now))
        XCTAssertEqual(floor.unix, now)
        XCTAssertEqual(floor.expiryTime(WallClock(unixSeconds: now + 5, synchronised: true)), now + 5)

        XCTAssertEqual(floor.reset(to: WallClock(unixSeconds: now + 60, synchronised: true)), .notAhead(floor: now))
        XCTAssertEqual(floor.unix, now, "a reset never raises the floor")
        XCTAssertEqual(floor.reset(to: WallClock(unixSeconds: now, synchronised: true)), .notAhead(floor: now))
    }
}

/// `includes`: the byte search the shipped code uses instead of
/// `_StringProcessing`'s `contains(_: String)`.
final class TextTests: XCTestCase {
    func testIncludesFindsAnyRunOfBytesAndNothingElse() {
        XCTAssertTrue("Raspberry Pi 4 Model B".includes("Raspberry Pi"))
        XCTAssertTrue("nats: Permissions Violation for Publish".includes("Permissions Violation"))
        XCTAssertTrue("abc".includes(""))
        XCTAssertTrue("abc".includes("abc"))
        XCTAssertTrue("aab".includes("ab"), "a restart after a partial match")
        XCTAssertTrue("smpshare://x".dropFirst(3).includes("share://"), "a Substring")
        XCTAssertFalse("abc".includes("abcd"))
        XCTAssertFalse("".includes("a"))
        XCTAssertFalse("Raspberry pi".includes("Raspberry Pi"), "case matters")
        XCTAssertTrue("température".includes("é"), "UTF-8 bytes")
        // Against the standard library's answer on random ASCII texts.
        var rng = SeededRandom(seed: 7)
        for _ in 0..<2000 {
            let hay = String((0..<Int.random(in: 0...12, using: &rng)).map { _ in "ab".randomElement(using: &rng)! })
            let needle = String((0..<Int.random(in: 0...4, using: &rng)).map { _ in "ab".randomElement(using: &rng)! })
            XCTAssertEqual(hay.includes(needle), needle.isEmpty || hay.contains(needle), "\(hay) / \(needle)")
        }
    }
}
