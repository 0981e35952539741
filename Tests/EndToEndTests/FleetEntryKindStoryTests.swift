import DoorCore
import Foundation
import TestSupport
import XCTest

/// A running gatewayd (the shipped example, MQTT with mutual TLS and the
/// shipped ACL, pn532-sim) hears a document signed with the site key whose
/// tag entries name credential kinds the fleet does not carry — `ntag424-sun`,
/// `sticker-v2`, a name from a future build — beside a revocation of a 424
/// this door provisioned (docs/fleet.md "Entries a door cannot store").
/// The door applies the document: the revocation lands (that 424 is then
/// denied, `revoked`); each odd entry is skipped, audited
/// (`fleet_entry_skipped`) and listed by `gatewayctl fleet status`; a tap of
/// the skipped UID as an NTAG 424 DNA is denied. Before the fix the whole
/// document was rolled back on the `issued_tag.kind` CHECK and retried in
/// silence: the revocation never landed.
final class FleetEntryKindStoryTests: XCTestCase {
    func testADocumentWithEntriesOfKindsTheFleetDoesNotCarryIsAppliedAndTheEntriesSkippedAndShown() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        try broker.start()
        let site = try MQTTFleetSite(broker)
        let sim = try PN532SimProcess()
        let keys = try SiteKeys("fkind")
        defer { keys.remove() }
        let seed = try keys.seed()
        let g = try keys.door(site, "door-a")
        try g.moveStockReader(to: sim)
        defer { g.stop() }

        /// The tag in the field again (`uid` nil), or a factory NTAG 424 DNA of `uid`; the access event it makes.
        func tap424(_ uid: String? = nil) throws -> JSONValue {
            _ = try sim.control("remove")
            E2ETiming.outlastQuietWindow()
            let seen = try g.eventCount()
            XCTAssertTrue(try sim.control(uid.map { "insert ntag424 \($0)" } ?? "reinsert").hasPrefix("ok"))
            return try g.accessEvent(after: seen)
        }
        func tagRow(_ uid: String) throws -> JSONValue? {
            (try g.ctlJSON(["tags", "list"])["tags"]?.arrayValue ?? []).first { $0["uid"]?.stringValue == uid }
        }

        // A 424 provisioned here (the door's own site key).
        let lost = "04DE5F1EACC040"
        try g.start()
        try waitUntil(timeout: 15) { (try g.status()["broker"]?["connected"]) == .bool(true) }
        try g.ctlJSON(["provision", "--action", "0", "--label", "alice"])
        try g.waitForEvent("provisioning_armed")
        XCTAssertTrue(try sim.control("insert ntag424 \(lost)").hasPrefix("ok"))
        try g.waitForEvent("provisioning_written", timeout: 20)
        XCTAssertEqual(try tap424()["kind"]?.stringValue, "access_granted")

        // The site's document, made by hand (no build's `fleet push` writes these kinds) and signed with the site key.
        let sun = "04AB5F1EACC0CD", sticker = "04BC5F1EACC0DE", future = "04CD5F1EACC0EF"
        let document = try FleetDocument(
            site: FleetTests.site, version: 1, origin: "door-e/root", issued: 1,
            revokedUIDs: [TagUID(hex: lost)!],
            tags: [
                FleetDocument.Tag(uid: TagUID(hex: sun)!, action: 0, label: "sun", credential: "ntag424-sun"),
                FleetDocument.Tag(uid: TagUID(hex: sticker)!, action: 0, label: "st", credential: "sticker-v2"),
                FleetDocument.Tag(uid: TagUID(hex: future)!, action: 0, label: "fu", credential: "ntag999"),
            ]
        ).signed(seed: seed)
        try site.publishAsDoorE(String(decoding: document, as: UTF8.self))

        // Applied: the revocation lands.
        try waitUntil(timeout: 20) { try g.ctlJSON(["fleet", "status"])["applied_version"]?.intValue == 1 }
        XCTAssertEqual(try tagRow(lost)?["state"]?.stringValue, "revoked")
        XCTAssertEqual(try tagRow(lost)?["kind"]?.stringValue, "ntag424", "the row keeps its kind")
        for uid in [sun, sticker, future] { XCTAssertNil(try tagRow(uid), "\(uid): no row of a kind not carried") }

        // Each skipped entry audited, with its credential and UID.
        try g.waitForEvent("fleet_entry_skipped")
        let skipped = (try g.ctlJSON(["log", "--limit", "500"]).arrayValue ?? []).filter {
            $0["kind"]?.stringValue == "fleet_entry_skipped"
        }
        XCTAssertEqual(Set(skipped.compactMap { $0["uid"]?.stringValue }), [sun, sticker, future], "\(skipped)")
        for row in skipped { XCTAssertEqual(row["reason"]?.stringValue, "credential_not_carried", "\(row)") }
        XCTAssertTrue(skipped.contains { $0["detail"]?.stringValue?.contains("credential ntag424-sun") == true })

        // Shown by `fleet status` (--json and text).
        let status = try g.ctlJSON(["fleet", "status"])
        let entries = status["skipped_entries"]?.arrayValue ?? []
        XCTAssertEqual(
            Set(
                entries.compactMap { e in e["credential"]?.stringValue.map { "\(e["uid"]?.stringValue ?? "") \($0)" } }),
            ["\(sun) ntag424-sun", "\(sticker) sticker-v2", "\(future) ntag999"], "\(status)")
        XCTAssertEqual(status["not_applied"], .null, "\(status)")
        let text = try g.ctl(["fleet", "status"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("skipped_entries:"), text.stdout)
        XCTAssertTrue(text.stdout.contains("ntag424-sun"), text.stdout)
        // One log line per skipped entry, naming the kind; no key material.
        XCTAssertTrue(g.log.contains("credential ntag424-sun"), String(g.log.suffix(3000)))
        XCTAssertFalse(g.log.contains(Hex.encode(seed)), "no site key in the log")

        // The revoked 424 (its own keys): denied. A tap of the skipped UID as an NTAG 424 DNA: denied.
        let atLost = try tap424()
        XCTAssertEqual(atLost["kind"]?.stringValue, "access_denied", "\(atLost)")
        XCTAssertEqual(atLost["reason"]?.stringValue, "revoked", "\(atLost)")
        let atSun = try tap424(sun)
        XCTAssertEqual(atSun["kind"]?.stringValue, "access_denied", "\(atSun)")
        XCTAssertEqual(atSun["uid"]?.stringValue, sun, "\(atSun)")
        try g.assertChainIntact()
        XCTAssertEqual(g.stop(), 0)
    }
}
