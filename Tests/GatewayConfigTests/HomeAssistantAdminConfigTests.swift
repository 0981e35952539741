import GatewayConfig
import XCTest

/// `[mqtt] home_assistant_admin`: off unless asked for, documented in the
/// example, and said to do nothing without MQTT.
final class HomeAssistantAdminConfigTests: XCTestCase {
    let base = """
        [device]
        id = "front-door"
        [board]
        kind = "sim"

        """

    func testOffByDefaultAndOnWhenAsked() throws {
        XCTAssertFalse(try GatewayConfiguration.load(toml: base).mqtt.homeAssistantAdmin, "off unless asked for")
        let example = ConfigExample.text(board: .sim)
        XCTAssertTrue(example.contains("\nhome_assistant_admin = false\n"), "the example shows the stock value")
        XCTAssertFalse(try GatewayConfiguration.load(toml: example).mqtt.homeAssistantAdmin)
        let on = try GatewayConfiguration.load(
            toml: base + "[mqtt]\nenabled = true\nhome_assistant_admin = true\n[mqtt.tls]\nenabled = false\n")
        XCTAssertTrue(on.mqtt.homeAssistantAdmin)
        XCTAssertTrue(on.summary.contains { $0.contains("Home Assistant admin screen") }, "\(on.summary)")
        XCTAssertFalse(on.warnings.contains { $0.contains("home_assistant_admin") }, "\(on.warnings)")
        XCTAssertThrowsError(try GatewayConfiguration.load(toml: base + "[mqtt]\nhome_assistant_admin = \"yes\"\n"))
    }

    func testWithoutMQTTItIsSaidToDoNothing() throws {
        let off = try GatewayConfiguration.load(toml: base + "[mqtt]\nhome_assistant_admin = true\n")
        XCTAssertTrue(
            off.warnings.contains { $0.contains("home_assistant_admin = true does nothing") }, "\(off.warnings)")
    }
}
