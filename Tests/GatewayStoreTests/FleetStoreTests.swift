import DoorCore
import Foundation
import GatewayStore
import TestSupport
import XCTest

final class FleetStoreTests: TemporaryDirectoryTestCase {
    var dir: String!
    override func setUpWithError() throws { dir = temporaryPath("fleet") }

    let seed = Array(repeating: UInt8(9), count: 32)
    let issued = TagUID(hex: "04A1B2C3D4E5F6")!
    let lost = TagUID(hex: "04112233445566")!

    func accept(_ doc: FleetDocument, applied: FleetRules.Applied? = nil) throws -> FleetRules.Accepted {
        try acceptedFleetDocument(doc, seed: seed, applied: applied)
    }

    func testADocumentIsAppliedOnceAuditedAndSurvivesAReopen() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.createPendingTag(uid: lost, action: 1, secretID: nil, label: "bob", now: 10)
        try store.activateTag(uid: lost)
        let doc = FleetDocument(
            site: "acme-hq", version: 5, origin: "front-door/root", issued: 100, revokedUIDs: [lost],
            revokedSignatures: [[0xAB]], tags: [FleetDocument.Tag(uid: issued, action: 1, label: "alice")])
        let changes = try store.applyFleet(try accept(doc), actions: [0, 1], now: 200)
        XCTAssertEqual(changes.revokeUIDs, [lost])
        XCTAssertEqual(try store.issuedTag(lost)?.state, .revoked)
        XCTAssertTrue(try store.isRevoked(uid: lost, signature: nil))
        XCTAssertTrue(try store.isRevoked(uid: issued, signature: [0xAB]))
        XCTAssertEqual(try store.issuedTag(issued)?.state, .active)
        XCTAssertEqual(try store.issuedTag(issued)?.label, "alice")

        let reopened = try GatewayStore(stateDirectory: dir)
        let record = try XCTUnwrap(try reopened.fleetApplied())
        XCTAssertEqual(record.version, 5)
        XCTAssertEqual(record.origin, "front-door/root")
        XCTAssertEqual(record.applied, 200)
        // The signed envelope as applied is kept with it (what `fleet push` checks and compares with).
        XCTAssertEqual(record.document, try doc.signed(seed: seed))
        // The same version again (a race past the judge) is refused by the store, and changes nothing.
        XCTAssertThrowsError(try reopened.applyFleet(try accept(doc), actions: [0, 1], now: 300)) {
            XCTAssertEqual($0 as? FleetStoreError, .superseded(version: 5, applied: 5))
        }
        // Restarted, the judge sees the applied digest: the retained copy is not applied twice.
        XCTAssertEqual(
            FleetRules.judge(
                try doc.signed(seed: seed), sitePublicKey: try Crypto.Ed25519.publicKey(seed: seed), siteID: "acme-hq",
                applied: record.rules), .alreadyApplied)

        try reopened.recordFleetRefusal(.badSignature, source: "doorgateway/back-door/fleet/acme-hq", now: 400)
        let rows = try reopened.auditTail(10)
        XCTAssertEqual(rows.map(\.kind), [FleetAudit.applied, FleetAudit.refused])
        XCTAssertEqual(rows[0].source, "front-door/root")
        XCTAssertEqual(rows[0].detail?.hasPrefix("site acme-hq version 5:"), true)
        XCTAssertEqual(rows[1].reason, "bad_signature")
        XCTAssertEqual(try reopened.verifyAudit(), .intact(rows: 2, from: 1))
    }

    func testAFleetTagNeverRevivesALocalRevocationAndSnapshotRoundTrips() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.revoke(uid: issued, now: 1)
        let doc = FleetDocument(
            site: "acme-hq", version: 1, origin: "o", issued: 1, tags: [FleetDocument.Tag(uid: issued, action: 1)])
        let changes = try store.applyFleet(try accept(doc), actions: [1], now: 2)
        XCTAssertTrue(changes.upsertTags.isEmpty)
        XCTAssertNil(try store.issuedTag(issued))
        XCTAssertTrue(try store.isRevoked(uid: issued, signature: nil))
        let snap = FleetRules.snapshot(try store.fleetLocal(), site: "acme-hq", version: 2, origin: "o", now: 3)
        XCTAssertEqual(snap.revokedUIDs, [issued])
        XCTAssertEqual(snap.tags, [])
    }

    /// docs/policy.md: a guest pass (uses, start, schedule) is not pushed to
    /// other doors — there it would open without its limits — and a fleet
    /// document naming the same UID does not lift them here.
    func testAGuestPassStaysAtItsDoorAndKeepsItsLimits() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.createPendingTag(
            uid: issued, action: 1, secretID: nil, label: "guest",
            limits: TagLimits(validFrom: 1, validUntil: 100, uses: 1, schedule: "staff"), now: 1)
        try store.activateTag(uid: issued)
        try store.createPendingTag(uid: lost, action: 1, secretID: nil, label: "plain", now: 1)
        try store.activateTag(uid: lost)
        let snap = FleetRules.snapshot(try store.fleetLocal(), site: "acme-hq", version: 1, origin: "o", now: 2)
        XCTAssertEqual(snap.tags.map(\.uid), [lost], "only the unlimited tag travels")

        let doc = FleetDocument(
            site: "acme-hq", version: 2, origin: "o", issued: 3,
            tags: [FleetDocument.Tag(uid: issued, action: 1, label: "elsewhere", validUntil: nil)])
        _ = try store.applyFleet(try accept(doc), actions: [1], now: 4)
        let row = try XCTUnwrap(store.issuedTag(issued))
        XCTAssertEqual(row.usesLeft, 1)
        XCTAssertEqual(row.validUntil, 100, "the fleet does not lift the pass's end")
        XCTAssertEqual(row.schedule, "staff")
        XCTAssertEqual(row.label, "guest")
    }
}

struct FleetDocumentRefused: Error, CustomStringConvertible {
    let verdict: String
    var description: String { "a document the test expects accepted was refused: \(verdict)" }
}

/// `doc` signed with the site key `seed` and accepted as a door's judge would.
func acceptedFleetDocument(_ doc: FleetDocument, seed: [UInt8], applied: FleetRules.Applied? = nil) throws
    -> FleetRules.Accepted
{
    let verdict = FleetRules.judge(
        try doc.signed(seed: seed), sitePublicKey: try Crypto.Ed25519.publicKey(seed: seed), siteID: doc.site,
        applied: applied)
    // A refusal here is a FleetRules regression: fail, never skip (a skip would hide it).
    guard case .apply(let a) = verdict else { throw FleetDocumentRefused(verdict: "\(verdict)") }
    return a
}
