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

    /// The same for a NATS server: a password or token over `nats://` to a `*.local` name.
    func testNATSPasswordsAndTokensOverPlainTCPToALocalNameAreRefusedUnlessAccepted() throws {
        func nats(_ server: String, login: String, tls: Bool = false, allow: Bool = false) -> String {
            """
            [device]
            id = "d1"
            [board]
            kind = "sim"
            [remote]
            transport = "nats"
            [nats]
            servers = ["\(server)"]
            \(login)
            \(allow ? "allow_password_over_plain_mdns = true" : "")
            [nats.tls]
            enabled = \(tls)
            \(tls ? "ca_file = \"/etc/doorgateway/ca.crt\"" : "")
            """
        }
        let password = "user = \"d1\"\npassword_file = \"/etc/doorgateway/nats.password\""
        let token = "token_file = \"/etc/doorgateway/nats.token\""
        for (login, key) in [(password, "nats.password_file"), (token, "nats.token_file")] {
            XCTAssertThrowsError(try GatewayConfiguration.load(toml: nats("nats://broker.local:4222", login: login))) {
                XCTAssertTrue("\($0)".contains(key), "\($0)")
                XCTAssertTrue("\($0)".contains("allow_password_over_plain_mdns = true"), "\($0)")
            }
            let accepted = try GatewayConfiguration.load(
                toml: nats("nats://broker.local:4222", login: login, allow: true))
            XCTAssertTrue(accepted.warnings.contains { $0.contains("nats.allow_password_over_plain_mdns") })
            XCTAssertNoThrow(
                try GatewayConfiguration.load(toml: nats("tls://broker.local:4222", login: login, tls: true)))
            XCTAssertNoThrow(try GatewayConfiguration.load(toml: nats("nats://10.0.0.2:4222", login: login)))
        }
    }
}
