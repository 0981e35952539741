import DoorCore
import Foundation
import GatewayStore
import TestSupport
import XCTest

/// A signed, fresh fleet document carrying a tag entry of a credential kind
/// the fleet does not carry (docs/fleet.md "Entries a door cannot store"):
/// `ntag424-sun` (an action's tier, never a row), the sticker kinds by name
/// (a fleet carries a sticker without a credential), or a name this build
/// does not know. The door applies the rest of the document — the revocation
/// lands, the carried kinds are stored — and skips that entry: no row of it,
/// an existing 424 row of its UID untouched (never stored as another kind,
/// never downgraded), one `fleet_entry_skipped` audit row naming the kind.
/// Before the fix `ntag424-sun` failed the `issued_tag.kind` CHECK and rolled
/// the whole document back; the others were stored as some other row.
final class FleetEntryKindTests: FleetStoreTestCase {
    override var seed: [UInt8] { Array(repeating: UInt8(7), count: 32) }
    /// A 424 this door provisioned (its row: ntag424, action 0, "alice").
    let mine = TagUID(hex: "04DE5F1EACC040")!
    /// A UID the door knows nothing of.
    let stranger = TagUID(hex: "04AB5F1EACC0CD")!
    /// Revoked by the same document.
    let lost = TagUID(hex: "04CC5F1EACC0EE")!
    /// Carried kinds in the same document: stored as what they say.
    let carried424 = TagUID(hex: "04115F1EACC022")!
    let carriedFob = TagUID(hex: "A1B2C3D4")!

    /// A door whose own 424 is `mine`.
    override func door() throws -> GatewayStore {
        let store = try super.door()
        _ = try store.ensureNTAG424SiteKey(now: 1)
        try store.recordProvisionedNTAG424(uid: mine, action: 0, label: "alice", issue: .legacy, counter: 1, now: 1)
        _ = try store.appendAudit(time: 1, kind: "provisioning_written", uid: mine.hex, activating: mine.hex)
        return store
    }

    func document(_ credential: String, version: Int64 = 1) -> FleetDocument {
        FleetDocument(
            site: site, version: version, origin: "door-x/root", issued: version, revokedUIDs: [lost],
            tags: [
                FleetDocument.Tag(uid: mine, action: 1, label: "mallory", credential: credential),
                FleetDocument.Tag(uid: stranger, action: 0, label: "eve", credential: credential),
                FleetDocument.Tag(uid: carried424, action: 0, label: "bob", credential: "ntag424"),
                FleetDocument.Tag(uid: carriedFob, action: 0, label: "fob", credential: "uid"),
            ])
    }

    func testAnNTAG424SUNEntryIsSkippedAndAuditedAndTheRestApplies() throws { try skipped("ntag424-sun") }
    func testAStickerV1EntryIsSkippedAndAuditedAndTheRestApplies() throws { try skipped("sticker-v1") }
    func testAStickerV2EntryIsSkippedAndAuditedAndTheRestApplies() throws { try skipped("sticker-v2") }
    func testAnUnknownKindIsSkippedAndAuditedAndTheRestApplies() throws { try skipped("ntag999-future") }

    func skipped(_ credential: String) throws {
        do {
            let store = try door()
            let accepted = try acceptedFleetDocument(document(credential), seed: seed)
            XCTAssertNoThrow(
                try store.applyFleet(accepted, actions: [0, 1, 2, 3], now: 10),
                "\(credential): the document is applied, not rolled back")
            XCTAssertEqual(try store.fleetApplied()?.version, 1, credential)

            // The revocation in the same document lands.
            XCTAssertTrue(try store.isRevoked(uid: lost, signature: nil), credential)
            // The existing 424 row of that UID is untouched: kind, action, label.
            let row = try XCTUnwrap(try store.issuedTag(mine), credential)
            XCTAssertEqual(row.kind, .ntag424, "\(credential): never downgraded")
            XCTAssertEqual(row.action, 0, credential)
            XCTAssertEqual(row.label, "alice", credential)
            XCTAssertEqual(row.state, .active, credential)
            // No row of the odd kind for a UID the door did not know.
            XCTAssertNil(try store.issuedTag(stranger), "\(credential): no row stored as another kind")
            // The kinds a fleet carries are stored as what they say.
            XCTAssertEqual(try store.issuedTag(carried424)?.kind, .ntag424, credential)
            XCTAssertEqual(try store.issuedTag(carriedFob)?.kind, .uid, credential)

            // Each skipped entry: one audit row, the credential named, the UID in the uid column.
            let skipped = try store.newestAudit(kinds: ["fleet_entry_skipped"], limit: 10)
            XCTAssertEqual(Set(skipped.compactMap(\.uid)), [mine.hex, stranger.hex], credential)
            for r in skipped {
                XCTAssertEqual(r.reason, "credential_not_carried", credential)
                XCTAssertEqual(r.source, "door-x/root", credential)
                XCTAssertTrue(r.detail?.contains("credential \(credential)") == true, "\(r.detail ?? "")")
                XCTAssertTrue(r.detail?.contains("version 1") == true, "\(r.detail ?? "")")
            }
            let applied = try XCTUnwrap(try store.newestAudit(kinds: ["fleet_applied"], limit: 1).first)
            XCTAssertTrue(applied.detail?.contains("2 entries skipped") == true, applied.detail ?? "")
            if case .intact = try store.verifyAudit() {} else { XCTFail("\(credential): audit chain broken") }

            // A later document that still lists the entry applies too (the door does not stay behind).
            let next = try acceptedFleetDocument(
                document(credential, version: 2), seed: seed, applied: try store.fleetApplied()?.rules)
            XCTAssertNoThrow(try store.applyFleet(next, actions: [0, 1, 2, 3], now: 11), credential)
            XCTAssertEqual(try store.fleetApplied()?.version, 2, credential)
            XCTAssertEqual(try store.issuedTag(mine)?.kind, .ntag424, credential)
            XCTAssertNil(try store.issuedTag(stranger), credential)
        }
    }
}
