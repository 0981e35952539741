import Foundation
import Synchronization

/// Debian's mosquitto on a free loopback port, configured by the project's
/// shipped `provisioning/mosquitto-doorgateway.conf` and `doorgateway.acl`
/// (mutual TLS, identity from the certificate's CN, per-door ACL), so a broken
/// shipped file fails the tests. Only what must differ on a test machine
/// changes: the listener port and the certificate paths (to a temporary
/// directory), the ACL path (to the shipped file itself), and lines added at
/// the end (no persistence, a log file, `user root`).
///
/// Certificates, named by CN as the shipped ACL knows them: `front-door` (the
/// door the tests run; its device id), `back-door` and `side-door` (two more
/// doors: the broker lets one connection per certificate, its CN being the
/// client id, so a test that needs two doors at once besides the door names two),
/// `homeassistant`, `phone-alice` (the default client of `publish`/`subscribe`),
/// and `intruder` from a second CA that the broker must refuse.
public final class MosquittoBroker {
    private let home: ServerHome
    public var dir: URL { home.dir }
    public let port: Int
    /// A second listener beside the door's, as on a broker that already
    /// serves zigbee2mqtt or Home Assistant: plain TCP on loopback, anonymous,
    /// with no ACL of ours. Its clients must keep working.
    public let neighbourPort: Int
    /// The broker's process (mosquitto, or nats-server after `startNATS`).
    public var process: Process? { home.process }
    private var pki: TestPKI { home.pki }
    /// The device id of the door whose certificate `configurationSection` names.
    public static let doorID = "front-door"
    public static let shippedConfiguration = Fixtures.root.appendingPathComponent(
        "provisioning/mosquitto-doorgateway.conf")
    public static let shippedACL = Fixtures.root.appendingPathComponent("provisioning/doorgateway.acl")

    public init() throws {
        home = try ServerHome("broker")
        port = try Self.freePort()
        neighbourPort = try Self.freePort()
        try makeCA("ca")
        try makeCA("otherca")
        try makeCert("broker", ca: "ca", cn: "localhost")
        for cn in [Self.doorID, "back-door", "side-door", "homeassistant", "phone-alice"] {
            try makeCert(cn, ca: "ca", cn: cn)
        }
        try makeCert("intruder", ca: "otherca", cn: "intruder")
        let conf = try Self.testConfiguration(
            shipped: String(contentsOf: Self.shippedConfiguration, encoding: .utf8),
            replacing: [
                "listener": "\(port) 127.0.0.1", "cafile": path("ca.crt"), "certfile": path("broker.crt"),
                "keyfile": path("broker.key"), "acl_file": Self.shippedACL.path,
            ])
        // `user root`: as root, mosquitto would drop to the mosquitto user,
        // which cannot read the 0600 keys in this private directory.
        let additions = """
            persistence false
            user root
            log_dest file \(path("mosquitto.log"))
            log_type all
            listener \(neighbourPort) 127.0.0.1
            allow_anonymous true
            """
        try (conf + additions + "\n").write(
            to: dir.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
    }

    /// The shipped file with the value of each `key` in `replacing` swapped;
    /// every key must be there exactly once (a renamed key fails loudly).
    public static func testConfiguration(shipped: String, replacing: [String: String]) throws -> String {
        var seen: [String: Int] = [:]
        let lines = shipped.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let key = line.split(separator: " ", maxSplits: 1).first.map(String.init) ?? ""
            guard let value = replacing[key] else { return String(line) }
            seen[key, default: 0] += 1
            return "\(key) \(value)"
        }
        for key in replacing.keys where seen[key] != 1 {
            throw NSError(
                domain: "broker", code: 3,
                userInfo: [
                    NSLocalizedDescriptionKey: "shipped broker configuration: '\(key)' appears \(seen[key] ?? 0) times"
                ])
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// mosquitto's log (every denied publish and subscription is logged there).
    public var log: String { home.text("mosquitto.log") }

    public func path(_ name: String) -> String { home.path(name) }

    /// The `[mqtt]` configuration of a door using this broker with the
    /// `front-door` certificate (so its device id must be `front-door`),
    /// compat commands on `compatTopic`.
    public func configurationSection(compatTopic: String) -> String {
        """
        [mqtt]
        enabled = true
        host = "localhost"
        port = \(port)
        uid_in_events = "full"
        [mqtt.tls]
        ca_file = "\(path("ca.crt"))"
        cert_file = "\(path("\(Self.doorID).crt"))"
        key_file = "\(path("\(Self.doorID).key"))"
        [mqtt.commands]
        compat_topics = ["\(compatTopic)"]
        """
    }

    public func start() throws {
        // Ready once mosquitto says it runs (every listener is open by then)
        // and the plain neighbour listener takes a connection. A bare TCP
        // probe of the doors' TLS listener is a client that leaves mid
        // handshake: mosquitto logs "OpenSSL Error … unexpected eof", and the
        // test that the shipped files load without an error read that line.
        try home.start(
            "/usr/sbin/mosquitto", ["-c", path("mosquitto.conf")], stderr: path("mosquitto.stderr"), domain: "broker",
            failure: "mosquitto did not listen on \(port): \(home.text("mosquitto.stderr"))\(log)"
        ) { self.log.contains(" running") && Self.canConnect(self.neighbourPort) }
    }

    /// The second, independent broker: Debian's nats-server with its MQTT
    /// listener (MQTT 3.1.1, QoS ≤ 1; it needs JetStream) on the same port,
    /// with the same certificates and client verification (mutual TLS).
    public func startNATS() throws {
        let clientPort = try Self.freePort()
        let conf = """
            server_name: doorgateway_test
            listen: 127.0.0.1:\(clientPort)
            jetstream { store_dir: "\(path("jetstream"))" }
            mqtt {
              listen: 127.0.0.1:\(port)
              tls {
                cert_file: "\(path("broker.crt"))"
                key_file: "\(path("broker.key"))"
                ca_file: "\(path("ca.crt"))"
                verify: true
              }
            }
            """
        try conf.write(to: dir.appendingPathComponent("nats.conf"), atomically: true, encoding: .utf8)
        try home.start(
            "/usr/sbin/nats-server", ["-c", path("nats.conf")], timeout: 15, domain: "broker",
            failure: "nats-server did not listen on \(port)"
        ) { Self.canConnect(port) }
    }

    /// SIGTERM, and SIGKILL if the broker has not gone 5 s later (`ServerProcess.stop`).
    public func stop() { home.stop() }

    /// An anonymous client of the neighbour listener (mosquitto_pub/sub arguments).
    public var neighbourArguments: [String] { ["-h", "127.0.0.1", "-p", "\(neighbourPort)"] }

    /// mosquitto_pub/sub arguments for a client certificate of this broker's CA (or the intruder's).
    public func clientArguments(_ name: String = "phone-alice") -> [String] {
        [
            "-h", "localhost", "-p", "\(port)", "--cafile", path("ca.crt"), "--cert", path("\(name).crt"), "--key",
            path("\(name).key"),
        ]
    }

    public func publish(_ topic: String, _ message: String, retain: Bool = false, as name: String = "phone-alice")
        throws
        -> ProcessResult
    {
        try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_pub"),
            clientArguments(name) + ["-q", "1", "-t", topic, "-m", message] + (retain ? ["-r"] : []), timeout: 20)
    }

    /// A running mosquitto_sub printing `topic|retain|payload` lines.
    public func subscribe(_ topic: String, as name: String = "phone-alice") throws -> Subscription {
        try Subscription(arguments: clientArguments(name) + ["-q", "1", "-t", topic, "-F", "%t|%r|%p"])
    }

    public final class Subscription: Sendable {
        let process = Process()
        let buffer = Mutex(Data())
        /// Returns once the broker has answered the subscription (SUBACK):
        /// `-d` makes mosquitto_sub print its protocol steps, `lines` leaves them
        /// out. It prints them with stdio, block-buffered into a pipe: `stdbuf
        /// -oL` (which execs it, same pid) makes them arrive line by line.
        public init(arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
            process.arguments = ["-oL", "/usr/bin/mosquitto_sub", "-d"] + arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            // Weak: the handler is held by the pipe the process holds; a strong
            // self made a cycle, deinit never ran and every mosquitto_sub
            // outlived the test run (reparented to pid 1).
            out.fileHandleForReading.readabilityHandler = { [weak self] h in
                let d = h.availableData
                guard let self else { return }
                self.buffer.withLock { $0 += d }
            }
            try process.run()
            // Subscribed: a message published from now on is one it is sent (if
            // its ACL lets it read it). A fixed pause here once let a "nothing
            // arrived" check pass with no subscription in place yet.
            let deadline = Date() + 10 * TestTiming.scale
            while !subscribed && process.isRunning && Date() < deadline { usleep(10_000) }
            guard subscribed else {
                let out = buffer.withLock { String(decoding: $0, as: UTF8.self) }
                throw NSError(
                    domain: "mosquitto_sub", code: 1,
                    userInfo: [NSLocalizedDescriptionKey: "no SUBACK (running: \(process.isRunning)): \(out)"])
            }
        }
        /// The broker's SUBACK has come.
        var subscribed: Bool { debugLines.contains { $0.hasPrefix("Subscribed (mid:") } }
        /// mosquitto_sub's `-d` lines (protocol steps).
        var debugLines: [String] { allLines.filter(Self.isDebug) }
        private var allLines: [String] {
            buffer.withLock { String(decoding: $0, as: UTF8.self).split(separator: "\n").map(String.init) }
        }
        private static func isDebug(_ line: String) -> Bool {
            line.hasPrefix("Client ") || line.hasPrefix("Subscribed (mid:")
        }
        deinit {
            (process.standardOutput as? Pipe)?.fileHandleForReading.readabilityHandler = nil
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
        public var isRunning: Bool { process.isRunning }
        /// The messages received (`-F` lines), without `-d`'s.
        public var lines: [String] { allLines.filter { !Self.isDebug($0) } }
        /// Waits until `predicate` holds for the lines received so far.
        @discardableResult
        public func wait(timeout: TimeInterval = 10, _ predicate: ([String]) -> Bool) -> [String] {
            poll(timeout: timeout) { () -> [String]? in
                let l = lines
                return predicate(l) ? l : nil
            } ?? lines
        }
    }

    private func makeCA(_ name: String) throws { try pki.makeCA(name) }

    private func makeCert(_ name: String, ca: String, cn: String) throws {
        try pki.makeCert(name, ca: ca, cn: cn)
    }

    /// A loopback TCP port free now, chosen at random *below* the kernel's ephemeral range
    /// (32768–60999): a port the kernel hands out for bind(0) is one it also hands out as
    /// the source port of any outgoing connection, and with the suite's tests side by side
    /// one such connection took a broker's port between this pick and mosquitto's listen
    /// ("Address already in use"). Below the range only another explicit pick can collide.
    public static func freePort() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<32_768)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { break }
            defer { close(fd) }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = UInt16(port).bigEndian
            let bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if bound == 0 { return port }
        }
        throw NSError(domain: "broker", code: 2, userInfo: [NSLocalizedDescriptionKey: "no free port in 20000–32767"])
    }

    public static func canConnect(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }
}
