import Foundation
import Synchronization
import XCTest

@testable import GatewayCLI

/// What replaced Foundation proper in GatewayCLI (Support/Essentials.swift)
/// behaves as the Foundation calls it replaced.
final class EssentialsTests: XCTestCase {
    func testStringHelpersMatchFoundation() {
        for text in ["", "  a b \t", "\n x\r\n", "\u{00A0}y\u{2003}", "plain", " \t "] {
            XCTAssertEqual(text.trimmed, text.trimmingCharacters(in: .whitespacesAndNewlines), text.debugDescription)
            XCTAssertEqual(text.trimmingBlanks, text.trimmingCharacters(in: .whitespaces), text.debugDescription)
        }
        for (cell, width) in [("ab", 5), ("abcde", 5), ("", 3)] {
            XCTAssertEqual(cell.padded(to: width), cell.padding(toLength: width, withPad: " ", startingAt: 0))
        }
        for path in ["/run/doorgateway/control.sock", "/control.sock", "rel/x.sock", "x.sock", "/a/b/", "/"] {
            XCTAssertEqual(path.deletingLastPathComponent, (path as NSString).deletingLastPathComponent, path)
        }
    }

    func testLockSerialisesThreads() throws {
        final class Counter: Sendable {
            let n = Mutex(0)
        }
        let counter = Counter()
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<4 {
            try Threads.detach(name: "essentials-test") {
                for _ in 0..<10_000 { counter.n.withLock { $0 += 1 } }
                done.signal()
            }
        }
        for _ in 0..<4 { XCTAssertEqual(done.wait(timeout: .now() + 10), .success) }
        XCTAssertEqual(counter.n.withLock { $0 }, 40_000)
    }

    /// The daemon ignores SIGTERM (it takes it through dispatch) and holds
    /// descriptors: the child must start with SIGTERM at its default and
    /// without the parent's descriptors, and terminate() must end it.
    func testChildProcessResetsSignalsAndClosesDescriptors() throws {
        let old = signal(SIGTERM, SIG_IGN)
        defer { signal(SIGTERM, old) }
        var fds: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("essentials-\(getpid()).txt").path
        defer { unlink(out) }
        var st = stat()
        XCTAssertEqual(fstat(fds[0], &st), 0)
        let ours = "pipe:[\(st.st_ino)]"
        // The child lists its descriptors, then waits to be terminated.
        let child = try ChildProcess(
            path: "/bin/sh", arguments: ["-c", "ls -l /proc/self/fd/ > \(out); exec sleep 30"], discardOutput: true)
        var listed = ""
        for _ in 0..<200 where !listed.hasSuffix("\n") {
            listed = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            usleep(10_000)
        }
        XCTAssertTrue(listed.contains("/proc/"), "no listing: \(listed)")
        XCTAssertFalse(listed.contains(ours), "the parent's pipe leaked into the child: \(listed)")
        XCTAssertTrue(child.isRunning)
        child.terminate()
        let deadline = Date().addingTimeInterval(5)
        while child.isRunning && Date() < deadline { usleep(10_000) }
        XCTAssertFalse(child.isRunning, "SIGTERM did not end the child (still ignored?)")
        child.waitUntilExit()
    }

    func testChildProcessSpawnErrorIsThrown() {
        XCTAssertThrowsError(
            try ChildProcess(path: "/nonexistent/pn532-sim", arguments: [], discardOutput: true)
        ) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent/pn532-sim"), "\(error)")
        }
    }
}
