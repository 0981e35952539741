import DoorCore
import Foundation
import TestSupport
import XCTest

/// Issue 26 across the fleet (docs/ntag424.md "Fleet"): a factory NTAG 424
/// DNA provisioned at door A opens door B after A's `fleet push --secrets`
/// (B holds A's site master key, sealed through the broker, and the tag's
/// row as a 424 row); revoked at B and pushed, A denies it. Two real gatewayd
/// on the shipped example (MQTT, mutual TLS, the shipped ACL) share one
/// pn532-sim run by this test — one door on it at a time — so the tag A
/// provisioned is the tag B sees.
final class FleetNTAG424StoryTests: XCTestCase {
    /// Two doors of one site (the shipped example, MQTT with mutual TLS and the
    /// shipped ACL) on the test's pn532-sim, the site's signing and box keys.
    final class Site {
        let broker: MosquittoBroker
        let site: MQTTFleetSite
        let sim: PN532SimProcess
        let keys: SiteKeys
        var keyFile: String { keys.keyFile }

        init() throws {
            broker = try MosquittoBroker()
            try broker.start()
            site = try MQTTFleetSite(broker)
            sim = try PN532SimProcess()
            keys = try SiteKeys("f424")
        }

        func close() {
            broker.stop()
            keys.remove()
        }

        /// A door of the site on the test's pn532-sim.
        func door(_ name: String) throws -> GatewayUnderTest {
            let g = try keys.door(site, name)
            try g.moveStockReader(to: sim)
            return g
        }
        func applied(_ g: GatewayUnderTest) throws -> Int? {
            try g.ctlJSON(["fleet", "status"])["applied_version"]?.intValue
        }
        func push(_ g: GatewayUnderTest) throws -> JSONValue {
            try g.ctlJSON([
                "fleet", "push", "--site-key", keyFile, "--by", "alice-admin", "--secrets", "--yes", "--config",
                g.configFile.path,
            ])
        }
        /// The tag back in the field (`reinsert`, or `how`); the access event it makes.
        func tap(_ g: GatewayUnderTest, _ how: String = "reinsert") throws -> JSONValue {
            _ = try sim.control("remove")
            E2ETiming.outlastQuietWindow()
            let seen = try g.eventCount()
            XCTAssertTrue(try sim.control(how).hasPrefix("ok"))
            return try g.accessEvent(after: seen)
        }
    }

    func testA424ProvisionedAtOneDoorOpensAnotherAndARevocationReachesBack() throws {
        let s = try Site()
        defer { s.close() }
        let sim = s.sim
        func tap(_ g: GatewayUnderTest) throws -> JSONValue { try s.tap(g) }
        func push(_ g: GatewayUnderTest) throws -> JSONValue { try s.push(g) }
        func applied(_ g: GatewayUnderTest) throws -> Int? { try s.applied(g) }
        let a = try s.door("door-a"), b = try s.door("door-b")
        defer {
            a.stop()
            b.stop()
        }
        let uid = "04DE5F1EACC040"
        try a.start()
        try waitUntil(timeout: 15) { (try a.status()["broker"]?["connected"]) == .bool(true) }
        try a.ctlJSON(["provision", "--action", "0", "--label", "alice"])
        try a.waitForEvent("provisioning_armed")
        XCTAssertTrue(try sim.control("insert ntag424 \(uid)").hasPrefix("ok"))
        try a.waitForEvent("provisioning_written", timeout: 20)
        XCTAssertEqual(try tap(a)["kind"]?.stringValue, "access_granted")
        let pushed = try push(a)
        XCTAssertEqual(pushed["version"]?.intValue, 1, "\(pushed)")
        try waitUntil { try applied(a) == 1 }
        XCTAssertEqual(a.stop(), 0)

        // B was off: it catches up from A's retained document when it connects.
        try b.start()
        try waitUntil(timeout: 15) { try applied(b) == 1 }
        let row = (try b.ctlJSON(["tags", "list"])["tags"]?.arrayValue ?? []).first { $0["uid"]?.stringValue == uid }
        XCTAssertEqual(row?["kind"]?.stringValue, "ntag424")
        XCTAssertEqual(row?["state"]?.stringValue, "active")
        let atB = try tap(b)
        XCTAssertEqual(atB["kind"]?.stringValue, "access_granted", "\(atB)\n\(b.log.suffix(2000))")
        XCTAssertEqual(atB["reason"]?.stringValue, "ntag424")
        XCTAssertFalse(b.log.contains(uid + " key"), "no key material in B's log")

        // Revoked at B and pushed: A, back on the tag, applies it and denies.
        try b.ctlJSON(["tags", "revoke", uid])
        XCTAssertEqual(try tap(b)["reason"]?.stringValue, "revoked")
        XCTAssertEqual(try push(b)["version"]?.intValue, 2)
        XCTAssertEqual(b.stop(), 0)
        try a.start()
        try waitUntil(timeout: 15) { try applied(a) == 2 }
        let atA = try tap(a)
        XCTAssertEqual(atA["kind"]?.stringValue, "access_denied")
        XCTAssertEqual(atA["reason"]?.stringValue, "revoked")
    }

    /// docs/security.md "NTAG 424 — review round two" (H-1): a copy of a tag
    /// — its keys as they were — opens at door B until the real tag is
    /// re-issued at door A and pushed; once B has applied that document, the
    /// copy is `auth_failed` at B and the re-issued tag opens there.
    func testAReissuedTagsOldKeysAreDeniedAtASecondDoorAfterThePush() throws {
        let s = try Site()
        defer { s.close() }
        let a = try s.door("door-a"), b = try s.door("door-b")
        defer {
            a.stop()
            b.stop()
        }
        let uid = "04DE5F1EACC042"
        try a.start()
        try waitUntil(timeout: 15) { (try a.status()["broker"]?["connected"]) == .bool(true) }
        try a.ctlJSON(["provision", "--action", "0", "--label", "alice"])
        try a.waitForEvent("provisioning_armed")
        XCTAssertTrue(try s.sim.control("insert ntag424 \(uid)").hasPrefix("ok"))
        try a.waitForEvent("provisioning_written", timeout: 20)
        XCTAssertTrue(try s.sim.control("stash").hasPrefix("ok"), "a copy of the tag with its first keys")
        _ = try s.sim.control("remove")
        XCTAssertEqual(try s.push(a)["version"]?.intValue, 1)
        try waitUntil { try s.applied(a) == 1 }
        XCTAssertEqual(a.stop(), 0)

        // B takes the row; the copy opens there as the tag would.
        try b.start()
        try waitUntil(timeout: 15) { try s.applied(b) == 1 }
        let first = try s.tap(b, "unstash")
        XCTAssertEqual(first["kind"]?.stringValue, "access_granted", "\(first)\n\(b.log.suffix(3000))")
        XCTAssertEqual(b.stop(), 0)

        // The real tag (back in the field: `reinsert` swaps it with the copy) is re-issued at A and pushed.
        // Out of the field again before A arms: an armed door writes to the tag
        // it finds at once, and a removal racing that write tore it (seen in CI
        // once the idle poll was 150 ms).
        XCTAssertTrue(try s.sim.control("reinsert").hasPrefix("ok"))
        _ = try s.sim.control("remove")
        try a.start()
        let seen = try a.eventCount()
        try a.ctlJSON(["provision", "--action", "0", "--label", "alice", "--reissue", uid])
        try a.waitForEvent("provisioning_armed", after: seen)
        E2ETiming.outlastQuietWindow()
        XCTAssertTrue(try s.sim.control("reinsert").hasPrefix("ok"))
        try a.waitForEvent("provisioning_written", after: seen, timeout: 20)
        XCTAssertEqual(try s.push(a)["version"]?.intValue, 2)
        try waitUntil { try s.applied(a) == 2 }
        XCTAssertEqual(a.stop(), 0)

        // B applies it: the re-issued tag opens there, the copy's keys open nothing.
        try b.start()
        try waitUntil(timeout: 15) { try s.applied(b) == 2 }
        let real = try s.tap(b, "reinsert")
        XCTAssertEqual(real["kind"]?.stringValue, "access_granted", "the re-issued tag: \(real)\n\(b.log.suffix(2000))")
        let copy = try s.tap(b, "unstash")
        XCTAssertEqual(copy["kind"]?.stringValue, "access_denied", "\(copy)")
        XCTAssertEqual(copy["reason"]?.stringValue, "auth_failed", "\(copy)")
        XCTAssertEqual(b.stop(), 0)
    }
}
