import DoorCore
import Foundation
import GatewayConfig
import TestSupport
import XCTest

/// `[remote] transport = "nats"` in the configuration file: what it needs,
/// and the errors naming key and line.
final class NATSConfigTests: XCTestCase {
    static let base = "[device]\nid = \"front-door\"\n[board]\nkind = \"sim\"\n"

    func testMQTTStaysTheDefaultAndNATSNeedsItsServerAndCA() throws {
        let plain = try GatewayConfiguration.load(toml: Self.base)
        XCTAssertEqual(plain.remote.transport, .mqtt)
        XCTAssertEqual(plain.nats, GatewayConfiguration.NATS())
        XCTAssertEqual(
            plain.nats.credentialPaths(stateDirectory: "/var/lib/doorgateway").jwt, "/var/lib/doorgateway/nats/user.jwt"
        )

        XCTAssertThrowsError(try GatewayConfiguration.load(toml: Self.base + "[remote]\ntransport = \"nats\"\n")) {
            let text = ($0 as? ConfigError)?.issues.map { $0.formatted(file: "g.toml") }.joined(separator: "\n") ?? ""
            XCTAssertTrue(text.contains("nats.servers"), text)
            XCTAssertTrue(text.contains("nats.tls.ca_file"), text)
        }
        let good = try GatewayConfiguration.load(
            toml: Self.base + """
                [remote]
                transport = "nats"
                [nats]
                servers = ["tls://127.0.0.1:4222"]
                prefix = "site.doors"
                refresh_percent = 80
                [nats.tls]
                ca_file = "/etc/doorgateway/ca.pem"
                """)
        XCTAssertEqual(good.remote.transport, .nats)
        XCTAssertEqual(good.nats.prefix, "site.doors")
        XCTAssertEqual(good.nats.refreshPercent, 80)
    }

    func testBadNATSValuesNameTheirKeyAndLine() {
        let toml =
            Self.base + """
                [remote]
                transport = "amqp"
                [nats]
                servers = ["http://x"]
                prefix = "a.>"
                jwt_file = "/x/user.jwt"
                bogus = 1
                """
        XCTAssertThrowsError(try GatewayConfiguration.load(toml: toml)) {
            let lines = ($0 as? ConfigError)?.issues.map { $0.formatted(file: "g.toml") } ?? []
            let text = lines.joined(separator: "\n")
            for expected in [
                "g.toml:6: remote.transport", "g.toml:8: nats.servers", "g.toml:9: nats.prefix", "nats.seed_file",
                "g.toml:11: nats.bogus",
            ] {
                XCTAssertTrue(text.contains(expected), "\(expected) in:\n\(text)")
            }
        }
    }
}

extension NATSConfigTests {
    /// `[nats] account_keys`: account nkeys only, each bad one named with its line.
    func testAccountKeysAreAccountNKeys() throws {
        let head = Self.base + "[remote]\ntransport = \"nats\"\n[nats]\nservers = [\"nats://127.0.0.1:4222\"]\n"
        let key = ConfigExample.natsAccountKeyExample
        let good = try GatewayConfiguration.load(
            toml: head + "account_keys = [\"\(key)\"]\n[nats.tls]\nenabled = false\n")
        XCTAssertEqual(good.nats.accountKeys, [key])
        XCTAssertFalse(good.warnings.contains { $0.contains("account_keys") })
        XCTAssertTrue(good.summary.joined().contains("pushed JWTs signed by 1 account key(s)"), "\(good.summary)")
        let none = try GatewayConfiguration.load(toml: head + "[nats.tls]\nenabled = false\n")
        XCTAssertEqual(none.nats.accountKeys, [])
        XCTAssertTrue(none.warnings.contains { $0.contains("nats.account_keys is empty") }, "\(none.warnings)")
        // A user key, a bad checksum, an operator key: each refused by index and line.
        let user = "UAEE2COLRSORH2VJY36ZHX5GLNO2BRAE7LUBB33PJ4IXLXSRCZCZKCHV"
        let badSum = String(key.dropLast()) + (key.last == "A" ? "B" : "A")
        XCTAssertThrowsError(
            try GatewayConfiguration.load(
                toml: head + "account_keys = [\"\(key)\", \"\(user)\",\n  \"\(badSum)\"]\n[nats.tls]\nenabled = false\n"
            )
        ) {
            let text = ($0 as? ConfigError)?.issues.map { $0.formatted(file: "g.toml") }.joined(separator: "\n") ?? ""
            XCTAssertTrue(text.contains("nats.account_keys[1]") && text.contains("account public key"), text)
            XCTAssertTrue(text.contains("nats.account_keys[2]"), text)
            XCTAssertFalse(text.contains("nats.account_keys[0]"), text)
        }
    }
}
