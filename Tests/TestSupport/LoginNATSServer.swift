import Foundation

/// A nats-server with its own users (`authorization { users = [...] }`) or
/// a token (`authorization { token: … }`) instead of operator JWTs, on TLS
/// with a server certificate only (no client certificates) or on plain TCP:
/// a NATS the user already runs (issue 23 §2). The door logs in as
/// `front-door`; the peer (scripts/nats/peer.py) as `app`, or with the token.
public final class LoginNATSServer {
    public enum Mode { case users, token }
    public let dir: URL
    public let port: Int
    public let tls: Bool
    public let mode: Mode
    private var server: ServerProcess?
    private var pki: TestPKI { TestPKI(dir) }
    public static let user = "front-door"
    public static let password = "correct horse battery staple"
    public static let appPassword = "the app's own password"
    public static let token = "s3cr3t-t0ken-of-the-site"

    public init(_ mode: Mode, tls: Bool = true) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("nats-login-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        port = try MosquittoBroker.freePort()
        self.tls = tls
        self.mode = mode
        try pki.makeCA("ca", cn: "nats-ca")
        try pki.makeCert("server", cn: "localhost")
        let authorization: String
        switch mode {
        case .users:
            authorization = """
                authorization {
                  users = [
                    {user: "\(Self.user)", password: "\(Self.password)"}
                    {user: "app", password: "\(Self.appPassword)"}
                  ]
                }
                """
        case .token:
            authorization = "authorization { token: \"\(Self.token)\" }"
        }
        let tlsBlock = tls ? "tls { cert_file: \"\(path("server.crt"))\"\nkey_file: \"\(path("server.key"))\" }" : ""
        try """
        listen: 127.0.0.1:\(port)
        \(tlsBlock)
        \(authorization)

        """.write(to: dir.appendingPathComponent("server.conf"), atomically: true, encoding: .utf8)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: dir)
    }

    public func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
    public var log: String { (try? String(contentsOfFile: path("server.log"), encoding: .utf8)) ?? "" }
    public var url: String { (tls ? "tls" : "nats") + "://localhost:\(port)" }

    public func start() throws {
        let p = try ServerProcess("/usr/sbin/nats-server", ["-c", path("server.conf"), "-l", path("server.log")])
        server = p
        if p.waitUntilReady({ log.contains("Server is ready") }) { return }
        stop()
        throw NSError(
            domain: "nats", code: 1, userInfo: [NSLocalizedDescriptionKey: "nats-server did not start: \(log)"])
    }

    public func stop() {
        server?.stop()
        server = nil
    }

    /// scripts/nats/peer.py logged in as `app` (users) or with the token.
    public func peer() throws -> Peer {
        let login = mode == .token ? ["--token", Self.token] : ["--user", "app", "--password", Self.appPassword]
        return try Peer(
            arguments: [NATSServer.peerScript.path, "--url", "127.0.0.1:\(port)", "--ca", path("ca.crt")] + login)
    }
}
