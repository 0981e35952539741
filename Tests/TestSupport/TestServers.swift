import Foundation

/// The certificates of a test server, made with openssl in `dir`: P-256 keys,
/// valid 2 days, `<name>.key` and `<name>.crt`. The one copy the brokers and
/// NATS servers of TestSupport share (MosquittoBroker, LoginBroker,
/// NATSServer, LoginNATSServer).
public struct TestPKI: Sendable {
    public let dir: URL
    public init(_ dir: URL) { self.dir = dir }

    public func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    public func openssl(_ args: [String]) throws {
        let r = try Run.process(URL(fileURLWithPath: "/usr/bin/openssl"), args, timeout: 30)
        guard r.status == 0 else {
            throw NSError(domain: "openssl", code: Int(r.status), userInfo: [NSLocalizedDescriptionKey: r.stderr])
        }
    }

    /// A self-signed CA `<name>.key`/`<name>.crt`, its CN `cn` (default: `name`).
    public func makeCA(_ name: String, cn: String? = nil) throws {
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
            "/CN=\(cn ?? name)", "-keyout", path("\(name).key"), "-out", path("\(name).crt"),
        ])
    }

    /// `<name>.key`/`<name>.crt` signed by the CA `ca`, its CN `cn` (default:
    /// `name`), its subjectAltName `names`.
    public func makeCert(
        _ name: String, ca: String = "ca", cn: String? = nil, names: String = "DNS:localhost,IP:127.0.0.1"
    ) throws {
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(cn ?? name)",
            "-keyout", path("\(name).key"), "-out", path("\(name).csr"),
        ])
        try "subjectAltName=\(names)\n".write(toFile: path("\(name).ext"), atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(ca).crt"), "-CAkey", path("\(ca).key"),
            "-CAcreateserial", "-days", "2", "-extfile", path("\(name).ext"), "-out", path("\(name).crt"),
        ])
    }
}

/// A server process a test starts (mosquitto, nats-server): started, waited
/// for until it is ready, and stopped — SIGTERM, SIGKILL if it has not gone
/// 5 s later (a mosquitto still starting up once ignored SIGTERM) — and
/// reaped, by `stop` or when released. The one copy of that for TestSupport's
/// brokers and NATS servers.
public final class ServerProcess {
    public let process = Process()

    /// Runs `executable` with `arguments`; stdout is discarded, stderr goes to
    /// the file `stderr` (created) or is discarded.
    public init(_ executable: String, _ arguments: [String], stderr: String? = nil) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        if let stderr {
            _ = FileManager.default.createFile(atPath: stderr, contents: nil)
            process.standardError = FileHandle(forWritingAtPath: stderr)
        } else {
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
    }

    deinit { stop() }

    public var isRunning: Bool { process.isRunning }

    /// Polls `ready` until it holds (true) or the process has exited or
    /// `timeout` × `TestTiming.scale` seconds have passed (false).
    public func waitUntilReady(timeout: TimeInterval = 10, _ ready: () -> Bool) -> Bool {
        poll(timeout: timeout) { () -> Bool? in
            guard process.isRunning else { return false }
            return ready() ? true : nil
        } ?? false
    }

    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date() + 5
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// The one home of every test server of TestSupport (MosquittoBroker,
/// LoginBroker, NATSServer, LoginNATSServer): a temporary directory of its
/// own (removed when released), its certificates there, and its process —
/// started, waited for, stopped (`ServerProcess`).
public final class ServerHome {
    public let dir: URL
    public var pki: TestPKI { TestPKI(dir) }
    private var server: ServerProcess?
    /// The running server's process, nil before `start` and after `stop`.
    public var process: Process? { server?.process }

    /// A fresh directory `<prefix>-XXXXXXXX` in the temporary directory.
    public init(_ prefix: String) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: dir)
    }

    public func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// The file `name` in the directory (a log), empty when unreadable.
    public func text(_ name: String) -> String { (try? String(contentsOfFile: path(name), encoding: .utf8)) ?? "" }

    /// Starts `executable` (`ServerProcess`) and waits until `ready`; when it
    /// does not get there, stops it and throws `failure` (domain `domain`).
    public func start(
        _ executable: String, _ arguments: [String], stderr: String? = nil, timeout: TimeInterval = 10,
        domain: String, failure: @autoclosure () -> String, ready: () -> Bool
    ) throws {
        let p = try ServerProcess(executable, arguments, stderr: stderr)
        server = p
        if p.waitUntilReady(timeout: timeout, ready) { return }
        let why = failure()
        stop()
        throw NSError(domain: domain, code: 1, userInfo: [NSLocalizedDescriptionKey: why])
    }

    /// SIGTERM, and SIGKILL if the server has not gone 5 s later (`ServerProcess.stop`).
    public func stop() {
        server?.stop()
        server = nil
    }
}
