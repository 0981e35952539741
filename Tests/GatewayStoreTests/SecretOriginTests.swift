import DoorCore
import Foundation
@testable import GatewayStore
import XCTest

/// Security review finding H1 (docs/security.md) on a real store: a key is
/// held once, and a key a gateway generated stays v2-only however it comes
/// back (a share link imported again, a fleet document).
final class SecretOriginTests: XCTestCase {
    var dir: String!
    let key = Array(repeating: UInt8(0x5A), count: 32)
    let uid = TagUID(hex: "04A1B2C3D4E5F6")!

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("origin-\(UUID().uuidString)").path
    }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    /// A v2 sticker of `key` with its `&u=…` cut off, judged on the store's secrets.
    func judgeCopy(_ store: GatewayStore, action: Int = 0) throws -> StickerVerdict {
        var copy = StickerSigner.signV2(action: action, timestamp: 1_700_000_000, key: key, uid: uid)
        XCTAssertEqual(
            StickerJudge.judge(copy, uid: uid, secrets: try store.secrets(), actionCount: 4).reason, .validV2)
        copy.uidBinding = nil
        return StickerJudge.judge(copy.text, uid: nil, secrets: try store.secrets(), actionCount: 4)
    }

    func testImportingAKeyAlreadyHeldIsRefusedAndTheCopyStaysDenied() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.syncActions(DoorSettings().actions)
        let generated = try store.addSecret(action: 0, key: key, label: "front", origin: .generated, now: 1)
        // Its share link imported back, into the same action or another one.
        for action in [0, 1] {
            XCTAssertThrowsError(
                try store.addSecret(action: action, key: key, label: "imported", origin: .imported, now: 2)
            ) { error in
                XCTAssertTrue("\(error)".contains("already held as secret \(generated.id)"), "\(error)")
                XCTAssertFalse("\(error)".contains(Hex.encode(key)), "no key material in the error")
            }
        }
        XCTAssertEqual(try store.secrets(), [generated], "nothing stored, nothing changed")
        let verdict = try judgeCopy(store)
        XCTAssertEqual(verdict.reason, .v1NotAllowed)
        XCTAssertEqual(verdict.secretID, generated.id)
    }

    /// The store refuses a second row of one key even past `addSecret`.
    func testTheStoreHoldsAKeyOncePerAction() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.syncActions(DoorSettings().actions)
        try store.addSecret(action: 0, key: key, label: "", origin: .generated, now: 1)
        XCTAssertThrowsError(
            try store.pool.write { db in
                try db.execute(
                    sql: "INSERT INTO secret (action, label, key, created, origin) VALUES (0, '', ?, 2, 'imported')",
                    arguments: [self.key])
            })
        XCTAssertEqual(try store.secrets().count, 1)
    }

    /// A database written before `v6-secret-key-once` may hold one key
    /// twice in an action (a share link imported back, the same link
    /// imported twice). The migration makes each such group one row and
    /// loses no key: the lowest id stays (issued tags pointing at a removed
    /// copy point at it), generated if any copy was, active if any copy
    /// was, its label or the first non-empty one. One key under two
    /// actions stays as it was.
    func testTheMigrationMergesAKeyHeldTwiceWithoutLosingOne() throws {
        let k1 = key, k2 = Array(repeating: UInt8(0x11), count: 32), k3 = Array(repeating: UInt8(0x22), count: 32)
        do {
            let store = try GatewayStore(stateDirectory: dir)
            try store.syncActions(DoorSettings().actions)
            try store.pool.write { db in
                // Back to the schema before the migration.
                try db.execute(sql: #"DROP INDEX "secret_on_action_key""#)
                try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v6-secret-key-once'")
                for (id, action, label, key, origin, active) in [
                    (1, 0, "front", k1, "generated", true), (2, 0, "imported", k1, "imported", true),
                    (3, 1, "", k2, "imported", false), (4, 1, "phone", k2, "imported", true),
                    (5, 0, "other", k3, "generated", true), (6, 1, "cross", k1, "imported", true),
                    (7, 1, "again", k2, "imported", false),
                ] {
                    try db.execute(
                        sql:
                            "INSERT INTO secret (id, action, label, key, created, origin, active) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        arguments: [id, action, label, key, id * 10, origin, active])
                }
                for (uid, secretID) in [("04000000000001", 2), ("04000000000002", 4), ("04000000000003", 5)] {
                    try db.execute(
                        sql:
                            "INSERT INTO issued_tag (uid, action, secret_id, label, issued, state) VALUES (?, 0, ?, '', 1, 'active')",
                        arguments: [uid, secretID])
                }
            }
            XCTAssertEqual(try store.secrets().count, 7)
        }
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try store.appliedMigrations(), StoreMigrations.names)
        let secrets = try store.secrets()
        XCTAssertEqual(secrets.map(\.id), [1, 3, 5, 6])
        XCTAssertEqual(secrets.map(\.action), [0, 1, 0, 1])
        XCTAssertEqual(secrets.map(\.key), [k1, k2, k3, k1])
        XCTAssertEqual(secrets.map(\.origin), [.generated, .imported, .generated, .imported])
        XCTAssertEqual(secrets.map(\.active), [true, true, true, true])
        XCTAssertEqual(secrets.map(\.label), ["front", "phone", "other", "cross"])
        XCTAssertEqual(secrets.map(\.created), [10, 30, 50, 60])
        XCTAssertEqual(try store.issuedTags().map(\.secretID), [1, 3, 5])
        // The copy of a v2 sticker of k1 is denied; the phone's v1 stickers of k2 still open.
        XCTAssertEqual(try judgeCopy(store).reason, .v1NotAllowed)
        let phone = StickerSigner.signV1(action: 1, timestamp: 1_700_000_000, key: k2)
        XCTAssertEqual(StickerJudge.judge(phone, uid: nil, secrets: secrets, actionCount: 4).reason, .validV1)
        // And from now on the store holds each key once per action.
        XCTAssertThrowsError(
            try store.pool.write { db in
                try db.execute(
                    sql: "INSERT INTO secret (action, label, key, created, origin) VALUES (1, '', ?, 2, 'imported')",
                    arguments: [k2])
            })
    }

    /// A signed document of the site, accepted as a door's judge would.
    func fleetDocument(version: Int64) throws -> FleetRules.Accepted {
        try acceptedFleetDocument(
            FleetDocument(site: "acme-hq", version: version, origin: "door-a/alice", issued: 100),
            seed: Array(repeating: UInt8(9), count: 32))
    }

    /// A door that holds the key as imported (a share link imported before
    /// this fix) hears a document that says a gateway generated it: the key
    /// turns generated there, and the copy is denied. Never the other way.
    func testAFleetDocumentMakesAnImportedKeyGeneratedAndNeverTheReverse() throws {
        let b = try GatewayStore(stateDirectory: dir)
        try b.syncActions(DoorSettings().actions)
        let held = try b.addSecret(action: 0, key: key, label: "shared link", origin: .imported, now: 1)
        XCTAssertEqual(try judgeCopy(b).reason, .validV1, "the hole this door was left with")

        let generated = FleetSecrets(secrets: [
            FleetSecrets.Secret(action: 0, key: key, label: "front", origin: .generated)
        ])
        let changes = try b.applyFleet(try fleetDocument(version: 1), actions: [0, 1], secrets: generated, now: 200)
        XCTAssertEqual(changes.addSecrets, [], "the key is held: not added twice")
        XCTAssertEqual(changes.restrictSecrets, [key])
        XCTAssertTrue(changes.summary.contains("1 secrets made v2-only"), changes.summary)
        XCTAssertFalse(changes.summary.contains(Hex.encode(key)))
        let now = try b.secrets()
        XCTAssertEqual(now.map(\.id), [held.id], "the same row, its label and id kept")
        XCTAssertEqual(now.map(\.origin), [.generated])
        XCTAssertEqual(now.map(\.label), ["shared link"])
        XCTAssertEqual(try judgeCopy(b).reason, .v1NotAllowed)

        // A later document that calls it imported does not undo it.
        let imported = FleetSecrets(secrets: [FleetSecrets.Secret(action: 0, key: key, origin: .imported)])
        let later = try b.applyFleet(try fleetDocument(version: 2), actions: [0, 1], secrets: imported, now: 300)
        XCTAssertTrue(later.isEmpty, "\(later.summary)")
        XCTAssertEqual(try b.secrets().map(\.origin), [.generated])
        XCTAssertEqual(try b.verifyAudit(), .intact(rows: 2, from: 1))
    }

    /// A door that lacks the key gets it with its origin: generated stays generated.
    func testAGeneratedKeySpreadByTheFleetStaysGenerated() throws {
        let c = try GatewayStore(stateDirectory: dir)
        try c.syncActions(DoorSettings().actions)
        let generated = FleetSecrets(secrets: [
            FleetSecrets.Secret(action: 0, key: key, label: "front", origin: .generated)
        ])
        let changes = try c.applyFleet(try fleetDocument(version: 1), actions: [0, 1], secrets: generated, now: 200)
        XCTAssertEqual(changes.addSecrets.map(\.key), [key])
        XCTAssertEqual(try c.secrets().map(\.origin), [.generated])
        XCTAssertEqual(try judgeCopy(c).reason, .v1NotAllowed)
    }
}
