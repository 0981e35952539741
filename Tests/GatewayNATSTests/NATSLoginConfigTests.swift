import DoorCore
import Foundation
import GatewayConfig
import TestSupport
import XCTest

/// `[nats] user` + `password_file`, or `token_file` (issue 23 §2): one way
/// to log in, never a secret in gateway.toml, warnings for plain TCP and a
/// file readable by others, and a summary that names files, not secrets.
final class NATSLoginConfigTests: TemporaryDirectoryTestCase {
    static let base = NATSConfigTests.base + "[remote]\ntransport = \"nats\"\n"

    func issues(_ nats: String, tls: String = "[nats.tls]\nca_file = \"/etc/doorgateway/ca.pem\"\n") -> String {
        let toml = Self.base + "[nats]\nservers = [\"tls://nats.example:4222\"]\n" + nats + "\n" + tls
        do {
            _ = try GatewayConfiguration.load(toml: toml)
            return ""
        } catch {
            return error.issues.map { $0.formatted(file: "g.toml") }.joined(separator: "\n")
        }
    }

    func testAUserAndPasswordFileOrATokenFile() throws {
        let toml =
            Self.base + """
                [nats]
                servers = ["tls://nats.example:4222"]
                user = "front-door"
                password_file = "nats.password"
                [nats.tls]
                ca_file = "/etc/doorgateway/ca.pem"
                """
        let c = try GatewayConfiguration.load(toml: toml)
        XCTAssertEqual(c.nats.login, .password)
        XCTAssertEqual(c.nats.user, "front-door")
        XCTAssertEqual(c.nats.passwordFile, "nats.password")
        XCTAssertTrue(
            c.summary.contains { $0.contains("login front-door password from nats.password") }, "\(c.summary)")
        XCTAssertFalse(c.summary.contains { $0.contains("jwt") }, "\(c.summary)")
        XCTAssertEqual(c.warnings, [], "TLS with the server's certificate only is a supported setup")

        let token = try GatewayConfiguration.load(
            toml: toml.replacingOccurrences(
                of: "user = \"front-door\"\npassword_file = \"nats.password\"",
                with: "token_file = \"/etc/doorgateway/nats.token\""))
        XCTAssertEqual(token.nats.login, .token)
        XCTAssertTrue(token.summary.contains { $0.contains("token from /etc/doorgateway/nats.token") })
        XCTAssertEqual(GatewayConfiguration.NATS().login, .jwt)
    }

    func testTheRefusals() {
        let cases: [(String, String)] = [
            ("password = \"hunter2\"\nuser = \"d\"", "g.toml:9: nats.password: is never written in gateway.toml"),
            ("token = \"hunter2\"", "nats.token: is never written in gateway.toml"),
            ("password_file = \"/etc/p\"", "nats.user: is required with the other"),
            ("user = \"d\"", "nats.password_file: is required with the other"),
            ("user = \"d\"\npassword_file = \"/etc/p\"\ntoken_file = \"/etc/t\"", "nats.token_file: not with user"),
            ("token_file = \"/etc/t\"\njwt_file = \"/j\"\nseed_file = \"/s\"", "nats.jwt_file: is for a JWT login"),
            ("user = \"d\"\npassword_file = \"/etc/p\"\naccount_keys = []", "nats.account_keys: is for a JWT login"),
            (
                "token_file = \"../t\"",
                "nats.token_file: \"../t\": an absolute path, or the name of a systemd credential"
            ),
        ]
        for (nats, expected) in cases {
            let text = issues(nats)
            XCTAssertTrue(text.contains(expected), "\(nats)\n→ \(text)")
            XCTAssertFalse(text.contains("hunter2"), "the secret is not echoed: \(text)")
        }
        XCTAssertEqual(issues(""), "", "the base file loads")
        XCTAssertThrowsError(
            try GatewayConfiguration.load(
                toml: Self.base
                    + "[nats]\nservers = [\"tls://door:hunter2@nats.example:4222\"]\n[nats.tls]\nca_file = \"/c\"\n")
        ) {
            let text = ($0 as? ConfigError)?.issues.map { $0.formatted(file: "g.toml") }.joined() ?? ""
            XCTAssertTrue(text.contains("nats.servers[0]: a user or password in the URL"), text)
            XCTAssertFalse(text.contains("hunter2"), text)
        }
    }

    func testPlainTCPIsWarnedAbout() throws {
        let c = try GatewayConfiguration.load(
            toml: Self.base + """
                [nats]
                servers = ["nats://10.0.0.2:4222"]
                token_file = "nats.token"
                [nats.tls]
                enabled = false
                """)
        XCTAssertEqual(c.warnings.count, 1, "\(c.warnings)")
        XCTAssertTrue(
            c.warnings.first?.hasPrefix("nats.tls.enabled = false: plain TCP to nats://10.0.0.2:4222 — the token, ")
                ?? false, "\(c.warnings)")
    }

    /// `config check`: a secret file wider than 0640 is warned about, by key
    /// and path, never with its content.
    func testConfigCheckWarnsAboutAFileOthersCanRead() throws {
        let dir = try temporaryDirectory("natslogin")
        let secret = dir.appendingPathComponent("nats.password").path
        try "hunter2-secret\n".write(toFile: secret, atomically: true, encoding: .utf8)
        let config = dir.appendingPathComponent("gateway.toml").path
        try
            (Self.base + """
                [nats]
                servers = ["tls://nats.example:4222"]
                user = "front-door"
                password_file = "\(secret)"
                [nats.tls]
                ca_file = "/etc/doorgateway/ca.pem"
                """).write(toFile: config, atomically: true, encoding: .utf8)
        chmod(secret, 0o644)
        let wide = try Run.gatewayctl(["config", "check", config])
        XCTAssertEqual(wide.status, 0, wide.stderr)
        XCTAssertTrue(
            wide.stderr.contains("warning: nats.password_file \(secret) has mode 644, wider than 0640"), wide.stderr)
        XCTAssertFalse((wide.stdout + wide.stderr).contains("hunter2"))
        chmod(secret, 0o640)
        let narrow = try Run.gatewayctl(["config", "check", config])
        XCTAssertEqual(narrow.status, 0, narrow.stderr)
        XCTAssertFalse(narrow.stderr.contains("nats.password_file"), narrow.stderr)
    }
}
