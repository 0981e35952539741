#if canImport(Glibc)
    import Glibc
#endif
import DoorCore
import Foundation
import XCTest

/// A running pn532-sim in a temporary directory (the built product).
public final class PN532SimProcess {
    public let dir: URL
    public let tty: String
    public let socket: String
    public let process = Process()

    /// `directory`: reuse another emulator's directory (its pty link and
    /// control socket paths), e.g. to bring a killed emulator back.
    public init(_ arguments: [String] = [], directory: URL? = nil) throws {
        dir =
            directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("pn532sim-\(UUID().uuidString)")
        if directory != nil {
            try? FileManager.default.removeItem(atPath: dir.appendingPathComponent("tty").path)
            try? FileManager.default.removeItem(atPath: dir.appendingPathComponent("control.sock").path)
        }
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        tty = dir.appendingPathComponent("tty").path
        socket = dir.appendingPathComponent("control.sock").path
        process.executableURL = Run.product("pn532-sim")
        process.arguments = ["--link", tty, "--control", socket] + arguments
        let out = Pipe()
        process.standardOutput = out
        // A file, not a pipe: nobody reads a pipe until the emulator exits, and
        // a --trace run's 64 KiB would block the emulator mid-exchange.
        let errPath = dir.appendingPathComponent("stderr").path
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        guard let err = FileHandle(forWritingAtPath: errPath) else { throw PN532SimExited() }
        process.standardError = err
        try process.run()
        try? err.close()
        // The first line on stdout is the pty path; the link and socket exist by then.
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            // The emulator died at start: that is a failure of every test using it, not a skip.
            guard !chunk.isEmpty else { throw PN532SimExited() }
            line += chunk
        }
        XCTAssertTrue(String(decoding: line, as: UTF8.self).hasPrefix("/dev/pts/"))
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: dir)
    }

    public func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// What the emulator wrote to standard error so far (its trace with --trace).
    public var stderrText: String {
        (try? String(contentsOfFile: path("stderr"), encoding: .utf8)) ?? ""
    }

    /// One control line and its one-line answer.
    public func control(_ line: String) throws -> String {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        defer { close(fd) }
        guard UnixSocket.connect(fd, to: socket) == 0 else { throw POSIXError(.ECONNREFUSED) }
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        var answer = [UInt8]()
        var c: UInt8 = 0
        while read(fd, &c, 1) == 1 && c != 0x0A { answer.append(c) }
        return String(decoding: answer, as: UTF8.self)
    }

    public func dump() throws -> [UInt8] {
        let answer = try control("dump")
        XCTAssertTrue(answer.hasPrefix("ok "), answer)
        return Hex.decode(answer.dropFirst(3)) ?? []
    }
}

/// pn532-sim exited before printing its pty (a crash at start).
public struct PN532SimExited: Error, CustomStringConvertible {
    public var description: String { "pn532-sim exited before printing its pty" }
}
