import DoorCore
import Foundation
import GatewayStore
@testable import NFCReader
import TestSupport
import XCTest

/// The SUN-only tier (`"ntag424-sun"`, docs/ntag424.md "The SUN-only tier",
/// docs/security.md "The NTAG 424 SUN-only tier"), end to end on the real
/// gatewayd and libnfc against a pn532-sim this test runs: the tier opens a
/// genuine 424 without the EV2 round trip, and the pre-play it is weak to is
/// performed — a SUN URL skimmed from the tag while the door did not see it,
/// presented by an emulated 424 that fakes the tag's UID, opens an action
/// listing `"ntag424-sun"` exactly once and never one listing only
/// `"ntag424"`; presented again it is `counter_replay`.
///
/// The door's reader shares the emulator, so every read that the door must
/// not see (the skims, writing the attacker's emulated 424) is made with the
/// door stopped; the tags' state lives in pn532-sim across the restarts.
final class NTAG424SUNTierTests: XCTestCase {
    static let siteKey: [UInt8] = (0..<16).map { UInt8(0x30 + $0) }
    /// Provisioned for action 1 ("gate"), which lists only "ntag424-sun".
    let tagA = TagUID(hex: "04C767F2066180")!
    /// Provisioned for action 0 ("front"), which lists "ntag424" (the default).
    let tagB = TagUID(hex: "04DE5F1EACC040")!
    let copyNTAG = TagUID(hex: "04998877665544")!

    /// The attacker's emulated 424: a tag that activates as an NTAG 424 DNA
    /// under `uid` (as emulators that set a 7-byte UID do) and answers its
    /// NDEF read with `url` — a static copy, without the tag's keys.
    func insertEmulated424(_ rig: NTAG424SimDoor, uid: TagUID, url: String) throws {
        XCTAssertTrue(try rig.sim.control("insert ntag424 \(uid.hex)").hasPrefix("ok"))
        let message = try NDEFMessage(records: [.uri(url)]).encoded()
        let file = [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
        try rig.withReader { reader in
            _ = try XCTUnwrap(try reader.activateNTAG424())
            XCTAssertEqual(try reader.apdu([0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x04]).sw, 0x9000)
            XCTAssertEqual(try reader.apdu([0x00, 0xD6, 0x00, 0x00, UInt8(file.count)] + file).sw, 0x9000)
        }
        XCTAssertEqual(try rig.skim(), url, "the emulated 424 answers the skimmed URL")
        _ = try rig.sim.control("remove")
    }

    func testThePreplayOfASkimmedSUNOpensTheSUNOnlyTierOnceAndNeverAnActionThatNeedsEV2() throws {
        let rig = try NTAG424SimDoor(
            deviceID: "e2e-424-sun", siteKey: Self.siteKey, secondAction: "gate", secondCredentials: #"["ntag424-sun"]"#
        )
        let (sim, door) = (rig.sim, rig.door)

        // `config check` says the tier is weaker, naming the action and pre-play.
        let check = try door.ctl(["config", "check", door.configFile.path])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertTrue(check.stderr.contains("warning: actions[1] (gate) lists \"ntag424-sun\""), check.stderr)
        XCTAssertTrue(check.stderr.contains("(pre-play)"), check.stderr)
        XCTAssertFalse(check.stderr.contains("actions[0]"), "front lists the default: \(check.stderr)")

        var skimmedB = ""
        // The door's store: the site key, A for the gate and B for the front
        // door, each provisioned with the door's keys (as a provisioning door does).
        do {
            let store = try rig.store()
            for (uid, action) in [(tagB, 0), (tagA, 1)] {
                XCTAssertEqual(try rig.insertAndProvision(uid), 1)
                try rig.register(store, uid, action: action, label: "\(uid.hex)")
                // B is skimmed once (counter 2), then leaves the field for good
                // (the emulator keeps one departed tag: A's).
                if uid == tagB { skimmedB = try rig.skim() }
            }
        }
        _ = try sim.control("remove")

        // 1. The tier's own use: A's owner taps the gate. The door reads the
        //    NDEF and skips EV2 (the gate lists only "ntag424-sun"): granted,
        //    audited valid_sun_only — "ntag424" would mean the tag proved its key.
        defer { rig.door.stop() }  // the rig (and its emulator) lives until the door stops
        try door.start()
        var seen = try rig.present()
        try rig.expectGrant(after: seen, reason: "valid_sun_only", uid: tagA, action: 1)
        try rig.leave()
        XCTAssertEqual(door.stop(), 0)

        // 2. Someone reads A once with a phone while the door does not see it
        //    (counter 3), and puts the URL on an emulated 424 that fakes A's UID.
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        let skimmedA = try rig.skim()
        XCTAssertTrue(skimmedA.hasPrefix(NTAG424SimDoor.base + "?e="), skimmedA)
        try insertEmulated424(rig, uid: tagA, url: skimmedA)

        // 3. Pre-play: before A's owner taps again, the copy opens the gate — once.
        try door.start()
        seen = try rig.present()
        try rig.expectGrant(after: seen, reason: "valid_sun_only", uid: tagA, action: 1)
        try rig.leave()
        //    The same URL again: replayed.
        seen = try rig.present()
        try door.waitForEvent("access_denied", reason: "counter_replay", after: seen)
        try rig.leave()
        //    On an NTAG215, even one that fakes A's UID: a copy, on every tier.
        for uid in [copyNTAG, tagA] { try rig.tapCopy(skimmedA, uid: uid) }
        XCTAssertEqual(door.stop(), 0)

        // 4. B's skimmed URL (counter 2, never seen by the door) on an emulated
        //    424 under B's UID: the front door lists only "ntag424", so without
        //    the chip's proof it does not open.
        try insertEmulated424(rig, uid: tagB, url: skimmedB)
        try door.start()
        seen = try rig.present()
        try door.waitForEvent("access_denied", reason: "auth_failed", after: seen)
        try rig.leave()

        let granted = try door.auditKinds().filter { $0 == "access_granted" }
        XCTAssertEqual(granted.count, 2, "the owner's tap and the one pre-play, nothing else opened")
        XCTAssertEqual(try door.status()["outputs"]?["strike"]?.stringValue, "locked")
    }

    /// docs/security.md "NTAG 424 — review round two", M-2, said plainly: the
    /// SUN-only tier's counters are per door. One skimmed URL, on an emulated
    /// 424 under the tag's UID, opens the gate once at door A and is then
    /// `counter_replay` there — and opens once more at door B, which holds the
    /// same row and site key but has not seen that counter; then it is
    /// `counter_replay` at B too. (Were counters shared by the fleet, B would
    /// refuse it, and this test would say the docs are wrong.)
    func testTheSUNOnlyTiersCountersArePerDoor() throws {
        let rig = try NTAG424SimDoor(
            deviceID: "e2e-424-sun-a", siteKey: Self.siteKey, secondAction: "gate",
            secondCredentials: #"["ntag424-sun"]"#)
        let (sim, doorA) = (rig.sim, rig.door)
        let doorB = try GatewayUnderTest.onSim(
            sim, deviceID: "e2e-424-sun-b",
            actions: NTAG424SimDoor.actions(second: "gate", credentials: #"["ntag424-sun"]"#))
        defer {
            doorA.stop()
            doorB.stop()
        }
        do {
            let storeA = try rig.store()
            XCTAssertEqual(try rig.insertAndProvision(tagA), 1)
            try rig.register(storeA, tagA, action: 1, label: "gate")
            let storeB = try GatewayStore(stateDirectory: doorB.dir.path + "/state")
            try storeB.setNTAG424SiteKey(Self.siteKey, origin: .fleet, now: 1)
            try storeB.syncActions([
                ActionDefinition(index: 0, name: "front", steps: []),
                ActionDefinition(index: 1, name: "gate", steps: []),
            ])
            try rig.register(storeB, tagA, action: 1, label: "gate")
        }
        let skimmed = try rig.skim()
        _ = try sim.control("remove")
        try insertEmulated424(rig, uid: tagA, url: skimmed)

        for door in [doorA, doorB] {
            try door.start()
            func present() throws -> Int {
                let seen = try door.eventCount()
                XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
                return seen
            }
            var seen = try present()
            let granted = try door.waitForEvent("access_granted", after: seen)
            XCTAssertEqual(granted["reason"]?.stringValue, "valid_sun_only", "\(granted)")
            try rig.leave()
            seen = try present()
            try door.waitForEvent("access_denied", reason: "counter_replay", after: seen)
            try rig.leave()
            XCTAssertEqual(door.stop(), 0)
        }
    }
}
