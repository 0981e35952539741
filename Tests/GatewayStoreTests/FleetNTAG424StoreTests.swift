import DoorCore
import Foundation
import GatewayStore
import TestSupport
import XCTest

/// Issue 26 through the fleet, on real stores: documents made as `gatewayctl
/// fleet push --secrets` makes them and applied as gatewayd applies them. A
/// 424 provisioned at door A is a 424 row at B with A's site master key (so
/// B's EV2 check uses the key the tag holds); revocation by UID reaches 424
/// rows; a door whose own 424 tags depend on its key keeps it.
final class FleetNTAG424StoreTests: FleetStoreTestCase {
    let uid = TagUID(hex: "04DE5F1EACC040")!
    let other = TagUID(hex: "04AA5F1EACC0BB")!
    /// What the door does once the reader verified a provisioned tag: the row and counter, then the audit row that activates it.
    func provision(_ uid: TagUID, at store: GatewayStore, label: String = "alice", limits: TagLimits = TagLimits())
        throws
    {
        _ = try store.ensureNTAG424SiteKey(now: 1)
        try store.recordProvisionedNTAG424(
            uid: uid, action: 0, label: label, limits: limits, issue: .legacy, counter: 1, now: 1)
        _ = try store.appendAudit(time: 1, kind: "provisioning_written", uid: uid.hex, activating: uid.hex)
    }

    func testA424ProvisionedAtADoorIsA424RowWithTheSameSiteKeyAtAnother() throws {
        let a = try door(), b = try door()
        try provision(uid, at: a)
        XCTAssertEqual(try a.issuedTag(uid)?.state, .active)
        XCTAssertEqual(try a.sunCounter(uid: uid), 1)
        let document = try push(from: a, version: 1)
        XCTAssertFalse(
            String(decoding: document.envelope, as: UTF8.self).contains(Hex.encode(try a.ntag424SiteKey()!.key)))
        let changes = try apply(document, at: b)
        XCTAssertNotNil(changes.setNTAG424MasterKey)
        XCTAssertTrue(try b.auditTail(1)[0].detail?.contains("ntag424 master key taken") == true)
        let atB = try XCTUnwrap(try b.ntag424SiteKey())
        XCTAssertEqual(atB.key, try a.ntag424SiteKey()?.key)
        XCTAssertEqual(atB.origin, .fleet)
        let row = try XCTUnwrap(try b.issuedTag(uid))
        XCTAssertEqual(row.state, .active)
        XCTAssertEqual(row.kind, .ntag424)
        XCTAssertEqual(row.label, "alice")
        XCTAssertNil(try b.sunCounter(uid: uid), "B has seen no SUN of it yet: its first tap's counter is taken")
        // B pushes on: A applies B's document and changes nothing (the same key, the same row).
        XCTAssertTrue(try apply(try push(from: b, version: 2), at: a).isEmpty)
        XCTAssertEqual(try a.ntag424SiteKey()?.generation, 1, "A's key is not replaced by itself")
    }

    /// A re-issue at door A (a new salt; after a reset SDM restarts the tag's
    /// counter) reaches door B with its issue, and B forgets the SUN counter
    /// it held for the old issue: otherwise every tap of the re-issued tag
    /// would be `counter_replay` there (a failed proof, counted toward the
    /// global lockout) until its counter passed the old one. A document that
    /// leaves the issue as it is keeps B's counter.
    func testAReissueReachesAnotherDoorWithItsIssueAndResetsItsCounterThere() throws {
        let a = try door(), b = try door()
        let first = NTAG424.KeyIssue(salt: Array(repeating: 1, count: 16), version: 2)
        _ = try a.ensureNTAG424SiteKey(now: 1)
        try a.recordProvisionedNTAG424(uid: uid, action: 0, label: "alice", issue: first, counter: 1, now: 1)
        _ = try a.appendAudit(time: 1, kind: "provisioning_written", uid: uid.hex, activating: uid.hex)
        try apply(try push(from: a, version: 1), at: b)
        XCTAssertEqual(try b.issuedTag(uid)?.keyIssue, first)
        XCTAssertEqual(try b.acceptSUNCounter(uid: uid, counter: 40, now: 2), .accepted(previous: nil))
        try apply(try push(from: a, version: 2), at: b)
        XCTAssertEqual(try b.sunCounter(uid: uid), 40, "the same issue keeps B's counter")

        let second = NTAG424.KeyIssue(salt: Array(repeating: 2, count: 16), version: 3)
        try a.recordProvisionedNTAG424(uid: uid, action: 0, label: "alice", issue: second, counter: 2, now: 3)
        _ = try a.appendAudit(time: 3, kind: "provisioning_written", uid: uid.hex, activating: uid.hex)
        try apply(try push(from: a, version: 3), at: b)
        XCTAssertEqual(try b.issuedTag(uid)?.keyIssue, second)
        XCTAssertNil(try b.sunCounter(uid: uid), "the old issue's counter is forgotten")
        XCTAssertEqual(try b.acceptSUNCounter(uid: uid, counter: 3, now: 4), .accepted(previous: nil))
    }

    func testRevocationByUIDReachesA424RowAtEveryDoor() throws {
        let a = try door(), b = try door()
        try provision(uid, at: a)
        try apply(try push(from: a, version: 1), at: b)
        try b.revoke(uid: uid, reason: "lost", now: 5)
        XCTAssertEqual(try b.issuedTag(uid)?.state, .revoked)
        let changes = try apply(try push(from: b, version: 2), at: a)
        XCTAssertEqual(changes.revokeUIDs, [uid])
        XCTAssertEqual(try a.issuedTag(uid)?.state, .revoked)
        XCTAssertTrue(try a.isRevoked(uid: uid, signature: nil))
        // And a revoked UID cannot be provisioned again at A (until `tags forget`).
        XCTAssertThrowsError(
            try a.recordProvisionedNTAG424(uid: uid, action: 0, label: "x", issue: .legacy, counter: 9, now: 9))
    }

    func testADoorWhoseOwn424sDependOnItsKeyKeepsIt() throws {
        let a = try door(), c = try door()
        try provision(uid, at: a)
        try provision(other, at: c)  // C generated its own key and provisioned a tag with it
        let mine = try XCTUnwrap(try c.ntag424SiteKey()).key
        XCTAssertNotEqual(mine, try a.ntag424SiteKey()?.key)
        let changes = try apply(try push(from: a, version: 1), at: c)
        XCTAssertNil(changes.setNTAG424MasterKey)
        XCTAssertEqual(try c.ntag424SiteKey()?.key, mine, "C's tag keeps opening at C")
        let detail = try c.auditTail(1)[0].detail ?? ""
        XCTAssertTrue(detail.contains("ntag424 master key not taken"), detail)
        // A door that generated a key but provisioned nothing with it takes the site's.
        let d = try door()
        _ = try d.ensureNTAG424SiteKey(now: 1)
        try apply(try push(from: a, version: 1), at: d)
        XCTAssertEqual(try d.ntag424SiteKey()?.key, try a.ntag424SiteKey()?.key)
        XCTAssertEqual(try d.ntag424SiteKey()?.generation, 2)
    }

    func testAGuest424StaysAtItsDoorAndAResetRowIsNotPushed() throws {
        let a = try door(), b = try door()
        try provision(uid, at: a, limits: TagLimits(uses: 3))
        try provision(other, at: a)
        XCTAssertTrue(try a.markNTAG424Reset(uid: other))
        XCTAssertEqual(try a.issuedTag(other)?.state, .failed)
        let doc = try push(from: a, version: 1).document
        XCTAssertEqual(doc.tags, [], "a guest pass stays local (docs/policy.md); a reset tag is not active")
        try apply(try push(from: a, version: 1), at: b)
        XCTAssertNil(try b.issuedTag(uid))
    }
}
