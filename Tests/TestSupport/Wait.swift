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

/// The suite's one polling loop: asks `probe` every `interval` seconds until
/// it returns a value, and returns that; nil once `timeout` × `TestTiming.scale`
/// seconds have passed (it is asked once more at the end).
public func poll<T>(timeout: TimeInterval = 10, interval: TimeInterval = 0.02, _ probe: () throws -> T?) rethrows
    -> T?
{
    let deadline = Date() + timeout * TestTiming.scale
    while Date() < deadline {
        if let value = try probe() { return value }
        usleep(useconds_t(interval * 1_000_000))
    }
    return try probe()
}

/// A wait that gave up: what was waited for, within how long, and what was seen.
public struct WaitTimeout: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// `poll`, or else throws `WaitTimeout` naming `what` (and `context()`, e.g. a log tail).
@discardableResult
public func waitFor<T>(
    _ what: @autoclosure () -> String, timeout: TimeInterval = 10, interval: TimeInterval = 0.02,
    context: () -> String = { "" }, _ probe: () throws -> T?
) throws -> T {
    if let value = try poll(timeout: timeout, interval: interval, probe) { return value }
    let seen = context()
    throw WaitTimeout("\(what()): not within \(timeout * TestTiming.scale) s\(seen.isEmpty ? "" : "\n" + seen)")
}

/// A condition waited for: checks `condition` every 20 ms until it holds,
/// or fails the test at the caller's line once `timeout` × `TestTiming.scale`
/// seconds have passed. Returns whether it held, so
/// `XCTAssertTrue(try waitUntil { … }, "what was waited for")` adds context.
/// (`throws`, not `rethrows`: callers `try` it whatever their closure does.)
@discardableResult
public func waitUntil(
    timeout: TimeInterval = 10, file: StaticString = #filePath, line: UInt = #line, _ condition: () throws -> Bool
) throws -> Bool {
    if try poll(timeout: timeout, { try condition() ? true : nil }) != nil { return true }
    XCTFail("condition not met within \(timeout * TestTiming.scale) s", file: file, line: line)
    return false
}
