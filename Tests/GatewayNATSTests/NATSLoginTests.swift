import DoorCore
import Foundation
import GatewayNATS
import TestSupport
import XCTest

/// Issue 23 §2, NATS: a server with its own users (password) or a token,
/// over TLS with the server's certificate only (no client certificate, no
/// JWT): the door logs in and its events arrive; a wrong secret is refused
/// with a clear error; no log line holds a secret.
final class NATSLoginTests: XCTestCase {
    private func link(_ server: LoginNATSServer, _ login: NATSLogin, _ log: LogCapture) -> NATSLink {
        var settings = NATSSettings(
            servers: [server.url], prefix: NATSServer.prefix,
            tls: .init(enabled: server.tls, caFile: server.tls ? server.path("ca.crt") : nil), name: "door-under-test")
        settings.login = login
        return NATSLink(
            settings: settings, deviceID: NATSServer.device, outbox: MemoryOutbox(), log: log.logger,
            eventPayload: NATSLinkTests.eventPayload)
    }

    private func waitUntil(_ timeout: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date() + timeout
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    /// The door's events reach a peer of the same server.
    private func assertEventsArrive(_ server: LoginNATSServer, _ login: NATSLogin) throws {
        let peer = try server.peer()
        peer.subscribe("\(NATSServer.base).>")
        let log = LogCapture()
        let l = link(server, login, log)
        try l.start()
        defer { l.stop() }
        XCTAssertTrue(waitUntil { l.isConnected }, "not connected: \(String(describing: l.status.lastError))")
        l.record(DoorEvent(.accessGranted, source: "login-test"), at: 1_700_000_000, uidText: "04AABBCC")
        let event = "\(NATSServer.base).event"
        peer.wait { _ in !peer.messages(event).isEmpty }
        XCTAssertEqual(peer.messages(event).count, 1, "\(peer.lines)")
        XCTAssertTrue(peer.messages(event).first?.contains("\"kind\":\"access_granted\"") ?? false)
        assertNoSecret(log)
    }

    /// A wrong secret: refused, the error says so, the door does not connect.
    private func assertRefused(_ server: LoginNATSServer, _ login: NATSLogin) throws {
        let log = LogCapture()
        let l = link(server, login, log)
        try l.start()
        defer { l.stop() }
        XCTAssertTrue(waitUntil { l.status.lastError != nil }, "no error")
        let error = l.status.lastError ?? ""
        XCTAssertTrue(error.contains("Authorization Violation"), error)
        XCTAssertFalse(l.isConnected)
        XCTAssertTrue(log.all.contains { $0.contains("Authorization Violation") }, "\(log.all)")
        assertNoSecret(log, also: login)
    }

    private func assertNoSecret(
        _ log: LogCapture, also login: NATSLogin? = nil, file: StaticString = #filePath, line: UInt = #line
    ) {
        var secrets = [LoginNATSServer.password, LoginNATSServer.token, LoginNATSServer.appPassword]
        switch login {
        case .user(_, let p)?: secrets.append(p)
        case .token(let t)?: secrets.append(t)
        case nil: break
        }
        XCTAssertFalse(log.all.isEmpty, file: file, line: line)
        for l in log.all {
            for s in secrets { XCTAssertFalse(l.contains(s), "secret in log: \(l)", file: file, line: line) }
        }
    }

    func testAUserAndPasswordOverTLSWithTheServerCertificateOnly() throws {
        let server = try LoginNATSServer(.users)
        try server.start()
        try assertEventsArrive(server, .user(LoginNATSServer.user, password: LoginNATSServer.password))
    }

    func testAWrongPasswordIsRefusedAndNotPrinted() throws {
        let server = try LoginNATSServer(.users)
        try server.start()
        try assertRefused(server, .user(LoginNATSServer.user, password: "not-the-password-4711"))
    }

    func testATokenLogsInAndAWrongOneIsRefused() throws {
        let server = try LoginNATSServer(.token)
        try server.start()
        try assertEventsArrive(server, .token(LoginNATSServer.token))
        try assertRefused(server, .token("a-wrong-token-0815"))
    }

    func testPlainTCPWithAPassword() throws {
        let server = try LoginNATSServer(.users, tls: false)
        try server.start()
        try assertEventsArrive(server, .user(LoginNATSServer.user, password: LoginNATSServer.password))
    }

    func testTheLoginsDescriptionHoldsNoSecret() {
        let logins: [NATSLogin] = [.user("front-door", password: "pw-1234"), .token("tok-5678")]
        for l in logins {
            XCTAssertFalse("\(l)".contains("1234") || "\(l)".contains("5678"), "\(l)")
            XCTAssertFalse(String(reflecting: l).contains("1234") || String(reflecting: l).contains("5678"))
        }
    }
}

/// gatewayd itself with `[nats] user` + `password_file` (and `token_file`):
/// the secret comes from the file, an admin open reaches the peer, and
/// neither the daemon's log nor `config check` shows the secret; a wrong one
/// is a clear error in the log, and the door keeps deciding locally.
final class NATSLoginDaemonTests: XCTestCase {
    struct Door {
        let dir: URL
        let config: String
        let socket: String
        let logPath: String
        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    }

    /// `credential`: the secret is the systemd credential of that name
    /// (`$CREDENTIALS_DIRECTORY`, set for gatewayd), else an absolute path.
    func door(_ server: LoginNATSServer, login: String, secret: String, credential: String? = nil) throws -> Door {
        let dir = server.dir.appendingPathComponent("door-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("credentials"), withIntermediateDirectories: true)
        let file = dir.appendingPathComponent(credential.map { "credentials/\($0)" } ?? "secret").path
        try (secret + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o640)
        let secretPath = credential ?? file
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
        [remote]
        transport = "nats"
        [nats]
        servers = ["\(server.url)"]
        prefix = "\(NATSServer.prefix)"
        \(login.replacingOccurrences(of: "SECRET", with: secretPath))
        [nats.tls]
        ca_file = "\(server.path("ca.crt"))"
        [paths]
        state_dir = "\(dir.path)/state"
        runtime_dir = "\(dir.path)/run"
        """.write(toFile: config, atomically: true, encoding: .utf8)
        return Door(
            dir: dir, config: config, socket: dir.appendingPathComponent("run/control.sock").path,
            logPath: dir.appendingPathComponent("gatewayd.log").path)
    }

    func ctl(_ door: Door, _ args: [String]) throws -> ProcessResult {
        try Run.process(
            NATSDaemonTests.gateway, ["ctl"] + args,
            environment: ProcessInfo.processInfo.environment.merging(["DOORGATEWAY_SOCKET": door.socket]) { $1 },
            timeout: 20)
    }

    /// Runs gatewayd for `door` while `body` runs; stopped and reaped after.
    func running(_ door: Door, _ body: () throws -> Void) throws {
        let daemon = Process()
        daemon.executableURL = NATSDaemonTests.gateway
        daemon.arguments = ["daemon", "--config", door.config]
        daemon.environment = ProcessInfo.processInfo.environment.merging(
            ["CREDENTIALS_DIRECTORY": door.dir.appendingPathComponent("credentials").path]) { $1 }
        _ = FileManager.default.createFile(atPath: door.logPath, contents: nil)
        daemon.standardOutput = FileHandle(forWritingAtPath: door.logPath)
        daemon.standardError = FileHandle(forWritingAtPath: door.logPath)
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
        try body()
    }

    func status(_ door: Door) -> JSONValue? {
        guard let r = try? ctl(door, ["status", "--json"]), r.status == 0 else { return nil }
        return try? JSONValue.parse(Array(r.stdout.utf8), maxDepth: 32, maxBytes: 1 << 20)
    }

    func assertTheDoorLogsInAndItsEventsArrive(
        _ server: LoginNATSServer, login: String, secret: String, credential: String? = nil
    ) throws {
        let peer = try server.peer()
        peer.subscribe("\(NATSServer.base).>")
        let d = try door(server, login: login, secret: secret, credential: credential)
        let check = try ctl(d, ["config", "check", d.config])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertFalse((check.stdout + check.stderr).contains(secret), "config check printed the secret")
        try running(d) {
            let deadline = Date() + 20
            while Date() < deadline && status(d)?["broker"]?["connected"] != .bool(true) { usleep(100_000) }
            XCTAssertEqual(status(d)?["broker"]?["connected"], .bool(true), d.log)
            XCTAssertEqual(try ctl(d, ["open", "--action", "0"]).status, 0)
            let event = "\(NATSServer.base).event"
            peer.wait(timeout: 10) { _ in peer.messages(event).contains { $0.contains("\"kind\":\"admin_open\"") } }
            XCTAssertTrue(peer.messages(event).contains { $0.contains("\"kind\":\"admin_open\"") }, d.log)
        }
        XCTAssertFalse(d.log.isEmpty)
        XCTAssertFalse(d.log.contains(secret), "the secret is never logged: \(d.log)")
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
        let d = try door(
            server, login: "user = \"\(LoginNATSServer.user)\"\npassword_file = \"SECRET\"", secret: wrong)
        try running(d) {
            let deadline = Date() + 20
            while Date() < deadline && !d.log.contains("Authorization Violation") { usleep(100_000) }
            XCTAssertTrue(d.log.contains("Authorization Violation (user front-door, password not shown)"), d.log)
            // The door still decides locally: an admin open is carried out.
            XCTAssertEqual(try ctl(d, ["open", "--action", "0"]).status, 0, d.log)
            XCTAssertEqual(status(d)?["broker"]?["connected"], .bool(false), d.log)
        }
        XCTAssertFalse(d.log.contains(wrong), "the secret is never logged: \(d.log)")
    }
}
