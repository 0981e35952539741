import DoorCore
import Foundation
import TestSupport
import XCTest

/// Security review L2 on real doors over mosquitto: the newest document used
/// to live only on its publisher's retained topic, which that door's account
/// may overwrite with an older signed copy. A door that was away then caught
/// up only to the older one. Now every door that applied a document carries
/// it on its own topic, so the older copy cannot win.
final class FleetRollbackTests: XCTestCase {
    func testAnOlderCopyPutBackOnThePublishersTopicDoesNotRollAnAbsentDoorBack() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        try broker.start()
        let site = try MQTTFleetSite(broker)
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rollback-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let keyFile = work.appendingPathComponent("site.key").path
        let keygen = try Run.process(GatewayUnderTest.gateway, ["ctl", "fleet", "keygen", "--out", keyFile])
        XCTAssertEqual(keygen.status, 0, keygen.stderr)
        let publicKey = keygen.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let boxKey = work.appendingPathComponent("site-box.key").path
        let boxgen = try Run.process(GatewayUnderTest.gateway, ["ctl", "fleet", "keygen", "--box", "--out", boxKey])
        XCTAssertEqual(boxgen.status, 0, boxgen.stderr)

        let a = try site.door("door-a", publicKey: publicKey, boxKey: boxKey)
        let b = try site.door("door-b", publicKey: publicKey, boxKey: boxKey)
        let c = try site.door("door-c", publicKey: publicKey, boxKey: boxKey)
        defer { for g in [a, b, c] { g.stop() } }
        func applied(_ g: GatewayUnderTest) throws -> Int? {
            try g.ctlJSON(["fleet", "status"])["applied_version"]?.intValue
        }
        for g in [a, b] {
            try g.start()
            try waitUntil(timeout: 15) { (try g.status()["broker"]?["connected"]) == .bool(true) }
        }
        let documentsOfA = try site.watchDoorA()
        let uid = "04A1B2C3D4E5F6"
        for version in 1...2 {
            if version == 2 { try a.ctlJSON(["tags", "revoke", uid]) }
            let push = try a.ctlJSON(["fleet", "push", "--site-key", keyFile, "--yes", "--config", a.configFile.path])
            XCTAssertEqual(push["version"]?.intValue, version, "\(push)")
            try waitUntil { try applied(b) == version }
        }
        try waitUntil { documentsOfA().count >= 2 }
        let version1 = try XCTUnwrap(documentsOfA().first { Self.version(of: $0) == 1 })

        // Door A's account (A itself away) puts version 1 back on A's retained topic.
        XCTAssertEqual(a.stop(), 0)
        let r = try broker.publish("doorgateway/door-a/fleet/\(FleetTests.site)", version1, retain: true, as: "door-a")
        XCTAssertEqual(r.status, 0, r.stderr)

        // Door C, new (or away until now), catches up to version 2 all the same.
        try c.start()
        try waitUntil(timeout: 15) { try applied(c) == 2 }
        XCTAssertEqual(try applied(c), 2, "door-c caught up only to what door-a's topic says:\n\(c.log.suffix(2000))")
        let revoked = try c.ctlJSON(["tags", "list"])["revocations"]?.arrayValue?.compactMap { $0["uid"]?.stringValue }
        XCTAssertEqual(revoked, [uid])
        // B's own topic carries version 2, as heard on the wire.
        let atB = try broker.subscribe("doorgateway/door-b/fleet/\(FleetTests.site)", as: "door-c")
        let line = try XCTUnwrap(atB.wait { !$0.isEmpty }.first)
        XCTAssertEqual(Self.version(of: String(line.split(separator: "|", maxSplits: 2).last ?? "")), 2, line)
    }

    /// The version inside a document as it is on the wire.
    static func version(of wire: String) -> Int64? {
        guard let parts = try? FleetDocument.openEnvelope(Array(wire.utf8)),
            let doc = try? FleetDocument.parseBody(parts.body)
        else { return nil }
        return doc.version
    }
}
