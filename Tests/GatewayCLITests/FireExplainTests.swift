import DoorCore
import GatewayConfig
import GatewayControl
import TestSupport
import XCTest

/// `policy explain` says fire (docs/policy.md "Fire alarm"): asked of a door
/// in alarm, its answer names the outputs that stand released whatever the
/// tap's verdict; out of alarm, and offline, it says nothing of fire.
final class FireExplainTests: XCTestCase {
    func testExplainNamesTheReleasedOutputsDuringAnAlarmOnly() throws {
        let c = try GatewayConfiguration.load(
            toml: ConfigText.simMaglock(id: "fire") + """
                [[outputs]]
                name = "strike"
                line = 6
                """)
        func explain(_ fire: FireState?) throws -> JSONValue {
            try PolicyExplain.explain(
                configuration: c, zone: .utc, action: 0, tag: nil, at: 1_799_064_000, note: nil,
                registryConsulted: false, fire: fire)
        }
        let alarm = try explain(.alarm)
        XCTAssertEqual(alarm["fire"]?["state"]?.stringValue, "alarm")
        XCTAssertEqual(alarm["fire"]?["released"]?.arrayValue?.compactMap(\.stringValue), ["maglock"])
        XCTAssertTrue(
            PolicyExplain.render(alarm).contains(
                "fire: the alarm holds — released: maglock, over every schedule, lockdown, lockout and tap, until the input clears and `gatewayctl fire reset`"
            ), PolicyExplain.render(alarm))
        XCTAssertTrue(PolicyExplain.render(try explain(.cleared)).contains("fire: the input cleared, not yet reset"))
        XCTAssertNil(try explain(.normal)["fire"])
        XCTAssertNil(try explain(nil)["fire"])
        XCTAssertFalse(PolicyExplain.render(try explain(.normal)).contains("fire"))
    }
}
