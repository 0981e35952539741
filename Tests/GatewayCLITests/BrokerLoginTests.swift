import Foundation
import TestSupport
import XCTest

/// The broker people already have (Home Assistant OS's Mosquitto add-on, a
/// shared mosquitto): `gatewayctl config check --broker` logs in with
/// `[mqtt] username` and the password from `password_file`, over TLS with a
/// server certificate only and over plain TCP — the same connection setup
/// (MQTTLink.configure) gatewayd uses.
final class BrokerLoginTests: BrokerTestCase<LoginBroker> {
    func passwordFile(_ text: String, mode: Int = 0o640) throws -> String {
        let path = broker.path("password-\(UUID().uuidString.prefix(6))")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode_t(mode))
        return path
    }

    func configFile(tls: Bool, login: String) throws -> String {
        let tlsSection =
            tls ? "[mqtt.tls]\nca_file = \"\(broker.path("ca.crt"))\"" : "[mqtt.tls]\nenabled = false"
        let text =
            ConfigText.simWithMQTT(port: tls ? broker.tlsPort : broker.plainPort) + """
                \(login)
                \(tlsSection)
                """
        let path = broker.path("gateway-\(UUID().uuidString.prefix(6)).toml")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `gatewayctl config check --broker` (`connect` false: without `--broker`) of
    /// a door that logs in as `LoginBroker.user` with the password in `passwordFile`.
    func checkLogin(tls: Bool, passwordFile pw: String, connect: Bool = true) throws -> ProcessResult {
        let login = "username = \"\(LoginBroker.user)\"\npassword_file = \"\(pw)\""
        return try Run.gatewayctl(
            ["config", "check"] + (connect ? ["--broker"] : []) + [try configFile(tls: tls, login: login)])
    }

    func testTLSWithAServerCertificateOnlyAndALogin() throws {
        let pw = try passwordFile(LoginBroker.password + "\n")
        let r = try checkLogin(tls: true, passwordFile: pw)
        XCTAssertEqual(r.status, 0, r.stderr + broker.log)
        XCTAssertTrue(r.stdout.contains("(MQTT 3.1.1, TLS)"), r.stdout)
        XCTAssertTrue(r.stdout.contains("login front-door password from \(pw)"), r.stdout)
        XCTAssertTrue(r.stdout.contains("published and received back"), r.stdout)
        XCTAssertFalse(r.stdout.contains(LoginBroker.password) || r.stderr.contains(LoginBroker.password))
        XCTAssertFalse(r.stderr.contains("warning:"), r.stderr)
    }

    func testAWrongPasswordIsRefusedByTheBroker() throws {
        let pw = try passwordFile("not the password\n")
        let r = try checkLogin(tls: true, passwordFile: pw)
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(r.stderr.lowercased().contains("not authori"), r.stderr)
        XCTAssertFalse(r.stderr.contains("not the password"), "the password was printed: \(r.stderr)")
    }

    func testWithoutALoginTheBrokerRefuses() throws {
        let r = try Run.gatewayctl(["config", "check", "--broker", try configFile(tls: true, login: "")])
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(r.stderr.lowercased().contains("not authori"), r.stderr)
    }

    func testPlainTCPWorksAndIsWarnedAbout() throws {
        let pw = try passwordFile(LoginBroker.password)
        let r = try checkLogin(tls: false, passwordFile: pw)
        XCTAssertEqual(r.status, 0, r.stderr + broker.log)
        XCTAssertTrue(r.stdout.contains("plain TCP"), r.stdout)
        XCTAssertTrue(r.stderr.contains("warning: mqtt.tls.enabled = false: plain TCP"), r.stderr)
        XCTAssertTrue(r.stderr.contains("the login, events and commands cross the network readable"), r.stderr)
    }

    func testAPasswordFileReadableByOthersIsWarnedAbout() throws {
        let pw = try passwordFile(LoginBroker.password, mode: 0o644)
        let r = try checkLogin(tls: true, passwordFile: pw, connect: false)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("warning: mqtt.password_file \(pw) has mode 644, wider than 0640"), r.stderr)
    }

    func testAPasswordFileThatCannotBeUsedIsNamedNotPrinted() throws {
        for (text, why) in [("", "is empty"), ("two\nlines\n", "must hold one line")] {
            let pw = try passwordFile(text)
            let r = try checkLogin(tls: true, passwordFile: pw)
            XCTAssertEqual(r.status, 1, r.stdout)
            XCTAssertTrue(r.stderr.contains("mqtt.password_file \(pw)") && r.stderr.contains(why), r.stderr)
            XCTAssertFalse(r.stderr.contains("lines"), r.stderr)
        }
        let r = try checkLogin(tls: true, passwordFile: "mqtt.password")
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(r.stderr.contains("names a systemd credential"), r.stderr)
    }

    func testTheConfigurationRefusesAPasswordFileWithoutAUserAndARelativePath() throws {
        let noUser = try Run.gatewayctl([
            "config", "check", try configFile(tls: true, login: "password_file = \"/etc/doorgateway/mqtt.password\""),
        ])
        XCTAssertEqual(noUser.status, 1)
        XCTAssertTrue(noUser.stderr.contains("mqtt.username: is required with password_file"), noUser.stderr)
        let relative = try Run.gatewayctl([
            "config", "check", try configFile(tls: true, login: "username = \"u\"\npassword_file = \"etc/pw\""),
        ])
        XCTAssertEqual(relative.status, 1)
        XCTAssertTrue(relative.stderr.contains("mqtt.password_file"), relative.stderr)
        let inline = try Run.gatewayctl([
            "config", "check", try configFile(tls: true, login: "username = \"u\"\npassword = \"hunter2\""),
        ])
        XCTAssertEqual(inline.status, 1, "a password in gateway.toml is refused")
        XCTAssertTrue(inline.stderr.contains("mqtt.password: unknown key"), inline.stderr)
    }
}
