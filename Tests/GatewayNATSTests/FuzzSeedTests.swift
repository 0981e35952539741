import DoorCore
import Foundation
import GatewayNATS
import TestSupport
import XCTest

@testable import DoorCore

/// The signed seeds of the `fleet` and `natsjwt` fuzz targets
/// (Fuzz/make-corpus.py) get past the signature checks with the targets'
/// keys, so the fuzzer starts beyond them.
final class FuzzSeedTests: XCTestCase {
    func seed(_ target: String, _ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: Fixtures.root.appendingPathComponent("Fuzz/corpus/\(target)/seed-\(name)")))
    }

    func testTheSignedFleetSeedsAreAccepted() throws {
        let site = try Crypto.Ed25519.publicKey(seed: [UInt8](repeating: 0x5E, count: 32))
        for name in ["signed-minimal", "signed-full", "signed-int64-max"] {
            guard
                case .apply = FleetRules.judge(
                    try seed("fleet", name), sitePublicKey: site, siteID: "main-site", applied: nil)
            else {
                return XCTFail(
                    "\(name) not accepted: \(FleetRules.judge(try seed("fleet", name), sitePublicKey: site, siteID: "main-site", applied: nil))"
                )
            }
        }
        guard
            case .refuse(.badSignature) = FleetRules.judge(
                try seed("fleet", "forged"), sitePublicKey: site, siteID: "main-site", applied: nil)
        else { return XCTFail("forged accepted") }
    }

    func testTheSignedJWTSeedsAreTrusted() throws {
        let account = NKey.encode([0] + (try Crypto.Ed25519.publicKey(seed: [UInt8](repeating: 0xAC, count: 32))))
        let now: Int64 = 1_757_216_934
        let jwt = try UserJWT(String(decoding: try seed("natsjwt", "jwt-user"), as: UTF8.self))
        XCTAssertNoThrow(try jwt.checkTrusted(accountKeys: [account], now: now))
        let foreign = try UserJWT(String(decoding: try seed("natsjwt", "jwt-foreign"), as: UTF8.self))
        XCTAssertThrowsError(try foreign.checkTrusted(accountKeys: [account], now: now))
    }
}
