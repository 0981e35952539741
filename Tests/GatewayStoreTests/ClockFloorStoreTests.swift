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
}
