import DoorCore
import Foundation
import GatewayStore
import NFCReader
import TestSupport
import XCTest

/// Issue 26, provisioning an NTAG 424 DNA at the door (docs/ntag424.md
/// "Provisioning at the door"): the real gatewayd (the static binary under
/// make test) and its pn532-sim child, real libnfc over the pty; a factory
/// 424 (`sim tap --ntag424`) provisioned by the button or `provision`, torn
/// away at every point, reset to factory keys by `provision reset`.
final class NTAG424ProvisioningTests: XCTestCase {
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
        let row = try XCTUnwrap(try g.issuedTag(uid))
        XCTAssertEqual(row["state"]?.stringValue, "active")
        XCTAssertEqual(row["kind"]?.stringValue, "ntag424")
        XCTAssertFalse(g.log.contains("ntag424_site_key"), "no key material in the log")

        // Provisioned → granted: the next tap proves the tag's new key (EV2) and its SUN.
        let granted = try g.retap(expect: "access_granted")
        XCTAssertEqual(granted["uid"]?.stringValue, uid)
        XCTAssertEqual(granted["reason"]?.stringValue, "ntag424")
        try g.waitForOutput("strike", "unlocked")

        // Reset: factory keys again, the row marked.
        let reset = try g.ctlJSON(["provision", "reset"])
        XCTAssertEqual(reset["uid"]?.stringValue, uid)
        XCTAssertEqual(reset["row_marked"]?.boolValue, true)
        XCTAssertEqual(try g.issuedTag(uid)?["state"]?.stringValue, "failed")
        try g.waitForEvent("tag_reset")
        // Factory keys: the door's key no longer authenticates, so it opens nothing.
        let seen = try g.eventCount()
        try g.retap(expect: "access_denied")
        XCTAssertFalse(try g.auditKinds().dropFirst(seen).contains("access_granted"))
        // A factory tag again: a second reset has nothing left to undo and no
        // row to mark, and provisioning runs from the factory state once more.
        XCTAssertEqual(try g.ctlJSON(["provision", "reset"])["row_marked"]?.boolValue, false)
        // Its (failed) row is still the registry's: only a reissue by name gives it keys again.
        var before = try g.eventCount()
        try presentAgain(g)
        XCTAssertEqual(
            try g.waitForEvent("provisioning_failed", after: before, timeout: 20)["reason"]?.stringValue,
            "already_registered")
        before = try g.eventCount()
        try presentAgain(g, arm: ["provision", "--action", "0", "--label", "desk", "--reissue", uid])
        try g.waitForEvent("provisioning_written", after: before, timeout: 20)
        XCTAssertEqual(try g.issuedTag(uid)?["state"]?.stringValue, "active")
        // Provisioned again after a reset: SDM restarted its counter, the door set its stored one to the verifying read's.
        XCTAssertEqual(try g.retap(expect: "access_granted")["uid"]?.stringValue, uid)
        XCTAssertEqual(g.stop(), 0)
    }

    /// A tear at any point of provisioning: no row (nothing active, nothing
    /// pending), and the next attempt with the same tag finishes it. The
    /// points count air exchanges from the tag's arrival: the door's tap of it
    /// (activation, RATS, reads, EV2 with the door's key), the presence checks,
    /// then the 42 exchanges of a provisioning (NTAG424ReaderTests) — every point.
    func testATearAtAnyStepLeavesNoRowAndTheNextAttemptFinishes() throws {
        let g = try GatewayUnderTest()
        try g.start()
        let points = Array(stride(from: 2, through: 74, by: 3))
        var torn = 0, beforeArrival = 0
        for (i, n) in points.enumerated() {
            let uid = String(format: "04D0%02X1EACC0%02X", i, n)
            let seen = try g.eventCount()
            try g.ctlJSON(["provision", "--action", "0", "--label", "torn"])
            try g.waitForEvent("provisioning_armed", after: seen)
            try g.ctlJSON(["sim", "tap", "--ntag424", "--uid", uid, "--tear-after", "\(n)"])
            if let end = try waitForEither(g, ["provisioning_written", "provisioning_failed"], after: seen, seconds: 4)
            {
                if end["kind"]?.stringValue == "provisioning_failed" {
                    torn += 1
                    XCTAssertNil(try g.issuedTag(uid), "torn after \(n): no row for an unverified tag")
                    let next = try g.eventCount()
                    try presentAgain(g)
                    try g.waitForEvent("provisioning_written", after: next, timeout: 20)
                }
            } else {
                // Torn while the door was still tapping it: it never arrived, nothing was written.
                beforeArrival += 1
                XCTAssertNil(try g.issuedTag(uid), "torn after \(n) before arrival: no row")
                let next = try g.eventCount()
                try g.ctlJSON(["sim", "reinsert"])  // still armed: the machine picks it now
                try g.waitForEvent("provisioning_written", after: next, timeout: 20)
            }
            XCTAssertEqual(try g.issuedTag(uid)?["state"]?.stringValue, "active", "torn after \(n), then finished")
            _ = try g.ctl(["sim", "remove"])
            if i % 4 == 0 {
                // And the finished tag opens (its keys and SUN are the door's).
                E2ETiming.outlastQuietWindow()
                let before = try g.eventCount()
                try g.ctlJSON(["sim", "reinsert"])
                try g.waitForEvent("access_granted", after: before, timeout: 10)
                _ = try g.ctl(["sim", "remove"])
            }
        }
        print(
            "424 provisioning tears: \(torn) torn mid-provisioning, \(beforeArrival) before arrival, of \(points.count)"
        )
        // 42 exchanges of provisioning at every third point: at least 10 tears land inside it.
        XCTAssertGreaterThanOrEqual(torn, 10, "the points cover the provisioning itself")
        XCTAssertEqual(g.stop(), 0)
    }

    /// A reset torn at several points fails and leaves the row as it was;
    /// the next reset finishes (factory keys: provisioning starts over).
    func testATornResetIsFinishedByTheNextOne() throws {
        let g = try GatewayUnderTest()
        try g.start()
        let uid = "04E05F1EACC041"
        try g.provisionTag(uid, tag: "--ntag424", arm: ["provision", "--action", "0", "--label", "reset-me"])
        var failures = 0
        for n in [3, 9, 15, 21] {
            try g.ctlJSON(["sim", "tear", "\(n)"])
            let reset = try g.ctl(["provision", "reset"])
            if reset.status != 0 {
                failures += 1
                XCTAssertEqual(
                    try g.issuedTag(uid)?["state"]?.stringValue, "active", "torn reset after \(n): row untouched")
                XCTAssertFalse(try g.auditKinds().contains("tag_reset"))
            }
            _ = try g.ctl(["sim", "remove"])
            try g.ctlJSON(["sim", "reinsert"])
            if reset.status == 0 { break }
        }
        XCTAssertGreaterThan(failures, 0, "a tear reached the reset")
        let done = try g.ctlJSON(["provision", "reset"])
        XCTAssertEqual(done["uid"]?.stringValue, uid)
        XCTAssertEqual(try g.issuedTag(uid)?["state"]?.stringValue, "failed")
        // Factory keys: a reissue by name provisions it from the factory state again.
        let before = try g.eventCount()
        try presentAgain(g, arm: ["provision", "--action", "0", "--label", "reset-me", "--reissue", uid])
        try g.waitForEvent("provisioning_written", after: before, timeout: 20)
        XCTAssertEqual(try g.issuedTag(uid)?["state"]?.stringValue, "active")
        XCTAssertEqual(g.stop(), 0)
    }

    /// docs/security.md "NTAG 424 provisioning at the door": a 424 that holds
    /// another issuer's keys (here another site's master key) is neither taken
    /// over by provisioning nor reset: no row, and its keys are unchanged. The
    /// door's site key is never in its log.
    func testAnother424sKeysAreNeitherTakenOverNorResetAndTheSiteKeyIsNeverLogged() throws {
        let sim = try PN532SimProcess()
        let uid = TagUID(hex: "04AB5F1EACC0CD")!
        let theirs = [UInt8](repeating: 0x3C, count: 16)
        XCTAssertTrue(try sim.control("insert ntag424 \(uid.hex)").hasPrefix("ok"))
        func theirReader() throws -> NFCReader {
            let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
            try reader.open()
            return reader
        }
        do {
            let reader = try theirReader()
            defer { reader.close() }
            XCTAssertNotNil(try reader.provisionNTAG424(masterKey: theirs, base: "https://other.example/t"))
        }
        _ = try sim.control("remove")

        let g = try GatewayUnderTest()
        var toml = try String(contentsOf: g.configFile, encoding: .utf8)
        toml = toml.replacingOccurrences(
            of: "simulator = \"spawn\"", with: "simulator = \"\(sim.socket)\"\nconnstring = \"pn532_uart:\(sim.tty)\"")
        try toml.write(to: g.configFile, atomically: true, encoding: .utf8)
        try g.start()
        var seen = try g.eventCount()
        try g.ctlJSON(["provision", "--action", "0", "--label", "take-over"])
        try g.waitForEvent("provisioning_armed", after: seen)
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        let failed = try g.waitForEvent("provisioning_failed", after: seen, timeout: 20)
        XCTAssertEqual(failed["reason"]?.stringValue, "foreign_content", "\(failed)")
        XCTAssertNil(try g.issuedTag(uid.hex), "no row for a tag the door could not provision")
        // Reset refuses it too.
        seen = try g.eventCount()
        let reset = try g.ctl(["provision", "reset"])
        XCTAssertNotEqual(reset.status, 0, reset.stdout)
        XCTAssertTrue(reset.stderr.contains("foreign_content"), reset.stderr)
        XCTAssertFalse(try g.auditKinds().dropFirst(seen).contains("tag_reset"))
        XCTAssertEqual(g.stop(), 0)

        // The tag still answers to its issuer's keys, as before.
        let reader = try theirReader()
        defer { reader.close() }
        let tap = try XCTUnwrap(
            try reader.tapNTAG424(key: { try? NTAG424.tagKey(masterKey: theirs, uid: $0.bytes, keyNumber: 0) }))
        XCTAssertEqual(tap.proof, .authenticated(cardUID: uid.bytes))
        XCTAssertTrue(try tap.message?.firstURI().hasPrefix("https://other.example/t?e=") == true)
        // The door generated its site key for the attempt; no form of it is in its log.
        let key = try XCTUnwrap(try GatewayStore(stateDirectory: g.dir.path + "/state").ntag424SiteKey()).key
        for form in [Hex.encode(key), Hex.encode(key, uppercase: true)] {
            XCTAssertFalse(g.log.contains(form), "the site key is in the log")
        }
    }

    /// The first event of `kinds` after `after`, or nil when none came within `seconds`.
    func waitForEither(_ g: GatewayUnderTest, _ kinds: [String], after: Int, seconds: TimeInterval) throws -> JSONValue?
    {
        try poll(timeout: seconds, interval: 0.05) {
            (try g.ctlJSON(["log", "--limit", "500"]).arrayValue ?? []).dropFirst(after).first {
                kinds.contains($0["kind"]?.stringValue ?? "")
            }
        }
    }
}
