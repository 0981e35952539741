import Foundation

/// Black-box process runner for CLI and integration tests (DEVELOPERS.md "Conventions" §10).
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

public enum Run {
    /// The directory holding the built products (`swift build --show-bin-path`):
    /// the test bundle sits in it, so it is found from the running executable.
    public static let binDirectory: URL = {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("gateway").path) { return url }
        }
        return Fixtures.root.appendingPathComponent(".build/debug")
    }()

    public static func product(_ name: String) -> URL { binDirectory.appendingPathComponent(name) }

    /// Runs `executable` with `arguments`, feeding `stdin`, and waits (at most `timeout`).
    public static func process(
        _ executable: URL, _ arguments: [String], stdin: String? = nil,
        environment: [String: String]? = nil, argv0: String? = nil,
        timeout: TimeInterval = 60
    ) throws -> ProcessResult {
        let p = Process()
        p.executableURL = executable
        p.arguments = arguments
        if let environment { p.environment = environment }
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = inp
        try p.run()
        if let stdin { inp.fileHandleForWriting.write(Data(stdin.utf8)) }
        try inp.fileHandleForWriting.close()
        // Read both pipes concurrently so a chatty child cannot block on a full pipe.
        // nonisolated(unsafe): each written by its one reader, read only after group.wait() says both are done.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { outData = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { errData = err.fileHandleForReading.readDataToEndOfFile() }
        if group.wait(timeout: .now() + timeout) == .timedOut {
            p.terminate()
            throw NSError(
                domain: "Run", code: 1,
                userInfo: [NSLocalizedDescriptionKey: "\(executable.lastPathComponent) timed out"])
        }
        p.waitUntilExit()
        return ProcessResult(
            status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Runs the built `gateway` as `gatewayctl` (through the `gateway ctl` form).
    public static func gatewayctl(_ arguments: [String], stdin: String? = nil) throws -> ProcessResult {
        try process(product("gateway"), ["ctl"] + arguments, stdin: stdin)
    }
}
