import GatewayControl
import Glibc

/// On `board = "sim"` with `reader.simulator = "spawn"` the daemon starts its
/// own `pn532-sim` (found beside its own executable, or on PATH) with the
/// pseudo-terminal linked and the control socket in the runtime directory,
/// and reaches it through the real libnfc path (`pn532_uart:<link>`).
final class SimulatorChild {
    private(set) var process: ChildProcess?
    let link: String
    let control: String

    init(runtimeDirectory: String) {
        link = runtimeDirectory + "/pn532-sim.tty"
        control = runtimeDirectory + "/pn532-sim.sock"
    }

    var connstring: String { "pn532_uart:\(link)" }

    static func executable() -> String? {
        let own = Files.resolvingSymlinks(CommandLine.arguments[0]).deletingLastPathComponent
        let candidates =
            [(own.isEmpty ? "." : own) + "/pn532-sim"]
            + (Environment.current["PATH"] ?? "").split(separator: ":").map { "\($0)/pn532-sim" }
        return candidates.first { Files.isExecutable($0) }
    }

    func start() throws {
        guard let path = Self.executable() else {
            throw DaemonError.startup("pn532-sim not found beside gatewayd or on PATH")
        }
        unlink(link)
        unlink(control)
        // --parent-pid: the emulator exits when gatewayd dies, even by SIGKILL
        // or a crash (PR_SET_PDEATHSIG), instead of holding the pty and the
        // socket as an orphan of pid 1 while a crash loop starts more.
        let process = try ChildProcess(
            path: path, arguments: ["--link", link, "--control", control, "--parent-pid", String(getpid())],
            discardOutput: true)
        self.process = process
        // Ready when both the pty link and the control socket exist.
        for _ in 0..<100 {
            if Files.exists(link) && Files.exists(control) {
                return
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw DaemonError.startup("pn532-sim did not come up (link \(link), control \(control))")
    }

    func stop() {
        guard let process else { return }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// Sends one line to a pn532-sim control socket and returns its answer line.
package enum SimulatorControl {
    package static func send(_ line: String, to socketPath: String) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonError.simulator("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard var addr = UnixAddress(socketPath) else { throw DaemonError.simulator("socket path too long") }
        guard addr.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            throw DaemonError.simulator("cannot reach pn532-sim at \(socketPath): \(String(cString: strerror(errno)))")
        }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let connection = LineConnection(fd: fd, maxLine: 64 << 20)
        guard connection.send(line: line) else { throw DaemonError.simulator("write to pn532-sim failed") }
        guard case .line(let bytes)? = connection.readLine() else {
            throw DaemonError.simulator("pn532-sim gave no answer")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix("ok") else { throw DaemonError.simulator(text) }
        return text
    }
}
