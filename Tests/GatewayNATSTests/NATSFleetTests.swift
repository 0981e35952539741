import DoorCore
import Foundation
import GatewayNATS
import Synchronization
import TestSupport
import XCTest

/// The fleet's JetStream key-value bucket seen from one link (the five-door
/// scenario is EndToEndTests/FleetTests): a door whose user may not make the
/// bucket says so and keeps trying; once an operator makes it, the door
/// watches it, hands every document of the site to the daemon with its key,
/// and writes its own key only.
final class NATSFleetTests: XCTestCase {
    static let bucket = "doorgateway-fleet"
    static let stream = "KV_\(bucket)"

    final class Documents: FleetDocumentHandler, Sendable {
        let received = Mutex<[(source: String, payload: String)]>([])
        func received(fleetDocument payload: [UInt8], topic source: String, retained: Bool) {
            received.withLock { $0.append((source, String(decoding: payload, as: UTF8.self))) }
        }
        var all: [(source: String, payload: String)] { received.withLock { $0 } }
    }

    func testTheDoorWatchesTheOperatorsBucketAndWritesItsOwnKey() throws {
        let b = NATSServer.base
        // The door's subjects and the fleet's, but not STREAM.CREATE: the operator makes the bucket.
        let server = try NATSServer(
            doorPublish: [
                "\(b).event", "\(b).telemetry", "\(b).state", "\(b).availability", "\(b).last_access",
                "\(b).report", "\(b).creds.request", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.\(Self.stream)",
                "$JS.API.CONSUMER.CREATE.\(Self.stream)", "$JS.API.CONSUMER.CREATE.\(Self.stream).>",
                "$JS.API.CONSUMER.DELETE.\(Self.stream).>", "$JS.FC.\(Self.stream).>",
                "$KV.\(Self.bucket).main-site.\(NATSServer.device)",
            ], jetStream: true)
        try server.addUser(
            "site-admin", publish: ["$JS.API.>", "$KV.\(Self.bucket).>"],
            subscribe: ["$KV.\(Self.bucket).>", "_INBOX.peer.>"])
        try server.start()
        let admin = try server.peer(as: "site-admin")
        // A document of another door, stored before the door connects.
        let log = LogCapture()
        let documents = Documents()
        let link = NATSLink(
            settings: server.settings(), deviceID: NATSServer.device, outbox: MemoryOutbox(), log: log.logger,
            fleet: NATSFleet(bucket: Self.bucket, site: "main-site", handler: documents))
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected }, "\(log.all)")

        // No bucket, and this user may not make one: said, and retried.
        XCTAssertTrue(
            try waitUntil { (link.status.lastError ?? "").contains("bucket \(Self.bucket)") },
            "\(String(describing: link.status.lastError))")
        XCTAssertFalse(link.fleetWatching)
        XCTAssertFalse(link.publishFleet(Array("{}".utf8)), "nothing to write to")
        XCTAssertTrue(link.isConnected, "the door's link stays up without the fleet")

        // The operator makes it (what `nats kv add` sends) and stores door-b's document.
        let config = """
            {"name":"\(Self.stream)","subjects":["$KV.\(Self.bucket).>"],"max_msgs_per_subject":5,\
            "discard":"new","deny_delete":true,"allow_rollup_hdrs":true,"storage":"file","num_replicas":1,\
            "max_msgs":-1,"max_bytes":-1,"max_age":0,"max_consumers":-1,"allow_direct":true}
            """
        admin.send("REQ $JS.API.STREAM.CREATE.\(Self.stream) \(config)")
        let made = admin.wait { $0.contains { ($0["payload"] ?? "").contains("\"config\"") } }
        XCTAssertFalse(made.isEmpty, "the operator made the bucket: \(admin.lines)")
        admin.send("REQ $KV.\(Self.bucket).main-site.door-b {\"doc\":\"b\"}")
        admin.send("REQ $KV.\(Self.bucket).other-site.door-x {\"doc\":\"x\"}")

        XCTAssertTrue(try waitUntil(timeout: 20) { link.fleetWatching }, "\(log.all.suffix(5))")
        XCTAssertTrue(try waitUntil { documents.all.contains { $0.payload == "{\"doc\":\"b\"}" } }, "\(documents.all)")
        XCTAssertEqual(documents.all.first?.source, "kv:\(Self.bucket)/main-site.door-b")

        // Written now: the door's own key; heard back like every document.
        admin.subscribe("$KV.\(Self.bucket).>")
        XCTAssertTrue(link.publishFleet(Array("{\"doc\":\"front\"}".utf8)))
        let own = "$KV.\(Self.bucket).main-site.\(NATSServer.device)"
        admin.wait { _ in !admin.messages(own).isEmpty }
        XCTAssertEqual(admin.messages(own), ["{\"doc\":\"front\"}"])
        XCTAssertTrue(try waitUntil { documents.all.contains { $0.payload == "{\"doc\":\"front\"}" } })

        // `fleet pull`: watched anew, every key's newest document again.
        let before = documents.all.count
        XCTAssertTrue(link.refreshFleet())
        XCTAssertTrue(try waitUntil { documents.all.count >= before + 2 }, "\(documents.all)")
        XCTAssertFalse(documents.all.contains { $0.source.contains("other-site") }, "another site's keys are not read")
    }
}
