import DoorCore
import Foundation
import NFCReader
import TestSupport
import XCTest

/// docs/security.md "An armed door gives a registered tag's keys to no other
/// chip" (review round two, H-1 and L-1): the attacks performed against the
/// real gatewayd (the static binary under make test), real libnfc to a
/// pn532-sim on a pty the test runs, and the door's SQLite store on disk. The
/// emulator counts every ChangeKey command a tag receives
/// (`ntag424-changekeys`), so "no key sent" is read off the chip, not the door.
///
/// - armed provisioning (button or `provision`) and a factory chip claiming a
///   registered 424's UID: `already_registered`, no ChangeKey, the row as it
///   was, the clone denied, the real tag still granted;
/// - `provision reset` and a chip claiming that UID with key 0 at the factory
///   version and keys 1–4 at the row's version: refused, no ChangeKey;
/// - a blank NTAG213 under a 424's UID while armed: refused, the 424 row kept;
/// - `provision --reissue UID` names the one tag it re-keys: any other is
///   refused and the job stays armed.
final class NTAG424CloneAttackTests: XCTestCase {
    /// How many ChangeKey commands the 424 in the field (or the last to leave it) received.
    func changeKeys(_ sim: PN532SimProcess) throws -> Int {
        let answer = try sim.control("ntag424-changekeys")
        XCTAssertTrue(answer.hasPrefix("ok "), answer)
        return try XCTUnwrap(Int(answer.dropFirst(3).trimmingCharacters(in: .whitespaces)), answer)
    }

    /// The door's decision on the next tap after `seen` (the tag already put in the field).
    func decision(_ g: GatewayUnderTest, after seen: Int) throws -> JSONValue { try g.accessEvent(after: seen) }

    /// A door on a pn532-sim of its own, started, with a factory 424 of `uid`
    /// provisioned for `action` (it stays in the field).
    func doorWith424(_ uid: String, action: Int, label: String) throws -> (PN532SimProcess, GatewayUnderTest) {
        let sim = try PN532SimProcess()
        let g = try GatewayUnderTest.onSim(sim)
        try g.start()
        try provisionAtDoor(g, sim, uid, action: action, label: label)
        return (sim, g)
    }

    /// Provisions a factory 424 under `uid` at the door for `action`; it stays in the field.
    func provisionAtDoor(_ g: GatewayUnderTest, _ sim: PN532SimProcess, _ uid: String, action: Int, label: String)
        throws
    {
        let seen = try g.eventCount()
        try g.ctlJSON(["provision", "--action", "\(action)", "--label", label])
        try g.waitForEvent("provisioning_armed", after: seen)
        XCTAssertTrue(try sim.control("insert ntag424 \(uid)").hasPrefix("ok"))
        let written = try g.waitForEvent("provisioning_written", after: seen, timeout: 20)
        XCTAssertEqual(written["uid"]?.stringValue, uid)
    }

    /// Arms provisioning with `arm`, brings `chip` (a pn532-sim `insert` line)
    /// into the field once the door's quiet window has passed, and returns the
    /// `provisioning_failed` event the door must answer with.
    func armAndPresent(_ g: GatewayUnderTest, _ sim: PN532SimProcess, arm: [String], chip: String) throws
        -> JSONValue
    {
        let seen = try g.eventCount()
        try g.ctlJSON(arm)
        try g.waitForEvent("provisioning_armed", after: seen, timeout: 10)
        E2ETiming.outlastQuietWindow()
        XCTAssertTrue(try sim.control(chip).hasPrefix("ok"))
        let failed = try g.waitForEvent("provisioning_failed", after: seen, timeout: 20)
        XCTAssertFalse(try g.auditKinds().dropFirst(seen).contains("provisioning_written"))
        return failed
    }

    /// The fields of a registry row an attack must not change.
    func fields(_ row: JSONValue?) -> [String] {
        ["action", "label", "state", "kind", "key_version", "issued"].map {
            "\($0)=\(row?[$0].map { "\($0)" } ?? "nil")"
        }
    }

    // MARK: H-1 — the confirmed sequence

    /// The review's reproduction: an admin's 424 is registered; during a
    /// guest's provisioning (armed by the button, then by `provision`) a
    /// second chip — a factory 424 whose UID is set to the admin's — is
    /// presented. The door must refuse it before any key leaves: the chip
    /// records no ChangeKey, the row is unchanged, the clone is denied and
    /// the admin's real tag still opens its action. On 0cee1d2 the clone
    /// received ChangeKey 1–4 and key 0 (`provisioning_failed not_verified`).
    func testAnArmedDoorGivesAChipClaimingARegisteredUIDNoKeys() throws {
        let admin = "04AD0424C10E01"
        let (sim, g) = try doorWith424(admin, action: 1, label: "admin")
        let before = try XCTUnwrap(try g.issuedTag(admin))
        XCTAssertEqual(before["state"]?.stringValue, "active")
        XCTAssertTrue(try sim.control("stash").hasPrefix("ok"), "the admin's real tag, kept aside")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        for arm in [["sim", "press", "--hold", "5.5"], ["provision", "--action", "0", "--label", "guest"]] {
            // The clone: a factory 424 (all keys zero, settable UID) claiming the admin's UID.
            let failed = try armAndPresent(g, sim, arm: arm, chip: "insert ntag424 \(admin)")
            XCTAssertEqual(failed["uid"]?.stringValue, admin)
            XCTAssertEqual(failed["reason"]?.stringValue, "already_registered", "armed by \(arm[0]): \(failed)")
            XCTAssertEqual(try changeKeys(sim), 0, "armed by \(arm[0]): the clone received key material")
            XCTAssertEqual(fields(try g.issuedTag(admin)), fields(before), "armed by \(arm[0]): the row changed")
            XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        }

        // The clone, tapped: it cannot prove the admin's key 0.
        E2ETiming.outlastQuietWindow()
        var seen = try g.eventCount()
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        let clone = try decision(g, after: seen)
        XCTAssertEqual(clone["kind"]?.stringValue, "access_denied", "\(clone)")
        XCTAssertEqual(clone["reason"]?.stringValue, "auth_failed", "\(clone)")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        // The admin's real tag still opens the admin's action.
        E2ETiming.outlastQuietWindow()
        seen = try g.eventCount()
        XCTAssertTrue(try sim.control("unstash").hasPrefix("ok"))
        let real = try decision(g, after: seen)
        XCTAssertEqual(real["kind"]?.stringValue, "access_granted", "\(real)\n\(g.log.suffix(2000))")
        XCTAssertEqual(real["reason"]?.stringValue, "ntag424")
        XCTAssertEqual(real["action"]?.intValue, 1)
        XCTAssertEqual(g.stop(), 0)
    }

    // MARK: H-1 — reset proves key 0 first

    /// `provision reset` with a chip that claims a registered 424's UID and
    /// reports key 0 at the factory version and keys 1–4 at the row's key
    /// version (what a half-provisioned real tag would say): it cannot prove
    /// the door's key 0, so it gets no ChangeKey at all, the reset fails, and
    /// the row stays active. On 0cee1d2 the door authenticated with the
    /// factory key 0 and sent ChangeKey 1–4 carrying the tag's keys.
    func testResetGivesAChipThatCannotProveTheDoorsKey0Nothing() throws {
        let uid = "04AD0424C10E02"
        let (sim, g) = try doorWith424(uid, action: 0, label: "desk")
        let version = try XCTUnwrap(try g.issuedTag(uid))["key_version"]?.intValue ?? 1
        XCTAssertTrue(try sim.control("stash").hasPrefix("ok"))
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        XCTAssertTrue(try sim.control("insert ntag424 \(uid)").hasPrefix("ok"))
        XCTAssertTrue(
            try sim.control("ntag424-fault versions 0,\(version),\(version),\(version),\(version)").hasPrefix("ok"))
        let reset = try g.ctl(["provision", "reset"])
        XCTAssertNotEqual(reset.status, 0, "reset of a chip that cannot prove key 0 claimed success: \(reset.stdout)")
        XCTAssertEqual(try changeKeys(sim), 0, "the chip received key material")
        XCTAssertEqual(
            try g.issuedTag(uid)?["state"]?.stringValue, "active", "the row was marked for a chip that is not it")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        // A chip that is already at factory keys (all versions 0): the reset has nothing
        // to undo and succeeds, but nothing shows it is the row's tag — the row stays active.
        E2ETiming.outlastQuietWindow()
        XCTAssertTrue(try sim.control("insert ntag424 \(uid)").hasPrefix("ok"))
        let factory = try g.ctlJSON(["provision", "reset"])
        XCTAssertEqual(factory["row_marked"]?.boolValue, false, "\(factory)")
        XCTAssertEqual(
            try g.issuedTag(uid)?["state"]?.stringValue, "active", "a factory chip claiming the UID marked its row")
        XCTAssertEqual(try changeKeys(sim), 0)
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        // The real tag proves key 0 and is reset (its row marked, no key of it left on the tag).
        E2ETiming.outlastQuietWindow()
        XCTAssertTrue(try sim.control("unstash").hasPrefix("ok"))
        let done = try g.ctlJSON(["provision", "reset"])
        XCTAssertEqual(done["uid"]?.stringValue, uid)
        XCTAssertEqual(done["row_marked"]?.boolValue, true)
        XCTAssertEqual(try g.issuedTag(uid)?["state"]?.stringValue, "failed")
        XCTAssertEqual(g.stop(), 0)
    }

    /// A re-issue of a tag that opens now (`--reissue UID`, the row active)
    /// must be answered by that tag's key 0: a factory chip claiming the UID —
    /// someone who copied it, hoping to be the one re-issued — gets nothing
    /// (`foreign_content`, no ChangeKey), and the row keeps its issue. Only
    /// after a reset (row `failed`) does a factory tag take a re-issue.
    func testAReissueOfAnActiveTagNeedsItsKey0() throws {
        let uid = "04AD0424C10E05"
        let (sim, g) = try doorWith424(uid, action: 0, label: "alice")
        let before = try XCTUnwrap(try g.issuedTag(uid))
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        let failed = try armAndPresent(
            g, sim, arm: ["provision", "--action", "0", "--label", "alice", "--reissue", uid],
            chip: "insert ntag424 \(uid)")
        XCTAssertEqual(failed["reason"]?.stringValue, "foreign_content", "\(failed)")
        XCTAssertEqual(try changeKeys(sim), 0, "the factory chip received key material")
        XCTAssertEqual(fields(try g.issuedTag(uid)), fields(before))
        XCTAssertEqual(g.stop(), 0)
    }

    // MARK: L-1 — a sticker never replaces a 424's row

    /// Armed provisioning and a blank NTAG213 under a registered 424's UID:
    /// refused (`already_registered`), nothing written to the sticker, the
    /// 424 row unchanged. On 0cee1d2 the sticker was written and its row
    /// replaced the 424's.
    func testABlankStickerUnderA424sUIDDoesNotReplaceItsRow() throws {
        let uid = "04AD0424C10E03"
        let (sim, g) = try doorWith424(uid, action: 1, label: "admin")
        let before = try XCTUnwrap(try g.issuedTag(uid))
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        let failed = try armAndPresent(
            g, sim, arm: ["provision", "--action", "0", "--label", "sticker"], chip: "insert \(uid) ntag213")
        XCTAssertEqual(failed["reason"]?.stringValue, "already_registered", "\(failed)")
        XCTAssertEqual(fields(try g.issuedTag(uid)), fields(before))
        let dump = try sim.control("dump")
        XCTAssertTrue(dump.hasPrefix("ok "), dump)
        XCTAssertFalse(dump.lowercased().contains(Data("smp://".utf8).map { String(format: "%02x", $0) }.joined()))
        XCTAssertEqual(g.stop(), 0)
    }

    // MARK: Reissue names its tag

    /// `provision --reissue UID`: a tag with another UID presented while armed
    /// is refused and the job stays armed (`not_reissue_tag`); the named tag,
    /// which proves its current key 0, then gets a new issue (a new key
    /// version) and still opens. The old keys — a copy of the tag as it was
    /// before — no longer open.
    func testAReissueRekeysOnlyTheNamedTagAndRetiresItsOldKeys() throws {
        let uid = "04AD0424C10E04"
        let (sim, g) = try doorWith424(uid, action: 0, label: "alice")
        let first = try XCTUnwrap(try g.issuedTag(uid)?["key_version"]?.intValue)
        XCTAssertTrue(try sim.control("stash").hasPrefix("ok"), "a copy of the tag with its first keys")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        // Armed for `uid`: another factory 424 is refused, nothing sent, still armed.
        var seen = try g.eventCount()
        try g.ctlJSON(["provision", "--action", "1", "--label", "alice-2", "--reissue", uid])
        try g.waitForEvent("provisioning_armed", after: seen)
        XCTAssertTrue(try sim.control("insert ntag424 04AD0424C10EFF").hasPrefix("ok"))
        let refused = try g.waitForEvent("provisioning_refused", after: seen, timeout: 10)
        XCTAssertEqual(refused["reason"]?.stringValue, "not_reissue_tag", "\(refused)")
        XCTAssertEqual(try changeKeys(sim), 0)
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        // The named tag: re-keyed, its row replaced (action 1, a new key version).
        E2ETiming.outlastQuietWindow()
        XCTAssertTrue(try sim.control("unstash").hasPrefix("ok"))
        try g.waitForEvent("provisioning_written", after: seen, timeout: 20)
        let row = try XCTUnwrap(try g.issuedTag(uid))
        XCTAssertEqual(row["action"]?.intValue, 1)
        XCTAssertEqual(row["state"]?.stringValue, "active")
        XCTAssertNotEqual(row["key_version"]?.intValue, first, "a reissue gives a new key version")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        E2ETiming.outlastQuietWindow()
        seen = try g.eventCount()
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        XCTAssertEqual(try decision(g, after: seen)["kind"]?.stringValue, "access_granted")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))

        // The copy with the first keys (the stash still holds it): denied.
        E2ETiming.outlastQuietWindow()
        seen = try g.eventCount()
        XCTAssertTrue(try sim.control("unstash").hasPrefix("ok"))
        let copy = try decision(g, after: seen)
        XCTAssertEqual(copy["kind"]?.stringValue, "access_denied", "\(copy)")
        XCTAssertEqual(copy["reason"]?.stringValue, "auth_failed", "\(copy)")
        XCTAssertEqual(g.stop(), 0)
    }
}
