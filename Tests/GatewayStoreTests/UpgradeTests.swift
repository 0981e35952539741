import CSQLite
import DoorCore
import Foundation
@testable import GatewayStore
import TestSupport
import XCTest

/// Doors in the field hold databases the GRDB-based store wrote.
/// Fixtures/grdb-v3.db was written by that store (commit 7094265, with
/// Fixtures/make-store-fixture.swift.txt): this store must open it as fully
/// migrated, re-run nothing, lose nothing and keep its audit chain.
final class UpgradeTests: TemporaryDirectoryTestCase {
    var dir: String!

    static let fixture =
        String(#filePath).split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        + "/Fixtures/grdb-v3.db"

    override func setUpWithError() throws {
        dir = try temporaryDirectory("upgrade").path
        try FileManager.default.copyItem(atPath: Self.fixture, toPath: dir + "/" + GatewayStore.fileName)
    }

    private func schema(_ store: GatewayStore) throws -> [String] {
        try store.pool.read {
            try $0.fetchAll(
                sql: "SELECT type || ' ' || name || ': ' || IFNULL(sql, '') FROM sqlite_master ORDER BY name"
            )
            .map { try $0.get(0, as: String.self) }
        }
    }

    func testAGRDBDatabaseOpensFullyMigratedWithEveryRow() throws {
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(
            try store.appliedMigrations(),
            [
                "v1-foundation", "v2-registry", "v3-remote", "v4-fleet", "v5-clock-floor", "v6-secret-key-once",
                "v7-fleet-document", "v8-fleet-removals", "v9-audit-key", "v10-guest-uses",
                "v11-ntag424", "v12-ntag424-key-issue", "v13-card-numbers", "v14-pins",
                "v15-osdp-reader-key", "v16-site-state", "v17-passage", "v18-site-fire",
            ])
        XCTAssertEqual(
            try store.pool.read { try $0.scalar(Int.self, sql: "SELECT COUNT(*) FROM grdb_migrations") }, 18,
            "nothing recorded twice")
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 8, from: 5), "the chain from its anchor")

        XCTAssertEqual(try store.key(.compatTimestamp), Array(repeating: 0x11, count: 16))
        XCTAssertEqual(try store.key(.nativeCommand), Array(repeating: 0x22, count: 32))
        // v8-fleet-removals: keys stored before it are generation 0, nothing is removed.
        XCTAssertEqual(try store.keyGeneration(.compatTimestamp), 0)
        XCTAssertEqual(try store.keyGeneration(.nativeCommand), 0)
        XCTAssertEqual(try store.secretTombstones(), [])
        XCTAssertEqual(
            try store.ensureDeviceKey(now: 9) {
                XCTFail("regenerated"); return []
            }, Array(repeating: 0x33, count: 32))

        let secrets = try store.secrets()
        XCTAssertEqual(secrets.map(\.id), [1, 2, 3])
        XCTAssertEqual(secrets.map(\.label), ["front door", "phone ‘import’", ""])
        XCTAssertEqual(secrets.map(\.origin), [.generated, .imported, .generated])
        XCTAssertEqual(secrets.map(\.active), [true, true, false])
        XCTAssertEqual(secrets.map(\.key), [0x41, 0x42, 0x43].map { Array(repeating: UInt8($0), count: 32) })
        XCTAssertEqual(secrets.map(\.created), [1_700_000_010, 1_700_000_011, 1_700_000_012])
        XCTAssertEqual(try store.newestGeneratedSecret(action: 0)?.id, 1)

        let a = TagUID(hex: "04A1B2C3D4E5F6")!
        let tags = try store.issuedTags()
        XCTAssertEqual(tags.map(\.uid.hex), ["04A1B2C3D4E5F6", "04112233445566", "01020304"])
        XCTAssertEqual(tags.map(\.state), [.active, .revoked, .failed])
        XCTAssertEqual(tags.map(\.label), ["Alice", "Bob", ""])
        XCTAssertEqual(tags.map(\.secretID), [1, nil, 1])
        XCTAssertEqual(tags.map(\.validUntil), [1_800_000_000, nil, nil])
        XCTAssertEqual(tags.map(\.lastSeen), [1_700_000_100, nil, nil])
        XCTAssertEqual(try store.revocations().map(\.uid), ["04112233445566", nil])
        XCTAssertEqual(try store.revocations().map(\.signature), [nil, "deadbeef"])
        XCTAssertTrue(try store.isRevoked(uid: TagUID(hex: "00000000")!, signature: [0xDE, 0xAD, 0xBE, 0xEF]))

        let audit = try store.auditTail(100)
        XCTAssertEqual(audit.map(\.id), Array(5...12))
        XCTAssertEqual(audit[1].reason, "unknown \"tag\"\n")
        XCTAssertEqual(audit[1].detail, "ünïcode ✓")
        XCTAssertEqual(audit[0].action, 0)
        XCTAssertNil(audit[1].action)
        XCTAssertEqual(audit.map(\.uid), Array(repeating: a.hex, count: 8))

        let outbox = try store.outbox()
        XCTAssertEqual(outbox.map(\.seq), Array(3...13))
        XCTAssertEqual(String(decoding: outbox[0].payload, as: UTF8.self), #"{"seq":3,"i":2}"#)
        XCTAssertEqual(outbox.map(\.messageClass).filter { $0 == .access }.count, 3)
        XCTAssertEqual(outbox.last?.payload, [0, 1, 2, 0xFF])
        XCTAssertEqual(outbox.last?.retain, true)
        XCTAssertEqual(outbox.last?.messageClass, .telemetry)

        let replay = try store.replayGuard()
        XCTAssertEqual(replay.entries.map(\.keyID), ["k1", "k2/é"])
        XCTAssertEqual(replay.entries.map(\.fingerprint), ["00ff", "abcdef"])
        XCTAssertEqual(replay.highest, ["k1": 1_700_000_400, "k2/é": 1_700_000_402])
        XCTAssertEqual(replay.capacity, 4096)

        // And it goes on from there: the chain and the sequence numbers continue.
        XCTAssertEqual(try store.appendAudit(time: 1_700_000_500, kind: "started"), 13)
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 9, from: 5))
        let next = try store.enqueue(
            [GatewayStore.OutboxEntry(topic: "t", class: .event, created: 1) { _ in [1] }], limit: 1000)
        XCTAssertEqual(next, [14])
    }

    func testReopeningRunsNoMigrationAgain() throws {
        _ = try GatewayStore(stateDirectory: dir)
        let again = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try again.appliedMigrations(), StoreMigrations.names)
        XCTAssertEqual(try again.secrets().count, 3)
        XCTAssertEqual(try again.verifyAudit(), .intact(rows: 8, from: 5))
    }

    /// A new database gets exactly the schema GRDB gave the fixture.
    func testAFreshDatabaseHasTheGRDBSchema() throws {
        let upgraded = try GatewayStore(stateDirectory: dir)
        let fresh = try GatewayStore(stateDirectory: dir + "/fresh")
        XCTAssertEqual(try schema(fresh), try schema(upgraded))
        XCTAssertEqual(
            try schema(fresh).count, 35,
            "23, v11-ntag424's two tables and sun_counter's key index, v12's ntag424_attempt and its key index, "
                + "v14's pin table and its key index, v15's osdp_reader_key and its key index, v16's site_state, "
                + "v17's passage and its key index")
    }

    /// Security review L4: the old, unkeyed chain keeps verifying, and the
    /// keyed chain begins after its last row; with the key, both parts are
    /// checked, each in its own way.
    func testTheUnkeyedChainVerifiesUpToWhereTheKeyedChainBegins() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let key = [UInt8](repeating: 0xA5, count: 32)
        XCTAssertNil(try store.checkAudit(key: nil).keyedFrom)
        XCTAssertEqual(try store.auditHead()?.keyed, false)
        XCTAssertEqual(try store.useAuditKey(key, now: 1_700_000_500), .started(firstRow: 13))
        try store.appendAudit(time: 1_700_000_501, kind: "started")
        let check = try store.checkAudit(key: key)
        XCTAssertEqual(check.verification, .intact(rows: 10, from: 5))
        XCTAssertEqual(check.keyedFrom, 13)
        XCTAssertTrue(check.macsChecked)
        XCTAssertEqual(check.headID, 14)
        // A rewritten unkeyed row still shows (re-chaining it would break the
        // first keyed row's link, whose MAC covers the old head).
        try store.pool.write { try $0.execute(sql: "UPDATE audit SET detail = 'x' WHERE id = 7") }
        XCTAssertEqual(
            try store.checkAudit(key: key).verification,
            .broken(rowID: 7, why: "content does not match its hash"))
    }

    /// A database that lacks the newest migration gets exactly that one.
    func testOnlyPendingMigrationsRun() throws {
        do {
            let store = try GatewayStore(stateDirectory: dir)
            try store.pool.write { db in
                try db.execute(sql: "DROP TABLE outbox")
                try db.execute(sql: "DROP TABLE remote_state")
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v3-remote'")
            }
            XCTAssertEqual(try store.appliedMigrations(), StoreMigrations.names.filter { $0 != "v3-remote" })
        }
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try store.appliedMigrations(), StoreMigrations.names)
        XCTAssertEqual(try store.outboxDepth(), 0)
        XCTAssertEqual(try store.secrets().count, 3, "earlier tables untouched")
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 8, from: 5))
    }

    /// A migration that fails leaves nothing half-applied and is not recorded.
    func testAFailingMigrationIsRolledBackAndReported() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.pool.write { db in
            try db.execute(sql: "DROP TABLE outbox")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v3-remote'")
        }
        // remote_state still exists: v3's first CREATE TABLE fails.
        XCTAssertThrowsError(try GatewayStore(stateDirectory: dir)) { error in
            guard case .sqlite(_, let why)? = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(why.contains("already exists"), why)
        }
        XCTAssertEqual(try store.appliedMigrations(), StoreMigrations.names.filter { $0 != "v3-remote" })
        XCTAssertEqual(
            try store.pool.read {
                try $0.scalar(Int.self, sql: "SELECT COUNT(*) FROM sqlite_master WHERE name = 'outbox'")
            }, 0)
    }
}
