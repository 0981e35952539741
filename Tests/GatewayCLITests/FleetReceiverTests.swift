import DoorCore
import Foundation
import GatewayConfig
import GatewayStore
import Logging
import XCTest

@testable import GatewayCLI

/// The version a push signs: past every version applied or seen, and a
/// clear refusal (not a trap) when the site's documents reached Int64.max.
final class FleetReceiverTests: XCTestCase {
    var dir: String!
    let seed = [UInt8](repeating: 9, count: 32)

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-receiver-\(UUID())").path
    }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func receiver(_ store: GatewayStore) throws -> FleetReceiver {
        let settings = GatewayConfiguration.Fleet(
            enabled: true, siteID: "acme-hq", sitePublicKey: try Crypto.Ed25519.publicKey(seed: seed), subscribe: nil)
        return FleetReceiver(
            settings: settings, publishTopic: "doors/front/fleet/acme-hq", subscription: "doors/+/fleet/acme-hq",
            store: store, actions: [0], log: Logger(label: "test"))
    }

    func apply(_ version: Int64, to store: GatewayStore) throws {
        let doc = FleetDocument(
            site: "acme-hq", version: version, origin: "front/root", issued: 100, revokedUIDs: [],
            revokedSignatures: [], tags: [])
        let verdict = FleetRules.judge(
            try doc.signed(seed: seed), sitePublicKey: try Crypto.Ed25519.publicKey(seed: seed), siteID: "acme-hq",
            applied: nil)
        guard case .apply(let accepted) = verdict else { return XCTFail("not accepted: \(verdict)") }
        try store.applyFleet(accepted, actions: [0], now: 200)
    }

    func testTheNextVersionFollowsTheAppliedOne() throws {
        let store = try GatewayStore(stateDirectory: dir)
        XCTAssertEqual(try receiver(store).nextVersion(), 1, "a door that applied nothing starts at 1")
        try apply(41, to: store)
        XCTAssertEqual(try receiver(store).nextVersion(), 42)
    }

    func testAVersionAtItsMaximumIsRefusedNotATrap() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try apply(.max, to: store)
        XCTAssertThrowsError(try receiver(store).nextVersion()) { error in
            XCTAssertTrue("\(error)".contains("at its maximum"), "\(error)")
        }
    }
}
