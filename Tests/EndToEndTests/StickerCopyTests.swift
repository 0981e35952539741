import DoorCore
import Foundation
import TestSupport
import XCTest

/// Security review finding H1 (docs/security.md): a v2 sticker read with a
/// phone, its `&u=…` cut off and the rest written onto a blank NTAG, is a v1
/// sticker signed with a gateway-generated key. It must open no door that
/// holds that key, however the key got there.
final class StickerCopyTests: XCTestCase {
    /// Door A issues the sticker. Door B is a door of the same site that
    /// really holds A's key, given to it the supported way (`fleet push
    /// --secrets` over the site's broker, the shipped configuration and ACL)
    /// next to a key imported from a phone (so B does accept v1 stickers):
    /// the original opens B, the copy is denied there as `v1_not_allowed`.
    /// Door C, outside the fleet, shows what an `--allow-v1` link does.
    func testAV2StickerWithUCutOffOpensNoDoorThatHoldsItsKey() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        try broker.start()
        let site = try MQTTFleetSite(broker)
        let keys = try SiteKeys("stickercopy")
        defer { keys.remove() }
        let (work, siteKey) = (keys.work, keys.keyFile)
        let a = try keys.door(site, "door-a")
        let b = try keys.door(site, "door-b")
        let c = try GatewayUnderTest()
        defer {
            a.stop()
            b.stop()
            c.stop()
        }
        for g in [a, b, c] { try g.start() }
        for g in [a, b] { try waitUntil(timeout: 15) { (try g.status()["broker"]?["connected"]) == .bool(true) } }

        // A issues a v2 sticker; the attacker reads it and cuts off `&u=…`.
        let uid = "04A1B2C3D4E5F6"
        try a.provisionTag(uid, arm: ["provision", "--action", "0", "--label", "alice"])
        let dumpFile = work.appendingPathComponent("alice.dump").path
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

        // Sharing the key the way the docs used to say (export at A, import
        // at B) hands B nothing: the export is refused and prints no key.
        let export = try a.ctl(["secrets", "export", "\(id)"])
        XCTAssertNotEqual(export.status, 0, "a generated secret exported without --allow-v1: \(export.stdout)")
        XCTAssertFalse(export.stdout.contains("smpshare://"), "no key printed")
        XCTAssertTrue(export.stderr.contains("--allow-v1"), export.stderr)
        _ = try b.ctl(["secrets", "import"], stdin: export.stdout)
        XCTAssertEqual(try b.ctlJSON(["secrets", "list"]).arrayValue?.count, 0, "B holds no key from it")

        // B takes v1 stickers from phones: a phone's key for action 0, imported.
        let phoneKey = Hex.encode((0..<32).map { UInt8(0x30 + $0) })
        let phone = try b.ctl(["secrets", "import"], stdin: "smpshare://secret?idx=0&key=\(phoneKey)&label=phone\n")
        XCTAssertEqual(phone.status, 0, phone.stderr)

        // A's key reaches B the supported way: pushed with the site's secrets.
        let push = try a.ctlJSON([
            "fleet", "push", "--site-key", siteKey, "--by", "h1-test", "--secrets", "--yes", "--config",
            a.configFile.path,
        ])
        XCTAssertEqual(push["version"]?.intValue, 1, "\(push)")
        try waitUntil { try b.ctlJSON(["fleet", "status"])["applied_version"]?.intValue == 1 }
        let atB = try XCTUnwrap(b.ctlJSON(["secrets", "list"]).arrayValue)
        XCTAssertEqual(
            Set(atB.compactMap { $0["origin"]?.stringValue }), ["generated", "imported"], "B holds both keys: \(atB)")

        // B holds A's key: the original sticker opens B...
        var seen = try b.eventCount()
        try b.ctlJSON(["sim", "tap", "--dump", dumpFile])
        try b.waitForEvent("access_granted", reason: "valid_v2", after: seen)
        try b.waitForEvent("action_completed", after: seen)  // the strike locked again
        try b.ctlJSON(["sim", "remove"])
        E2ETiming.outlastQuietWindow()  // longer than same_tag_quiet_ms
        // ...and the copy on a blank NTAG is denied there for what it is, audited,
        // the strike locked.
        seen = try b.eventCount()
        try b.ctlJSON(["sim", "tap", copy, "--uid", blankNTAG])
        let deniedAtB = try b.waitForEvent("access_denied", reason: "v1_not_allowed", after: seen)
        XCTAssertEqual(deniedAtB["uid"]?.stringValue, blankNTAG, "\(deniedAtB)")
        XCTAssertFalse(try b.auditKinds().dropFirst(seen).contains("access_granted"))
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

        // Imported back where the key is held (A, and B through the fleet): refused, nothing stored.
        for (g, name) in [(a, "A"), (b, "B")] {
            let again = try g.ctl(["secrets", "import"], stdin: link + "\n")
            XCTAssertEqual(again.status, 1, "\(name): \(again.stdout)")
            XCTAssertTrue(again.stderr.contains("already held as secret"), "\(name): \(again.stderr)")
        }
        let after = try XCTUnwrap(a.ctlJSON(["secrets", "list"]).arrayValue)
        XCTAssertEqual(after.map { $0["origin"]?.stringValue }, ["generated"])

        // The copy at A: denied for its own reason, audited, the strike stays locked.
        E2ETiming.outlastQuietWindow()
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

        // What --allow-v1 says it does: a door that imports the link (C, which
        // held no copy of the key) accepts v1 stickers signed with it, so the
        // copy opens C.
        let atCWithLink = try c.ctl(["secrets", "import"], stdin: link + "\n")
        XCTAssertEqual(atCWithLink.status, 0, atCWithLink.stderr)
        seen = try c.eventCount()
        try c.ctlJSON(["sim", "tap", copy, "--uid", blankNTAG])
        try c.waitForEvent("access_granted", reason: "valid_v1", after: seen)
        XCTAssertEqual(a.stop(), 0)
        XCTAssertEqual(b.stop(), 0)
        XCTAssertEqual(c.stop(), 0)
    }
}
