import DoorCore
import Foundation
@testable import GatewayStore
import XCTest

/// Security review L4 (docs/security.md): whoever can write the database
/// could rewrite a row and recompute the unkeyed SHA-256 chain after it, and
/// `log --verify` said "intact". With the audit key, rows are HMAC'd with a
/// key the database does not hold, under a forward ratchet.
final class AuditKeyTests: XCTestCase {
    var dir: String!
    let key = [UInt8](repeating: 0x5A, count: 32)

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("auditkey-\(UUID().uuidString)").path
    }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// What someone holding the database file (not the key) does: edits a
    /// row and recomputes every link after it with plain SHA-256.
    func rewriteAndRechain(_ store: GatewayStore, row target: Int64, reason: String?) throws {
        try store.pool.write { db in
            try db.execute(sql: "UPDATE audit SET reason = ? WHERE id = ?", arguments: [reason, target])
            var prev: [UInt8]? = nil
            try db.forEach(sql: "SELECT * FROM audit ORDER BY id") { r in
                let row = try AuditRow(row: r)
                if row.id >= target {
                    let p: [UInt8] = try prev ?? r.get("prev")
                    let hash = Crypto.sha256(p + row.canonical)
                    try db.execute(
                        sql: "UPDATE audit SET prev = ?, hash = ? WHERE id = ?", arguments: [p, hash, row.id])
                    prev = hash
                } else {
                    prev = try r.get("hash")
                }
                return true
            }
        }
    }

    func testARewrittenAndRechainedRowFailsVerificationWithTheKey() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.useAuditKey(key, now: 100)
        for i in 0..<10 { try store.appendAudit(time: Int64(200 + i), kind: "access_denied", reason: "r\(i)") }
        XCTAssertEqual(try store.checkAudit(key: key).verification.isIntact, true)

        try rewriteAndRechain(store, row: 5, reason: "forged")
        let check = try store.checkAudit(key: key)
        guard case .broken(let id, let why) = check.verification else {
            return XCTFail("a rewritten, re-chained row passed: \(check.verification)")
        }
        XCTAssertEqual(id, 5)
        XCTAssertEqual(why, "content does not match its MAC (audit key)")
        XCTAssertTrue(check.macsChecked)
    }

    /// Dropping the keyed part (the `audit_key` row deleted, every row
    /// re-chained unkeyed) does not pass as a log that was never keyed.
    func testALogStrippedOfItsKeyFailsWithTheKey() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.useAuditKey(key, now: 100)
        for i in 0..<3 { try store.appendAudit(time: Int64(200 + i), kind: "access_granted", reason: "r\(i)") }
        try store.pool.write { try $0.execute(sql: "DELETE FROM audit_key") }
        try rewriteAndRechain(store, row: 1, reason: "forged")
        guard case .broken(_, let why) = try store.checkAudit(key: key).verification else {
            return XCTFail("a log stripped of its key passed")
        }
        XCTAssertTrue(why.contains("never keyed"), why)
    }
}

extension AuditKeyTests {
    func testAKeyedLogVerifiesWithItsKeyAndSaysHow() throws {
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try store.useAuditKey(key, now: 100), .started(firstRow: 1))
        for i in 0..<5 { try store.appendAudit(time: Int64(200 + i), kind: "access_granted", reason: "r\(i)") }
        let check = try store.checkAudit(key: key)
        XCTAssertEqual(check.verification, .intact(rows: 6, from: 1))
        XCTAssertEqual(check.keyedFrom, 1)
        XCTAssertEqual(check.keyFingerprint, GatewayStore.auditKeyFingerprint(key))
        XCTAssertEqual(check.headID, 6)
        XCTAssertEqual(try store.auditTail(1).first?.kind, "access_granted")
        XCTAssertEqual(try store.auditTail(6).first?.kind, GatewayStore.auditKeyStartedKind)
        XCTAssertEqual(try store.auditHead()?.id, 6)
        XCTAssertEqual(try store.auditHead()?.hash, check.headHash)
        XCTAssertEqual(try store.auditHead()?.keyed, true)
        // Without the key: links only, and it says so.
        let linksOnly = try store.checkAudit(key: nil)
        XCTAssertEqual(linksOnly.verification, .intact(rows: 6, from: 1))
        XCTAssertFalse(linksOnly.macsChecked)

        // A restart with the same key continues the ratchet where it was.
        let again = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try again.useAuditKey(key, now: 300), .continued(firstRow: 1))
        try again.appendAudit(time: 301, kind: "started")
        XCTAssertEqual(try again.checkAudit(key: key).verification, .intact(rows: 7, from: 1))
        // Retention into the keyed part: the rest still verifies with the key.
        XCTAssertEqual(try again.trimAudit(keep: 3), 4)
        XCTAssertEqual(try again.checkAudit(key: key).verification, .intact(rows: 3, from: 5))

        // Another key is refused (and named by fingerprint), and fails verification.
        let other = [UInt8](repeating: 0x11, count: 32)
        XCTAssertThrowsError(try GatewayStore(stateDirectory: dir).useAuditKey(other, now: 400)) { error in
            XCTAssertTrue("\(error)".contains("is not the key this log was keyed with"), "\(error)")
        }
        guard case .broken(_, let why) = try again.checkAudit(key: other).verification else {
            return XCTFail("another key verified the log")
        }
        XCTAssertTrue(why.contains("is not the one the log was keyed with"), why)
        XCTAssertThrowsError(try again.useAuditKey([1, 2, 3], now: 1), "a short key")
    }

    /// The forward ratchet: what the running daemon holds (the key of its
    /// newest row) does not recompute an older row's MAC.
    func testTheDaemonsCurrentKeyCannotRewriteAnOlderRow() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.useAuditKey(key, now: 100)
        for i in 0..<5 { try store.appendAudit(time: Int64(200 + i), kind: "access_granted", reason: "r\(i)") }
        let held = try XCTUnwrap(store.auditRatchet.withLock { $0 })
        XCTAssertEqual(held.row, 6, "the key of the newest row, nothing older")
        XCTAssertNotEqual(held.key, key)
        // Rewrite row 3 with every key reachable from the held one.
        try store.pool.write { db in
            let r = try XCTUnwrap(db.fetchOne(sql: "SELECT * FROM audit WHERE id = 3"))
            var row = try AuditRow(row: r)
            row.reason = "forged"
            let prev: [UInt8] = try r.get("prev")
            let mac = Crypto.hmacSHA256(key: GatewayStore.rowMACKey(held.key), message: prev + row.canonical)
            try db.execute(sql: "UPDATE audit SET reason = 'forged', hash = ? WHERE id = 3", arguments: [mac])
        }
        XCTAssertEqual(
            try store.checkAudit(key: key).verification,
            .broken(rowID: 3, why: "content does not match its MAC (audit key)"))
    }

    /// A row written without the key after the log was keyed (gatewayd run
    /// without it, or someone appending) fails, and so does a missing first row.
    func testAnUnkeyedRowAfterTheKeyAndAMissingStartRowFail() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.appendAudit(time: 50, kind: "started")
        try store.useAuditKey(key, now: 100)
        try store.appendAudit(time: 101, kind: "access_granted")
        XCTAssertEqual(try store.checkAudit(key: key).verification, .intact(rows: 3, from: 1))
        XCTAssertEqual(try store.checkAudit(key: key).keyedFrom, 2)
        let unkeyed = try GatewayStore(stateDirectory: dir)  // no key given
        try unkeyed.appendAudit(time: 102, kind: "access_granted")
        XCTAssertEqual(
            try store.checkAudit(key: key).verification,
            .broken(rowID: 4, why: "content does not match its MAC (audit key)"))

        // Moving where the keyed log begins past its end (everything re-chained unkeyed).
        try store.pool.write { try $0.execute(sql: "UPDATE audit_key SET first_row = 5") }
        try rewriteAndRechain(store, row: 2, reason: nil)
        XCTAssertEqual(
            try store.checkAudit(key: key).verification,
            .broken(rowID: 5, why: "row 5, which started the keyed log, is missing"))
    }
}

extension AuditVerification {
    var isIntact: Bool { if case .intact = self { true } else { false } }
}
