import DoorCore
import Foundation
import TestSupport
import XCTest

/// Security review L2 on real doors, over mosquitto (retained topics, the
/// shipped ACL) and over nats-server (the JetStream bucket, one key per
/// door): the newest document used to live only on its publisher's topic or
/// key, which that door's account may overwrite with an older signed copy,
/// and a door that was away caught up only to the older one. Now every door
/// that applied a document carries it on its own topic or key.
final class FleetRollbackTests: XCTestCase {
    func testOverMQTTAnOlderCopyOnThePublishersTopicDoesNotRollAnAbsentDoorBack() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        try broker.start()
        try rollback(try MQTTFleetSite(broker))
    }

    func testOverNATSAnOlderCopyOnThePublishersKeyDoesNotRollAnAbsentDoorBack() throws {
        let server = try NATSServer(jetStream: true)
        defer { server.stop() }
        let site = try NATSFleetSite(server)
        try server.start()
        try rollback(site)
    }

    /// Door E publishes versions 1 and 2 (the second revokes a UID); door A
    /// applies both; E goes away and its account puts version 1 back where
    /// E's document goes; door C, new, must reach version 2 all the same.
    func rollback(_ site: any FleetSiteUnderTest) throws {
        let keys = try SiteKeys("rollback")
        defer { keys.remove() }
        let keyFile = keys.keyFile
        let a = try keys.door(site, "door-a")
        let c = try keys.door(site, "door-c")
        let e = try keys.door(site, "door-e")
        defer { for g in [a, c, e] { g.stop() } }
        func applied(_ g: GatewayUnderTest) throws -> Int? {
            try g.ctlJSON(["fleet", "status"])["applied_version"]?.intValue
        }
        for (name, g) in [("door-a", a), ("door-c", c), ("door-e", e)] { try site.prepare(g, name) }
        for g in [a, e] {
            try g.start()
            try waitUntil(timeout: 15) { (try g.status()["broker"]?["connected"]) == .bool(true) }
        }
        let documentsOfA = try site.watchDoorA()
        let uid = "04A1B2C3D4E5F6"
        var version1 = ""
        for version in 1...2 {
            if version == 2 { try e.ctlJSON(["tags", "revoke", uid]) }
            let push = try e.ctlJSON(["fleet", "push", "--site-key", keyFile, "--yes", "--config", e.configFile.path])
            XCTAssertEqual(push["version"]?.intValue, version, "\(push)")
            try waitUntil { try applied(a) == version }
            if version == 1 {
                // The signed document as E's store keeps it: what E's account can put back.
                let sql = try Run.process(
                    URL(fileURLWithPath: "/usr/bin/sqlite3"),
                    [e.dir.appendingPathComponent("state/gateway.db").path, "SELECT document FROM fleet_state"],
                    timeout: 10)
                version1 = sql.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                XCTAssertEqual(Self.version(of: version1), 1, sql.stdout + sql.stderr)
            }
        }

        // E away; its account puts version 1 back where E's document goes.
        XCTAssertEqual(e.stop(), 0)
        try site.publishAsDoorE(version1)

        // C, new, catches up to version 2 all the same: A carries it.
        try c.start()
        try waitUntil(timeout: 15) { try applied(c) == 2 }
        XCTAssertEqual(try applied(c), 2, "door-c caught up only to what door-e's copy says:\n\(c.log.suffix(2000))")
        let revoked = try c.ctlJSON(["tags", "list"])["revocations"]?.arrayValue?.compactMap { $0["uid"]?.stringValue }
        XCTAssertEqual(revoked, [uid])
        XCTAssertTrue(documentsOfA().contains { Self.version(of: $0) == 2 }, "door-a's own copy: \(documentsOfA())")
    }

    /// The version inside a document as it is on the wire.
    static func version(of wire: String) -> Int64? {
        guard let parts = try? FleetDocument.openEnvelope(Array(wire.utf8)),
            let doc = try? FleetDocument.parseBody(parts.body)
        else { return nil }
        return doc.version
    }
}
