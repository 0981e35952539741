import DoorCore
import Foundation
import TestSupport
import XCTest

/// Issue 32 L-2 / docs/security.md "L8" on the real gatewayd with the
/// shipped example's `[lockout]` (per tag 3, global 10): ten taps of factory
/// NTAG 424s (`unknown_tag`; anyone can buy them) do not lock the reader out
/// for everyone — each unknown UID counts toward its own lockout only — while
/// forged stickers of ten UIDs still do. (Before the fix the ten factory 424s
/// raised `lockout reason=global`, and the issued sticker was denied
/// `locked_out`.)
final class LockoutScopeTests: XCTestCase {
    func tapAndLeave(_ g: GatewayUnderTest, _ args: [String], expect reason: String) throws {
        let n = try g.eventCount()
        try g.ctlJSON(["sim", "tap"] + args)
        let denied = try g.waitForEvent("access_denied", after: n)
        XCTAssertEqual(denied["reason"]?.stringValue, reason, "\(denied)")
        try g.ctlJSON(["sim", "remove"])
    }

    func testFactory424sLockOutTheirOwnUIDsNotTheReader() throws {
        let g = try GatewayUnderTest(stockExample: "sim")
        try g.start()
        defer { g.stop() }
        // A sticker issued at the door, saved as a dump to tap again later.
        try g.provisionTag("04C0C0C0C0C0C0")
        let sticker = g.dir.appendingPathComponent("sticker.dump").path
        try g.ctlJSON(["sim", "dump", sticker])
        try g.ctlJSON(["sim", "remove"])

        // Ten factory 424s, each a UID of its own: the global threshold of the stock example.
        for i in 0..<10 {
            try tapAndLeave(g, ["--ntag424", "--uid", String(format: "04A424%08X", i)], expect: "unknown_tag")
        }
        // One of them again and again: its own UID is locked out (per_tag_threshold = 3).
        let again = "04A42400000000"
        for _ in 0..<2 {
            E2ETiming.outlastQuietWindow()
            try tapAndLeave(g, ["--ntag424", "--uid", again], expect: "unknown_tag")
        }
        let tagLockout = try g.waitForEvent("lockout")
        XCTAssertEqual(tagLockout["reason"]?.stringValue, "tag", "\(tagLockout)")
        XCTAssertEqual(tagLockout["uid"]?.stringValue, again)
        let status = try g.ctlJSON(["lockout", "status"])
        XCTAssertEqual(status["tags"]?.arrayValue?.compactMap { $0["uid"]?.stringValue }, [again], "\(status)")
        XCTAssertFalse(try g.auditKinds().isEmpty)
        let rows = try g.ctlJSON(["log", "--limit", "500"]).arrayValue ?? []
        XCTAssertFalse(
            rows.contains { $0["kind"]?.stringValue == "lockout" && $0["reason"]?.stringValue == "global" },
            "factory 424s raised the global lockout: \(rows.suffix(5))")

        // The issued sticker still opens.
        E2ETiming.outlastQuietWindow()
        var n = try g.eventCount()
        try g.ctlJSON(["sim", "tap", "--dump", sticker])
        let granted = try g.waitForEvent("access_granted", after: n)
        XCTAssertEqual(granted["uid"]?.stringValue, "04C0C0C0C0C0C0")
        try g.ctlJSON(["sim", "remove"])

        // Failed proofs still count globally: forged stickers on ten UIDs lock the reader out.
        for i in 0..<10 {
            let uid = TagUID(hex: String(format: "04BAD0%08X", i))!
            let forged = StickerSigner.signV2(
                action: 0, timestamp: 1_700_000_000 + Int64(i), key: [UInt8](repeating: 3, count: 32), uid: uid)
            try tapAndLeave(g, [forged.text, "--uid", uid.hex], expect: "bad_signature")
        }
        let global = try g.waitForEvent("lockout", reason: "global")
        XCTAssertNil(global["uid"]?.stringValue)
        E2ETiming.outlastQuietWindow()
        n = try g.eventCount()
        try g.ctlJSON(["sim", "tap", "--dump", sticker])
        XCTAssertEqual(try g.waitForEvent("access_denied", after: n)["reason"]?.stringValue, "locked_out")
        try g.ctlJSON(["sim", "remove"])
    }
}
