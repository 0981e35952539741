import GatewayConfig
import TestSupport
import XCTest

/// `[fleet]` (docs/fleet.md): off by default, strict like every section.
final class FleetConfigTests: XCTestCase {
    static let base = ConfigText.simWithPlainMQTT(id: "door-a")
    static let key = String(repeating: "ab", count: 32)

    func issues(_ text: String) -> [ConfigIssue] { loadIssues(text) }

    func testOffByDefaultAndOnWithItsKeys() throws {
        XCTAssertEqual(try GatewayConfiguration.load(toml: Self.base).fleet, .off)
        let c = try GatewayConfiguration.load(
            toml: Self.base + """
                [fleet]
                enabled = true
                site_id = "main-site"
                site_public_key = "\(Self.key)"
                subscribe = "sites/+/fleet/main-site"
                box_key_file = "/etc/doorgateway/site-box.key"
                """)
        XCTAssertTrue(c.fleet.enabled)
        XCTAssertEqual(c.fleet.siteID, "main-site")
        XCTAssertEqual(c.fleet.sitePublicKey, [UInt8](repeating: 0xAB, count: 32))
        XCTAssertEqual(c.fleet.subscribe, "sites/+/fleet/main-site")
        XCTAssertEqual(c.fleet.boxKeyFile, "/etc/doorgateway/site-box.key")
    }

    func testBadValuesAreNamedWithTheirKeyAndLine() {
        // base is 8 lines; [fleet] is line 9.
        XCTAssertEqual(
            issues(Self.base + "[fleet]\nenabled = true\nsite_id = \"main-site\"\nsite_public_key = \"abcd\"\n"),
            [
                ConfigIssue(
                    key: "fleet.site_public_key", line: 12,
                    message: "expected the site's Ed25519 public key: 64 hex digits")
            ])
        let filter = issues(Self.base + "[fleet]\nsubscribe = \"a/#/b\"\n")
        XCTAssertEqual(filter.map(\.key), ["fleet.subscribe"])
        XCTAssertEqual(filter.first?.line, 10)
        XCTAssertEqual(issues(Self.base + "[fleet]\nbox_key_file = \"relative\"\n").map(\.key), ["fleet.box_key_file"])
        XCTAssertEqual(issues(Self.base + "[fleet]\nsite_id = \"a b\"\n").map(\.key), ["fleet.site_id"])
        let unknown = issues(Self.base + "[fleet]\nsite_key = \"x\"\n")
        XCTAssertEqual(unknown.map(\.key), ["fleet.site_key"])
        XCTAssertTrue(unknown.first?.message.contains("unknown key") ?? false, "\(unknown)")
    }

    func testOnNeedsASiteItsPublicKeyAndMQTT() {
        let missing = issues(Self.base + "[fleet]\nenabled = true\n")
        XCTAssertEqual(Set(missing.map(\.key)), ["fleet.site_id", "fleet.site_public_key"])
        let noMQTT = issues(
            "[device]\nid = \"d\"\n[board]\nkind = \"sim\"\n[fleet]\nenabled = true\nsite_id = \"s\"\n"
                + "site_public_key = \"\(Self.key)\"\n")
        XCTAssertEqual(noMQTT.map(\.key), ["fleet.enabled"])
        XCTAssertTrue(noMQTT.first?.message.contains("mqtt.enabled = true") ?? false, "\(noMQTT)")
    }

    /// With NATS the fleet needs no MQTT: its documents are in `nats.fleet_bucket`.
    func testOverNATSTheBucketIsNamedAndMQTTsFilterIsRefused() throws {
        let nats = """
            [device]
            id = "door-a"
            [board]
            kind = "sim"
            [remote]
            transport = "nats"
            [nats]
            servers = ["tls://nats.example:4222"]
            [nats.tls]
            ca_file = "/etc/doorgateway/nats-ca.pem"
            [fleet]
            enabled = true
            site_id = "main-site"
            site_public_key = "\(Self.key)"

            """
        let c = try GatewayConfiguration.load(toml: nats)
        XCTAssertTrue(c.fleet.enabled)
        XCTAssertFalse(c.mqtt.enabled)
        XCTAssertEqual(c.nats.fleetBucket, "doorgateway-fleet")
        XCTAssertEqual(
            try GatewayConfiguration.load(
                toml: nats.replacingOccurrences(of: "[nats]\n", with: "[nats]\nfleet_bucket = \"site_7-doors\"\n")
            ).nats.fleetBucket, "site_7-doors")
        // Line 8 is [nats]'s first key.
        let bucket = issues(nats.replacingOccurrences(of: "[nats]\n", with: "[nats]\nfleet_bucket = \"a.b\"\n"))
        XCTAssertEqual(bucket.map(\.key), ["nats.fleet_bucket"])
        XCTAssertEqual(bucket.first?.line, 8)
        XCTAssertTrue(bucket.first?.message.contains("bucket name") ?? false, "\(bucket)")
        let filter = issues(nats + "subscribe = \"doorgateway/+/fleet/main-site\"\n")
        XCTAssertEqual(filter.map(\.key), ["fleet.subscribe"])
        XCTAssertTrue(filter.first?.message.contains("nats.fleet_bucket") ?? false, "\(filter)")
    }
}
