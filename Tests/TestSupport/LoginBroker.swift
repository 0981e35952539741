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
    private var server: ServerProcess?
    public var process: Process? { server?.process }
    private var pki: TestPKI { TestPKI(dir) }
    /// The user the door logs in as, and its password.
    public static let user = "front-door"
    public static let password = "correct horse battery staple"

    public init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "login-broker-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        tlsPort = try MosquittoBroker.freePort()
        plainPort = try MosquittoBroker.freePort()
        try pki.makeCA("ca", cn: "addon-ca")
        try pki.makeCert("broker", cn: "localhost")
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
        let p = try ServerProcess("/usr/sbin/mosquitto", ["-c", path("mosquitto.conf")])
        server = p
        if p.waitUntilReady({ MosquittoBroker.canConnect(tlsPort) && MosquittoBroker.canConnect(plainPort) }) {
            return
        }
        stop()
        throw NSError(
            domain: "broker", code: 1, userInfo: [NSLocalizedDescriptionKey: "mosquitto did not listen: \(log)"])
    }

    public func stop() {
        server?.stop()
        server = nil
    }
}
