import DoorCore
import Foundation
@testable import GatewayStore
import XCTest

/// Who is in (issue 36, migration v17-passage): a store written before it (the GRDB fixture, v3)
/// gains the table, keeps every row, and the passages survive a reopen (a restart).
final class PassageStoreTests: XCTestCase {
    var dir: String!
    let alice = TagUID(hex: "04A1B2C3D4E5F6")!
    let stranger = TagUID(hex: "0A0B0C0D")!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "passage-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: UpgradeTests.fixture, toPath: dir + "/" + GatewayStore.fileName)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func testAnOlderStoreGainsPassagesThatSurviveAReopen() throws {
        do {
            let store = try GatewayStore(stateDirectory: dir)
            XCTAssertTrue(try store.appliedMigrations().contains("v17-passage"))
            XCTAssertNil(try store.presence(alice))
            XCTAssertEqual(try store.occupants(), [])
            try store.recordPassage(alice, Presence(inside: true, since: 1_800_000_000, reader: "street"))
            try store.recordPassage(stranger, Presence(inside: true, since: 1_800_000_100, reader: "street"))
            XCTAssertEqual(try store.issuedTags().count, 3, "the registry's rows kept")
        }
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try store.presence(alice), Presence(inside: true, since: 1_800_000_000, reader: "street"))
        XCTAssertEqual(
            try store.occupants(),
            [
                .init(uid: alice, label: "Alice", since: 1_800_000_000, reader: "street"),
                .init(uid: stranger, label: "", since: 1_800_000_100, reader: "street"),
            ], "oldest first, the registry's label, none for a credential without a row")
        // Out at the exit: no longer listed, the passage kept (out, since when, where).
        try store.recordPassage(alice, Presence(inside: false, since: 1_800_000_200, reader: "yard"))
        XCTAssertEqual(try store.presence(alice), Presence(inside: false, since: 1_800_000_200, reader: "yard"))
        XCTAssertEqual(try store.occupants().map(\.uid), [stranger])
        // The operator's reset.
        XCTAssertTrue(try store.resetPassage(stranger))
        XCTAssertFalse(try store.resetPassage(stranger), "nothing left to reset")
        XCTAssertEqual(try store.occupants(), [])
        try store.recordPassage(stranger, Presence(inside: true, since: 1_800_000_300, reader: "street"))
        XCTAssertEqual(try store.resetAllPassages(), 2)
        XCTAssertNil(try store.presence(alice))
    }
}
