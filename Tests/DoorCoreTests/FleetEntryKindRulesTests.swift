import DoorCore
import XCTest

/// `FleetRules.changes` on entries of a credential kind the fleet does not
/// carry (docs/fleet.md "Entries a door cannot store"): reported in
/// `notCarried`, never in `upsertTags` (so never stored as another kind nor
/// over a row of their UID), whatever else the entry or the door says.
final class FleetEntryKindRulesTests: XCTestCase {
    let x = TagUID(hex: "04DE5F1EACC040")!
    let y = TagUID(hex: "04AB5F1EACC0CD")!
    let z = TagUID(hex: "04115F1EACC022")!

    func testOnlyStickersAndTheCarriedKindsAreStored() {
        XCTAssertEqual(FleetDocument.Tag.carriedCredentials, ["ntag424", "uid"])
        for (credential, carried) in [
            (nil, true), ("ntag424", true), ("uid", true), ("ntag424-sun", false), ("sticker-v1", false),
            ("sticker-v2", false), ("ntag999", false),
        ] as [(String?, Bool)] {
            XCTAssertEqual(
                FleetDocument.Tag(uid: x, action: 0, credential: credential).isCarried, carried,
                "\(credential ?? "nil")")
        }
    }

    func testAnEntryNotCarriedIsReportedAndNeverUpserted() {
        var local = FleetRules.Local(tags: [x: (.active, 0, "alice", nil)])
        local.tagCredentials[x] = "ntag424"
        let doc = FleetDocument(
            site: "s", version: 1, origin: "o", issued: 0, revokedUIDs: [y],
            tags: [
                FleetDocument.Tag(uid: x, action: 1, label: "mallory", credential: "ntag424-sun"),
                // The first entry of a UID counts: a carried one after it changes nothing.
                FleetDocument.Tag(uid: x, action: 1, label: "mallory", credential: "ntag424"),
                // Revoked by the same document: still reported.
                FleetDocument.Tag(uid: y, action: 0, credential: "sticker-v2"),
                // An action this door does not define: still reported as a kind not carried.
                FleetDocument.Tag(uid: z, action: 9, credential: "ntag999"),
            ])
        let c = FleetRules.changes(doc, to: local, actions: [0, 1])
        XCTAssertEqual(c.upsertTags, [])
        XCTAssertEqual(c.revokeUIDs, [y])
        XCTAssertEqual(c.notCarried.map(\.uid), [x, y, z])
        XCTAssertEqual(c.notCarried.map(\.credential), ["ntag424-sun", "sticker-v2", "ntag999"])
        XCTAssertTrue(c.skipped.isEmpty, "\(c.skipped)")
        XCTAssertTrue(
            c.summary.contains("3 entries skipped (credential not carried: ntag424-sun, sticker-v2, ntag999)"),
            c.summary)
        // Nothing else to do: the document changes nothing but the revocation.
        var noRevocation = doc
        noRevocation.revokedUIDs = []
        XCTAssertTrue(FleetRules.changes(noRevocation, to: local, actions: [0, 1]).isEmpty)
    }
}
