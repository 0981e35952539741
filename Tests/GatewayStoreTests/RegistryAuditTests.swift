import DoorCore
import Foundation
import GatewayStore
import TestSupport
import XCTest

final class RegistryAuditTests: TemporaryDirectoryTestCase {
    var dir: String!
    override func setUpWithError() throws { dir = temporaryPath("registry") }

    let uid = TagUID(hex: "04A1B2C3D4E5F6")!

    /// A verified provisioning write: the tag turns active in the transaction
    /// of its `provisioning_written` row (a power cut between two commits left
    /// an active sticker with no such row; the fault suite's powercut found it).
    func testTheWrittenRowActivatesItsPendingTagInOneTransaction() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.createPendingTag(uid: uid, action: 0, secretID: nil, label: "desk", now: 100)
        _ = try store.appendAudit(time: 101, kind: "provisioning_armed")
        XCTAssertEqual(try store.issuedTag(uid)?.state, .pending, "another row activates nothing")
        _ = try store.appendAudit(time: 102, kind: "provisioning_written", uid: uid.hex, activating: uid.hex)
        XCTAssertEqual(try store.issuedTag(uid)?.state, .active)
        XCTAssertEqual(try store.auditTail(1).first?.kind, "provisioning_written")
        // Only a pending tag: a revoked one stays revoked, and the row is still written.
        try store.revoke(uid: uid, now: 200)
        _ = try store.appendAudit(time: 201, kind: "provisioning_written", uid: uid.hex, activating: uid.hex)
        XCTAssertEqual(try store.issuedTag(uid)?.state, .revoked)
        XCTAssertEqual(try store.auditTail(1).first?.time, 201)
    }

    func testTagStatesMoveOnlyAlongTheirArrows() throws {
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertThrowsError(try store.activateTag(uid: uid), "unknown tag")
        try store.createPendingTag(uid: uid, action: 0, secretID: nil, label: "desk", now: 100)
        XCTAssertEqual(try store.issuedTag(uid)?.state, .pending)
        try store.activateTag(uid: uid)
        XCTAssertEqual(try store.issuedTag(uid)?.state, .active)
        XCTAssertThrowsError(try store.failTag(uid: uid)) { error in
            XCTAssertEqual(error as? RegistryError, .illegalTransition(uid: uid.hex, from: .active, to: .failed))
        }
        try store.revoke(uid: uid, now: 200)
        XCTAssertEqual(try store.issuedTag(uid)?.state, .revoked)
        XCTAssertTrue(try store.isRevoked(uid: uid, signature: nil))
        XCTAssertThrowsError(
            try store.createPendingTag(uid: uid, action: 0, secretID: nil, label: "", now: 300),
            "revoked UIDs are not re-issued")
        try store.forget(uid: uid)
        XCTAssertNil(try store.issuedTag(uid))
        XCTAssertFalse(try store.isRevoked(uid: uid, signature: nil))

        let other = TagUID(hex: "04000000000001")!
        try store.createPendingTag(uid: other, action: 1, secretID: nil, label: "", now: 400)
        try store.failTag(uid: other)
        XCTAssertEqual(try store.issuedTag(other)?.state, .failed)
        XCTAssertThrowsError(try store.activateTag(uid: other), "failed never becomes active")
        try store.expire(uid: other, at: 500)
        XCTAssertEqual(try store.issuedTag(other)?.validUntil, 500)
    }

    func testV1SignatureRevocationOfAStickerNeverIssuedHere() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let sig = Hex.decode("eeaa6b04b4a2a004c1e52585799713f461eafa81573a7a23e255963a3ce13e69")!
        XCTAssertFalse(try store.isRevoked(uid: uid, signature: sig))
        try store.revoke(signature: sig, now: 1)
        XCTAssertTrue(try store.isRevoked(uid: uid, signature: sig))
        XCTAssertTrue(try store.isRevoked(uid: TagUID(hex: "04999999999999")!, signature: sig), "a v1 copy on any chip")
        XCTAssertFalse(try store.isRevoked(uid: uid, signature: nil))
    }

    func testAuditChainVerifiesDetectsAlterationAndSurvivesRetention() throws {
        let store = try GatewayStore(stateDirectory: dir)
        for i in 0..<50 {
            try store.appendAudit(
                time: Int64(1000 + i), kind: i % 2 == 0 ? "access_granted" : "access_denied", reason: "r\(i)",
                uid: uid.hex)
        }
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 50, from: 1))

        // Retention: keep the newest 20 (and nothing older than time 1035).
        XCTAssertEqual(try store.trimAudit(before: 1035, keep: 20), 35)
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 15, from: 36))
        try store.appendAudit(time: 2000, kind: "lockout")
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 16, from: 36))

        // Altering any content, or deleting a row in the middle, breaks the chain there.
        try store.pool.write { try $0.execute(sql: "UPDATE audit SET reason = 'forged' WHERE id = 40") }
        XCTAssertEqual(try store.verifyAudit(), .broken(rowID: 40, why: "content does not match its hash"))
        try store.pool.write { try $0.execute(sql: "UPDATE audit SET reason = 'r39' WHERE id = 40") }
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 16, from: 36))
        try store.pool.write { try $0.execute(sql: "DELETE FROM audit WHERE id = 45") }
        XCTAssertEqual(try store.verifyAudit(), .broken(rowID: 46, why: "row 45 is missing"))
    }

    /// An event's audit row and its outbox message commit in one
    /// transaction: both or neither (a power cut between them lost the
    /// message while the audit kept the event).
    func testAuditRowAndItsOutboxMessageCommitTogether() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let message = GatewayStore.OutboxEntry(topic: "d/event", class: .access, created: 7) { seq in
            Array("{\"seq\":\(seq)}".utf8)
        }
        let id = try store.appendAudit(time: 7, kind: "access_granted", outbox: [message], outboxLimit: 100)
        XCTAssertEqual(id, 1)
        let rows = try store.outbox()
        XCTAssertEqual(rows.map(\.topic), ["d/event"])
        XCTAssertEqual(String(decoding: rows[0].payload, as: UTF8.self), "{\"seq\":\(rows[0].seq)}")

        // The outbox insert fails (as on a full disk): the audit row is rolled back with it.
        try store.pool.write {
            try $0.execute(sql: "CREATE TRIGGER refuse BEFORE INSERT ON outbox BEGIN SELECT RAISE(ABORT, 'full'); END")
        }
        XCTAssertThrowsError(try store.appendAudit(time: 8, kind: "access_denied", outbox: [message]))
        XCTAssertEqual(try store.auditTail(10).map(\.kind), ["access_granted"])
        XCTAssertEqual(try store.outbox().count, 1)
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 1, from: 1))
        // Without a message the row alone is written, as before.
        try store.appendAudit(time: 9, kind: "started")
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 2, from: 1))
    }

    func testBackupIsPrivateAndRestoresTheSameRows() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.setKey(.nativeCommand, [UInt8](repeating: 9, count: 32), now: 1)
        try store.createPendingTag(uid: uid, action: 0, secretID: nil, label: "x", now: 2)
        try store.appendAudit(time: 3, kind: "started")
        let file = dir + "-backup.db"
        defer { unlink(file) }
        try store.backup(to: file)
        var st = stat()
        XCTAssertEqual(stat(file, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertThrowsError(try store.backup(to: file), "never overwrites")

        XCTAssertThrowsError(try GatewayStore.restore(backup: file, into: dir), "not over an existing store")
        let fresh = dir + "-restored"
        defer { try? FileManager.default.removeItem(atPath: fresh) }
        let restored = try GatewayStore.restore(backup: file, into: fresh)
        XCTAssertEqual(try restored.key(.nativeCommand), [UInt8](repeating: 9, count: 32))
        XCTAssertEqual(try restored.issuedTag(uid)?.label, "x")
        XCTAssertEqual(try restored.verifyAudit(), .intact(rows: 1, from: 1))
        XCTAssertThrowsError(try GatewayStore.restore(backup: "/etc/hostname", into: dir + "-bad"), "not a backup")
    }
}
