import DoorCore
import Foundation
import XCTest

@testable import GatewayStore

/// The fire alarm a restart keeps (issue 36's follow-up, migration
/// v18-site-fire, FireLatch.swift): a store written before it (the GRDB
/// fixture, v3) gains the columns with no alarm; what is saved survives a
/// reopen (a restart), beside the lockdown, which neither write disturbs.
final class SiteFireStoreTests: XCTestCase {
    var dir: String!

    override func setUpWithError() throws {
        dir = NSTemporaryDirectory() + "site-fire-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: UpgradeTests.fixture, toPath: dir + "/" + GatewayStore.fileName)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    func testTheSitesAlarmSurvivesAReopenBesideTheLockdown() throws {
        let lockdown = Lockdown(by: "alice", source: "site", since: 1_800_000_000)
        do {
            let store = try GatewayStore(stateDirectory: dir)
            XCTAssertEqual(try store.appliedMigrations().last, "v18-site-fire")
            XCTAssertEqual(try store.fireLatch(), .normal, "an older store holds no alarm")
            try store.saveLockdown(lockdown)
            try store.saveFireLatch(FireLatch(state: .alarm, site: true))
        }
        do {
            let store = try GatewayStore(stateDirectory: dir)
            XCTAssertEqual(try store.fireLatch(), FireLatch(state: .alarm, site: true))
            XCTAssertEqual(try store.lockdown(), lockdown, "the fire's write keeps the lockdown")
            try store.saveLockdown(nil)
            XCTAssertEqual(try store.fireLatch(), FireLatch(state: .alarm, site: true), "and the other way round")
            try store.saveFireLatch(FireLatch(state: .cleared))
        }
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try store.fireLatch(), FireLatch(state: .cleared))
        try store.saveFireLatch(.normal)
        XCTAssertEqual(try store.fireLatch(), .normal)
        XCTAssertNil(try store.pool.read { try $0.scalar(String.self, sql: "SELECT fire_state FROM site_state") })

        // Only the two states are stored; the column refuses anything else.
        XCTAssertThrowsError(
            try store.pool.write { try $0.execute(sql: "UPDATE site_state SET fire_state = 'normal'") })
        // A store without the table cannot say: an error, never "no alarm".
        try store.pool.write { try $0.execute(sql: "DROP TABLE site_state") }
        XCTAssertThrowsError(try store.fireLatch())
    }
}
