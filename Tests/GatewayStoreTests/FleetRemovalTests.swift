import DoorCore
import Foundation
import GatewayStore
import TestSupport
import XCTest

/// Issue 24 M1 (docs/security.md "M1"): removals travel. Three doors' stores,
/// documents made as `gatewayctl fleet push --secrets` makes them (the
/// store's own state, `FleetRules.snapshot`, secrets sealed to the site box)
/// and applied as gatewayd applies them (`applyFleet`, the opened secrets).
final class FleetRemovalTests: FleetStoreTestCase {
    let leaked = Array(repeating: UInt8(0x5A), count: 32)
    let kept = Array(repeating: UInt8(0x6B), count: 32)
    let oldCommandKey = Array(repeating: UInt8(0x11), count: 32)
    let newCommandKey = Array(repeating: UInt8(0x22), count: 32)
    let oldOTPKey = Array(repeating: UInt8(0x33), count: 16)
    let newOTPKey = Array(repeating: UInt8(0x44), count: 16)
    func activeKeys(_ store: GatewayStore) throws -> [[UInt8]] {
        try store.secrets().filter(\.active).map(\.key)
    }

    /// The attack: a leaked secret removed at A, then a push from B, which
    /// still holds it (B had not applied A's document: it was off, or runs
    /// a build that ignores removals; the operator pushed with
    /// --after-version). Before M1 the secret came back at A (A lacked its
    /// bytes, so the document "added" it) and C never lost it.
    func testALeakedSecretRemovedAtOneDoorDoesNotComeBackThroughAnotherDoorsPush() throws {
        let a = try door(), b = try door(), c = try door()
        try a.addSecret(action: 0, key: leaked, label: "leaked", origin: .generated, now: 1)
        try a.addSecret(action: 0, key: kept, label: "kept", origin: .generated, now: 1)
        let v1 = try push(from: a, version: 1)
        for d in [b, c] { try apply(v1, at: d) }
        XCTAssertEqual(try activeKeys(c), [leaked, kept])

        // A removes the leaked secret and pushes; C applies it, B does not.
        let id = try XCTUnwrap(try a.secrets().first { $0.key == leaked }?.id)
        try a.removeSecret(id: id)
        let v2 = try push(from: a, version: 2)
        try apply(v2, at: c)
        XCTAssertEqual(try activeKeys(c), [kept], "A's removal reached C")

        // B, still holding it, pushes version 3.
        XCTAssertEqual(try activeKeys(b), [leaked, kept])
        let v3 = try push(from: b, version: 3)
        for d in [a, c] { try apply(v3, at: d) }
        XCTAssertEqual(try activeKeys(a), [kept], "the leaked secret came back at A")
        XCTAssertEqual(try activeKeys(c), [kept], "the leaked secret came back at C")
        // And a v2 sticker of the leaked key is denied at both.
        let uid = TagUID(hex: "04A1B2C3D4E5F6")!
        let sticker = StickerSigner.signV2(action: 0, timestamp: 1_700_000_000, key: leaked, uid: uid)
        for d in [a, c] {
            XCTAssertNotEqual(
                StickerJudge.judge(sticker, uid: uid, secrets: try d.secrets(), actionCount: 4).reason, .validV2)
        }
    }

    /// The attack on the remote keys: the command key (COMPAT §5) and the
    /// phone's OTP key (docs/formats.md §3) rotated at A after a leak, then a push
    /// from B with the old ones. Before M1 every door took the old keys back.
    func testARotatedRemoteKeyIsNotRolledBackByAnotherDoorsPushOfTheOldOne() throws {
        let a = try door(), b = try door(), c = try door()
        try a.setKey(.nativeCommand, oldCommandKey, now: 1)
        try a.setKey(.compatTimestamp, oldOTPKey, now: 1)
        let v1 = try push(from: a, version: 1)
        for d in [b, c] { try apply(v1, at: d) }
        XCTAssertEqual(try b.key(.nativeCommand), oldCommandKey)

        // The leak: A rotates both and pushes; C applies it, B does not.
        try a.setKey(.nativeCommand, newCommandKey, now: 2)
        try a.setKey(.compatTimestamp, newOTPKey, now: 2)
        let v2 = try push(from: a, version: 2)
        try apply(v2, at: c)
        XCTAssertEqual(try c.key(.nativeCommand), newCommandKey)

        let v3 = try push(from: b, version: 3)
        for d in [a, c] { try apply(v3, at: d) }
        for (name, d) in [("A", a), ("C", c)] {
            XCTAssertEqual(try d.key(.nativeCommand), newCommandKey, "command key rolled back at \(name)")
            XCTAssertEqual(try d.key(.compatTimestamp), newOTPKey, "otp key rolled back at \(name)")
        }
        // B, once it applies a document carrying the newer keys, rotates to them.
        let v4 = try push(from: a, version: 4)
        try apply(v4, at: b)
        XCTAssertEqual(try b.key(.nativeCommand), newCommandKey)
        XCTAssertEqual(try b.key(.compatTimestamp), newOTPKey)
    }

    /// A document from a build before M1 has neither tombstones nor
    /// generations. It lifts no tombstone (it carries none, and a document
    /// never lifts one), and its remote keys replace none a door holds: they
    /// are taken only where the door holds none (at generation 0). The
    /// audit row says what was not taken; a removed key cannot be imported
    /// again either, at a door that only heard of its removal.
    func testAnOlderBuildsDocumentRestoresNoRemovedSecretAndRollsBackNoKey() throws {
        let a = try door(), c = try door(), fresh = try door()
        try a.addSecret(action: 0, key: leaked, label: "leaked", origin: .generated, now: 1)
        try a.setKey(.nativeCommand, oldCommandKey, now: 1)
        try apply(try push(from: a, version: 1), at: c)
        let id = try XCTUnwrap(try a.secrets().first { $0.key == leaked }?.id)
        try a.removeSecret(id: id, now: 2)
        try a.setKey(.nativeCommand, newCommandKey, now: 2)
        XCTAssertEqual(try a.keyGeneration(.nativeCommand), 2)
        let v2 = try push(from: a, version: 2)
        XCTAssertEqual(v2.document.secretTombstones, [FleetDocument.tombstone(of: leaked)])
        try apply(v2, at: c)
        XCTAssertEqual(try c.secretTombstones(), [FleetDocument.tombstone(of: leaked)])
        XCTAssertEqual(try c.secrets().map(\.active), [false], "deactivated, kept as history")
        XCTAssertEqual(try c.keyGeneration(.nativeCommand), 2)

        // What an older build pushes: the leaked key and the old command key, no tombstone, no generation.
        let old = FleetSecrets(
            secrets: [.init(action: 0, key: leaked, label: "leaked", origin: .generated)],
            nativeCommandKey: oldCommandKey)
        let doc = FleetDocument(
            site: site, version: 3, origin: "old-door/root", issued: 3,
            sealedSecrets: try old.seal(to: try Crypto.SiteBox.publicKey(privateKey: box), site: site, version: 3))
        let v3 = try acceptedFleetDocument(doc, seed: seed)
        XCTAssertFalse(
            String(decoding: try FleetDocument.openEnvelope(v3.envelope).body, as: UTF8.self).contains("tombstone"))
        let changes = try apply(v3, at: c)
        XCTAssertEqual(try activeKeys(c), [])
        XCTAssertEqual(try c.secretTombstones(), [FleetDocument.tombstone(of: leaked)], "no tombstone lifted")
        XCTAssertEqual(try c.key(.nativeCommand), newCommandKey)
        XCTAssertEqual(changes.keptRemoteKeys, ["command key without a generation not taken (generation 2 here)"])
        XCTAssertEqual(
            try c.auditTail(1).first?.detail,
            "site acme-hq version 3: +0 uid revocations, +0 signature revocations, 0 tags, "
                + "command key without a generation not taken (generation 2 here)")

        // A door that never held the key: the older document's secret is
        // stored (it knows no tombstone yet) and its key taken at generation 0;
        // then A's document removes the secret and rotates the key there too.
        try apply(v3, at: fresh)
        XCTAssertEqual(try activeKeys(fresh), [leaked])
        XCTAssertEqual(try fresh.key(.nativeCommand), oldCommandKey)
        XCTAssertEqual(try fresh.keyGeneration(.nativeCommand), 0)
        let v4 = try push(from: a, version: 4)
        let applied = try apply(v4, at: fresh)
        XCTAssertEqual(applied.deactivateSecrets, [leaked])
        XCTAssertEqual(try activeKeys(fresh), [])
        XCTAssertEqual(try fresh.key(.nativeCommand), newCommandKey)
        XCTAssertEqual(
            try fresh.auditTail(1).first?.detail,
            "site acme-hq version 4: +0 uid revocations, +0 signature revocations, 0 tags, +1 secret tombstones, "
                + "1 removed secrets deactivated, command key rotated (generation 2)")

        // The removed key cannot be imported again, here or where only its tombstone arrived.
        let never = try door()
        try apply(v4, at: never)
        XCTAssertThrowsError(try c.addSecret(action: 1, key: leaked, label: "again", origin: .imported, now: 5)) {
            guard case .alreadyHeld? = $0 as? StoreError else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try never.addSecret(action: 1, key: leaked, label: "again", origin: .imported, now: 5)) {
            XCTAssertEqual($0 as? StoreError, .removedKey)
        }
        XCTAssertThrowsError(try a.removeSecret(id: id)) { XCTAssertEqual($0 as? StoreError, .alreadyRemoved(id: id)) }
    }

    /// Two doors rotating at once reach the same generation: neither takes
    /// the other's (the audit row says so), and a third door keeps the first
    /// it applied; rotating again at one door gives the site one key.
    func testARotationAtTwoDoorsAtOnceReplacesNeitherUntilTheNextRotation() throws {
        let a = try door(), b = try door(), c = try door()
        try a.setKey(.compatTimestamp, oldOTPKey, now: 1)
        let v1 = try push(from: a, version: 1)
        for d in [b, c] { try apply(v1, at: d) }
        try a.setKey(.compatTimestamp, newOTPKey, now: 2)
        try b.setKey(.compatTimestamp, Array(repeating: 0x99, count: 16), now: 2)
        let v2 = try push(from: a, version: 2)
        try apply(v2, at: c)
        let changes = try apply(v2, at: b)
        XCTAssertEqual(changes.keptRemoteKeys, ["otp key of generation 2 not taken (another key at generation 2 here)"])
        XCTAssertEqual(try b.key(.compatTimestamp), Array(repeating: 0x99, count: 16))
        try b.setKey(.compatTimestamp, Array(repeating: 0x98, count: 16), now: 3)
        let v3 = try push(from: b, version: 3)
        for d in [a, c] { try apply(v3, at: d) }
        for d in [a, b, c] {
            XCTAssertEqual(try d.key(.compatTimestamp), Array(repeating: 0x98, count: 16))
            XCTAssertEqual(try d.keyGeneration(.compatTimestamp), 3)
        }
    }
}
