import Foundation

/// A broker as Home Assistant OS's Mosquitto add-on runs it, or a mosquitto
/// that already serves other clients: users with passwords (mosquitto_passwd),
/// no ACL of ours, a TLS listener with a server certificate only (no client
/// certificates) and a plain-TCP one. It stands for the user's broker, not
/// ours: the shipped provisioning/ files are tested by `MosquittoBroker`.
public final class LoginBroker {
    public let dir: URL
    public let tlsPort: Int
    public let plainPort: Int
    public private(set) var process: Process?
    /// The user the door logs in as, and its password.
    public static let user = "front-door"
    public static let password = "correct horse battery staple"

    public init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "login-broker-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        tlsPort = try MosquittoBroker.freePort()
        plainPort = try MosquittoBroker.freePort()
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
            "/CN=addon-ca", "-keyout", path("ca.key"), "-out", path("ca.crt"),
        ])
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
            "-keyout", path("broker.key"), "-out", path("broker.csr"),
        ])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
            toFile: path("broker.ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", path("broker.csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-days", "2", "-extfile", path("broker.ext"), "-out", path("broker.crt"),
        ])
        _ = FileManager.default.createFile(atPath: path("passwd"), contents: nil)
        let pw = try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_passwd"), ["-b", path("passwd"), Self.user, Self.password],
            timeout: 20)
        guard pw.status == 0 else { throw NSError(domain: "mosquitto_passwd", code: Int(pw.status)) }
        let conf = """
            per_listener_settings true
            persistence false
            user root
            log_dest file \(path("mosquitto.log"))
            log_type all
            listener \(tlsPort) 127.0.0.1
            cafile \(path("ca.crt"))
            certfile \(path("broker.crt"))
            keyfile \(path("broker.key"))
            require_certificate false
            allow_anonymous false
            password_file \(path("passwd"))
            listener \(plainPort) 127.0.0.1
            allow_anonymous false
            password_file \(path("passwd"))

            """
        try conf.write(to: dir.appendingPathComponent("mosquitto.conf"), atomically: true, encoding: .utf8)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: dir)
    }

    public func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
    public var log: String { (try? String(contentsOfFile: path("mosquitto.log"), encoding: .utf8)) ?? "" }

    public func start() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        p.arguments = ["-c", path("mosquitto.conf")]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        let deadline = Date() + 10
        while Date() < deadline && p.isRunning {
            if MosquittoBroker.canConnect(tlsPort) && MosquittoBroker.canConnect(plainPort) { return }
            usleep(20_000)
        }
        throw NSError(
            domain: "broker", code: 1, userInfo: [NSLocalizedDescriptionKey: "mosquitto did not listen: \(log)"])
    }

    public func stop() {
        guard let p = process else { return }
        if p.isRunning {
            p.terminate()
            p.waitUntilExit()
        }
        process = nil
    }

    private func openssl(_ args: [String]) throws {
        let r = try Run.process(URL(fileURLWithPath: "/usr/bin/openssl"), args, timeout: 30)
        guard r.status == 0 else {
            throw NSError(domain: "openssl", code: Int(r.status), userInfo: [NSLocalizedDescriptionKey: r.stderr])
        }
    }
}
