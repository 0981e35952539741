import DoorCore
import Foundation
import TestSupport
import XCTest

/// Security review finding H1 (docs/security.md): a v2 sticker read with a
/// phone, its `&u=…` cut off and the rest written onto a blank NTAG, is a v1
/// sticker signed with a gateway-generated key. It must open no door that
/// holds that key, however the key got there.
final class StickerCopyTests: XCTestCase {
    func testAV2StickerWithUCutOffOpensNoDoorThatHoldsItsKey() throws {
        let a = try GatewayUnderTest()
        try a.start()
        let b = try GatewayUnderTest()
        try b.start()
        defer {
            a.stop()
            b.stop()
        }

        // A issues a v2 sticker; the attacker reads it and cuts off `&u=…`.
        try a.ctlJSON(["provision", "--action", "0", "--label", "alice"])
        try a.waitForEvent("provisioning_armed")
        let uid = "04A1B2C3D4E5F6"
        try a.ctlJSON(["sim", "tap", "--blank", "--uid", uid])
        try a.waitForEvent("provisioning_written")
        let dumpFile = a.dir.appendingPathComponent("alice.dump").path
        try a.ctlJSON(["sim", "dump", dumpFile])
        try a.ctlJSON(["sim", "remove"])
        let image = try TagImage(dump: Array(try Data(contentsOf: URL(fileURLWithPath: dumpFile))))
        guard case .message(let message) = try image.content() else { return XCTFail("no message on the sticker") }
        let written = try message.firstURI()
        XCTAssertTrue(written.contains("&u="), written)
        let copy = written.components(separatedBy: "&").filter { !$0.hasPrefix("u=") }.joined(separator: "&")
        let blankNTAG = "04998877665544"
        let secrets = try XCTUnwrap(a.ctlJSON(["secrets", "list"]).arrayValue)
        XCTAssertEqual(secrets.count, 1)
        XCTAssertEqual(secrets.first?["origin"]?.stringValue, "generated")
        let id = try XCTUnwrap(secrets.first?["id"]?.intValue)

        // The operator shares the key the way the docs said (export at A,
        // import at B), piping whatever export printed into import.
        let export = try a.ctl(["secrets", "export", "\(id)"])
        XCTAssertNotEqual(export.status, 0, "a generated secret exported without --allow-v1: \(export.stdout)")
        XCTAssertFalse(export.stdout.contains("smpshare://"), "no key printed")
        XCTAssertTrue(export.stderr.contains("--allow-v1"), export.stderr)
        _ = try b.ctl(["secrets", "import"], stdin: export.stdout)

        // The copy on a blank NTAG at B: denied, audited, the strike stays locked.
        var seen = try b.eventCount()
        try b.ctlJSON(["sim", "tap", copy, "--uid", blankNTAG])
        let atB = try b.waitForEvent("access_denied", after: seen)
        XCTAssertEqual(try b.auditKinds().dropFirst(seen).filter { $0 == "access_granted" }, [], "\(atB)")
        XCTAssertEqual(try b.status()["outputs"]?["strike"]?.stringValue, "locked")
        try b.ctlJSON(["sim", "remove"])

        // Exported with --allow-v1, the output says what that means.
        let allowed = try a.ctl(["secrets", "export", "\(id)", "--allow-v1"])
        XCTAssertEqual(allowed.status, 0, allowed.stderr)
        let link = allowed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(link.hasPrefix("smpshare://secret?idx=0&key="), link)
        XCTAssertTrue(allowed.stderr.contains("v1"), allowed.stderr)
        XCTAssertTrue(allowed.stderr.contains("without a registry row"), allowed.stderr)
        XCTAssertFalse(allowed.stderr.contains("key="), "the key only on standard output")
        let audited = try a.waitForEvent("secret_exported", reason: "allow_v1")
        XCTAssertFalse("\(audited)".contains(link.dropFirst("smpshare://secret?idx=0&key=".count).prefix(64)))

        // Imported back where the key is held: refused, nothing stored.
        let again = try a.ctl(["secrets", "import"], stdin: link + "\n")
        XCTAssertEqual(again.status, 1, again.stdout)
        XCTAssertTrue(again.stderr.contains("already held as secret \(id)"), again.stderr)
        let after = try XCTUnwrap(a.ctlJSON(["secrets", "list"]).arrayValue)
        XCTAssertEqual(after.map { $0["origin"]?.stringValue }, ["generated"])

        // The copy at A: denied for its own reason, audited, the strike stays locked.
        E2ETiming.outlastQuietWindow()  // longer than same_tag_quiet_ms
        seen = try a.eventCount()
        try a.ctlJSON(["sim", "tap", copy, "--uid", blankNTAG])
        let denied = try a.waitForEvent("access_denied", reason: "v1_not_allowed", after: seen)
        XCTAssertEqual(denied["uid"]?.stringValue, blankNTAG, "\(denied)")
        XCTAssertEqual(try a.status()["outputs"]?["strike"]?.stringValue, "locked")
        XCTAssertFalse(try a.auditKinds().dropFirst(seen).contains("access_granted"))
        // The original sticker still opens A.
        try a.ctlJSON(["sim", "remove"])
        E2ETiming.outlastQuietWindow()
        seen = try a.eventCount()
        try a.ctlJSON(["sim", "tap", "--dump", dumpFile])
        try a.waitForEvent("access_granted", reason: "valid_v2", after: seen)

        // What --allow-v1 says it does: a door that imports the link accepts
        // v1 stickers signed with the key, so the copy opens B.
        let atBWithLink = try b.ctl(["secrets", "import"], stdin: link + "\n")
        XCTAssertEqual(atBWithLink.status, 0, atBWithLink.stderr)
        E2ETiming.outlastQuietWindow()
        seen = try b.eventCount()
        try b.ctlJSON(["sim", "tap", copy, "--uid", blankNTAG])
        try b.waitForEvent("access_granted", reason: "valid_v1", after: seen)
        XCTAssertEqual(a.stop(), 0)
        XCTAssertEqual(b.stop(), 0)
    }
}
