import DoorCore
import Foundation
import NFCReader
import TestSupport
import XCTest

@testable import GatewayStore

/// docs/security.md "NTAG 424 DNA at the door" and "NTAG 424 provisioning at
/// the door": the attacks the review found untested, each performed against
/// the real gatewayd (the static binary under make test) with real libnfc to
/// pn532-sim on a pty and its SQLite store on disk.
///
/// - a SUN counter that cannot be written: the strike stays locked;
/// - a 424 that acknowledges ChangeKey but keeps its keys, or whose
///   GetCardUID names another UID (pn532-sim's `ntag424-fault`): no row, no grant;
/// - a revoked UID presented for provisioning: refused, nothing written to the tag.
final class NTAG424AttackTests: XCTestCase {
    /// How often gatewayd drove the simulated strike unlocked, from its log.
    func unlocks(_ g: GatewayUnderTest) -> Int {
        g.log.components(separatedBy: "sim output strike → unlocked").count - 1
    }

    /// Arms provisioning and brings the tag that left the field back into it.
    func armAndReinsert(_ g: GatewayUnderTest, _ sim: PN532SimProcess, label: String) throws -> Int {
        let seen = try g.eventCount()
        try g.ctlJSON(["provision", "--action", "0", "--label", label])
        try g.waitForEvent("provisioning_armed", after: seen)
        E2ETiming.outlastQuietWindow()  // the same tag, back after the door's quiet time
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        return seen
    }

    /// The tag (already out of the field) tapped once more after the quiet
    /// window, unarmed: the audit row of the door's decision.
    func tapAgain(_ g: GatewayUnderTest, _ sim: PN532SimProcess) throws -> JSONValue {
        E2ETiming.outlastQuietWindow()
        let seen = try g.eventCount()
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        var row: JSONValue?
        try waitUntil {
            let rows = (try g.ctlJSON(["log", "--limit", "500"]).arrayValue ?? []).dropFirst(seen)
            row = rows.first { ["access_granted", "access_denied"].contains($0["kind"]?.stringValue ?? "") }
            return row != nil
        }
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        return try XCTUnwrap(row)
    }

    // MARK: The SUN counter is on disk before the relay moves

    /// docs/security.md "NTAG 424 DNA at the door" ("That counter is stored
    /// on disk before the relay moves"), docs/ntag424.md `registry_unavailable`:
    /// another process holds SQLite's write lock on the door's database (as a
    /// stuck backup or a full disk would stop the write), and a provisioned
    /// 424 with a fresh SUN is tapped. Its counter cannot be stored, so the
    /// tap is denied `registry_unavailable` and the strike never moves. Once
    /// the lock is gone, the same tag opens again.
    func testATapWhoseSUNCounterCannotBeStoredLeavesTheStrikeLocked() throws {
        let g = try GatewayUnderTest()
        try g.start()
        let uid = "04C0FFEE424001"
        try g.provisionTag(uid, tag: "--ntag424", arm: ["provision", "--action", "0", "--label", "counter"])
        _ = try g.ctl(["sim", "remove"])
        // Granted once: the tag, its keys and its SUN are the door's.
        E2ETiming.outlastQuietWindow()
        var seen = try g.eventCount()
        try g.ctlJSON(["sim", "reinsert"])
        XCTAssertEqual(try g.waitForEvent("access_granted", after: seen)["reason"]?.stringValue, "ntag424")
        _ = try g.ctl(["sim", "remove"])
        try waitUntil { try g.status()["outputs"]?["strike"]?.stringValue == "locked" }
        // Every write of that tap (its audit row) is committed before the lock is taken.
        try waitUntil { try g.status()["store"]?["unsaved_events"]?.intValue == 0 }

        let db = try SQLiteConnection(path: g.dir.path + "/state/gateway.db", readOnly: false)
        try db.execute(sql: "BEGIN IMMEDIATE")  // the write lock: every other writer is SQLITE_BUSY
        var locked = true
        defer { if locked { try? db.execute(sql: "ROLLBACK") } }
        let unlocked = unlocks(g)
        E2ETiming.outlastQuietWindow()
        try g.ctlJSON(["sim", "reinsert"])
        // The audit row cannot be written either: the decision shows in status (and in the log) first.
        try waitUntil(timeout: 30) {
            try g.status()["last_tag"]?["verdict"]?.stringValue?.hasPrefix("denied") == true
        }
        XCTAssertEqual(try g.status()["last_tag"]?["verdict"]?.stringValue, "denied (registry_unavailable)")
        XCTAssertEqual(try g.status()["outputs"]?["strike"]?.stringValue, "locked")
        XCTAssertEqual(unlocks(g), unlocked, "the strike moved for a tap whose counter is not on disk")
        _ = try g.ctl(["sim", "remove"])

        try db.execute(sql: "ROLLBACK")
        locked = false
        // The denial is audited once the store takes writes again.
        try g.waitForEvent("access_denied", reason: "registry_unavailable", after: seen, timeout: 30)
        XCTAssertFalse(
            try g.auditKinds().dropFirst(seen + 1).contains("access_granted"),
            "nothing opened while the store was locked")
        // The tag itself was never at fault: the next tap opens.
        E2ETiming.outlastQuietWindow()
        let after = try g.eventCount()
        try g.ctlJSON(["sim", "reinsert"])
        XCTAssertEqual(try g.waitForEvent("access_granted", after: after)["uid"]?.stringValue, uid)
        XCTAssertEqual(unlocks(g), unlocked + 1)
        XCTAssertEqual(g.stop(), 0)
    }

    // MARK: Provisioning verifies the tag before any row

    /// docs/security.md "A 424 cannot get a registry row without proving the
    /// door's keys": pn532-sim's `ntag424-fault` makes the emulated 424 lie.
    /// First it acknowledges every ChangeKey (a MAC'd answer, the bare 9100
    /// for key 0) but keeps its factory keys; then it takes the keys but its
    /// GetCardUID names another UID. Each time: `provisioning_failed`, no row,
    /// and the next tap is denied. The same tag, honest again, is provisioned
    /// and opens (the test's control: the door would have taken it).
    func testA424ThatDoesNotVerifyAfterProvisioningGetsNoRowAndOpensNothing() throws {
        let sim = try PN532SimProcess()
        let uid = "04FA1E5424C0DE"
        XCTAssertTrue(try sim.control("insert ntag424 \(uid)").hasPrefix("ok"))
        XCTAssertTrue(try sim.control("ntag424-fault keeps-keys").hasPrefix("ok"))
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        let g = try GatewayUnderTest.onSim(sim)
        try g.start()

        // Acknowledges ChangeKey, keeps its keys.
        var seen = try armAndReinsert(g, sim, label: "keeps-keys")
        var failed = try g.waitForEvent("provisioning_failed", after: seen, timeout: 20)
        XCTAssertEqual(failed["uid"]?.stringValue, uid)
        XCTAssertEqual(failed["reason"]?.stringValue, "not_verified", "\(failed)")
        XCTAssertNil(try g.issuedTag(uid), "no row for a tag that kept its factory keys")
        XCTAssertTrue(g.log.contains("the provisioned tag's SUN read does not verify"), "\(g.log.suffix(2000))")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        var tap = try tapAgain(g, sim)
        XCTAssertEqual(tap["kind"]?.stringValue, "access_denied", "\(tap)")
        XCTAssertEqual(tap["reason"]?.stringValue, "unknown_tag", "\(tap)")

        // Takes the keys, but GetCardUID names another UID.
        XCTAssertTrue(try sim.control("ntag424-fault card-uid 04BAD0000BAD00").hasPrefix("ok"))
        seen = try armAndReinsert(g, sim, label: "card-uid")
        failed = try g.waitForEvent("provisioning_failed", after: seen, timeout: 20)
        XCTAssertEqual(failed["uid"]?.stringValue, uid)
        XCTAssertEqual(failed["reason"]?.stringValue, "not_verified", "\(failed)")
        XCTAssertNil(try g.issuedTag(uid), "no row for a tag whose GetCardUID names another UID")
        XCTAssertTrue(g.log.contains("does not authenticate with its new key 0"), "\(g.log.suffix(2000))")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        tap = try tapAgain(g, sim)
        XCTAssertEqual(tap["kind"]?.stringValue, "access_denied", "\(tap)")
        XCTAssertFalse(try g.auditKinds().contains("access_granted"))

        // Honest again: the door finishes it, and then it opens.
        XCTAssertTrue(try sim.control("ntag424-fault off").hasPrefix("ok"))
        seen = try armAndReinsert(g, sim, label: "honest")
        try g.waitForEvent("provisioning_written", after: seen, timeout: 20)
        XCTAssertEqual(try g.issuedTag(uid)?["state"]?.stringValue, "active")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        tap = try tapAgain(g, sim)
        XCTAssertEqual(tap["kind"]?.stringValue, "access_granted", "\(tap)")
        XCTAssertEqual(g.stop(), 0)
    }

    // MARK: A revoked UID is refused before anything is written

    /// docs/security.md "A revoked 424 cannot be provisioned again",
    /// docs/ntag424.md "Setting one up" (reason `revoked`: refused before
    /// anything is written to the tag): the UID is revoked, provisioning armed, and a factory 424
    /// with that UID presented. `provisioning_failed`, no row, no grant, and
    /// (the door stopped, the test's own reader on the emulator) the tag still
    /// answers to the factory key 0 with an empty NDEF file: nothing was written.
    func testARevokedUIDIsRefusedAtProvisioningAndTheTagKeepsItsFactoryKeys() throws {
        let sim = try PN532SimProcess()
        let uid = TagUID(hex: "04DEAD0424BEEF")!
        XCTAssertTrue(try sim.control("insert ntag424 \(uid.hex)").hasPrefix("ok"))
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        let g = try GatewayUnderTest.onSim(sim)
        try g.start()
        try g.ctlJSON(["tags", "revoke", uid.hex])

        let seen = try armAndReinsert(g, sim, label: "revoked")
        let failed = try g.waitForEvent("provisioning_failed", after: seen, timeout: 20)
        XCTAssertEqual(failed["uid"]?.stringValue, uid.hex)
        XCTAssertEqual(failed["reason"]?.stringValue, "revoked", "\(failed)")
        XCTAssertTrue(g.log.contains("revoked"), "\(g.log.suffix(2000))")
        XCTAssertNil(try g.issuedTag(uid.hex), "no row for a revoked UID")
        XCTAssertTrue(try sim.control("remove").hasPrefix("ok"))
        let tap = try tapAgain(g, sim)
        XCTAssertEqual(tap["kind"]?.stringValue, "access_denied", "\(tap)")
        XCTAssertEqual(tap["reason"]?.stringValue, "revoked", "\(tap)")
        XCTAssertEqual(g.stop(), 0)

        // Factory keys and an empty NDEF file: the door wrote nothing to the tag.
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        defer { reader.close() }
        let factory = try XCTUnwrap(try reader.tapNTAG424(key: { _ in [UInt8](repeating: 0, count: 16) }))
        XCTAssertEqual(factory.proof, .authenticated(cardUID: uid.bytes), "key 0 is still the factory key")
        XCTAssertNil(try? factory.message?.firstURI(), "no SUN template was written")
    }
}
