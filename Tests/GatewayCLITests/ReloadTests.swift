import GatewayConfig
import TestSupport
import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// What a SIGHUP reload refuses (issue 24 M4): `[fleet]` and `[control]`
/// are read at start only, so a change to them is named, never applied in silence.
final class ReloadTests: XCTestCase {
    static let base = ConfigText.simWithPlainMQTT(id: "door-a")

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
        XCTAssertEqual(LiveConfiguration.restartRequired(from: running, to: try configuration()), [])
        XCTAssertEqual(
            LiveConfiguration.restartRequired(
                from: running, to: try configuration(key: String(repeating: "cd", count: 32))),
            ["[fleet] site_public_key"])
        XCTAssertEqual(
            LiveConfiguration.restartRequired(from: running, to: try configuration(box: "/etc/doorgateway/other.key")),
            ["[fleet] box_key_file"])
        XCTAssertEqual(
            LiveConfiguration.restartRequired(from: running, to: try configuration(fleet: false)), ["[fleet] enabled"])
        XCTAssertEqual(
            LiveConfiguration.restartRequired(
                from: running, to: try configuration(control: "admin_group = \"ops\"\nsocket = \"/run/x.sock\"")),
            ["[control] socket", "[control] admin_group"])
    }

    /// The fleet off before and after: its values do nothing, so they do not block a reload.
    func testAFleetThatStaysOffIsInert() throws {
        XCTAssertEqual(
            LiveConfiguration.restartRequired(
                from: try configuration(fleet: false),
                to: try configuration(fleet: false, key: String(repeating: "cd", count: 32))), [])
    }

    /// Issue 32 L-3: Home Assistant's powers, the NATS account keys and the
    /// other transport keys are fixed at start: a change is named and
    /// refused; `[mqtt.commands]`' mapping and tolerance are applied live
    /// (not named), and so is adding an action (which changes the default mapping).
    func testTransportPowersAreNamedAndTheCommandMappingIsLive() throws {
        func load(_ mqtt: String = "", commands: String = "", nats: String = "", extra: String = "") throws
            -> GatewayConfiguration
        {
            try GatewayConfiguration.load(
                toml: """
                    [device]
                    id = "door-a"
                    [board]
                    kind = "sim"
                    \(extra)
                    [mqtt]
                    enabled = true
                    \(mqtt)
                    [mqtt.tls]
                    enabled = false
                    [mqtt.commands]
                    \(commands)
                    \(nats)
                    """)
        }
        let running = try load("home_assistant_open = true\nhome_assistant_admin = true")
        XCTAssertEqual(
            LiveConfiguration.restartRequired(from: running, to: try load("home_assistant_admin = true")),
            ["[mqtt] home_assistant_open"])
        XCTAssertEqual(
            LiveConfiguration.restartRequired(from: running, to: try load("home_assistant_open = true")),
            ["[mqtt] home_assistant_admin"])
        XCTAssertEqual(
            LiveConfiguration.restartRequired(
                from: running,
                to: try load(
                    "home_assistant_open = true\nhome_assistant_admin = true",
                    commands: "tolerance_s = 3\n[mqtt.commands.mapping]\n1 = \"report\"")),
            [], "applied live")
        XCTAssertEqual(
            LiveConfiguration.restartRequired(
                from: running,
                to: try load(
                    "home_assistant_open = true\nhome_assistant_admin = true", commands: "compat_topics = [\"x/y\"]")),
            ["[mqtt.commands] compat_topics"])
        // An operator taking a compromised account key out of the list.
        let nats = { (keys: String) in
            "[remote]\ntransport = \"nats\"\n[nats]\nservers = [\"tls://n.example:4222\"]\naccount_keys = [\(keys)]\n[nats.tls]\nca_file = \"/etc/ca.crt\""
        }
        XCTAssertEqual(
            LiveConfiguration.restartRequired(
                from: try load(extra: nats("\"\(ConfigExample.natsAccountKeyExample)\"")), to: try load(extra: nats(""))
            ),
            ["[nats] account_keys"])
    }
}
