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

/// gatewayd with `transport = "nats"` against the JWT-mode server: credentials
/// installed with `gatewayctl creds import`, an admin open reaches the peer as
/// an event on the door's subject, and status shows the transport and the
/// credential state.
final class NATSDaemonTests: XCTestCase {
    /// The debug build's gateway, or `$DOORGATEWAY_E2E_BIN/gateway` (make test: the static one).
    static var gateway: URL {
        if let d = ProcessInfo.processInfo.environment["DOORGATEWAY_E2E_BIN"], !d.isEmpty {
            return URL(fileURLWithPath: d, relativeTo: Fixtures.root).standardizedFileURL.appendingPathComponent(
                "gateway")
        }
        return Run.product("gateway")
    }

    func testTheDaemonPublishesItsEventsOverNATS() throws {
        let server = try NATSServer()
        try server.start()
        let peer = try server.peer()
        peer.subscribe("\(NATSServer.base).>")
        let dir = server.dir.appendingPathComponent("door")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let socket = dir.appendingPathComponent("run/control.sock").path
        let config = dir.appendingPathComponent("gateway.toml").path
        try """
        [device]
        id = "\(NATSServer.device)"
        [board]
        kind = "sim"
        [reader]
        simulator = "spawn"
        [clock]
        declare_synchronised = true
        [mqtt]
        telemetry_s = 10
        [remote]
        transport = "nats"
        [nats]
        servers = ["tls://localhost:\(server.port)"]
        prefix = "\(NATSServer.prefix)"
        account_keys = ["\(try server.accountPublicKey())"]
        [nats.tls]
        ca_file = "\(server.path("ca.crt"))"
        cert_file = "\(server.path("door.crt"))"
        key_file = "\(server.path("door.key"))"
        [paths]
        state_dir = "\(dir.path)/state"
        runtime_dir = "\(dir.path)/run"
        """.write(toFile: config, atomically: true, encoding: .utf8)

        func ctl(_ args: [String]) throws -> ProcessResult {
            try Run.process(
                Self.gateway, ["ctl"] + args,
                environment: ProcessInfo.processInfo.environment.merging(["DOORGATEWAY_SOCKET": socket]) { $1 },
                timeout: 20)
        }
        let imported = try ctl(["creds", "import", "--config", config, server.path("k/door.creds")])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        XCTAssertFalse(imported.stdout.contains(try server.credentials.readSeed()))
        let foreign = try ctl(["creds", "import", "--config", config, server.path("k/app.jwt")])
        XCTAssertEqual(foreign.status, 1, "another user's JWT is refused")
        XCTAssertTrue(foreign.stderr.contains("not this door's nkey"), foreign.stderr)
        let credsStatus = try ctl(["creds", "status", "--config", config])
        XCTAssertEqual(credsStatus.status, 0, credsStatus.stdout)
        XCTAssertTrue(credsStatus.stdout.contains("state: ok"), credsStatus.stdout)
        XCTAssertFalse(credsStatus.stdout.contains(try server.credentials.readSeed()), "the seed is never printed")

        let daemon = Process()
        daemon.executableURL = Self.gateway
        daemon.arguments = ["daemon", "--config", config]
        let logPath = dir.appendingPathComponent("gatewayd.log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        daemon.standardOutput = FileHandle(forWritingAtPath: logPath)
        daemon.standardError = FileHandle(forWritingAtPath: logPath)
        try daemon.run()
        defer {
            if daemon.isRunning {
                kill(daemon.processIdentifier, SIGTERM)
                let deadline = Date() + 10
                while daemon.isRunning && Date() < deadline { usleep(20_000) }
                if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) }
            }
            daemon.waitUntilExit()
        }
        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        func status() -> JSONValue? {
            guard let r = try? ctl(["status", "--json"]), r.status == 0 else { return nil }
            return try? JSONValue.parse(Array(r.stdout.utf8), maxDepth: 32, maxBytes: 1 << 20)
        }
        let deadline = Date() + 20
        while Date() < deadline && status()?["broker"]?["connected"] != .bool(true) { usleep(100_000) }
        let broker = try XCTUnwrap(status()?["broker"], log)
        XCTAssertEqual(broker["connected"], .bool(true), log)
        XCTAssertEqual(broker["transport"], .string("nats"))
        XCTAssertEqual(broker["credentials"]?["state"], .string("ok"))

        XCTAssertEqual(try ctl(["open", "--action", "0"]).status, 0)
        let event = "\(NATSServer.base).event"
        peer.wait(timeout: 10) { _ in peer.messages(event).contains { $0.contains("\"kind\":\"admin_open\"") } }
        XCTAssertTrue(peer.messages(event).contains { $0.contains("\"kind\":\"admin_open\"") }, "\(peer.lines)\n\(log)")
        XCTAssertTrue(
            peer.messages(event).allSatisfy { $0.contains("\"device\":\"\(NATSServer.device)\"") }, "MQTT's payloads")
        peer.wait(timeout: 15) { _ in !peer.messages("\(NATSServer.base).telemetry").isEmpty }
        let telemetry = try XCTUnwrap(peer.messages("\(NATSServer.base).telemetry").first, log)
        XCTAssertTrue(telemetry.contains("\"nats_credentials\":{\"state\":\"ok\""), telemetry)
        // Security review L4: the audit log's head goes off the box.
        XCTAssertTrue(telemetry.contains("\"audit_head\":{\"row\":"), telemetry)

        // A JWT the credential service pushes, signed by the account named
        // in [nats] account_keys: tried, then installed.
        peer.send("PUB \(NATSServer.base).creds.jwt \(try server.reissueDoorJWT(seconds: 1200))")
        let refreshed = Date() + 10
        while Date() < refreshed && status()?["broker"]?["refreshes"] != .int(1) { usleep(100_000) }
        XCTAssertEqual(status()?["broker"]?["refreshes"], .int(1), log)
        XCTAssertTrue(log.contains("installed a new JWT"), log)

        kill(daemon.processIdentifier, SIGTERM)
        daemon.waitUntilExit()
        XCTAssertEqual(daemon.terminationStatus, 0, log)
        peer.wait(timeout: 5) { _ in peer.messages("\(NATSServer.base).availability").contains("offline") }
        XCTAssertEqual(peer.messages("\(NATSServer.base).availability").last, "offline")
        XCTAssertFalse(log.contains(try server.credentials.readSeed()), "the seed is never logged")
    }
}
