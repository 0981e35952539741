import Foundation
import TestSupport
import XCTest

@testable import GatewayCtl

/// `config check --broker` in gatewayd.service's sandbox: the systemd-run
/// arguments made from the shipped unit carry what decides what the door can
/// reach, and nothing of the daemon's own running.
final class UnitSandboxTests: TemporaryDirectoryTestCase {
    func shippedSettings() throws -> [(String, String)] {
        UnitSandbox.parse(try String(contentsOfFile: ServiceUnitTests.unitPath, encoding: .utf8))
    }

    func testTheShippedUnitsSandboxIsCarried() throws {
        let args = UnitSandbox.arguments(
            settings: try shippedSettings(), configFile: "/root/g.toml", check: ["config", "check", "--broker"],
            binary: "/usr/bin/gateway")
        for wanted in [
            "--property=User=doorgateway", "--property=Group=doorgateway", "--property=IPAddressDeny=0.0.0.0/0 ::/0",
            "--property=IPAddressAllow=224.0.0.251 ff02::fb",
            "--property=RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
            "--property=ProtectHome=yes", "--property=PrivateTmp=yes", "--property=ProtectSystem=strict",
            "--property=BindReadOnlyPaths=/root/g.toml", "--wait", "--pipe",
        ] {
            XCTAssertTrue(args.contains(wanted), "\(wanted) missing from \(args)")
        }
        // The unit file's names written out: systemd-run takes only prefixes.
        XCTAssertTrue(
            args.contains(
                "--property=IPAddressAllow=127.0.0.0/8 ::1/128 169.254.0.0/16 fe80::/64 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fc00::/7"
            ),
            "\(args)")
        XCTAssertTrue(args.contains { $0.hasPrefix("--setenv=\(UnitSandbox.marker)=") }, "\(args)")
        for daemonOnly in [
            "ExecStart", "ExecReload", "WatchdogSec", "Type", "StandardInput", "Restart", "SetCredential",
        ] {
            XCTAssertFalse(
                args.contains { $0.hasPrefix("--property=\(daemonOnly)=") }, "\(daemonOnly) carried: \(args)")
        }
        XCTAssertEqual(Array(args.suffix(6)), ["--", "/usr/bin/gateway", "ctl", "config", "check", "--broker"])
    }

    /// A drop-in's reset and its own values follow the unit's, in order; a
    /// credential whose file is missing is left out (the unit's SetCredential=
    /// fallback has no place in a transient unit, which would fail on it).
    func testDropInsInOrderAndOnlyExistingCredentials() throws {
        let dir = try temporaryDirectory("sandbox")
        let key = dir.appendingPathComponent("door.key").path
        try Data("k".utf8).write(to: URL(fileURLWithPath: key))
        let text = """
            # /lib/systemd/system/gatewayd.service
            [Unit]
            Description=x
            [Service]
            User=doorgateway
            IPAddressAllow=localhost
            LoadCredential=door.key:\(key)
            LoadCredential=mqtt.password:\(dir.path)/missing
            ExecStart=/usr/bin/gatewayd

            # /etc/systemd/system/gatewayd.service.d/override.conf
            [Service]
            IPAddressAllow=
            IPAddressAllow=203.0.113.10 \\
              224.0.0.251
            """
        let settings = UnitSandbox.parse(text)
        XCTAssertEqual(
            settings.filter { $0.0 == "IPAddressAllow" }.map(\.1), ["localhost", "", "203.0.113.10 224.0.0.251"])
        let args = UnitSandbox.arguments(settings: settings, configFile: "/etc/g.toml", check: [], binary: "/b")
        let allow = args.filter { $0.hasPrefix("--property=IPAddressAllow=") }
        XCTAssertEqual(
            allow,
            [
                "--property=IPAddressAllow=127.0.0.0/8 ::1/128", "--property=IPAddressAllow=",
                "--property=IPAddressAllow=203.0.113.10 224.0.0.251",
            ])
        XCTAssertTrue(args.contains("--property=LoadCredential=door.key:\(key)"), "\(args)")
        XCTAssertFalse(args.contains { $0.contains("mqtt.password") }, "a missing credential was carried: \(args)")
    }

    /// In the sandboxed run, gateway.toml's path to the unit's credential is
    /// read from this run's own credentials directory.
    func testTheUnitsCredentialPathIsThisRunsOwn() {
        let env = [UnitSandbox.marker: "gatewayd.service", "CREDENTIALS_DIRECTORY": "/run/credentials/check-1.service"]
        XCTAssertEqual(
            UnitSandbox.credentialPath("/run/credentials/gatewayd.service/door.key", environment: env),
            "/run/credentials/check-1.service/door.key")
        XCTAssertEqual(
            UnitSandbox.credentialPath("/etc/doorgateway/door.crt", environment: env), "/etc/doorgateway/door.crt")
        XCTAssertEqual(
            UnitSandbox.credentialPath("/run/credentials/gatewayd.service/door.key", environment: [:]),
            "/run/credentials/gatewayd.service/door.key", "outside the sandbox nothing is rewritten")
    }
}
