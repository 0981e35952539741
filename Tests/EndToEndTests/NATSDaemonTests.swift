import DoorCore
import Foundation
import TestSupport
import XCTest

/// The door's seed as mkjwt.py wrote it (what `gatewayctl creds import` installs).
private func doorSeed(_ server: NATSServer) throws -> String {
    try String(contentsOfFile: server.path("k/door.nk"), encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

/// gatewayd with `transport = "nats"` against the JWT-mode server: credentials
/// installed with `gatewayctl creds import`, an admin open reaches the peer as
/// an event on the door's subject, and status shows the transport and the
/// credential state. (A `GatewayUnderTest`: moved here from GatewayNATSTests,
/// which had its own daemon start, stop and status.)
final class NATSDaemonTests: XCTestCase {
    func testTheDaemonPublishesItsEventsOverNATS() throws {
        let server = try NATSServer()
        try server.start()
        let peer = try server.peer()
        peer.subscribe("\(NATSServer.base).>")
        let seed = try doorSeed(server)
        let g = try GatewayUnderTest(
            extra: "[mqtt]\ntelemetry_s = 10\n" + (try server.configurationSection()), deviceID: NATSServer.device)
        defer { g.stop() }
        let config = g.configFile.path
        let imported = try g.ctl(["creds", "import", "--config", config, server.path("k/door.creds")])
        XCTAssertEqual(imported.status, 0, imported.stderr)
        XCTAssertFalse(imported.stdout.contains(seed))
        let foreign = try g.ctl(["creds", "import", "--config", config, server.path("k/app.jwt")])
        XCTAssertEqual(foreign.status, 1, "another user's JWT is refused")
        XCTAssertTrue(foreign.stderr.contains("not this door's nkey"), foreign.stderr)
        let credsStatus = try g.ctl(["creds", "status", "--config", config])
        XCTAssertEqual(credsStatus.status, 0, credsStatus.stdout)
        XCTAssertTrue(credsStatus.stdout.contains("state: ok"), credsStatus.stdout)
        XCTAssertFalse(credsStatus.stdout.contains(seed), "the seed is never printed")

        try g.start()
        try waitUntil(timeout: 20) { (try g.status()["broker"]?["connected"]) == .bool(true) }
        let broker = try XCTUnwrap(try g.status()["broker"], g.log)
        XCTAssertEqual(broker["connected"], .bool(true), g.log)
        XCTAssertEqual(broker["transport"], .string("nats"))
        XCTAssertEqual(broker["credentials"]?["state"], .string("ok"))

        try g.ctlJSON(["open", "--action", "0"])
        let event = "\(NATSServer.base).event"
        peer.wait(timeout: 10) { _ in peer.messages(event).contains { $0.contains("\"kind\":\"admin_open\"") } }
        XCTAssertTrue(
            peer.messages(event).contains { $0.contains("\"kind\":\"admin_open\"") }, "\(peer.lines)\n\(g.log)")
        XCTAssertTrue(
            peer.messages(event).allSatisfy { $0.contains("\"device\":\"\(NATSServer.device)\"") }, "MQTT's payloads")
        peer.wait(timeout: 15) { _ in !peer.messages("\(NATSServer.base).telemetry").isEmpty }
        let telemetry = try XCTUnwrap(peer.messages("\(NATSServer.base).telemetry").first, g.log)
        XCTAssertTrue(telemetry.contains("\"nats_credentials\":{\"state\":\"ok\""), telemetry)
        // Security review L4: the audit log's head goes off the box.
        XCTAssertTrue(telemetry.contains("\"audit_head\":{\"row\":"), telemetry)

        // A JWT the credential service pushes, signed by the account named
        // in [nats] account_keys: tried, then installed.
        peer.send("PUB \(NATSServer.base).creds.jwt \(try server.reissueDoorJWT(seconds: 1200))")
        try waitUntil { g.log.contains("installed a new JWT") }
        XCTAssertEqual(try g.status()["broker"]?["refreshes"], .int(1), g.log)

        XCTAssertEqual(g.stop(), 0, g.log)
        peer.wait(timeout: 5) { _ in peer.messages("\(NATSServer.base).availability").contains("offline") }
        XCTAssertEqual(peer.messages("\(NATSServer.base).availability").last, "offline")
        XCTAssertFalse(g.log.contains(seed), "the seed is never logged")
    }
}

/// gatewayd itself with `[nats] user` + `password_file` (and `token_file`):
/// the secret comes from the file, an admin open reaches the peer, and
/// neither the daemon's log nor `config check` shows the secret; a wrong one
/// is a clear error in the log, and the door keeps deciding locally.
final class NATSLoginDaemonTests: XCTestCase {
    /// `credential`: the secret is the systemd credential of that name
    /// (`$CREDENTIALS_DIRECTORY`, set for gatewayd by `start`), else an absolute path.
    func door(_ server: LoginNATSServer, login: String, secret: String, credential: String? = nil) throws
        -> GatewayUnderTest
    {
        let g = try GatewayUnderTest(
            extra: """
                [remote]
                transport = "nats"
                [nats]
                servers = ["\(server.url)"]
                prefix = "\(NATSServer.prefix)"
                LOGIN
                [nats.tls]
                ca_file = "\(server.path("ca.crt"))"
                """, deviceID: NATSServer.device)
        let credentials = g.dir.appendingPathComponent("credentials")
        try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
        let file = credential.map { credentials.appendingPathComponent($0).path } ?? g.dir.path + "/secret"
        try (secret + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o640)
        let toml = try String(contentsOf: g.configFile, encoding: .utf8)
            .replacingOccurrences(of: "LOGIN", with: login.replacingOccurrences(of: "SECRET", with: credential ?? file))
        try toml.write(to: g.configFile, atomically: true, encoding: .utf8)
        return g
    }

    func start(_ g: GatewayUnderTest) throws {
        try g.start(environment: ["CREDENTIALS_DIRECTORY": g.dir.appendingPathComponent("credentials").path])
    }

    func assertTheDoorLogsInAndItsEventsArrive(
        _ server: LoginNATSServer, login: String, secret: String, credential: String? = nil
    ) throws {
        let peer = try server.peer()
        peer.subscribe("\(NATSServer.base).>")
        let g = try door(server, login: login, secret: secret, credential: credential)
        defer { g.stop() }
        let check = try g.ctl(["config", "check", g.configFile.path])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertFalse((check.stdout + check.stderr).contains(secret), "config check printed the secret")
        try start(g)
        try waitUntil(timeout: 20) { (try g.status()["broker"]?["connected"]) == .bool(true) }
        try g.ctlJSON(["open", "--action", "0"])
        let event = "\(NATSServer.base).event"
        peer.wait(timeout: 10) { _ in peer.messages(event).contains { $0.contains("\"kind\":\"admin_open\"") } }
        XCTAssertTrue(peer.messages(event).contains { $0.contains("\"kind\":\"admin_open\"") }, g.log)
        g.stop()
        XCTAssertFalse(g.log.isEmpty)
        XCTAssertFalse(g.log.contains(secret), "the secret is never logged: \(g.log)")
    }

    func testThePasswordFromItsFile() throws {
        let server = try LoginNATSServer(.users)
        try server.start()
        try assertTheDoorLogsInAndItsEventsArrive(
            server, login: "user = \"\(LoginNATSServer.user)\"\npassword_file = \"SECRET\"",
            secret: LoginNATSServer.password)
    }

    /// `password_file = "nats.password"`: the systemd credential gatewayd.service loads.
    func testThePasswordFromASystemdCredential() throws {
        let server = try LoginNATSServer(.users)
        try server.start()
        try assertTheDoorLogsInAndItsEventsArrive(
            server, login: "user = \"\(LoginNATSServer.user)\"\npassword_file = \"SECRET\"",
            secret: LoginNATSServer.password, credential: "nats.password")
    }

    func testTheTokenFromItsFile() throws {
        let server = try LoginNATSServer(.token)
        try server.start()
        try assertTheDoorLogsInAndItsEventsArrive(
            server, login: "token_file = \"SECRET\"", secret: LoginNATSServer.token)
    }

    func testAWrongPasswordIsAClearErrorWithoutTheSecret() throws {
        let server = try LoginNATSServer(.users)
        try server.start()
        let wrong = "wrong-password-31337"
        let g = try door(
            server, login: "user = \"\(LoginNATSServer.user)\"\npassword_file = \"SECRET\"", secret: wrong)
        defer { g.stop() }
        try start(g)
        try waitUntil(timeout: 20) { g.log.contains("Authorization Violation") }
        XCTAssertTrue(g.log.contains("Authorization Violation (user front-door, password not shown)"), g.log)
        // The door still decides locally: an admin open is carried out.
        try g.ctlJSON(["open", "--action", "0"])
        XCTAssertEqual(try g.status()["broker"]?["connected"], .bool(false), g.log)
        g.stop()
        XCTAssertFalse(g.log.contains(wrong), "the secret is never logged: \(g.log)")
    }
}
