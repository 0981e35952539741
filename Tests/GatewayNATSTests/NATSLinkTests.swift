import DoorCore
import Foundation
import GatewayNATS
import RemoteLink
import TestSupport
import XCTest

/// The NATS transport against a real nats-server in operator/JWT mode with
/// mutual TLS; every server and peer is stopped and reaped by deinit, on
/// failure too.
final class NATSLinkTests: XCTestCase {
    private func makeLink(
        _ server: NATSServer, _ outbox: MemoryOutbox, _ log: LogCapture, refresh: Double = 0.75, jetStream: Bool = false
    ) -> NATSLink {
        NATSLink(
            settings: server.settings(refreshFraction: refresh, jetStream: jetStream), deviceID: NATSServer.device,
            outbox: outbox,
            log: log.logger)
    }

    /// Starts `server`; a peer of it sees every subject of the door.
    private func startWithPeer(_ server: NATSServer) throws -> Peer {
        try server.start()
        let peer = try server.peer()
        peer.subscribe("\(NATSServer.base).>")
        return peer
    }

    /// No log line holds the seed or the JWT.
    private func assertNoSecretsLogged(
        _ server: NATSServer, _ log: LogCapture, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        let seed = (try? server.credentials.readSeed()) ?? "unreadable"
        let jwt = (try? server.credentials.readJWT()) ?? "unreadable"
        let signature = String(jwt.split(separator: ".").last ?? "")
        for l in log.all {
            XCTAssertFalse(l.contains(seed) || l.contains(signature), "secret in log: \(l)", file: file, line: line)
        }
    }

    func testEventsOutAndCommandsInOnTheDoorsOwnSubjects() throws {
        let server = try NATSServer()
        let peer = try startWithPeer(server)
        let outbox = MemoryOutbox()
        let log = LogCapture()
        let link = makeLink(server, outbox, log)
        let handler = RecordingHandler()
        try link.start(RemoteWiring(commands: handler))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected }, "not connected: \(String(describing: link.status.lastError))")

        for i in 0..<5 {
            link.record(
                DoorEvent(.accessGranted, source: "test-\(i)"), at: 1_700_000_000 + Int64(i),
                uidText: "04AABB0\(i)")
        }
        link.publishState(.object([("locked", .bool(true))]))
        let event = "\(NATSServer.base).event"
        peer.wait { _ in peer.messages(event).count >= 5 }
        XCTAssertEqual(peer.messages(event).compactMap(sequenceNumber), [1, 2, 3, 4, 5])
        // The bytes MQTT publishes too (RemoteLink's LinkPayloads), with the door's device id.
        let first = LinkPayloads.event(
            DoorEvent(.accessGranted, source: "test-0"), seq: 1, time: 1_700_000_000, device: NATSServer.device,
            uidText: "04AABB00")
        XCTAssertEqual(peer.messages(event).first, String(decoding: first, as: UTF8.self))
        XCTAssertTrue(
            try waitUntil { link.status.outboxDepth == 0 && link.status.acknowledged > 0 },
            "acknowledged rows leave the outbox")
        XCTAssertEqual(peer.messages("\(NATSServer.base).availability"), ["online"])
        // Sent at once, and again by the connect's announcement if that runs later.
        let state = "\(NATSServer.base).state"
        peer.wait { _ in !peer.messages(state).isEmpty }
        XCTAssertTrue(
            (1...2).contains(peer.messages(state).count)
                && peer.messages(state).allSatisfy { $0 == "{\"locked\":true}" }, "\(peer.lines)\n\(log.all)")

        // A JWT pushed for another user, and a payload carrying a seed, are refused; the file stays.
        let before = try server.credentials.readJWT()
        let appJWT = try String(contentsOfFile: server.path("k/app.jwt"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        peer.send("PUB \(NATSServer.base).creds.jwt \(appJWT)")
        peer.send("PUB \(NATSServer.base).creds.jwt -----BEGIN USER NKEY SEED----- SUAX")
        XCTAssertTrue(try waitUntil { log.all.filter { $0.contains("creds.jwt: refused") }.count == 2 }, "\(log.all)")
        XCTAssertTrue(log.all.contains { $0.contains("not this door's nkey") })
        XCTAssertFalse(log.all.contains { $0.contains(appJWT) }, "a pushed JWT is never logged")
        XCTAssertEqual(try server.credentials.readJWT(), before)
        XCTAssertEqual(link.status.refreshes, 0)

        peer.send("PUB \(NATSServer.base).command.native {\"cmd\":\"open\"}")
        peer.send("PUB \(NATSServer.base).command.lock UNLOCK")
        peer.send("PUB \(NATSServer.base).command.bogus x")
        // The marker comes after the unknown subject from the same publisher,
        // so a command made of that one would have come before it.
        peer.send("PUB \(NATSServer.base).command.native marker")
        XCTAssertTrue(try waitUntil { handler.messages.withLock { $0.count } >= 3 })
        let got = handler.messages.withLock { $0 }
        XCTAssertEqual(
            got.map(\.channel), [.native, .homeAssistantLock, .native], "an unknown command subject is no command")
        XCTAssertEqual(got.first?.payload, Array("{\"cmd\":\"open\"}".utf8))
        XCTAssertEqual(got.last?.payload, Array("marker".utf8))
        let st = link.status
        XCTAssertEqual(st.published, 5)
        XCTAssertEqual(st.acknowledged, 5)
        XCTAssertEqual(st.denied, 0)
        XCTAssertEqual(st.credentials?.kind, .ok)
        link.stop()
        peer.wait { _ in peer.messages("\(NATSServer.base).availability").count >= 2 }
        XCTAssertEqual(peer.messages("\(NATSServer.base).availability"), ["online", "offline"])
        assertNoSecretsLogged(server, log)
    }

    func testAPublishOutsideTheDoorsPermissionsIsRefusedAndShown() throws {
        let server = try NATSServer()
        let peer = try startWithPeer(server)
        let log = LogCapture()
        let link = makeLink(server, MemoryOutbox(), log)
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected })
        // `…tag` is not in the door user's publish permissions.
        link.publishTagScan(uidText: "04AABBCC")
        XCTAssertTrue(try waitUntil { link.status.denied == 1 }, "the async permission error is counted")
        XCTAssertTrue(link.status.lastDenied?.contains("\(NATSServer.base).tag") == true, "\(link.status)")
        XCTAssertTrue(log.all.contains { $0.contains("Permissions Violation") && $0.contains(".tag") })
        XCTAssertTrue(link.isConnected, "a refused publish leaves the connection up")
        // A permitted publish on the same connection after it: once it has
        // arrived, the refused one would have too.
        link.publishState(.object([("marker", .bool(true))]))
        let state = "\(NATSServer.base).state"
        peer.wait { _ in peer.messages(state).contains("{\"marker\":true}") }
        XCTAssertTrue(peer.messages(state).contains("{\"marker\":true}"), "\(peer.lines)")
        XCTAssertEqual(peer.messages("\(NATSServer.base).tag"), [], "the server dropped it")
        XCTAssertTrue(server.log.contains("Publish Violation"))
    }

    /// TLS verifies the server's name (both builds): its certificate names
    /// only `localhost`, so the same server reached as 127.0.0.1 is refused.
    func testTheServersNameIsVerified() throws {
        let server = try NATSServer(serverNames: "DNS:localhost")
        try server.start()
        var settings = server.settings()
        settings.servers = settings.servers.map { $0.replacingOccurrences(of: "localhost", with: "127.0.0.1") }
        let link = NATSLink(
            settings: settings, deviceID: NATSServer.device, outbox: MemoryOutbox(), log: LogCapture().logger)
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(
            try waitUntil(timeout: 5) { link.status.lastError?.contains("mismatch") == true }, "\(link.status)")
        XCTAssertFalse(link.isConnected)
        XCTAssertEqual(NATSSettings.host(of: "tls://u:p@[::1]:4222"), "::1")
        XCTAssertEqual(NATSSettings.host(of: "nats://nats.lan:4222"), "nats.lan")
    }

    /// A `*.local` server's URL gets the address multicast DNS found, in
    /// place of the host `host(of:)` names, and nothing else changes.
    func testAURLTakesAnAddressInPlaceOfItsHost() {
        for (url, expected) in [
            ("tls://broker.local:4222", "tls://10.0.0.7:4222"),
            ("nats://u:p@broker.local:4222", "nats://u:p@10.0.0.7:4222"),
            ("broker.local:4222", "10.0.0.7:4222"),
            ("tls://broker.local", "tls://10.0.0.7"),
            ("tls://u@broker.local/path@x", "tls://u@10.0.0.7/path@x"),
        ] {
            let host = NATSSettings.host(of: url)
            XCTAssertEqual(host, "broker.local", url)
            XCTAssertEqual(NATSSettings.url(url, withHost: host!, replacedBy: "10.0.0.7"), expected, url)
        }
        XCTAssertEqual(
            NATSSettings.url("tls://other.lan:4222", withHost: "broker.local", replacedBy: "10.0.0.7"),
            "tls://other.lan:4222", "a host that is not there: the URL as it is")
    }

    /// With `jetstream = true`, rows on a subject a stream takes leave the
    /// outbox on its PubAck; others (no responders) after a flush.
    func testJetStreamAcknowledgesRowsItsStreamTakesAndAFlushTheRest() throws {
        let server = try NATSServer(jetStream: true)
        try server.start()
        let peer = try server.peer()
        peer.send(
            "REQ $JS.API.STREAM.CREATE.DOOR {\"name\":\"DOOR\",\"subjects\":[\"\(NATSServer.base).event\"],"
                + "\"storage\":\"memory\"}")
        peer.wait { $0.contains { $0["subject"]?.hasPrefix("_INBOX.peer.") == true } }
        let created = peer.lines.first { $0["subject"]?.hasPrefix("_INBOX.peer.") == true }?["payload"] ?? ""
        XCTAssertTrue(created.contains("stream_create_response") && !created.contains("\"error\""), created)
        let outbox = MemoryOutbox()
        let log = LogCapture()
        let link = makeLink(server, outbox, log, jetStream: true)
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected })
        for _ in 0..<3 { link.record(DoorEvent(.doorOpened), at: Int64(time(nil)), uidText: nil) }
        link.publishTelemetry([("uptime_s", .int(1))], at: Int64(time(nil)))
        XCTAssertTrue(
            try waitUntil { link.status.outboxDepth == 0 && link.status.acknowledged > 0 }, "\(link.status)\n\(log.all)"
        )
        let st = link.status
        XCTAssertEqual(st.acknowledged, 4)
        XCTAssertEqual(st.jetStreamAcknowledged, 3, "the events by PubAck, the telemetry by flush")
        peer.send("REQ $JS.API.STREAM.INFO.DOOR")
        peer.wait { $0.contains { $0["payload"]?.contains("stream_info_response") == true } }
        let info = peer.lines.compactMap { $0["payload"] }.first { $0.contains("stream_info_response") } ?? ""
        XCTAssertTrue(info.contains("\"messages\":3"), info)
    }

    /// A 6 s JWT: the door asks for a new one at 75 % of its life, the peer
    /// (the credential service here) pushes it, the server closes the
    /// connection at the old `exp`, and libnats reconnects with the new JWT
    /// within a second; events recorded all along arrive, none lost.
    func testAShortLivedJWTIsRefreshedBeforeExpiryWithoutLosingEvents() throws {
        let server = try NATSServer(doorJWTSeconds: 6)
        let peer = try startWithPeer(server)
        let outbox = MemoryOutbox()
        let log = LogCapture()
        let link = makeLink(server, outbox, log)
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected })
        let firstExp = try XCTUnwrap(link.status.credentials?.expires)
        let original = try server.credentials.readJWT()

        // Events are recorded all along, until the door has asked, the new
        // JWT is installed, the server has closed the connection at the old
        // exp and libnats has reconnected: events, not a fixed 9 s.
        var recorded = 0
        var pushed = false
        let done = try waitUntil(timeout: 30) {
            if recorded < 90 {
                recorded += 1
                link.record(DoorEvent(.doorOpened), at: Int64(time(nil)), uidText: nil)
            }
            if !pushed, !peer.messages("\(NATSServer.base).creds.request").isEmpty {
                let jwt = try server.reissueDoorJWT(seconds: 120)
                peer.send("PUB \(NATSServer.base).creds.jwt \(jwt)")
                pushed = true
            }
            let st = link.status
            return recorded == 90 && pushed && st.refreshes == 1 && st.reconnects >= 1 && link.isConnected
        }
        XCTAssertTrue(done, "\(link.status)\n\(log.all.suffix(10))")
        XCTAssertTrue(pushed, "the door asked for a new JWT")
        let request = try XCTUnwrap(peer.messages("\(NATSServer.base).creds.request").first)
        XCTAssertTrue(request.contains(try server.credentials.publicKey()), request)
        let st = link.status
        XCTAssertEqual(st.refreshes, 1)
        XCTAssertGreaterThan(try XCTUnwrap(st.credentials?.expires), firstExp + 60)
        XCTAssertGreaterThanOrEqual(st.reconnects, 1, "the server closed the connection at the old exp")
        XCTAssertEqual(st.connections, 1, "libnats reconnected; no rebuild was needed")
        XCTAssertTrue(try waitUntil { link.status.outboxDepth == 0 && link.status.acknowledged > 0 })
        let seqs = Set(peer.messages("\(NATSServer.base).event").compactMap(sequenceNumber))
        XCTAssertEqual(seqs, Set(1...recorded), "every event arrived (duplicates allowed, none lost)")
        // The disconnect: the server ended the first JWT's connection for its
        // credentials ("User Authentication Expired", or under load
        // "Authentication Violation"), and libnats reconnected with the new one.
        XCTAssertTrue(
            log.all.contains { $0.contains("server error:") && $0.contains("Authentication") }, "\(log.all)")
        // The first JWT pushed again (a replay, still unexpired by its own
        // clock or not) is refused: the newer one stays in place.
        let installed = try server.credentials.readJWT()
        XCTAssertNotEqual(installed, original)
        let before = log.all.count
        peer.send("PUB \(NATSServer.base).creds.jwt \(original)")
        XCTAssertTrue(
            try waitUntil { log.all.dropFirst(before).contains { $0.contains("creds.jwt: refused") } }, "\(log.all)")
        XCTAssertEqual(try server.credentials.readJWT(), installed, "a replayed older JWT is not installed")
        // The first JWT has expired by now, which alone refuses it; one issued
        // before the JWT in place and still valid is refused for its age.
        let now = Int64(time(nil))
        let older = try server.reissueDoorJWT(seconds: 0, issuedAt: now - 120, expiresAt: now + 600)
        let mark = log.all.count
        peer.send("PUB \(NATSServer.base).creds.jwt \(older)")
        XCTAssertTrue(
            try waitUntil { log.all.dropFirst(mark).contains { $0.contains("creds.jwt: refused") } }, "\(log.all)")
        XCTAssertTrue(
            log.all.dropFirst(mark).contains { $0.contains("issued before the JWT in place") }, "\(log.all)")
        XCTAssertEqual(try server.credentials.readJWT(), installed, "an older, valid JWT is not installed")
        XCTAssertEqual(link.status.refreshes, 1)
        assertNoSecretsLogged(server, log)
    }

    /// `jwt` with its claims edited and its signature kept (or zeroed).
    private func tamper(_ jwt: String, zeroSignature: Bool = false, _ edit: (inout [String: Any]) -> Void) throws
        -> String
    {
        let parts = jwt.split(separator: ".").map(String.init)
        var claims =
            try JSONSerialization.jsonObject(with: Data(try XCTUnwrap(Base64URL.decode(parts[1])))) as? [String: Any]
            ?? [:]
        edit(&claims)
        let body = Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: claims)))
        let signature = zeroSignature ? Base64URL.encode([UInt8](repeating: 0, count: 64)) : parts[2]
        return "\(parts[0]).\(body).\(signature)"
    }

    /// Issue 24 M2: a JWT pushed on `creds.jwt` replaces the one in place
    /// only when it is signed by one of `[nats] account_keys`, not issued
    /// ahead of the door's clock, and accepted by the server on a trial
    /// connection. The attack: a junk JWT with `iat = exp = 9999-12-31`,
    /// after which every real refresh was refused as older.
    func testAPushedJWTMustBeSignedByATrustedAccountAndAcceptedByTheServer() throws {
        let server = try NATSServer(doorJWTSeconds: 600)
        try server.start()
        let peer = try server.peer()
        let log = LogCapture()
        // The door trusts the spare account key too; the server does not know it.
        let settings = server.settings(accountKeys: [
            try server.accountPublicKey(), try server.accountPublicKey("spare"),
        ])
        let link = NATSLink(
            settings: settings, deviceID: NATSServer.device, outbox: MemoryOutbox(), log: log.logger)
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected })
        let original = try server.credentials.readJWT()
        let end: Int64 = 253_402_300_799  // 9999-12-31T23:59:59Z
        let good = try server.reissueDoorJWT(seconds: 1200)
        let pushes: [(name: String, jwt: String, why: String)] = [
            ("junk", "not.a.jwt", "not a NATS user JWT"),
            (
                "tampered",
                try tamper(good) {
                    $0["iat"] = end; $0["exp"] = end
                },
                "signature does not verify"
            ),
            ("unsigned", try tamper(good, zeroSignature: true) { _ in }, "signature does not verify"),
            ("foreign", try server.reissueDoorJWT(seconds: 1200, issuer: "foreign"), "not one of [nats] account_keys"),
            (
                "far-future iat", try server.reissueDoorJWT(seconds: 0, issuedAt: end, expiresAt: end),
                "ahead of this door's clock"
            ),
            (
                "unknown to the server", try server.reissueDoorJWT(seconds: 1200, issuer: "spare"),
                "the server did not accept"
            ),
        ]
        for push in pushes {
            let before = log.all.count
            peer.send("PUB \(NATSServer.base).creds.jwt \(push.jwt)")
            XCTAssertTrue(
                try waitUntil { log.all.dropFirst(before).contains { $0.contains("creds.jwt: refused") } },
                "\(push.name): \(log.all.dropFirst(before))")
            XCTAssertTrue(
                log.all.dropFirst(before).contains { $0.contains(push.why) },
                "\(push.name): \(log.all.dropFirst(before))")
            XCTAssertEqual(try server.credentials.readJWT(), original, "\(push.name): the JWT in place is kept")
        }
        XCTAssertEqual(link.status.refreshes, 0)
        XCTAssertTrue(link.isConnected)

        // The real refresh after all that: installed.
        // The install's last step is its log line: the file is written, then
        // the counter, then the line (checking the counter once the file was
        // there raced the counter, under load).
        peer.send("PUB \(NATSServer.base).creds.jwt \(good)")
        XCTAssertTrue(try waitUntil { log.all.contains { $0.contains("installed a new JWT") } }, "\(log.all)")
        XCTAssertEqual(try server.credentials.readJWT(), good)
        XCTAssertEqual(link.status.refreshes, 1)
        for line in log.all {
            for push in pushes where push.jwt.count > 20 {
                XCTAssertFalse(line.contains(push.jwt), "a pushed JWT is never logged: \(line)")
            }
        }
        assertNoSecretsLogged(server, log)
    }

    /// Without `[nats] account_keys` nothing pushed can be checked: even a
    /// JWT the server would take is refused, and the log says what to do.
    func testWithoutAccountKeysOnlyTheIssuerOfTheJWTInPlaceIsTrusted() throws {
        let server = try NATSServer(doorJWTSeconds: 600)
        try server.start()
        let peer = try server.peer()
        let log = LogCapture()
        let link = NATSLink(
            settings: server.settings(accountKeys: []), deviceID: NATSServer.device, outbox: MemoryOutbox(),
            log: log.logger)
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected })
        let original = try server.credentials.readJWT()
        // A key the server does not know, even with a valid signature: refused, the JWT in place kept.
        peer.send("PUB \(NATSServer.base).creds.jwt \(try server.reissueDoorJWT(seconds: 1200, issuer: "foreign"))")
        XCTAssertTrue(try waitUntil { log.all.contains { $0.contains("creds.jwt: refused") } }, "\(log.all)")
        XCTAssertEqual(try server.credentials.readJWT(), original)
        XCTAssertEqual(link.status.refreshes, 0)
        // Signed by the issuer of the JWT in place: installed after its trial connection.
        let renewed = try server.reissueDoorJWT(seconds: 1200)
        peer.send("PUB \(NATSServer.base).creds.jwt \(renewed)")
        XCTAssertTrue(try waitUntil { log.all.contains { $0.contains("installed a new JWT") } }, "\(log.all)")
        XCTAssertEqual(try server.credentials.readJWT(), renewed)
        XCTAssertEqual(link.status.refreshes, 1)
    }

    /// No refresh: the JWT expires, libnats closes after two authorisation
    /// violations, the link reports `expired` and keeps rebuilding; once a
    /// fresh JWT is installed (as `gatewayctl creds import` does) it connects
    /// again and the events kept in the outbox go out.
    func testWithoutRefreshTheLinkClosesThenRebuildsWhenAFreshJWTIsInstalled() throws {
        let server = try NATSServer(doorJWTSeconds: 3)
        let peer = try startWithPeer(server)
        let outbox = MemoryOutbox()
        let log = LogCapture()
        // Never asks (refresh at 100 % of the life).
        let link = makeLink(server, outbox, log, refresh: 1.0)
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected })
        XCTAssertTrue(
            try waitUntil(timeout: 8) { log.all.contains { $0.contains("libnats closed the connection") } },
            "\(log.all)")
        XCTAssertEqual(link.status.credentials?.kind, .expired)
        XCTAssertTrue(log.all.contains { $0.contains("credentials: expired") })
        link.record(DoorEvent(.doorOpened), at: Int64(time(nil)), uidText: nil)
        XCTAssertTrue(try waitUntil { (try? outbox.depth()) == 1 }, "committed to the outbox")

        // Two rebuilds refused after the close: the link now waits out a 4 s
        // backoff, which the new file must cut short (the link says so).
        XCTAssertTrue(
            try waitUntil(timeout: 20) { log.all.filter { $0.contains("nats: connect to") }.count >= 2 }, "\(log.all)")
        XCTAssertEqual(try outbox.depth(), 1, "kept while disconnected")
        let fresh = try server.reissueDoorJWT(seconds: 120)
        try server.credentials.install(fresh, now: Int64(time(nil)))
        XCTAssertTrue(
            try waitUntil(timeout: 20) { link.isConnected }, "rebuilt: \(String(describing: link.status.lastError))")
        XCTAssertTrue(
            log.all.contains { $0.contains("the JWT file changed") }, "the new JWT file ends the backoff: \(log.all)")
        XCTAssertGreaterThanOrEqual(link.status.connections, 2)
        XCTAssertEqual(link.status.credentials?.kind, .ok)
        XCTAssertTrue(try waitUntil { link.status.outboxDepth == 0 && link.status.acknowledged > 0 })
        // Acknowledged is the server's flush answer; the peer's copy may still be on its way.
        peer.wait { _ in !peer.messages("\(NATSServer.base).event").isEmpty }
        XCTAssertEqual(peer.messages("\(NATSServer.base).event").compactMap(sequenceNumber), [1])
        assertNoSecretsLogged(server, log)
    }
}

/// nkeys and JWT checks, without a server.
final class NATSCredentialTests: XCTestCase {
    func testSeedsPublicKeysAndJWTsMadeByMkjwtAreUnderstood() throws {
        let server = try NATSServer(doorJWTSeconds: 60)
        let creds = server.credentials
        let expected = try String(contentsOfFile: server.path("k/door.jwt"), encoding: .utf8)
        let jwt = try UserJWT(expected)
        XCTAssertEqual(try creds.publicKey(), jwt.subject, "the public key derived from the seed is the JWT's sub")
        let now = Int64(time(nil))
        XCTAssertEqual(creds.state(now: now).kind, .ok)
        XCTAssertEqual(creds.state(now: now).expiresIn.map { $0 > 50 && $0 <= 60 }, true)
        XCTAssertEqual(creds.state(now: now + 61).kind, .expired)

        // Another user's JWT is refused and nothing is written.
        let app = try String(contentsOfFile: server.path("k/app.jwt"), encoding: .utf8)
        XCTAssertThrowsError(try creds.install(app, now: now)) { error in
            guard case UserJWT.Problem.notForThisDoor = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try creds.readJWT(), expected.trimmingCharacters(in: .whitespacesAndNewlines))
        XCTAssertThrowsError(try creds.install(expected, now: now + 3600)) { error in
            guard case UserJWT.Problem.expired = error else { return XCTFail("\(error)") }
        }
        for bad in ["", "a.b", "not.a.jwt", String(expected.dropLast(3))] {
            XCTAssertThrowsError(try UserJWT(bad), bad)
        }
        // Times that are not whole seconds in range are refused, not converted
        // (1e19 trapped Int64(_:); a negative iat overflowed exp - iat).
        func forged(_ times: String) -> String {
            let header = Base64URL.encode(Array(#"{"typ":"JWT","alg":"ed25519-nkey"}"#.utf8))
            let claims = Base64URL.encode(Array(#"{"sub":"\#(jwt.subject)",\#(times),"nats":{"type":"user"}}"#.utf8))
            return "\(header).\(claims).\(Base64URL.encode([UInt8](repeating: 7, count: 64)))"
        }
        XCTAssertNoThrow(try UserJWT(forged(#""iat":1700000000,"exp":1700000600"#)))
        for times in [
            #""iat":1e19,"exp":1700000600"#, #""iat":-9223372036854775000,"exp":1700000600"#,
            #""iat":1700000000,"exp":1e300"#, #""iat":1700000000.5,"exp":1700000600"#,
            #""iat":1700000600,"exp":1700000000"#, #""iat":"now","exp":1700000600"#,
        ] {
            XCTAssertThrowsError(try UserJWT(forged(times)), times) { error in
                guard case UserJWT.Problem.malformed = error else { return XCTFail("\(times): \(error)") }
            }
        }
        // A .creds file installs both; the seed file is 0600.
        let other = NATSCredentialFiles(directory: server.path("other"))
        let credsText = try String(contentsOfFile: server.path("k/door.creds"), encoding: .utf8)
        try other.install(credsText, now: now)
        XCTAssertEqual(try other.publicKey(), jwt.subject)
        var st = stat()
        XCTAssertEqual(stat(other.seedPath, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(NATSCredentialFiles(directory: server.path("none")).state(now: now).kind, .missing)

        // Imported by root into a state directory owned by gatewayd's user
        // (here nobody, 65534): the files and the nats/ directory made for
        // them are that user's, or the daemon could not read its seed.
        if geteuid() == 0 {
            let state = server.path("state-of-nobody")
            XCTAssertEqual(mkdir(state, 0o700), 0)
            XCTAssertEqual(chown(state, 65534, 65534), 0)
            let imported = NATSCredentialFiles(directory: state + "/nats")
            try imported.install(credsText, now: now)
            for path in [state + "/nats", imported.seedPath, imported.jwtPath] {
                XCTAssertEqual(stat(path, &st), 0, path)
                XCTAssertEqual([st.st_uid, st.st_gid], [65534, 65534], path)
            }
            // Again over a leftover temporary file (a crashed import): replaced, not followed.
            let target = server.path("not-a-seed")
            try "untouched".write(toFile: target, atomically: true, encoding: .utf8)
            symlink(target, imported.seedPath + ".tmp.\(getpid())")
            try imported.install(credsText, now: now)
            XCTAssertEqual(lstat(imported.seedPath, &st), 0)
            XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG)
            XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "untouched")
        }
    }

    /// Issue 24 M2 without a server: what `checkTrusted` accepts, with JWTs
    /// mkjwt signs (the doors' account, a spare account, a fresh key).
    func testAPushedJWTsIssuerSignatureAndIssueTimeAreChecked() throws {
        let server = try NATSServer(doorJWTSeconds: 600)
        let doors = try server.accountPublicKey()
        let spare = try server.accountPublicKey("spare")
        XCTAssertNotNil(NKey.accountKey(doors))
        XCTAssertNil(NKey.accountKey(try server.credentials.publicKey()), "a user key is no account key")
        let now = Int64(time(nil))
        let good = try UserJWT(try server.reissueDoorJWT(seconds: 600))
        XCTAssertEqual(good.issuer, doors)
        XCTAssertNoThrow(try good.checkTrusted(accountKeys: [doors], now: now))
        XCTAssertNoThrow(try good.checkTrusted(accountKeys: [spare, doors], now: now))
        func problem(_ jwt: UserJWT, _ keys: [String], at t: Int64 = Int64(time(nil))) -> UserJWT.Problem? {
            do { try jwt.checkTrusted(accountKeys: keys, now: t) } catch { return error }
            return nil
        }
        XCTAssertEqual(problem(good, []), .noAccountKeys)
        XCTAssertEqual(problem(good, [spare]), .untrustedIssuer(doors))
        XCTAssertEqual(
            problem(try UserJWT(try server.reissueDoorJWT(seconds: 600, issuer: "spare")), [spare]), nil,
            "a signing key listed is as good as the account's own")
        let foreign = try UserJWT(try server.reissueDoorJWT(seconds: 600, issuer: "foreign"))
        XCTAssertEqual(problem(foreign, [doors]), .untrustedIssuer(foreign.issuer ?? ""))
        // Claims edited, signature kept: the issuer is trusted, the signature is not.
        let parts = good.text.split(separator: ".").map(String.init)
        let claims = String(decoding: try XCTUnwrap(Base64URL.decode(parts[1])), as: UTF8.self)
        let edited =
            claims
            .replacingOccurrences(of: "\"iat\": \(try XCTUnwrap(good.issuedAt))", with: "\"iat\": 253402300799")
            .replacingOccurrences(of: "\"exp\": \(try XCTUnwrap(good.expires))", with: "\"exp\": 253402300799")
        XCTAssertNotEqual(edited, claims)
        let tampered = try UserJWT("\(parts[0]).\(Base64URL.encode(Array(edited.utf8))).\(parts[2])")
        XCTAssertEqual(problem(tampered, [doors]), .badSignature(issuer: doors))
        // iat: now + 300 s is fine, one second more is not.
        let iat = try XCTUnwrap(good.issuedAt)
        XCTAssertNil(problem(good, [doors], at: iat - UserJWT.maximumIssueSkew))
        XCTAssertEqual(problem(good, [doors], at: iat - UserJWT.maximumIssueSkew - 1), .issuedAhead(iat))
        XCTAssertTrue(good.issuedInTime(now: iat - 300))
        XCTAssertFalse(good.issuedInTime(now: iat - 301))
    }

    func testSubjectsAreScopedToTheDevice() {
        let s = NATSSubjects(prefix: "dg", deviceID: "front-door")
        XCTAssertEqual(s.event, "dg.front-door.event")
        XCTAssertEqual(s.commands, "dg.front-door.command.>")
        XCTAssertEqual(s.channel(of: "dg.front-door.command.native"), .native)
        XCTAssertEqual(s.channel(of: "dg.back-door.command.native"), nil)
        XCTAssertEqual(s.channel(of: "dg.front-door.command.native.x"), nil)
        XCTAssertEqual(s.subject(forRow: "doorgateway/front-door/telemetry"), "dg.front-door.telemetry")
        XCTAssertFalse(NATSSettings.isSubjectToken("a.b"))
        XCTAssertFalse(NATSSettings.isSubjectToken("a*"))
        XCTAssertFalse(NATSSettings.isSubjectToken(""))
        XCTAssertTrue(NATSSettings.isSubjectPrefix("site.doors"))
        XCTAssertFalse(NATSSettings.isSubjectPrefix("site..doors"))
    }
}
