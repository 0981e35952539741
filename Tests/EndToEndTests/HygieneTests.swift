#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// What the developer's own entry points leave behind: `make run` stopped by
/// Ctrl-C, and the suite's leftover check (`scripts/no-leftovers.py`, which
/// `make test` wraps around `swift test`) on a command that leaks.
final class HygieneTests: XCTestCase {
    /// `scripts/run-demo.sh` (what `make run` starts) in its own session, as a
    /// terminal runs it, interrupted the way Ctrl-C interrupts it: SIGINT to
    /// the whole process group. Afterwards its temporary directory is gone and
    /// no process that names it is alive.
    func testRunDemoCtrlCStopsEverythingAndRemovesItsDirectory() throws {
        let bin = GatewayUnderTest.binDirectory.path
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("demo-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let script = Fixtures.root.appendingPathComponent("scripts/run-demo.sh").path
        let pid = try Self.spawnInNewSession(
            ["/bin/bash", script], environment: ["BIN=\(bin)"], output: output.path)
        var reaped = false
        defer {
            if !reaped {
                kill(-pid, SIGKILL)
                var st: Int32 = 0
                waitpid(pid, &st, 0)
            }
        }
        let up = try waitUntil(timeout: 60) {
            (try? String(contentsOf: output, encoding: .utf8))?.contains("gatewayd is up") == true
        }
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        XCTAssertTrue(up, "the demo did not come up:\n\(text)")
        guard let range = text.range(of: #"/tmp/doorgateway-demo\.[A-Za-z0-9]+"#, options: .regularExpression) else {
            return XCTFail("no work directory named in the demo's output:\n\(text)")
        }
        let work = String(text[range])
        XCTAssertTrue(FileManager.default.fileExists(atPath: work))
        let running = Self.processes(naming: work)
        XCTAssertTrue(running.contains { $0.contains("mosquitto -c") }, "\(running)")
        XCTAssertTrue(running.contains { $0.contains("gateway daemon") }, "\(running)")
        XCTAssertTrue(running.contains { $0.contains("pn532-sim") }, "\(running)")
        // The outdoor reader (libosdp's PD, named by its --link in the work directory), unless
        // the demo said it had no libosdp venv to run it with.
        if !text.contains("no libosdp venv") {
            XCTAssertTrue(running.contains { $0.contains("osdp/pd.py") }, "the outdoor reader: \(running)")
        }

        XCTAssertEqual(kill(-pid, SIGINT), 0)  // what the terminal does on Ctrl-C
        var status: Int32 = 0
        let exited = try waitUntil(timeout: 20) { waitpid(pid, &status, WNOHANG) == pid }
        XCTAssertTrue(exited, "run-demo.sh did not stop on SIGINT")
        guard exited else { return }
        reaped = true
        // bash's `trap 'exit 130' INT`: stopped on purpose, not killed by the signal.
        XCTAssertEqual(status & 0x7f, 0, "killed by signal \(status & 0x7f)")
        XCTAssertEqual((status >> 8) & 0xff, 130)
        XCTAssertFalse(FileManager.default.fileExists(atPath: work), "make run left \(work) behind")
        let gone = try waitUntil(timeout: 5) { Self.processes(naming: work).isEmpty }
        XCTAssertTrue(gone, "still running after Ctrl-C: \(Self.processes(naming: work))")
        XCTAssertTrue(
            ((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("removed \(work)"))
    }

    /// The check `make test` runs the suite under: a command that leaves a
    /// process behind (even one that left its session) fails and the process
    /// is killed; a clean command keeps its own exit status.
    func testLeftoverCheckNamesKillsAndFails() throws {
        let checker = Fixtures.root.appendingPathComponent("scripts/no-leftovers.py").path
        let marker = "hygiene-\(UUID().uuidString.prefix(8))"
        let leaky = try Run.process(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                checker, "--label", "leaky", "--",
                "/bin/bash", "-c",
                "exec -a \(marker) sleep 300 & (setsid bash -c 'exec -a \(marker)-s sleep 301' &); exit 0",
            ],
            timeout: 30)
        XCTAssertEqual(leaky.status, 1, leaky.stderr)
        XCTAssertTrue(leaky.stderr.contains("leaky left 2 process(es) running"), leaky.stderr)
        XCTAssertTrue(leaky.stderr.contains(marker), leaky.stderr)
        XCTAssertEqual(Self.processes(naming: marker), [], "the checker did not kill what it found")

        let clean = try Run.process(
            URL(fileURLWithPath: "/usr/bin/python3"), [checker, "--label", "clean", "--", "/bin/sh", "-c", "exit 3"],
            timeout: 30)
        XCTAssertEqual(clean.status, 3)
        XCTAssertTrue(clean.stdout.contains("clean left no process behind"), clean.stdout)
    }

    // MARK: - helpers

    /// posix_spawn with POSIX_SPAWN_SETSID (glibc's 0x80): the child leads its
    /// own session and process group, like a job a terminal starts.
    static func spawnInNewSession(_ argv: [String], environment: [String], output: String)
        throws -> pid_t
    {
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        posix_spawnattr_setflags(&attr, 0x80)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let env = ProcessInfo.processInfo.environment.map { "\($0)=\($1)" } + environment
        var cArgs = argv.map { strdup($0) } + [nil]
        var cEnv = env.map { strdup($0) } + [nil]
        defer {
            cArgs.forEach { free($0) }
            cEnv.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, &attr, &cArgs, &cEnv)
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: rc) ?? .EIO) }
        return pid
    }

    /// Command lines of living (not zombie) processes that contain `text`.
    static func processes(naming text: String) -> [String] {
        let me = getpid()
        var found: [String] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), pid != me,
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")"),
                stat[stat.index(close, offsetBy: 2)] != "Z",
                let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            let line = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            if line.contains(text) { found.append(line) }
        }
        return found
    }
}
