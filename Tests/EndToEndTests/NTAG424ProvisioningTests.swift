import DoorCore
import Foundation
import TestSupport
import XCTest

/// Issue 26, provisioning an NTAG 424 DNA at the door (docs/ntag424.md
/// "Provisioning at the door"): the real gatewayd (the static binary under
/// make test) and its pn532-sim child, real libnfc over the pty; a factory
/// 424 (`sim tap --ntag424`) provisioned by the button or `provision`, torn
/// away at every point, reset to factory keys by `provision reset`.
final class NTAG424ProvisioningTests: XCTestCase {
    func tag(_ g: GatewayUnderTest, _ uid: String) throws -> JSONValue? {
        (try g.ctlJSON(["tags", "list"])["tags"]?.arrayValue ?? []).first { $0["uid"]?.stringValue == uid }
    }

    /// Arms provisioning and brings the tag (already on the reader, or
    /// reinserted) into the field again, so the armed machine picks it.
    func presentAgain(_ g: GatewayUnderTest, arm: [String] = ["provision", "--action", "0", "--label", "desk"]) throws {
        let seen = try g.eventCount()
        try g.ctlJSON(arm)
        try g.waitForEvent("provisioning_armed", after: seen)
        _ = try g.ctl(["sim", "remove"])
        E2ETiming.outlastQuietWindow()
        try g.ctlJSON(["sim", "reinsert"])
    }

    func testAFactory424IsProvisionedByTheButtonAndResetToFactoryKeys() throws {
        let g = try GatewayUnderTest()
        try g.start()
        let uid = "04DE5F1EACC040"

        try g.ctlJSON(["sim", "press", "--hold", "5.5"])
        try g.waitForEvent("provisioning_armed", timeout: 10)
        try g.ctlJSON(["sim", "tap", "--ntag424", "--uid", uid])
        let written = try g.waitForEvent("provisioning_written", timeout: 20)
        XCTAssertEqual(written["uid"]?.stringValue, uid)
        let row = try XCTUnwrap(try tag(g, uid))
        XCTAssertEqual(row["state"]?.stringValue, "active")
        XCTAssertEqual(row["kind"]?.stringValue, "ntag424")
        XCTAssertFalse(g.log.contains("ntag424_site_key"), "no key material in the log")

        // Reset: factory keys again, the row marked.
        let reset = try g.ctlJSON(["provision", "reset"])
        XCTAssertEqual(reset["uid"]?.stringValue, uid)
        XCTAssertEqual(reset["row_marked"]?.boolValue, true)
        XCTAssertEqual(try tag(g, uid)?["state"]?.stringValue, "failed")
        try g.waitForEvent("tag_reset")
        // A factory tag again: a second reset has nothing left to undo and no
        // row to mark, and provisioning runs from the factory state once more.
        XCTAssertEqual(try g.ctlJSON(["provision", "reset"])["row_marked"]?.boolValue, false)
        let before = try g.eventCount()
        try presentAgain(g)
        try g.waitForEvent("provisioning_written", after: before, timeout: 20)
        XCTAssertEqual(try tag(g, uid)?["state"]?.stringValue, "active")
        XCTAssertEqual(g.stop(), 0)
    }

    /// A tear at any point of provisioning: no row (nothing active, nothing
    /// pending), and the next attempt with the same tag finishes it.
    func testATearAtAnyStepLeavesNoRowAndTheNextAttemptFinishes() throws {
        let g = try GatewayUnderTest()
        try g.start()
        // The arrival (activation), the presence checks meanwhile, then the 42
        // air exchanges of a provisioning (NTAG424ReaderTests): every point.
        let points = Array(stride(from: 2, through: 70, by: 4))
        var torn = 0
        for (i, n) in points.enumerated() {
            let uid = String(format: "04D0%02X1EACC0%02X", i, n)
            let seen = try g.eventCount()
            try g.ctlJSON(["provision", "--action", "0", "--label", "torn"])
            try g.waitForEvent("provisioning_armed", after: seen)
            try g.ctlJSON(["sim", "tap", "--ntag424", "--uid", uid, "--tear-after", "\(n)"])
            let end = try waitForEither(g, ["provisioning_written", "provisioning_failed"], after: seen)
            if end["kind"]?.stringValue == "provisioning_failed" {
                torn += 1
                XCTAssertNil(try tag(g, uid), "torn after \(n): no row for an unverified tag")
                try g.ctlJSON(["provision", "cancel"])
                let next = try g.eventCount()
                try presentAgain(g)
                try g.waitForEvent("provisioning_written", after: next, timeout: 20)
            }
            XCTAssertEqual(try tag(g, uid)?["state"]?.stringValue, "active", "torn after \(n), then finished")
            _ = try g.ctl(["sim", "remove"])
        }
        XCTAssertGreaterThan(torn, points.count / 2, "most points tear the provisioning itself")
        XCTAssertEqual(g.stop(), 0)
    }

    func waitForEither(_ g: GatewayUnderTest, _ kinds: [String], after: Int) throws -> JSONValue {
        let deadline = Date() + E2ETiming.timeout(20)
        repeat {
            let rows = (try g.ctlJSON(["log", "--limit", "500"]).arrayValue ?? []).dropFirst(after)
            if let hit = rows.first(where: { kinds.contains($0["kind"]?.stringValue ?? "") }) { return hit }
            usleep(50_000)
        } while Date() < deadline
        throw E2EError("none of \(kinds) within 20 s: \(try g.auditKinds())\n\(g.log.suffix(3000))")
    }
}
