import DoorCore
import GatewayStore
import Logging
import TestSupport
import XCTest

@testable import GatewayDaemon

/// docs/policy.md "Lockdown": a starting door takes the store's lockdown; a
/// store that cannot say whether one holds starts the door locked down
/// (review finding: it started unlocked, so a broken table lifted a site's
/// lockdown at the next restart).
final class LockdownStartTests: TemporaryDirectoryTestCase {
    func testAnUnreadableLockdownStartsTheDoorLockedDown() throws {
        let dir = try temporaryDirectory("\(Self.self)").path
        let store = try GatewayStore(stateDirectory: dir)
        let log = Logger(label: "lockdown-start")
        XCTAssertNil(DoorRuntime.withPersistedLockdown(DoorSettings(), store: store, log: log).initialLockdown)

        try store.pool.write { try $0.execute(sql: "DROP TABLE site_state") }
        let held = try XCTUnwrap(
            DoorRuntime.withPersistedLockdown(DoorSettings(), store: store, log: log).initialLockdown)
        XCTAssertEqual(held.source, "store")
        XCTAssertEqual(
            DoorMachine(
                settings: {
                    var s = DoorSettings(); s.initialLockdown = held; return s
                }()
            ).mode,
            .lockdown)
    }
}
