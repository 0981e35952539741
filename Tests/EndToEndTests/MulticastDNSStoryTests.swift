import DoorCore
import Foundation
import TestSupport
import XCTest

/// `host = "broker.local"` on a real network: two network namespaces joined
/// by a veth pair — the broker's (Debian's mosquitto with the shipped
/// configuration and certificates from provisioning/make-certs.sh, and a
/// real multicast DNS responder, Debian's python3-zeroconf, answering for
/// `broker.local`) and the door's (gatewayd, which has no NSS plugin for
/// mDNS and must ask itself). Root only (ip netns).
final class MulticastDNSStoryTests: XCTestCase {
    static let ip = ["/usr/sbin/ip", "/sbin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let python = "/usr/bin/python3"
    static let responder = Fixtures.root.appendingPathComponent("scripts/mdns/responder.py").path
    static let makeCerts = Fixtures.root.appendingPathComponent("provisioning/make-certs.sh").path

    private var cleanups: [() -> Void] = []
    private var dir: URL!
    private var net: Network!

    struct Network {
        let broker: String
        let door: String
        let brokerAddress = "10.253.7.1"
        /// Where the broker moves to (as after a DHCP renewal).
        let brokerAddress2 = "10.253.7.3"
        let doorAddress = "10.253.7.2"
    }

    override func setUpWithError() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root for ip netns") }
        guard let ip = Self.ip else { throw XCTSkip("ip (iproute2) missing") }
        let probe = try Run.process(URL(fileURLWithPath: Self.python), ["-c", "import zeroconf"])
        guard probe.status == 0 else {
            throw XCTSkip("python3-zeroconf missing (make deps installs it): \(probe.stderr)")
        }
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("mdns-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        cleanups.append { [dir] in try? FileManager.default.removeItem(at: dir!) }
        let tag = String(UUID().uuidString.prefix(6)).lowercased()
        let n = Network(broker: "dgm-b-\(tag)", door: "dgm-d-\(tag)")
        let brokerLink = "dgmb\(tag)", doorLink = "dgmd\(tag)"
        for ns in [n.broker, n.door] {
            try sh([ip, "netns", "add", ns])
            cleanups.append { _ = try? Run.process(URL(fileURLWithPath: ip), ["netns", "del", ns]) }
        }
        try sh([ip, "link", "add", brokerLink, "type", "veth", "peer", "name", doorLink])
        try sh([ip, "link", "set", brokerLink, "netns", n.broker])
        try sh([ip, "link", "set", doorLink, "netns", n.door])
        try sh([ip, "-n", n.broker, "addr", "add", "\(n.brokerAddress)/24", "dev", brokerLink])
        try sh([ip, "-n", n.broker, "addr", "add", "\(n.brokerAddress2)/24", "dev", brokerLink])
        try sh([ip, "-n", n.door, "addr", "add", "\(n.doorAddress)/24", "dev", doorLink])
        for (ns, link) in [(n.broker, brokerLink), (n.door, doorLink)] {
            try sh([ip, "-n", ns, "link", "set", "lo", "up"])
            try sh([ip, "-n", ns, "link", "set", link, "up"])
        }
        net = n
        let certs = try Run.process(
            URL(fileURLWithPath: Self.makeCerts),
            [dir.path, "--server", "broker.local", "--server", "other.local", MosquittoBroker.doorID])
        guard certs.status == 0 else { throw E2EError("make-certs.sh: \(certs.stderr)") }
    }

    override func tearDown() {
        for c in cleanups.reversed() { c() }
        cleanups = []
    }

    private func sh(_ command: [String]) throws {
        let r = try Run.process(URL(fileURLWithPath: command[0]), Array(command.dropFirst()))
        guard r.status == 0 else { throw E2EError("\(command.joined(separator: " ")): \(r.stderr)") }
    }

    private func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// `command` in namespace `ns` (`ip netns exec` execs it: the pid is the
    /// command's), output to `log`; stopped (SIGTERM, then SIGKILL) and reaped
    /// at the end of the test, or by the returned closure.
    @discardableResult
    private func spawn(in ns: String, _ command: [String], log: String) throws -> () -> Void {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.ip!)
        p.arguments = ["netns", "exec", ns] + command
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = FileHandle.nullDevice
        try p.run()
        var stopped = false
        let stop = {
            guard !stopped else { return }
            stopped = true
            if p.isRunning { kill(p.processIdentifier, SIGTERM) }
            let deadline = Date() + 5
            while p.isRunning && Date() < deadline { usleep(20_000) }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
            try? handle.close()
        }
        cleanups.append(stop)
        return stop
    }

    private func waitForText(_ file: String, _ text: String, timeout: TimeInterval = 10) throws {
        let content = { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }
        try waitFor("\(file): \(text.debugDescription)", timeout: timeout, interval: 0.05, context: content) {
            content().contains(text) ? true : nil
        }
    }

    /// The shipped broker configuration, listening on `address`:8883 with the
    /// `certificate` (`broker.local` or `other.local`) from make-certs.sh.
    private func startBroker(on address: String, certificate: String, name: String) throws -> () -> Void {
        let conf = try MosquittoBroker.testConfiguration(
            shipped: String(contentsOf: MosquittoBroker.shippedConfiguration, encoding: .utf8),
            replacing: [
                "listener": "8883 \(address)", "cafile": path("ca.crt"), "certfile": path("\(certificate).crt"),
                "keyfile": path("\(certificate).key"), "acl_file": MosquittoBroker.shippedACL.path,
            ])
        let log = path("\(name).log")
        try (conf + "persistence false\nuser root\nlog_dest file \(log)\nlog_type all\n").write(
            toFile: path("\(name).conf"), atomically: true, encoding: .utf8)
        let stop = try spawn(
            in: net.broker, ["/usr/sbin/mosquitto", "-c", path("\(name).conf")], log: path("\(name).out"))
        try waitForText(log, "Opening ipv4 listen socket on port 8883")
        return stop
    }

    private func startResponder(_ host: String, _ address: String) throws -> () -> Void {
        let out = path("responder-\(address).out")
        let stop = try spawn(in: net.broker, [Self.python, Self.responder, host, address], log: out)
        try waitForText(out, "ready")
        return stop
    }

    private func door(host: String) throws -> GatewayUnderTest {
        let g = try GatewayUnderTest(
            extra: """
                [mqtt]
                enabled = true
                host = "\(host)"
                port = 8883
                [mqtt.tls]
                ca_file = "\(path("ca.crt"))"
                cert_file = "\(path("\(MosquittoBroker.doorID).crt"))"
                key_file = "\(path("\(MosquittoBroker.doorID).key"))"
                """,
            deviceID: MosquittoBroker.doorID)
        return inDoorNamespace(g)
    }

    /// `g` run in the door's namespace, stopped (its pn532-sim ended) at tear-down.
    private func inDoorNamespace(_ g: GatewayUnderTest) -> GatewayUnderTest {
        g.launcher = [Self.ip!, "netns", "exec", net.door]
        cleanups.append { [g] in
            g.stop()
            g.killOrphanedSimulator()
        }
        return g
    }

    private func broker(_ g: GatewayUnderTest) throws -> JSONValue? { try g.status()["broker"] }

    /// `gatewayctl config check --broker` in the door's namespace.
    private func checkBroker(_ g: GatewayUnderTest) throws -> ProcessResult {
        try Run.process(
            URL(fileURLWithPath: Self.ip!),
            [
                "netns", "exec", net.door, GatewayUnderTest.gateway.path, "ctl", "config", "check", "--broker",
                g.configFile.path,
            ], timeout: 30)
    }

    /// The door connects to `broker.local` by the address the responder
    /// gives, with the certificate checked against `broker.local`; when the
    /// broker comes back at another address, the door asks again and follows.
    func testTheDoorFindsItsBrokerByItsLocalNameAndFollowsItToANewAddress() throws {
        let stopBroker = try startBroker(on: net.brokerAddress, certificate: "broker.local", name: "broker1")
        let stopResponder = try startResponder("broker.local", net.brokerAddress)
        let g = try door(host: "broker.local")
        try g.start()
        try waitUntil(timeout: 20) { (try self.broker(g)?["connected"]) == .bool(true) }
        XCTAssertTrue(g.log.contains("broker.local is \(net.brokerAddress) (multicast DNS)"), g.log)
        try waitForText(path("broker1.log"), "from \(net.doorAddress)")
        // `gatewayctl config check --broker` finds it the same way.
        let check = try checkBroker(g)
        XCTAssertEqual(check.status, 0, check.stdout + check.stderr)
        XCTAssertTrue(check.stdout.contains("published and received back"), check.stdout)
        XCTAssertTrue(
            try String(contentsOfFile: path("broker1.log"), encoding: .utf8).contains(
                "as \(MosquittoBroker.doorID)"))

        // The broker's host gets a new address: the old broker and its
        // answers go, a broker on the new address and its answers come.
        stopBroker()
        stopResponder()
        try waitUntil(timeout: 20) { (try self.broker(g)?["connected"]) != .bool(true) }
        _ = try startBroker(on: net.brokerAddress2, certificate: "broker.local", name: "broker2")
        _ = try startResponder("broker.local", net.brokerAddress2)
        try waitUntil(timeout: 90) { (try self.broker(g)?["connected"]) == .bool(true) }
        XCTAssertTrue(g.log.contains("broker.local is \(net.brokerAddress2) (multicast DNS)"), g.log)
        try waitForText(path("broker2.log"), "from \(net.doorAddress)")
        XCTAssertEqual(g.stop(), 0, g.log)
    }

    /// The broker is told the name it is reached by (SNI), not the address:
    /// `openssl s_server -servername broker.local -servername_fatal` ends a
    /// handshake that names anything else (measured before the fix: it got
    /// `10.253.7.1` and the door saw `tlsv1 unrecognized name`).
    func testTheBrokerIsToldTheNameItIsReachedBy() throws {
        _ = try startResponder("broker.local", net.brokerAddress)
        let cert = path("broker.local.crt"), key = path("broker.local.key")
        // s_server ends at the end of its standard input: a pipe kept open.
        let input = Pipe()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.ip!)
        p.arguments = [
            "netns", "exec", net.broker, "openssl", "s_server", "-accept", "\(net.brokerAddress):8883", "-cert", cert,
            "-key", key, "-cert2", cert, "-key2", key, "-servername", "broker.local", "-servername_fatal", "-naccept",
            "1",
        ]
        let out = path("s_server.out")
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = input
        try p.run()
        cleanups.append {
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
            try? input.fileHandleForWriting.close()
        }
        try waitForText(out, "ACCEPT")
        let g = try door(host: "broker.local")
        _ = try checkBroker(g)  // no MQTT behind s_server: only the handshake counts
        let seen = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data(), as: UTF8.self)
        XCTAssertTrue(seen.contains("Hostname in TLS extension: \"broker.local\""), seen)
        XCTAssertFalse(seen.contains("callback failed"), seen)
    }

    /// Verification by name still holds: the responder sends the door to a
    /// broker whose certificate (same CA) names `other.local`, and the door
    /// refuses it, saying why; the door still opens for its own tags.
    func testABrokerWithACertificateForAnotherNameIsRefused() throws {
        _ = try startBroker(on: net.brokerAddress, certificate: "other.local", name: "impostor")
        _ = try startResponder("broker.local", net.brokerAddress)
        let g = try door(host: "broker.local")
        try g.start()
        var last: JSONValue?
        let refused = try waitUntil(timeout: 20) {
            last = try self.broker(g)
            return last?["last_error"]?.stringValue?.contains("certificate verify failed") == true
        }
        if !refused { XCTFail("broker status: \(String(describing: last))\n\(g.log.suffix(3000))") }
        XCTAssertNotEqual(last?["connected"], .bool(true), "\(String(describing: last))")
        XCTAssertTrue(g.log.contains("broker.local is \(net.brokerAddress)"), g.log)
        try decidesLocally(g)
        XCTAssertNotEqual(try broker(g)?["connected"], .bool(true))
        let brokerLog = try String(contentsOfFile: path("impostor.log"), encoding: .utf8)
        XCTAssertFalse(brokerLog.contains("as \(MosquittoBroker.doorID)"), brokerLog)
        let check = try checkBroker(g)
        XCTAssertEqual(check.status, 1, check.stdout)
        XCTAssertTrue(check.stderr.contains("certificate verify failed"), check.stderr)
        XCTAssertEqual(g.stop(), 0, g.log)
    }

    /// A name nobody answers for is a broker outage: logged, retried, never
    /// fatal; the door decides locally all along.
    func testANameNobodyAnswersIsRetriedWhileTheDoorDecidesLocally() throws {
        let g = try door(host: "nobody.local")
        try g.start()
        try waitUntil(timeout: 30) {
            g.log.components(separatedBy: "nobody.local: no multicast DNS answer").count - 1 >= 2
        }
        let status = try broker(g)
        XCTAssertEqual(status?["connected"], .bool(false), "\(String(describing: status))")
        XCTAssertTrue(
            status?["last_error"]?.stringValue?.contains("nobody.local: no multicast DNS answer") == true,
            "\(String(describing: status))")
        XCTAssertTrue(g.log.contains("retrying"), g.log)
        try decidesLocally(g)
        XCTAssertEqual(g.stop(), 0, g.log)
    }

    /// The test NATS server (operator JWTs, TLS; TestSupport's NATSServer)
    /// run in the broker's namespace on `address`:4222, its certificate for
    /// `name`.
    private func startNATS(on address: String, name: String) throws -> (NATSServer, () -> Void) {
        let server = try NATSServer(serverNames: "DNS:\(name)")
        cleanups.append { _ = server }
        let stop = try spawn(
            in: net.broker,
            [
                "/usr/sbin/nats-server", "-c", server.path("k/server.conf"), "-a", address, "-p", "4222", "-l",
                server.path("server.log"),
            ],
            log: server.path("nats.out"))
        try waitForText(server.path("server.log"), "Server is ready")
        return (server, stop)
    }

    /// A door with `transport = "nats"`, `tls://broker.local:4222`, and the
    /// server's door credentials in its state directory.
    private func natsDoor(_ server: NATSServer) throws -> GatewayUnderTest {
        let g = try GatewayUnderTest(
            extra: try server.configurationSection(servers: "tls://broker.local:4222"), deviceID: NATSServer.device)
        let nats = g.dir.appendingPathComponent("state/nats")
        try FileManager.default.createDirectory(at: nats, withIntermediateDirectories: true)
        for file in ["user.jwt", "user.nk"] {
            try FileManager.default.copyItem(
                atPath: server.path("state/nats/\(file)"), toPath: nats.appendingPathComponent(file).path)
        }
        return inDoorNamespace(g)
    }

    /// The same over NATS: `tls://broker.local:4222` is connected to by the
    /// address the responder gives, libnats verifying the name
    /// (natsOptions_SetExpectedHostname); a server whose certificate names
    /// another host is refused.
    func testNATSFindsItsServerByItsLocalNameAndChecksItsName() throws {
        _ = try startResponder("broker.local", net.brokerAddress)
        let (good, stopGood) = try startNATS(on: net.brokerAddress, name: "broker.local")
        let g = try natsDoor(good)
        try g.start()
        try waitUntil(timeout: 20) { (try self.broker(g)?["connected"]) == .bool(true) }
        XCTAssertEqual(try broker(g)?["connected"], .bool(true), g.log)
        XCTAssertTrue(
            g.log.contains("tls://broker.local:4222 is tls://\(net.brokerAddress):4222 (multicast DNS)"), g.log)
        XCTAssertEqual(g.stop(), 0, g.log)
        stopGood()

        let (other, _) = try startNATS(on: net.brokerAddress, name: "other.local")
        let refused = try natsDoor(other)
        try refused.start()
        var last: JSONValue?
        try waitUntil(timeout: 20) {
            last = try self.broker(refused)
            return last?["last_error"]?.stringValue?.contains("hostname mismatch") == true
        }
        XCTAssertNotEqual(last?["connected"], .bool(true), "\(String(describing: last))\n\(refused.log)")
        XCTAssertTrue(refused.log.contains("tls://broker.local:4222 is tls://\(net.brokerAddress):4222"), refused.log)
        try decidesLocally(refused)
        XCTAssertNotEqual(try broker(refused)?["connected"], .bool(true), refused.log)
        XCTAssertEqual(refused.stop(), 0, refused.log)
    }

    /// Issue 32 L-6: `host = "broker.local"`, plain TCP and a password: the
    /// one who answers the multicast DNS query (here the real responder,
    /// sending the door to a listener that records every byte) would get
    /// the CONNECT with the password. The file is refused — by gatewayd at
    /// start and by `config check`, each naming the key that accepts it —
    /// and the listener receives nothing; with
    /// `allow_password_over_plain_mdns = true` the door starts, warns, and
    /// sends it (the key does what it says). Before the fix the door started
    /// and the listener got the password.
    func testAPasswordOverPlainTCPToAnMDNSNameIsRefused() throws {
        let password = "mdns-secret-\(UUID().uuidString.prefix(8))"
        let passwordFile = path("mqtt.password")
        try (password + "\n").write(toFile: passwordFile, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(passwordFile, 0o600), 0)
        // Whoever answers for broker.local: a listener that records what it is sent.
        let received = path("listener.bin")
        let listener = """
            import socket, sys
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((sys.argv[1], 1883)); s.listen(8); print("listening", flush=True)
            while True:
                c, _ = s.accept(); c.settimeout(2)
                try:
                    while True:
                        b = c.recv(4096)
                        if not b: break
                        open(sys.argv[2], "ab").write(b)
                except OSError: pass
                c.close()
            """
        try spawn(
            in: net.broker, [Self.python, "-c", listener, net.brokerAddress, received], log: path("listener.out"))
        try waitForText(path("listener.out"), "listening")
        _ = try startResponder("broker.local", net.brokerAddress)
        func door(allow: Bool) throws -> GatewayUnderTest {
            let g = try GatewayUnderTest(
                extra: """
                    [mqtt]
                    enabled = true
                    host = "broker.local"
                    username = "\(MosquittoBroker.doorID)"
                    password_file = "\(passwordFile)"
                    \(allow ? "allow_password_over_plain_mdns = true" : "")
                    [mqtt.tls]
                    enabled = false
                    """,
                deviceID: MosquittoBroker.doorID)
            return inDoorNamespace(g)
        }
        func sent() -> String {
            String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: received))) ?? Data(), as: UTF8.self)
        }

        let g = try door(allow: false)
        let check = try Run.process(GatewayUnderTest.gateway, ["ctl", "config", "check", g.configFile.path])
        XCTAssertEqual(check.status, 1, check.stdout)
        XCTAssertTrue(check.stderr.contains("mqtt.password_file"), check.stderr)
        XCTAssertTrue(check.stderr.contains("allow_password_over_plain_mdns = true"), check.stderr)
        do {
            try g.start()
            // The old door: it resolves broker.local and sends its CONNECT.
            _ = try? waitUntil(timeout: 20) { sent().contains(password) }
            XCTFail("gatewayd started with a password over plain TCP to broker.local:\n\(g.log.suffix(2000))")
        } catch {
            XCTAssertTrue("\(error)".contains("mqtt.password_file"), "\(error)")
            XCTAssertTrue("\(error)".contains("multicast DNS"), "\(error)")
        }
        XCTAssertFalse(sent().contains(password), "the password reached whoever answered for broker.local")
        XCTAssertEqual(sent(), "", "nothing was sent to whoever answered for broker.local")

        // Accepted by name: it starts, says so, and the password goes where the answer pointed.
        let allowed = try door(allow: true)
        let warned = try Run.process(GatewayUnderTest.gateway, ["ctl", "config", "check", allowed.configFile.path])
        XCTAssertEqual(warned.status, 0, warned.stderr)
        XCTAssertTrue(warned.stderr.contains("warning: mqtt.allow_password_over_plain_mdns = true"), warned.stderr)
        try allowed.start()
        XCTAssertTrue(try waitUntil(timeout: 20) { sent().contains(password) }, allowed.log)
        XCTAssertFalse(allowed.log.contains(password), "the password is never logged")
        XCTAssertEqual(allowed.stop(), 0, allowed.log)
    }

    /// A tag is issued and then opens the door, with no broker.
    private func decidesLocally(_ g: GatewayUnderTest) throws {
        try g.provisionTag("04112233445566", arm: ["provision", "--action", "0", "--label", "desk"])
        try g.retap(expect: "access_granted")
        try g.waitForOutput("strike", "unlocked")
    }
}
