import DoorCore
import Foundation
@testable import GatewayStore
import TestSupport
import XCTest

/// Card numbers in the registry (issue 35, `v13-card-numbers`): enrolled as
/// `wiegand` rows, read back by the tap decision's port, revoked and
/// forgotten by their key; a database from before the migration keeps every
/// row and then takes cards.
final class CardStoreTests: TemporaryDirectoryTestCase {
    var dir: String!
    override func setUpWithError() throws { dir = try temporaryDirectory("cards").path }

    let card = CardNumber(format: .h10301, facility: 18, number: 12345)!

    func testACardIsEnrolledAsAnActiveWiegandRowAndRevokedByItsKey() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.enrollCard(card, action: 1, label: "gate card", limits: TagLimits(validUntil: 900), now: 100)
        let row = try XCTUnwrap(store.issuedTag(card.registryKey))
        XCTAssertEqual(row.kind, .wiegand)
        XCTAssertEqual(row.state, .active)
        XCTAssertEqual(row.action, 1)
        XCTAssertEqual(row.validUntil, 900)
        XCTAssertEqual(row.uid.card, card)
        XCTAssertEqual(try StoreRegistry(store: store).issuedTag(card.registryKey)?.kind, .wiegand)
        try store.revoke(uid: card.registryKey, now: 200)
        XCTAssertTrue(try store.isRevoked(uid: card.registryKey, signature: nil))
        XCTAssertThrowsError(try store.enrollCard(card, action: 1, label: "", now: 300), "a revoked card stays out")
        try store.forget(uid: card.registryKey)
        try store.enrollCard(card, action: 0, label: "", now: 400)
        XCTAssertEqual(try store.issuedTag(card.registryKey)?.action, 0)
    }

    /// The GRDB fixture (v12) opens, gets `v13-card-numbers`, keeps its rows
    /// with every column, and takes a card (the kind CHECK refused 'wiegand' before).
    func testAV12DatabaseKeepsItsRowsAndTakesCards() throws {
        try FileManager.default.copyItem(atPath: UpgradeTests.fixture, toPath: dir + "/" + GatewayStore.fileName)
        let before: [String] = try {
            // The fixture (GRDB's v3) migrated as a v12 door's was, plus a row with every column set.
            let old = try DatabasePool(path: dir + "/" + GatewayStore.fileName) { _ in }
            try old.write { db in
                let done = try db.fetchAll(sql: "SELECT identifier FROM grdb_migrations").map {
                    try $0.get(0, as: String.self)
                }
                for m in StoreMigrations.all.prefix(while: { $0.name != "v13-card-numbers" })
                where !done.contains(m.name) {
                    for sql in m.statements { try db.execute(sql: sql) }
                    try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [m.name])
                }
                try db.execute(
                    sql: """
                        INSERT INTO issued_tag (uid, action, secret_id, label, issued, valid_until, state, last_seen,
                          valid_from, uses, uses_left, schedule, kind, key_salt, key_version)
                        VALUES ('04998877665544', 2, 1, 'guest ✓', 5, 20, 'active', 6, 10, 3, 2, 'staff', 'ntag424', ?, 7)
                        """, arguments: [[UInt8](repeating: 0x5A, count: 16)])
            }
            XCTAssertThrowsError(
                try old.write { db in
                    try db.execute(
                        sql:
                            "INSERT INTO issued_tag (uid, action, label, issued, state, kind) VALUES (?, 0, '', 1, 'active', 'wiegand')",
                        arguments: [self.card.registryKey.hex])
                }, "v12's CHECK refuses a card row")
            return try Self.rows(old)
        }()
        XCTAssertEqual(before.count, 4)
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(
            Array(try store.appliedMigrations().drop { $0 != "v13-card-numbers" }.prefix(5)),
            ["v13-card-numbers", "v14-pins", "v15-osdp-reader-key", "v16-site-state", "v17-passage"])
        XCTAssertEqual(try Self.rows(store), before, "every row, every column")
        try store.enrollCard(card, action: 0, label: "", now: 7)
        XCTAssertEqual(try store.issuedTag(card.registryKey)?.kind, .wiegand)
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 8, from: 5))
    }

    /// PINs (issue 35): only scrypt hashes reach the database file; a card's
    /// PIN needs the card; codes share one salt and never one PIN; forgetting
    /// a card or a code takes its PIN.
    func testPINsAreStoredAsHashesOnly() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let cheap = Crypto.ScryptCost(logN: 10, r: 1, p: 1)
        let hash = try PINHash(pin: PIN("73190468")!, salt: Crypto.randomBytes(16), cost: cheap)
        XCTAssertThrowsError(try store.setPIN(hash, for: card.registryKey, now: 1)) {
            XCTAssertEqual($0 as? PINError, .noCredential(self.card.registryKey.hex))
        }
        try store.enrollCard(card, action: 0, label: "", now: 1)
        try store.setPIN(hash, for: card.registryKey, now: 2)
        XCTAssertEqual(try store.pinHash(for: card.registryKey), hash)
        XCTAssertTrue(try StorePINs(store: store).pin(for: card.registryKey)!.matches(PIN("73190468")!))

        XCTAssertNil(try store.pinCodeSalt())
        let salt = try Crypto.randomBytes(16)
        let code = PINCode.key(random: try Crypto.randomBytes(14))!
        try store.addPINCode(
            key: code, hash: PINHash(pin: PIN("55667788")!, salt: salt, cost: cheap, duress: true), action: 1,
            label: "cleaner", limits: TagLimits(uses: 3, schedule: "staff"), now: 3)
        XCTAssertEqual(try store.pinCodeSalt(), salt)
        XCTAssertEqual(try store.issuedTag(code)?.kind, .pin)
        XCTAssertEqual(try store.issuedTag(code)?.usesLeft, 3)
        XCTAssertEqual(try store.pinCodes().map(\.key), [code])
        XCTAssertEqual(try store.pinCodes().first?.hash.duress, true)
        XCTAssertThrowsError(
            try store.addPINCode(
                key: PINCode.key(random: try Crypto.randomBytes(14))!,
                hash: PINHash(pin: PIN("55667788")!, salt: salt, cost: cheap), action: 0, label: "",
                limits: TagLimits(), now: 4)
        ) { XCTAssertEqual($0 as? PINError, .codeTaken) }
        XCTAssertEqual(try store.pinCodes().count, 1, "nothing half-written")
        XCTAssertEqual(try store.issuedTags().filter { $0.kind == .pin }.count, 1)

        let file = try XCTUnwrap(FileManager.default.contents(atPath: dir + "/" + GatewayStore.fileName))
        let wal = FileManager.default.contents(atPath: dir + "/" + GatewayStore.fileName + "-wal") ?? Data()
        for secret in ["73190468", "55667788"] {
            XCTAssertNil(file.range(of: Data(secret.utf8)), "no PIN in the database")
            XCTAssertNil(wal.range(of: Data(secret.utf8)), "nor in its journal")
        }

        try store.forget(uid: card.registryKey)
        XCTAssertNil(try store.pinHash(for: card.registryKey), "a forgotten card's PIN goes with it")
        try store.forget(uid: code)
        XCTAssertEqual(try store.pinCodes().count, 0)
        XCTAssertFalse(try store.removePIN(uid: code))
    }

    /// Review finding (issue 35): cards, PIN-only codes and card revocations
    /// stay at their door. A fleet document carrying their keys (18/34-byte
    /// card keys, 16-byte codes) is refused whole by a door of an older
    /// build, which then missed every NFC revocation of that document.
    func testCardsCodesAndCardRevocationsStayOutOfTheFleetsDocuments() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let nfc = TagUID(hex: "04A1B2C3D4E5F6")!
        let lostFob = TagUID(hex: "04112233445566")!
        try store.createPendingTag(uid: nfc, action: 0, secretID: nil, label: "fob", now: 1)
        try store.activateTag(uid: nfc)
        try store.revoke(uid: lostFob, now: 1)
        try store.enrollCard(card, action: 0, label: "gate card", now: 1)
        let other = CardNumber(format: .h10301, facility: 18, number: 999)!
        try store.revoke(uid: other.registryKey, now: 2)
        let cheap = Crypto.ScryptCost(logN: 10, r: 1, p: 1)
        let code = PINCode.key(random: try Crypto.randomBytes(14))!
        try store.addPINCode(
            key: code, hash: PINHash(pin: PIN("55667788")!, salt: Crypto.randomBytes(16), cost: cheap, duress: true),
            action: 0, label: "duress", limits: TagLimits(), now: 3)

        let snap = FleetRules.snapshot(try store.fleetLocal(), site: "acme-hq", version: 1, origin: "o", now: 4)
        XCTAssertEqual(snap.tags.map(\.uid), [nfc], "only the NFC tag travels")
        XCTAssertEqual(snap.revokedUIDs, [lostFob], "only the NFC revocation travels")
        for uid in snap.tags.map(\.uid) + snap.revokedUIDs {
            XCTAssertTrue([4, 7, 10].contains(uid.bytes.count), "\(uid.hex) is not a UID an older door parses")
        }
    }

    static func rows(_ store: GatewayStore) throws -> [String] { try rows(store.pool) }

    static func rows(_ pool: DatabasePool) throws -> [String] {
        try pool.read { db in
            try db.fetchAll(
                sql:
                    "SELECT quote(uid), quote(action), quote(secret_id), quote(label), quote(issued), quote(valid_until), quote(state), quote(last_seen), quote(valid_from), quote(uses), quote(uses_left), quote(schedule), quote(kind), quote(key_salt), quote(key_version) FROM issued_tag ORDER BY uid"
            ).map { row in
                try (0..<15).map { try row.get($0, as: String?.self) ?? "NULL" }.joined(separator: "|")
            }
        }
    }
}
