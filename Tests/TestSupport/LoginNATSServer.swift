import Foundation

/// A nats-server with its own users (`authorization { users = [...] }`) or
/// a token (`authorization { token: … }`) instead of operator JWTs, on TLS
/// with a server certificate only (no client certificates) or on plain TCP:
/// a NATS the user already runs (issue 23 §2). The door logs in as
/// `front-door`; the peer (scripts/nats/peer.py) as `app`, or with the token.
public final class LoginNATSServer {
    public enum Mode { case users, token }
    private let home: ServerHome
    public var dir: URL { home.dir }
    public let port: Int
    public let tls: Bool
    public let mode: Mode
    private var pki: TestPKI { home.pki }
    public static let user = "front-door"
    public static let password = "correct horse battery staple"
    public static let appPassword = "the app's own password"
    public static let token = "s3cr3t-t0ken-of-the-site"

    public init(_ mode: Mode, tls: Bool = true) throws {
        home = try ServerHome("nats-login")
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

    public func path(_ name: String) -> String { home.path(name) }
    public var log: String { home.text("server.log") }
    public var url: String { (tls ? "tls" : "nats") + "://localhost:\(port)" }

    public func start() throws { try NATSServer.start(home, config: path("server.conf")) }

    public func stop() { home.stop() }

    /// scripts/nats/peer.py logged in as `app` (users) or with the token.
    public func peer() throws -> Peer {
        let login = mode == .token ? ["--token", Self.token] : ["--user", "app", "--password", Self.appPassword]
        return try Peer(
            arguments: [NATSServer.peerScript.path, "--url", "127.0.0.1:\(port)", "--ca", path("ca.crt")] + login)
    }
}
