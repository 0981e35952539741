import CSQLite
import DoorCore
import Foundation
@testable import GatewayStore
import XCTest

/// The SQLite wrapper under the store: bound parameters, transactions,
/// WAL, busy timeout, foreign keys, errors with SQLite's code and message.
final class SQLiteTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "sqlite-\(UUID().uuidString)"
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    private func makePool() throws -> GatewayStore { try GatewayStore(stateDirectory: dir) }

    /// Every connection, writer and readers, has the store's small page cache and
    /// synchronous FULL (the memory of a long-running door stays bounded).
    func testEveryConnectionHasTheBoundedCacheAndFullSync() throws {
        let store = try makePool()
        let writer = try store.pool.write { db in
            [try db.scalar(Int.self, sql: "PRAGMA cache_size"), try db.scalar(Int.self, sql: "PRAGMA synchronous")]
        }
        XCTAssertEqual(writer, [GatewayStore.pageCacheKiB, 2])
        XCTAssertLessThan(GatewayStore.pageCacheKiB, 0, "negative: KiB, not pages")
        let reader = try store.pool.read { db in
            [try db.scalar(Int.self, sql: "PRAGMA cache_size"), try db.scalar(Int.self, sql: "PRAGMA synchronous")]
        }
        XCTAssertEqual(reader, [GatewayStore.pageCacheKiB, 2])
    }

    func testValuesAreBoundNeverSpliced() throws {
        let store = try makePool()
        let hostile = "x'); DROP TABLE action; --"
        let odd = "nul\u{0}inside ✓"
        try store.pool.write { db in
            try db.execute(sql: "INSERT INTO action (idx, name) VALUES (?, ?)", arguments: [1, hostile])
            try db.execute(sql: "INSERT INTO action (idx, name) VALUES (?, ?)", arguments: [2, odd])
            try db.execute(
                sql: "INSERT INTO key (name, value, created) VALUES ('device', ?, ?)", arguments: [[UInt8](), 5])
        }
        let names = try store.pool.read { db in
            try db.fetchAll(sql: "SELECT name FROM action ORDER BY idx").map { try $0.get("name", as: String.self) }
        }
        XCTAssertEqual(names, [hostile, odd], "stored verbatim, the table still there, NUL kept")
        // An empty blob is an empty blob, not NULL (the column is NOT NULL).
        XCTAssertEqual(try store.pool.read { try $0.scalar([UInt8].self, sql: "SELECT value FROM key") }, [])
        XCTAssertEqual(try store.pool.read { try $0.scalar(String.self, sql: "SELECT typeof(value) FROM key") }, "blob")
        XCTAssertEqual(
            try store.pool.read { try $0.scalar(Int.self, sql: "SELECT ?", arguments: [SQLValue.null]) }, nil)
        XCTAssertEqual(
            try store.pool.read { try $0.scalar(Int64.self, sql: "SELECT ? + 1", arguments: [Int64.max - 1]) },
            Int64.max)
    }

    func testMisuseIsAnErrorNotACrash() throws {
        let store = try makePool()
        XCTAssertThrowsError(try store.pool.read { try $0.fetchAll(sql: "SELECT ?, ?", arguments: [1]) }) {
            XCTAssertEqual(($0 as? SQLiteError)?.code, SQLITE_RANGE)
        }
        XCTAssertThrowsError(
            try store.pool.write { try $0.execute(sql: "DELETE FROM action; DELETE FROM secret") },
            "a second statement never runs silently")
        XCTAssertThrowsError(try store.pool.read { try $0.fetchAll(sql: "SELEKT 1") }) {
            let e = $0 as? SQLiteError
            XCTAssertEqual(e?.code, SQLITE_ERROR)
            XCTAssertTrue(e?.message.contains("syntax error") ?? false, "\($0)")
            XCTAssertEqual(e?.sql, "SELEKT 1")
        }
        // A value of another type than asked for.
        try store.syncActions(DoorSettings().actions)
        XCTAssertThrowsError(
            try store.pool.read { try $0.fetchOne(sql: "SELECT name FROM action")?.get("name", as: Int64.self) }
        ) { XCTAssertTrue("\($0)".contains("column name"), "\($0)") }
        XCTAssertThrowsError(try store.pool.read { try $0.fetchOne(sql: "SELECT 1 AS a")?.get("b", as: Int.self) })
    }

    func testConstraintErrorsCarrySQLitesCodeAndMessage() throws {
        let store = try makePool()
        XCTAssertThrowsError(
            try store.pool.write {
                try $0.execute(
                    sql: "INSERT INTO key (name, value, created) VALUES (?, ?, ?)", arguments: ["other", [1], 1])
            }
        ) { error in
            let e = error as? SQLiteError
            XCTAssertEqual(e?.code, SQLITE_CONSTRAINT)
            XCTAssertEqual(e?.extendedCode, 275, "SQLITE_CONSTRAINT_CHECK")
            XCTAssertTrue("\(error)".hasPrefix("SQLite error 19: CHECK constraint failed"), "\(error)")
            XCTAssertFalse("\(error)".contains("other"), "bound values are never in the message")
        }
    }

    func testForeignKeysAreEnforcedOnEveryConnection() throws {
        let store = try makePool()
        XCTAssertEqual(try store.pool.write { try $0.scalar(Int.self, sql: "PRAGMA foreign_keys") }, 1)
        XCTAssertEqual(try store.pool.read { try $0.scalar(Int.self, sql: "PRAGMA foreign_keys") }, 1)
        XCTAssertEqual(try store.pool.read { try $0.scalar(Int.self, sql: "PRAGMA synchronous") }, 2, "FULL")
        XCTAssertThrowsError(
            try store.pool.write {
                try $0.execute(
                    sql: "INSERT INTO secret (action, key, created, origin) VALUES (?, ?, ?, ?)",
                    arguments: [42, [UInt8](repeating: 1, count: 32), 1, "imported"])
            }
        ) { XCTAssertEqual(($0 as? SQLiteError)?.extendedCode, 787, "SQLITE_CONSTRAINT_FOREIGNKEY: \($0)") }
        try store.syncActions(DoorSettings().actions)
        try store.addSecret(action: 0, key: Array(repeating: 1, count: 32), label: "", origin: .imported, now: 1)
        XCTAssertThrowsError(try store.pool.write { try $0.execute(sql: "DELETE FROM action WHERE idx = 0") })
        XCTAssertEqual(try store.secrets().count, 1)
    }

    func testAThrowRollsTheWholeTransactionBack() throws {
        let store = try makePool()
        struct Boom: Error {}
        XCTAssertThrowsError(
            try store.pool.write { db in
                try db.execute(sql: "INSERT INTO action (idx, name) VALUES (1, 'a')")
                XCTAssertTrue(db.isInsideTransaction)
                throw Boom()
            }
        ) { XCTAssertTrue($0 is Boom) }
        XCTAssertEqual(try store.pool.read { try $0.scalar(Int.self, sql: "SELECT COUNT(*) FROM action") }, 0)
        // The connection is usable again, outside any transaction.
        try store.pool.write { try $0.execute(sql: "INSERT INTO action (idx, name) VALUES (1, 'a')") }
        XCTAssertEqual(try store.pool.read { try $0.scalar(Int.self, sql: "SELECT COUNT(*) FROM action") }, 1)
        XCTAssertFalse(try store.pool.writeWithoutTransaction { $0.isInsideTransaction })
    }

    /// Writes take the write lock at BEGIN (IMMEDIATE, as with GRDB's pool);
    /// readers keep reading the last commit meanwhile (WAL).
    func testWritesAreImmediateAndReadersSeeTheLastCommit() throws {
        let store = try makePool()
        try store.syncActions(DoorSettings().actions)
        let before = try store.pool.read { try $0.scalar(Int.self, sql: "SELECT COUNT(*) FROM action") }
        try store.pool.write { db in
            let other = try SQLiteConnection(path: store.path, readOnly: false, busyTimeoutMilliseconds: 0)
            XCTAssertThrowsError(try other.execute(sql: "BEGIN IMMEDIATE")) {
                XCTAssertEqual(($0 as? SQLiteError)?.code, SQLITE_BUSY, "\($0)")
            }
            try db.execute(sql: "DELETE FROM action")
            XCTAssertEqual(
                try store.pool.read { try $0.scalar(Int.self, sql: "SELECT COUNT(*) FROM action") }, before,
                "a reader is not blocked and does not see the uncommitted delete")
        }
        XCTAssertEqual(try store.pool.read { try $0.scalar(Int.self, sql: "SELECT COUNT(*) FROM action") }, 0)
    }

    /// Another process holding the write lock briefly (gatewayctl while the
    /// daemon writes) is waited for, not reported as SQLITE_BUSY.
    func testBusyTimeoutWaitsForAnotherWriter() throws {
        let store = try makePool()
        let other = try SQLiteConnection(path: store.path, readOnly: false)
        try other.execute(sql: "BEGIN IMMEDIATE")
        try other.execute(sql: "INSERT INTO action (idx, name) VALUES (7, 'other')")
        let released = expectation(description: "released")
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
            try? other.execute(sql: "COMMIT")
            released.fulfill()
        }
        // Waited, not refused (SQLITE_BUSY would throw), and ran after the other
        // commit: the check below, not a time bound.
        try store.syncActions([ActionDefinition(index: 1, name: "mine", steps: [])])
        wait(for: [released], timeout: 5)
        XCTAssertEqual(
            try store.pool.read { try $0.fetchAll(sql: "SELECT name FROM action ORDER BY idx") }.map {
                try $0.get("name", as: String.self)
            }, ["mine"], "the sync ran after the other commit (and removed its action)")
    }

    /// A full disk (here: SQLite's page limit) surfaces as SQLITE_FULL with
    /// SQLite's message, which the daemon's status shows; nothing half-written.
    func testAFullDatabaseIsSQLITEFULLAndRollsBack() throws {
        let store = try makePool()
        try store.appendAudit(time: 1, kind: "started")
        let pages = try store.pool.writeWithoutTransaction { db -> Int in
            let n = try db.scalar(Int.self, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(n)")
            return n
        }
        XCTAssertGreaterThan(pages, 0)
        let message = GatewayStore.OutboxEntry(topic: "t", class: .access, created: 2) { _ in [1] }
        XCTAssertThrowsError(
            try store.appendAudit(
                time: 2, kind: "access_granted", detail: String(repeating: "x", count: 200_000), outbox: [message])
        ) { error in
            let e = error as? SQLiteError
            XCTAssertEqual(e?.code, SQLITE_FULL, "\(error)")
            XCTAssertTrue("\(error)".contains("database or disk is full"), "\(error)")
        }
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 1, from: 1))
        XCTAssertEqual(try store.outboxDepth(), 0)
        try store.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA max_page_count = 1073741823") }
        XCTAssertEqual(try store.appendAudit(time: 3, kind: "access_granted", outbox: [message]), 2)
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 2, from: 1))
    }

    func testConcurrentWritersAndReadersFromManyThreads() throws {
        let store = try makePool()
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            for j in 0..<25 {
                do {
                    try store.appendAudit(time: Int64(i * 100 + j), kind: "k\(i)")
                    _ = try store.auditTail(5)
                } catch {
                    XCTFail("\(error)")
                }
            }
        }
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 200, from: 1))
    }

    func testReplayRecordRoundTripsAndBadBytesAreAnError() throws {
        var g = ReplayGuard(capacity: 10)
        XCTAssertNil(g.admit(keyID: "k\"/\\", fingerprint: "00", timestamp: 5, now: 6, tolerance: 30))
        XCTAssertNil(g.admit(keyID: "b", fingerprint: "01", timestamp: -7, now: 7, tolerance: 30))
        XCTAssertEqual(try ReplayRecord.decode(ReplayRecord.encode(g)), g)
        // Foundation's JSONEncoder form, as GRDB-era stores hold it.
        let foundation =
            #"{"highest":{"k":9},"capacity":3,"entries":[{"acceptedAt":1,"fingerprint":"ab","keyID":"k","timestamp":9}]}"#
        XCTAssertEqual(
            try ReplayRecord.decode(Array(foundation.utf8)),
            ReplayGuard(
                entries: [.init(keyID: "k", fingerprint: "ab", timestamp: 9, acceptedAt: 1)], highest: ["k": 9],
                capacity: 3))
        for bad in ["", "[]", "{\"entries\":[],\"highest\":{}}", "{\"entries\":[1],\"highest\":{},\"capacity\":1}"] {
            XCTAssertThrowsError(try ReplayRecord.decode(Array(bad.utf8)), bad)
        }
        let store = try makePool()
        XCTAssertEqual(try store.replayGuard(), ReplayGuard())
        try store.saveReplayGuard(g)
        XCTAssertEqual(try store.replayGuard(), g)
    }
}

/// Hands a connection to the thread that releases its lock (test only).
