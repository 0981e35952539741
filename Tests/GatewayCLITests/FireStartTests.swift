import DoorCore
import GatewayStore
import Logging
import TestSupport
import XCTest

@testable import GatewayDaemon

/// docs/policy.md "Fire alarm": a starting door takes the store's fire alarm
/// (FireLatch.swift); a store that cannot say whether one holds starts a door
/// that can hear one released, waiting for `gatewayctl fire reset` (the fail-
/// safe side: a fire may be on), and says why for the audit row. Before,
/// nothing was read: a restart during the site's alarm started locked.
final class FireStartTests: TemporaryDirectoryTestCase {
    func testTheStoresAlarmIsRestoredAndAnUnreadableOneStartsReleased() throws {
        let dir = try temporaryDirectory("\(Self.self)").path
        let store = try GatewayStore(stateDirectory: dir)
        let log = Logger(label: "fire-start")
        let maglock = DoorSettings(outputs: [OutputDefinition(name: "maglock", lockedLevel: .energised)])
        func restored(canAlarm: Bool = true) -> (DoorSettings, String?) {
            var door = maglock
            let why = DoorRuntime.restoreFire(&door, store: store, canAlarm: canAlarm, log: log)
            return (door, why)
        }
        var (door, why) = restored()
        XCTAssertNil(why)
        XCTAssertEqual(door.initialFire, .normal)

        try store.saveFireLatch(FireLatch(state: .alarm, site: true))
        (door, why) = restored()
        XCTAssertNil(why)
        XCTAssertEqual(door.initialFire, .alarm)
        XCTAssertEqual(door.initialFireSources, ["site"], "the site's clear is still needed")
        var h = MachineHarness(settings: door)
        let start = h.start()
        XCTAssertEqual(start.first, .fireHold(true))
        XCTAssertFalse(start.contains(.drive(output: "maglock", .locked)), "\(start)")
        XCTAssertEqual(h.outputs["maglock"], .unlocked)

        try store.pool.write { try $0.execute(sql: "DROP TABLE site_state") }
        (door, why) = restored()
        XCTAssertEqual(door.initialFire, .cleared, "released, a reset relocks")
        XCTAssertEqual(door.initialFireSources, [])
        let reason = try XCTUnwrap(why, "audited")
        XCTAssertTrue(reason.contains("unreadable") && reason.contains("fire reset"), reason)
        XCTAssertEqual(DoorMachine(settings: door).fireLatch, .unknown)

        (door, why) = restored(canAlarm: false)
        XCTAssertEqual(door.initialFire, .normal, "a door without [fire_alarm] or the fleet hears no alarm")
        XCTAssertNil(why)
    }
}
