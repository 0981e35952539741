#if canImport(Glibc)
    import Glibc
#endif
import DoorCore
import Foundation
import XCTest

/// An OSDP reader for the tests: pd.py running libosdp's PD; reaped on deinit (and it dies with the test process).
public final class LibosdpReader {
    public let process = Process()
    let input = Pipe()
    let output = Pipe()
    public private(set) var tty = ""
    public private(set) var lines: [String] = []
    var buffer = Data()

    public init(scbk: [UInt8]?, address: UInt8 = 1, options: [String] = []) throws {
        let venv = try Run.process(
            Fixtures.root.appendingPathComponent("scripts/osdp/venv.sh"), [], timeout: 600)
        guard venv.status == 0 else {
            throw XCTSkip("scripts/osdp/venv.sh could not build the libosdp venv (no network?): \(venv.stderr)")
        }
        process.executableURL = URL(fileURLWithPath: venv.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        var args = [Fixtures.root.appendingPathComponent("scripts/osdp/pd.py").path, "--address", "\(address)"]
        if let scbk { args += ["--scbk", Hex.encode(scbk)] }
        process.arguments = args + options
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let first = try waitFor("tty")
        tty = String(first.dropFirst(4))
    }

    deinit { stop() }

    public func stop() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.write(contentsOf: Data("quit\n".utf8))
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            process.terminate()
        }
        process.waitUntilExit()
    }

    public func send(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// The first line (from the start) beginning with `prefix` and containing `text`.
    @discardableResult
    public func waitFor(_ prefix: String, containing text: String = "", timeout: TimeInterval = 5) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let hit = lines.first(where: { $0.hasPrefix(prefix) && (text.isEmpty || $0.contains(text)) }) {
                return hit
            }
            guard Date() < deadline, process.isRunning || output.fileHandleForReading.availableData.count > 0 else {
                throw Failure(what: "no line '\(prefix)…\(text)' from pd.py; got \(lines)")
            }
            var pfd = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 50) > 0 {
                let chunk = output.fileHandleForReading.availableData
                buffer += chunk
                while let nl = buffer.firstIndex(of: 0x0A) {
                    lines.append(String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self))
                    buffer = Data(buffer[(nl + 1)...])
                }
            }
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let what: String
        public init(what: String) { self.what = what }
        public var description: String { what }
    }
}
