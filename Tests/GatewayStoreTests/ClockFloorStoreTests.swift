import DoorCore
import Foundation
import GatewayStore
import XCTest

final class ClockFloorStoreTests: XCTestCase {
    var dir: String!
    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("floor-\(UUID().uuidString)").path
    }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func testTheFloorOnlyRisesAndSurvivesAReopen() throws {
        do {
            let store = try GatewayStore(stateDirectory: dir)
            XCTAssertNil(try store.clockFloor(), "a new door has seen no synchronised time")
            try store.raiseClockFloor(to: 1_800_000_000)
            try store.raiseClockFloor(to: 1_700_000_000)
            XCTAssertEqual(try store.clockFloor(), 1_800_000_000, "a clock set back does not lower it")
            try store.raiseClockFloor(to: 1_800_000_600)
        }
        XCTAssertEqual(try GatewayStore(stateDirectory: dir).clockFloor(), 1_800_000_600)
    }

    /// The reset lowers the floor (what `raiseClockFloor` never does) and
    /// links its audit row onto the chain, both kept across a reopen.
    func testAResetLowersTheFloorAndIsAudited() throws {
        do {
            let store = try GatewayStore(stateDirectory: dir)
            try store.appendAudit(time: 1_700_000_000, kind: "started")
            try store.raiseClockFloor(to: 2_000_000_000)
            try store.resetClockFloor(
                from: 2_000_000_000, to: 1_700_000_100, source: "control:uid=0", now: 1_700_000_100)
        }
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try store.clockFloor(), 1_700_000_100)
        let row = try XCTUnwrap(try store.auditTail(1).first)
        XCTAssertEqual(row.kind, "clock_floor_reset")
        XCTAssertEqual(row.source, "control:uid=0")
        XCTAssertEqual(row.detail, "from 2033-05-18T03:33:20Z to 2023-11-14T22:15:00Z")
        XCTAssertEqual(try store.verifyAudit(), .intact(rows: 2, from: 1))
        // Raising works as before after a reset.
        try store.raiseClockFloor(to: 1_700_000_700)
        XCTAssertEqual(try store.clockFloor(), 1_700_000_700)
    }
}
