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
            settings: settings, deviceID: NATSServer.device, outbox: MemoryOutbox(), log: log.logger)
    }

    /// The door's events reach a peer of the same server.
    private func assertEventsArrive(_ server: LoginNATSServer, _ login: NATSLogin) throws {
        let peer = try server.peer()
        peer.subscribe("\(NATSServer.base).>")
        let log = LogCapture()
        let l = link(server, login, log)
        try l.start(RemoteWiring(commands: RecordingHandler()))
        defer { l.stop() }
        XCTAssertTrue(try waitUntil { l.isConnected }, "not connected: \(String(describing: l.status.lastError))")
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
        try l.start(RemoteWiring(commands: RecordingHandler()))
        defer { l.stop() }
        XCTAssertTrue(try waitUntil { l.status.lastError != nil }, "no error")
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
