import GatewayControl
import Glibc
import Synchronization

/// On `board = "sim"` with `reader.simulator = "spawn"` the daemon starts its
/// own `pn532-sim` (found beside its own executable, or on PATH) with the
/// pseudo-terminal linked and the control socket in the runtime directory,
/// and reaches it through the real libnfc path (`pn532_uart:<link>`).
final class SimulatorChild: Sendable {
    /// The running emulator (started by `start`; `stop` reaps it).
    private let process: Mutex<ChildProcess>
    let link: String
    let control: String

    private init(link: String, control: String, process: sending ChildProcess) {
        self.link = link
        self.control = control
        self.process = Mutex(process)
    }

    var connstring: String { "pn532_uart:\(link)" }

    static func executable() -> String? {
        let own = Files.resolvingSymlinks(CommandLine.arguments[0]).deletingLastPathComponent
        let candidates =
            [(own.isEmpty ? "." : own) + "/pn532-sim"]
            + (Environment.current["PATH"] ?? "").split(separator: ":").map { "\($0)/pn532-sim" }
        return candidates.first { Files.isExecutable($0) }
    }

    /// Starts the emulator and returns once its pty link and control socket exist.
    static func start(runtimeDirectory: String) throws -> SimulatorChild {
        guard let path = executable() else {
            throw DaemonError.startup("pn532-sim not found beside gatewayd or on PATH")
        }
        let link = runtimeDirectory + "/pn532-sim.tty"
        let control = runtimeDirectory + "/pn532-sim.sock"
        unlink(link)
        unlink(control)
        // --parent-pid: the emulator exits when gatewayd dies, even by SIGKILL
        // or a crash (PR_SET_PDEATHSIG), instead of holding the pty and the
        // socket as an orphan of pid 1 while a crash loop starts more.
        let process = try ChildProcess(
            path: path, arguments: ["--link", link, "--control", control, "--parent-pid", String(getpid())],
            discardOutput: true)
        // Ready when both the pty link and the control socket exist.
        var ready = false
        for _ in 0..<100 {
            if Files.exists(link) && Files.exists(control) {
                ready = true
                break
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        guard ready else {
            throw DaemonError.startup("pn532-sim did not come up (link \(link), control \(control))")
        }
        return SimulatorChild(link: link, control: control, process: process)
    }

    /// SIGTERM, and waits until it has exited (the lock is this object's alone).
    func stop() {
        process.withLock { process in
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
            }
        }
    }
}
