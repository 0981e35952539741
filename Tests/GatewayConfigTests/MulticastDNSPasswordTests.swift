import GatewayConfig
import XCTest

/// Issue 32 L-6: a broker password over plain TCP to a `*.local` name (found
/// by multicast DNS, which anyone on the link may answer) is refused unless
/// `[mqtt] allow_password_over_plain_mdns = true` says so; TLS, a DNS name or
/// an address are not affected.
final class MulticastDNSPasswordTests: XCTestCase {
    func toml(host: String, tls: Bool = false, allow: Bool? = nil, password: Bool = true) -> String {
        """
        [device]
        id = "d1"
        [board]
        kind = "sim"
        [mqtt]
        enabled = true
        host = "\(host)"
        username = "d1"
        \(password ? "password_file = \"/etc/doorgateway/mqtt.password\"" : "")
        \(allow.map { "allow_password_over_plain_mdns = \($0)" } ?? "")
        [mqtt.tls]
        enabled = \(tls)
        \(tls ? "ca_file = \"/etc/doorgateway/ca.crt\"" : "")
        """
    }

    func testAPasswordOverPlainTCPToALocalNameIsRefusedUnlessAccepted() throws {
        for host in ["broker.local", "Broker.LOCAL.", "ha.local"] {
            XCTAssertThrowsError(try GatewayConfiguration.load(toml: toml(host: host)), host) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("mqtt.password_file"), text)
                XCTAssertTrue(text.contains("multicast DNS"), text)
                XCTAssertTrue(text.contains("allow_password_over_plain_mdns = true"), text)
            }
            XCTAssertThrowsError(try GatewayConfiguration.load(toml: toml(host: host, allow: false)), host)
            let accepted = try GatewayConfiguration.load(toml: toml(host: host, allow: true))
            XCTAssertTrue(accepted.mqtt.allowPasswordOverPlainMulticastDNS)
            XCTAssertTrue(
                accepted.warnings.contains { $0.contains("allow_password_over_plain_mdns = true") },
                "\(accepted.warnings)")
        }
        // Not affected: TLS, a DNS name, an address, no password.
        XCTAssertNoThrow(try GatewayConfiguration.load(toml: toml(host: "broker.local", tls: true)))
        XCTAssertNoThrow(try GatewayConfiguration.load(toml: toml(host: "broker.example.org")))
        XCTAssertNoThrow(try GatewayConfiguration.load(toml: toml(host: "192.168.1.2")))
        XCTAssertNoThrow(try GatewayConfiguration.load(toml: toml(host: "local")))
        XCTAssertNoThrow(try GatewayConfiguration.load(toml: toml(host: "broker.local", password: false)))
    }
}
