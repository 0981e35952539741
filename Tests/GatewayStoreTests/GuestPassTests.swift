import DoorCore
import Foundation
import GatewayStore
import TestSupport
import XCTest

/// Guest passes (docs/policy.md): the uses count down in the transaction
/// that grants, never below zero, and what is on disk stays taken.
final class GuestPassTests: TemporaryDirectoryTestCase {
    var dir: String!
    override func setUpWithError() throws { dir = temporaryPath("guest") }

    let uid = TagUID(hex: "04A1B2C3D4E5F6")!

    func testUsesCountDownToZeroAndStayTakenAcrossAReopen() throws {
        var store: GatewayStore? = try GatewayStore(stateDirectory: dir)
        try store!.createPendingTag(
            uid: uid, action: 0, secretID: nil, label: "guest",
            limits: TagLimits(validFrom: 50, validUntil: 500, uses: 2, schedule: "staff"), now: 100)
        XCTAssertNil(try store!.consumeUse(uid: uid, at: 101), "a pending tag has no use to take")
        try store!.activateTag(uid: uid)
        XCTAssertEqual(try store!.consumeUse(uid: uid, at: 102), 1)
        store = nil
        let reopened = try GatewayStore(stateDirectory: dir)
        let row = try XCTUnwrap(reopened.issuedTag(uid))
        XCTAssertEqual(row.usesLeft, 1, "the use taken is on disk")
        XCTAssertEqual(row.uses, 2)
        XCTAssertEqual(row.validFrom, 50)
        XCTAssertEqual(row.validUntil, 500)
        XCTAssertEqual(row.schedule, "staff")
        XCTAssertEqual(row.lastSeen, 102)
        XCTAssertEqual(try reopened.consumeUse(uid: uid, at: 103), 0)
        XCTAssertNil(try reopened.consumeUse(uid: uid, at: 104), "none left")
        XCTAssertEqual(try reopened.issuedTag(uid)?.usesLeft, 0, "never below zero")
    }

    func testAnUnlimitedTagHasNoUsesToTake() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.createPendingTag(uid: uid, action: 0, secretID: nil, label: "", now: 100)
        try store.activateTag(uid: uid)
        XCTAssertNil(try store.issuedTag(uid)?.usesLeft)
        XCTAssertNil(try store.consumeUse(uid: uid, at: 101))
    }

    /// Re-issuing a UID starts its pass again; a revoked pass takes no use.
    func testReissueResetsAndRevocationStops() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.createPendingTag(uid: uid, action: 0, secretID: nil, label: "", limits: TagLimits(uses: 1), now: 1)
        try store.activateTag(uid: uid)
        XCTAssertEqual(try store.consumeUse(uid: uid, at: 2), 0)
        try store.createPendingTag(uid: uid, action: 0, secretID: nil, label: "", limits: TagLimits(uses: 3), now: 3)
        try store.activateTag(uid: uid)
        XCTAssertEqual(try store.issuedTag(uid)?.usesLeft, 3)
        try store.revoke(uid: uid, now: 4)
        XCTAssertNil(try store.consumeUse(uid: uid, at: 5))
        XCTAssertEqual(try store.issuedTag(uid)?.usesLeft, 3)
    }
}
