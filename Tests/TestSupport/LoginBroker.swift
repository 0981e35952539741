import Foundation

/// A broker as Home Assistant OS's Mosquitto add-on runs it, or a mosquitto
/// that already serves other clients: users with passwords (mosquitto_passwd),
/// no ACL of ours, a TLS listener with a server certificate only (no client
/// certificates) and a plain-TCP one. It stands for the user's broker, not
/// ours: the shipped provisioning/ files are tested by `MosquittoBroker`.
public final class LoginBroker {
    private let home: ServerHome
    public var dir: URL { home.dir }
    public let tlsPort: Int
    public let plainPort: Int
    public var process: Process? { home.process }
    private var pki: TestPKI { home.pki }
    /// The user the door logs in as, and its password.
    public static let user = "front-door"
    public static let password = "correct horse battery staple"

    public init() throws {
        home = try ServerHome("login-broker")
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

    public func path(_ name: String) -> String { home.path(name) }
    public var log: String { home.text("mosquitto.log") }

    public func start() throws {
        try home.start(
            "/usr/sbin/mosquitto", ["-c", path("mosquitto.conf")], domain: "broker",
            failure: "mosquitto did not listen: \(log)"
        ) { MosquittoBroker.canConnect(tlsPort) && MosquittoBroker.canConnect(plainPort) }
    }

    public func stop() { home.stop() }
}
