import Foundation
import XCTest

/// Time bounds for waits on events: a bound is how long a test gives up after,
/// never what it asserts. Stretched when the binaries under test run emulated
/// (`make test-e2e-arm64`: the aarch64 gatewayd through qemu-user).
public enum TestTiming {
    /// The directory of the binaries the end-to-end tests run: `$DOORGATEWAY_E2E_BIN`
    /// (relative to the repository) or else this build's products.
    public static var binDirectory: URL {
        if let d = ProcessInfo.processInfo.environment["DOORGATEWAY_E2E_BIN"], !d.isEmpty {
            return URL(fileURLWithPath: d, relativeTo: Fixtures.root).standardizedFileURL
        }
        return Run.binDirectory
    }

    /// The `gateway` under test is for another CPU than this test process
    /// (its ELF e_machine differs), i.e. it runs through qemu-user.
    public static let binaryIsForeign: Bool = {
        let gateway = binDirectory.appendingPathComponent("gateway").path
        guard let theirs = elfMachine(gateway), let ours = elfMachine("/proc/self/exe") else { return false }
        return theirs != ours
    }()

    /// Factor for the tests' time bounds: `DOORGATEWAY_E2E_TIME_SCALE` when set
    /// (make test-e2e-arm64 sets it), else 3 for a foreign binary, else 1.
    public static let scale: Double = {
        if let s = ProcessInfo.processInfo.environment["DOORGATEWAY_E2E_TIME_SCALE"], let v = Double(s), v >= 1 {
            return v
        }
        return binaryIsForeign ? 3 : 1
    }()

    /// e_machine of an ELF file (bytes 18–19, little endian), nil if unreadable.
    public static func elfMachine(_ path: String) -> UInt16? {
        guard let h = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? h.close() }
        guard let d = try? h.read(upToCount: 20), d.count == 20, d.prefix(4) == Data([0x7F, 0x45, 0x4C, 0x46]) else {
            return nil
        }
        return UInt16(d[18]) | UInt16(d[19]) << 8
    }
}

/// The suite's one polling wait: checks `condition` every 20 ms until it
/// holds, or fails the test at the caller's line once `timeout` ×
/// `TestTiming.scale` seconds have passed. Returns whether it held, so
/// `XCTAssertTrue(try waitUntil { … }, "what was waited for")` adds context.
/// (`throws`, not `rethrows`: callers `try` it whatever their closure does.)
@discardableResult
public func waitUntil(
    timeout: TimeInterval = 10, file: StaticString = #filePath, line: UInt = #line, _ condition: () throws -> Bool
) throws -> Bool {
    let bound = timeout * TestTiming.scale
    let deadline = Date() + bound
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    if try condition() { return true }
    XCTFail("condition not met within \(bound) s", file: file, line: line)
    return false
}
