import DoorCore
import Foundation
import GatewayConfig
import Synchronization
@testable import GatewayDaemon
@testable import GatewayStore
import TestSupport
import XCTest

/// The daemon's fleet receiver on a real store, when the store does not take
/// a document (docs/fleet.md "When the store cannot take a document"): a
/// failure of the document itself (a constraint: a trigger stands in for one,
/// since nothing this build writes breaks one any more) is refused, audited
/// `fleet_refused` / `not_storable` once, shown in `last_refused` and not
/// retried; a failure of the store (here a trigger naming a missing table, an
/// SQLite error that is not the document's) is retried and shown in
/// `not_applied` until a document applies. Before: both were logged "not
/// applied" and retried 60 times in silence, never audited nor shown.
final class FleetReceiverTests: TemporaryDirectoryTestCase {
    let seed = Array(repeating: UInt8(5), count: 32)
    let site = "main-site"

    func receiver(actions: @escaping @Sendable () -> Set<ActionIndex> = { [0, 1, 2, 3] }) throws -> (
        FleetReceiver, GatewayStore, LogCapture
    ) {
        let store = try GatewayStore(stateDirectory: temporaryPath("frecv"))
        try store.syncActions(DoorSettings().actions)
        let capture = LogCapture()
        let settings = GatewayConfiguration.Fleet(
            enabled: true, siteID: site, sitePublicKey: try Crypto.Ed25519.publicKey(seed: seed), subscribe: nil)
        let r = FleetReceiver(
            settings: settings, publishTopic: "doorgateway/door-a/fleet/\(site)",
            subscription: "doorgateway/+/fleet/\(site)", store: store, actions: actions, log: capture.logger)
        return (r, store, capture)
    }

    func envelope(version: Int64) throws -> [UInt8] {
        try FleetDocument(
            site: site, version: version, origin: "door-e/root", issued: version,
            revokedUIDs: [TagUID(hex: "04CC5F1EACC0EE")!]
        ).signed(seed: seed)
    }

    func testADocumentTheStoreRefusesForGoodIsRefusedAuditedAndNotRetried() throws {
        let (r, store, capture) = try receiver()
        try store.pool.write {
            try $0.execute(
                sql: "CREATE TRIGGER no_revocations BEFORE INSERT ON revocation BEGIN SELECT RAISE(ABORT, 'no'); END")
        }
        let doc = try envelope(version: 1)
        r.queue.sync { _ = r.handle(doc, source: "doorgateway/door-e/fleet/main-site") }
        XCTAssertNil(try store.fleetApplied())
        let refused = try store.newestAudit(kinds: ["fleet_refused"], limit: 10)
        XCTAssertEqual(refused.map(\.reason), ["not_storable"], "\(refused)")
        XCTAssertTrue(refused.first?.detail?.contains("version 1") == true, refused.first?.detail ?? "")
        let status = try r.queue.sync { try r.status(connected: true) }
        XCTAssertEqual(status["last_refused"]?["reason"]?.stringValue, "not_storable", "\(status)")
        XCTAssertEqual(status["not_applied"], .null, "\(status)")
        XCTAssertTrue(capture.all.contains { $0.hasPrefix("warning") && $0.contains("refused") }, "\(capture.all)")
        XCTAssertFalse(capture.all.contains { $0.contains("attempt") }, "not retried: \(capture.all)")
        // Heard again (a reconnect): tried once more, refused, audited once.
        r.queue.sync { _ = r.handle(doc, source: "doorgateway/door-e/fleet/main-site") }
        XCTAssertEqual(try store.newestAudit(kinds: ["fleet_refused"], limit: 10).count, 1)
        // A later document the store can take applies.
        try store.pool.write { try $0.execute(sql: "DROP TRIGGER no_revocations") }
        r.queue.sync { _ = r.handle(try! envelope(version: 2), source: "doorgateway/door-e/fleet/main-site") }
        XCTAssertEqual(try store.fleetApplied()?.version, 2)
    }

    /// The receiver reads the actions configured now, not those at start: a
    /// tag for an action this door lacks is skipped; after a reload adds the
    /// action, the next document's tag for it is taken. (Before, the set was
    /// fixed when gatewayd started, so it stayed skipped until a restart.)
    func testATagForAnActionAddedByAReloadIsTakenFromTheNextDocument() throws {
        let configured = ConfiguredActions([0, 1])
        let (r, store, _) = try receiver(actions: { configured.now.withLock { $0 } })
        try store.syncActions(DoorSettings().actions + [ActionDefinition(index: 2, name: "garage", steps: [])])
        let uid = TagUID(hex: "04A2A2A2A2A2A2")!
        func doc(_ version: Int64) throws -> [UInt8] {
            try FleetDocument(
                site: site, version: version, origin: "door-e/root", issued: version,
                tags: [.init(uid: uid, action: 2, label: "garage")]
            ).signed(seed: seed)
        }
        r.queue.sync { _ = r.handle(try! doc(1), source: "doorgateway/door-e/fleet/main-site") }
        XCTAssertEqual(try store.fleetApplied()?.version, 1)
        XCTAssertNil(try store.issuedTag(uid), "action 2 is not configured here yet")
        configured.now.withLock { _ = $0.insert(2) }
        r.queue.sync { _ = r.handle(try! doc(2), source: "doorgateway/door-e/fleet/main-site") }
        XCTAssertEqual(try store.issuedTag(uid)?.action, 2, "taken once the action exists")
    }

    func testAStorageFailureIsRetriedAndShownUntilADocumentApplies() throws {
        let (r, store, capture) = try receiver()
        try store.pool.write {
            try $0.execute(
                sql: """
                    CREATE TRIGGER broken BEFORE INSERT ON revocation BEGIN
                      INSERT INTO no_such_table VALUES (1); END
                    """)
        }
        let doc = try envelope(version: 1)
        r.queue.sync { _ = r.handle(doc, source: "doorgateway/door-e/fleet/main-site") }
        XCTAssertNil(try store.fleetApplied())
        XCTAssertEqual(try store.newestAudit(kinds: ["fleet_refused"], limit: 10).count, 0, "not the document's fault")
        let status = try r.queue.sync { try r.status(connected: true) }
        let notApplied = try XCTUnwrap(status["not_applied"])
        XCTAssertNotEqual(notApplied, .null, "\(status)")
        XCTAssertEqual(notApplied["version"]?.intValue, 1, "\(status)")
        XCTAssertEqual(notApplied["attempts"]?.intValue, 1, "\(status)")
        XCTAssertEqual(notApplied["retrying"], .bool(true), "\(status)")
        XCTAssertTrue(notApplied["why"]?.stringValue?.contains("no_such_table") == true, "\(status)")
        XCTAssertTrue(capture.all.contains { $0.contains("not applied (attempt 1)") }, "\(capture.all)")
        // The store fixed: the retry (or the document heard again) applies it, and the status clears.
        try store.pool.write { try $0.execute(sql: "DROP TRIGGER broken") }
        r.queue.sync { _ = r.handle(doc, source: "doorgateway/door-e/fleet/main-site") }
        XCTAssertEqual(try store.fleetApplied()?.version, 1)
        XCTAssertEqual(try r.queue.sync { try r.status(connected: true) }["not_applied"], .null)
    }
}

/// The door's configured actions, as a reload changes them.
private final class ConfiguredActions: Sendable {
    let now: Mutex<Set<ActionIndex>>
    init(_ actions: Set<ActionIndex>) { now = Mutex(actions) }
}
