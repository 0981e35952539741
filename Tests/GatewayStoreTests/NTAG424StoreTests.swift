import DoorCore
import Foundation
import GatewayStore
import TestSupport
import XCTest

/// NTAG 424 support in the store (`v11-ntag424`, docs/ntag424.md): the site
/// master key is drawn once and kept, SUN counters only go up and survive a
/// reopen, and each issued tag keeps its credential kind.
final class NTAG424StoreTests: TemporaryDirectoryTestCase {
    var dir: String!
    override func setUpWithError() throws { dir = temporaryPath("ntag424") }

    let uid = TagUID(hex: "04DE5F1EACC040")!

    func testTheSiteKeyIsGeneratedOnceAndKeptAcrossAReopen() throws {
        var store: GatewayStore? = try GatewayStore(stateDirectory: dir)
        XCTAssertNil(try store!.ntag424SiteKey())
        let first = try store!.ensureNTAG424SiteKey(now: 10)
        XCTAssertEqual(first.key.count, 16)
        XCTAssertEqual(first.origin, .generated)
        XCTAssertEqual(first.generation, 1)
        XCTAssertNotEqual(first.key, [UInt8](repeating: 0, count: 16))
        XCTAssertFalse(String(describing: first).contains(Hex.encode(first.key)), "the description hides the key")
        XCTAssertFalse(String(describing: first).uppercased().contains(Hex.encode(first.key, uppercase: true)))
        store = nil
        let reopened = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try reopened.ntag424SiteKey(), first)
        XCTAssertEqual(
            try reopened.ensureNTAG424SiteKey(now: 20) {
                XCTFail("regenerated")
                return []
            }, first)
    }

    func testASiteKeyFromTheFleetReplacesOneGenerationUpAndTheSameKeyChangesNothing() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let fleet = [UInt8](repeating: 0x5A, count: 16)
        XCTAssertThrowsError(try store.setNTAG424SiteKey([1, 2, 3], origin: .fleet, now: 1))
        XCTAssertThrowsError(try store.ensureNTAG424SiteKey(now: 1) { [1, 2, 3] })
        XCTAssertNil(try store.ntag424SiteKey(), "nothing stored from a bad key")
        _ = try store.ensureNTAG424SiteKey(now: 5)
        let set = try store.setNTAG424SiteKey(fleet, origin: .fleet, now: 6)
        XCTAssertEqual(set.generation, 2)
        XCTAssertEqual(set.origin, .fleet)
        XCTAssertEqual(try store.ntag424SiteKey(), set)
        let again = try store.setNTAG424SiteKey(fleet, origin: .imported, now: 7)
        XCTAssertEqual(again, set, "the key held is left as it is")
        XCTAssertEqual(try store.ensureNTAG424SiteKey(now: 8).key, fleet)
    }

    func testSUNCountersAreStrictlyIncreasingAndSurviveAReopen() throws {
        var store: GatewayStore? = try GatewayStore(stateDirectory: dir)
        XCTAssertNil(try store!.sunCounter(uid: uid))
        XCTAssertEqual(try store!.acceptSUNCounter(uid: uid, counter: 3, now: 1), .accepted(previous: nil))
        XCTAssertEqual(
            try store!.acceptSUNCounter(uid: uid, counter: 3, now: 2), .replayed(last: 3), "the same counter")
        XCTAssertEqual(try store!.acceptSUNCounter(uid: uid, counter: 2, now: 3), .replayed(last: 3), "an older one")
        XCTAssertEqual(try store!.acceptSUNCounter(uid: uid, counter: 4, now: 4), .accepted(previous: 3))
        let other = TagUID(hex: "04958CAA5C5E80")!
        XCTAssertEqual(try store!.acceptSUNCounter(uid: other, counter: 1, now: 5), .accepted(previous: nil), "per UID")
        store = nil
        let reopened = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try reopened.sunCounter(uid: uid), 4)
        XCTAssertEqual(try reopened.acceptSUNCounter(uid: uid, counter: 4, now: 6), .replayed(last: 4))
        XCTAssertEqual(try reopened.acceptSUNCounter(uid: uid, counter: 0xFF_FFFF, now: 7), .accepted(previous: 4))
        try reopened.forgetSUNCounter(uid: uid)
        XCTAssertNil(try reopened.sunCounter(uid: uid))
    }

    func testTheKindOfAnIssuedTagIsKeptAndAUIDFobEnrolsActive() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.syncActions([
            ActionDefinition(index: 0, name: "front", steps: []), ActionDefinition(index: 1, name: "shed", steps: []),
        ])
        try store.createPendingTag(
            uid: uid, action: 0, secretID: nil, label: "424", limits: TagLimits(), kind: .ntag424, now: 1)
        XCTAssertEqual(try store.tagKind(uid), .ntag424)
        XCTAssertEqual(try store.issuedTag(uid)?.kind, .ntag424)
        let old = TagUID(hex: "04112233445566")!
        try store.createPendingTag(uid: old, action: 0, secretID: nil, label: "", now: 1)
        XCTAssertNil(try store.tagKind(old), "a row without a kind")
        try store.setTagKind(uid: old, .stickerV2)
        XCTAssertEqual(try store.tagKind(old), .stickerV2)
        XCTAssertThrowsError(try store.setTagKind(uid: TagUID(hex: "01020304")!, .uid), "no such row")

        let fob = TagUID(hex: "A1B2C3D4")!
        try store.enrollUIDTag(uid: fob, action: 1, label: "shed fob", now: 9)
        let row = try XCTUnwrap(store.issuedTag(fob))
        XCTAssertEqual(row.kind, .uid)
        XCTAssertEqual(row.state, .active)
        XCTAssertEqual(row.action, 1)
        XCTAssertEqual(row.label, "shed fob")
        // Re-issuing the UID as a sticker drops the fob's kind.
        try store.createPendingTag(
            uid: fob, action: 0, secretID: nil, label: "", limits: TagLimits(), kind: .stickerV2, now: 10)
        XCTAssertEqual(try store.tagKind(fob), .stickerV2)
        try store.revoke(uid: fob, now: 11)
        XCTAssertThrowsError(try store.enrollUIDTag(uid: fob, action: 1, label: "", now: 12), "a revoked UID")
    }
}
