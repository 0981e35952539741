import GatewayConfig
import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// What a SIGHUP reload refuses (issue 24 M4): `[fleet]` and `[control]`
/// are read at start only, so a change to them is named, never applied in silence.
final class ReloadTests: XCTestCase {
    static let base = """
        [device]
        id = "door-a"
        [board]
        kind = "sim"
        [mqtt]
        enabled = true
        [mqtt.tls]
        enabled = false

        """

    func configuration(
        fleet: Bool = true, key: String = String(repeating: "ab", count: 32), box: String = "/etc/doorgateway/box.key",
        control: String = ""
    ) throws -> GatewayConfiguration {
        try GatewayConfiguration.load(
            toml: Self.base + """
                [fleet]
                enabled = \(fleet)
                site_id = "main-site"
                site_public_key = "\(key)"
                box_key_file = "\(box)"
                [control]
                \(control)
                """)
    }

    func testFleetAndControlChangesAreNamed() throws {
        let running = try configuration()
        XCTAssertEqual(Daemon.restartRequired(from: running, to: try configuration()), [])
        XCTAssertEqual(
            Daemon.restartRequired(from: running, to: try configuration(key: String(repeating: "cd", count: 32))),
            ["[fleet] site_public_key"])
        XCTAssertEqual(
            Daemon.restartRequired(from: running, to: try configuration(box: "/etc/doorgateway/other.key")),
            ["[fleet] box_key_file"])
        XCTAssertEqual(Daemon.restartRequired(from: running, to: try configuration(fleet: false)), ["[fleet] enabled"])
        XCTAssertEqual(
            Daemon.restartRequired(
                from: running, to: try configuration(control: "admin_group = \"ops\"\nsocket = \"/run/x.sock\"")),
            ["[control] socket", "[control] admin_group"])
    }

    /// The fleet off before and after: its values do nothing, so they do not block a reload.
    func testAFleetThatStaysOffIsInert() throws {
        XCTAssertEqual(
            Daemon.restartRequired(
                from: try configuration(fleet: false),
                to: try configuration(fleet: false, key: String(repeating: "cd", count: 32))), [])
    }
}
