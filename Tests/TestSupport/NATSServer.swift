import DoorCore
import Foundation
import Synchronization

/// Debian's nats-server on a free loopback port in operator/JWT mode
/// (`resolver: MEMORY`) with mutual TLS; the operator, accounts, users and
/// their JWTs are minted at test time by scripts/nats/mkjwt.py (no nsc).
/// Users: `door` (the door under test, device `front-door`, prefix `dg`) and
/// `app` (the peer: the door's telemetry in, commands and JWTs out).
public final class NATSServer {
    public static let prefix = "dg"
    public static let device = "front-door"
    public static var base: String { "\(prefix).\(device)" }
    public static let script = Fixtures.root.appendingPathComponent("scripts/nats/mkjwt.py")
    public static let peerScript = Fixtures.root.appendingPathComponent("scripts/nats/peer.py")

    private let home: ServerHome
    public var dir: URL { home.dir }
    public let port: Int
    private var pki: TestPKI { home.pki }

    /// `doorPublish`: what the door may publish (default: everything under its base but `tag`).
    /// `serverNames`: the server certificate's subjectAltName.
    public init(
        doorJWTSeconds: Int = 0, doorPublish: [String]? = nil, jetStream: Bool = false,
        serverNames: String = "DNS:localhost,IP:127.0.0.1"
    ) throws {
        home = try ServerHome("nats")
        port = try MosquittoBroker.freePort()
        try pki.makeCA("ca")
        try makeCert("server", names: serverNames)
        for name in ["door", "app"] { try makeCert(name) }
        try mkjwt(
            ["init", path("k"), "--port", "\(port)", "--tls", path("ca.crt"), path("server.crt"), path("server.key")]
                + (jetStream ? ["--jetstream"] : []))
        let b = Self.base
        let pub =
            doorPublish ?? [
                "\(b).event", "\(b).telemetry", "\(b).state", "\(b).availability", "\(b).last_access", "\(b).report",
                "\(b).creds.request",
            ]
        try mkjwt(
            [
                "user", path("k"), "door", "--pub", pub.joined(separator: ","), "--sub",
                "\(b).command.>,\(b).creds.jwt,\(b).inbox.>",
            ]
                + (doorJWTSeconds > 0 ? ["--exp", "\(doorJWTSeconds)"] : []))
        try mkjwt([
            "user", path("k"), "app", "--pub", "\(b).command.>,\(b).creds.jwt,$JS.API.>", "--sub",
            "\(b).>,_INBOX.peer.>",
        ])
        // The door's state directory: user.jwt and user.nk, as `gatewayctl creds import` leaves them.
        try FileManager.default.createDirectory(atPath: path("state/nats"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: path("k/door.jwt"), toPath: path("state/nats/user.jwt"))
        try FileManager.default.copyItem(atPath: path("k/door.nk"), toPath: path("state/nats/user.nk"))
    }

    public func path(_ name: String) -> String { home.path(name) }

    public func start() throws { try Self.start(home, config: path("k/server.conf")) }

    /// nats-server on `config`, its log `server.log` in `home`, ready once it says so.
    static func start(_ home: ServerHome, config: String) throws {
        try home.start(
            "/usr/sbin/nats-server", ["-c", config, "-l", home.path("server.log")], domain: "nats",
            failure: "nats-server did not start: \(home.text("server.log"))"
        ) { home.text("server.log").contains("Server is ready") }
    }

    public func stop() { home.stop() }

    public var log: String { home.text("server.log") }

    /// The `[remote]`, `[nats]` and `[nats.tls]` configuration of a door
    /// logging in as `door` (so its device id must be `device`): `servers`
    /// (default: this server on localhost), and with `accountKeys` the doors'
    /// account key, whose JWTs the door accepts when pushed.
    public func configurationSection(servers: String? = nil, accountKeys: Bool = true) throws -> String {
        """
        [remote]
        transport = "nats"
        [nats]
        servers = ["\(servers ?? "tls://localhost:\(port)")"]
        prefix = "\(Self.prefix)"
        \(accountKeys ? "account_keys = [\"\(try accountPublicKey())\"]" : "")
        [nats.tls]
        ca_file = "\(path("ca.crt"))"
        cert_file = "\(path("door.crt"))"
        key_file = "\(path("door.key"))"
        """
    }

    /// A new JWT for the door's key (same permissions), valid `seconds`.
    /// `issuer`: "doors" (the account the server knows), "spare" (an
    /// account key the server was never told of) or "foreign" (a fresh key);
    /// `issuedAt`/`expiresAt` override the times (Unix seconds).
    public func reissueDoorJWT(
        seconds: Int, issuer: String = "doors", issuedAt: Int64? = nil, expiresAt: Int64? = nil
    ) throws -> String {
        var args = [Self.script.path, "reissue", path("k"), "door", "--exp", "\(seconds)", "--issuer", issuer]
        if let issuedAt { args += ["--iat", "\(issuedAt)"] }
        if let expiresAt { args += ["--exp-at", "\(expiresAt)"] }
        let r = try Run.process(URL(fileURLWithPath: "/usr/bin/python3"), args, timeout: 30)
        guard r.status == 0 else {
            throw NSError(domain: "mkjwt", code: 1, userInfo: [NSLocalizedDescriptionKey: r.stderr])
        }
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The public key (`A…`) of the doors' account ("doors") or of the spare
    /// account key the server does not know ("spare").
    public func accountPublicKey(_ name: String = "doors") throws -> String {
        let r = try Run.process(
            URL(fileURLWithPath: "/usr/bin/python3"), [Self.script.path, "account-key", path("k"), name], timeout: 30)
        guard r.status == 0 else {
            throw NSError(domain: "mkjwt", code: 1, userInfo: [NSLocalizedDescriptionKey: r.stderr])
        }
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// scripts/nats/peer.py connected as `user` (default: the app).
    public func peer(as user: String = "app") throws -> Peer {
        try Peer(arguments: [
            Self.peerScript.path, "--url", "127.0.0.1:\(port)", "--creds", path("k/\(user).creds"), "--ca",
            path("ca.crt"), "--cert", path("\(user).crt"), "--key", path("\(user).key"),
        ])
    }

    /// Another user of the doors' account: `k/<name>.creds` (JWT and seed,
    /// what `gatewayctl creds import` takes) and a client certificate
    /// `<name>.crt`/`<name>.key` from the test CA.
    public func addUser(_ name: String, publish: [String], subscribe: [String]) throws {
        // mkjwt.py keeps the operator's and the accounts' files in the same directory.
        guard !["operator", "keys", "server"].contains(name) else {
            throw NSError(domain: "mkjwt", code: 2, userInfo: [NSLocalizedDescriptionKey: "\(name): a reserved name"])
        }
        try makeCert(name)
        try mkjwt([
            "user", path("k"), name, "--pub", publish.joined(separator: ","), "--sub", subscribe.joined(separator: ","),
        ])
    }

    private func mkjwt(_ args: [String]) throws {
        let r = try Run.process(URL(fileURLWithPath: "/usr/bin/python3"), [Self.script.path] + args, timeout: 30)
        guard r.status == 0 else {
            throw NSError(domain: "mkjwt", code: 1, userInfo: [NSLocalizedDescriptionKey: r.stderr])
        }
    }

    /// `<name>.crt`/`<name>.key` from the test CA, CN `name`.
    public func makeCert(_ name: String, names: String = "DNS:localhost,IP:127.0.0.1") throws {
        try pki.makeCert(name, names: names)
    }
}

/// scripts/nats/peer.py: commands on stdin, JSON lines on stdout. Killed and
/// reaped when released (or by `close`).
public final class Peer: Sendable {
    public let process = Process()
    private let input = Pipe()
    private let buffer = Mutex(Data())

    public init(arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = input
        out.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            guard let self else { return }
            self.buffer.withLock { $0 += d }
        }
        try process.run()
        guard !wait({ $0.contains { $0["ready"] != nil } }).isEmpty else {
            close()
            throw NSError(domain: "peer", code: 1, userInfo: [NSLocalizedDescriptionKey: "the peer did not connect"])
        }
    }

    deinit { close() }

    public func close() {
        (process.standardOutput as? Pipe)?.fileHandleForReading.readabilityHandler = nil
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    public func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }

    public func subscribe(_ subject: String) {
        send("SUB \(subject)")
        send("FLUSH")
        _ = wait { $0.contains { $0["flushed"] != nil } }
        buffer.withLock { $0 = Data() }
    }

    public var lines: [[String: String]] {
        let text = buffer.withLock { String(decoding: $0, as: UTF8.self) }
        return text.split(separator: "\n").compactMap { line in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return o.mapValues { "\($0)" }
        }
    }

    /// Messages received on `subject`.
    public func messages(_ subject: String) -> [String] {
        lines.filter { $0["subject"] == subject }.compactMap { $0["payload"] }
    }

    @discardableResult
    public func wait(timeout: TimeInterval = 10, _ predicate: ([[String: String]]) -> Bool) -> [[String: String]] {
        poll(timeout: timeout) { () -> [[String: String]]? in
            let l = lines
            return predicate(l) ? l : nil
        } ?? []
    }
}
