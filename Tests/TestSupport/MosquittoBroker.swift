import Foundation

/// Debian's mosquitto on a free loopback port with mutual TLS: a CA, the
/// broker's certificate, client certificates from that CA, and one from a
/// second CA that the broker must refuse. Everything in a temporary directory.
public final class MosquittoBroker {
    public let dir: URL
    public let port: Int
    public private(set) var process: Process?

    public init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("broker-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        port = try Self.freePort()
        try makeCA("ca")
        try makeCA("otherca")
        try makeCert("broker", ca: "ca", cn: "localhost")
        try makeCert("door", ca: "ca", cn: "door")
        try makeCert("client", ca: "ca", cn: "client")
        try makeCert("intruder", ca: "otherca", cn: "intruder")
        // `user root`: as root, mosquitto would drop to the mosquitto user,
        // which cannot read the 0600 keys in this private directory.
        let conf = """
            listener \(port) 127.0.0.1
            cafile \(path("ca.crt"))
            certfile \(path("broker.crt"))
            keyfile \(path("broker.key"))
            require_certificate true
            use_identity_as_username true
            allow_anonymous false
            persistence false
            user root
            log_dest file \(path("mosquitto.log"))
            """
        try conf.write(to: dir.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: dir)
    }

    public func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// The `[mqtt]` configuration of a door using this broker with its
    /// `door` client certificate, compat commands on `compatTopic`.
    public func configurationSection(compatTopic: String) -> String {
        """
        [mqtt]
        enabled = true
        host = "localhost"
        port = \(port)
        uid_in_events = "full"
        [mqtt.tls]
        ca_file = "\(path("ca.crt"))"
        cert_file = "\(path("door.crt"))"
        key_file = "\(path("door.key"))"
        [mqtt.commands]
        compat_topics = ["\(compatTopic)"]
        """
    }

    public func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        p.arguments = ["-c", path("mosquitto.conf")]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        let deadline = Date() + 10
        while Date() < deadline {
            if Self.canConnect(port) { return }
            usleep(20_000)
        }
        throw NSError(
            domain: "broker", code: 1, userInfo: [NSLocalizedDescriptionKey: "mosquitto did not listen on \(port)"])
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
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/nats-server")
        p.arguments = ["-c", path("nats.conf")]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try p.run()
        process = p
        let deadline = Date() + 15
        while Date() < deadline {
            if Self.canConnect(port) { return }
            usleep(20_000)
        }
        throw NSError(
            domain: "broker", code: 2, userInfo: [NSLocalizedDescriptionKey: "nats-server did not listen on \(port)"])
    }

    public func stop() {
        guard let p = process else { return }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
        }
        process = nil
    }

    /// mosquitto_pub/sub arguments for a client certificate of this broker's CA (or the intruder's).
    public func clientArguments(_ name: String = "client") -> [String] {
        [
            "-h", "localhost", "-p", "\(port)", "--cafile", path("ca.crt"), "--cert", path("\(name).crt"), "--key",
            path("\(name).key"),
        ]
    }

    public func publish(_ topic: String, _ message: String, retain: Bool = false, as name: String = "client") throws
        -> ProcessResult
    {
        try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_pub"),
            clientArguments(name) + ["-q", "1", "-t", topic, "-m", message] + (retain ? ["-r"] : []), timeout: 20)
    }

    /// A running mosquitto_sub printing `topic|retain|payload` lines.
    public func subscribe(_ topic: String, as name: String = "client") throws -> Subscription {
        try Subscription(arguments: clientArguments(name) + ["-q", "1", "-t", topic, "-F", "%t|%r|%p"])
    }

    public final class Subscription {
        let process = Process()
        let lock = NSLock()
        var buffer = Data()
        public init(arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
            process.arguments = arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            out.fileHandleForReading.readabilityHandler = { [lock] h in
                let d = h.availableData
                lock.withLock { self.buffer += d }
            }
            try process.run()
            usleep(300_000)  // subscribed
        }
        deinit {
            process.terminate()
            process.waitUntilExit()
        }
        public var isRunning: Bool { process.isRunning }
        public var lines: [String] {
            lock.withLock { String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init) }
        }
        /// Waits until `predicate` holds for the lines received so far.
        @discardableResult
        public func wait(timeout: TimeInterval = 10, _ predicate: ([String]) -> Bool) -> [String] {
            let deadline = Date() + timeout
            while Date() < deadline {
                let l = lines
                if predicate(l) { return l }
                usleep(20_000)
            }
            return lines
        }
    }

    private func openssl(_ args: [String]) throws {
        let r = try Run.process(URL(fileURLWithPath: "/usr/bin/openssl"), args, timeout: 30)
        guard r.status == 0 else {
            throw NSError(domain: "openssl", code: Int(r.status), userInfo: [NSLocalizedDescriptionKey: r.stderr])
        }
    }

    private func makeCA(_ name: String) throws {
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
            "/CN=\(name)",
            "-keyout", path("\(name).key"), "-out", path("\(name).crt"),
        ])
    }

    private func makeCert(_ name: String, ca: String, cn: String) throws {
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(cn)", "-keyout",
            path("\(name).key"), "-out", path("\(name).csr"),
        ])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
            toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(ca).crt"), "-CAkey", path("\(ca).key"),
            "-CAcreateserial",
            "-days", "2", "-extfile", path("\(name).ext"), "-out", path("\(name).crt"),
        ])
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    static func canConnect(_ port: Int) -> Bool {
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
