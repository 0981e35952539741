import DoorCore
import GatewayStore
import TestSupport
import XCTest

/// Door stores, each in a directory of its own, and the fleet documents
/// between them: made as `gatewayctl fleet push --secrets` makes them (the
/// store's own state, `FleetRules.snapshot`, secrets sealed to the site box)
/// and applied as gatewayd applies them (`applyFleet`, the opened secrets).
class FleetStoreTestCase: TemporaryDirectoryTestCase {
    /// The seed of the site key that signs the documents.
    var seed: [UInt8] { Array(repeating: UInt8(9), count: 32) }
    let site = "acme-hq"
    lazy var box: [UInt8] = try! Crypto.SiteBox.generatePrivateKey()

    /// A door's store, its actions the defaults.
    func door() throws -> GatewayStore {
        let store = try GatewayStore(stateDirectory: temporaryPath("fleet-door"))
        try store.syncActions(DoorSettings().actions)
        return store
    }

    /// What `fleet push --secrets` at `store` signs, as version `version`.
    func push(from store: GatewayStore, version: Int64) throws -> FleetRules.Accepted {
        let sealed = try store.fleetSecrets().seal(
            to: try Crypto.SiteBox.publicKey(privateKey: box), site: site, version: version)
        let doc = FleetRules.snapshot(
            try store.fleetLocal(), site: site, version: version, origin: "door/root", now: version,
            sealedSecrets: sealed)
        return try acceptedFleetDocument(doc, seed: seed)
    }

    /// gatewayd applying it (the box key opens its secrets).
    @discardableResult
    func apply(_ accepted: FleetRules.Accepted, at store: GatewayStore) throws -> FleetRules.Changes {
        try store.applyFleet(
            accepted, actions: [0, 1, 2, 3], secrets: try FleetSecrets.open(accepted.document, boxPrivateKey: box),
            now: accepted.document.version)
    }
}
