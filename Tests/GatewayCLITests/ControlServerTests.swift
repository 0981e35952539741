import DoorCore
import Foundation
import Synchronization
import TestSupport
import XCTest

@testable import GatewayControl

/// The control server's bounds and its stop, on a real socket: the client
/// past `maxClients` is answered `busy` and a leaver makes room; `stop`
/// wakes a client that follows a stream and closes the listener once only.
final class ControlServerTests: XCTestCase {
    private var dir: String!
    private var server: ControlServer!
    /// How many streams the handler has started (their first poll), for the tests to wait on.
    private let streams = Shared(0)

    override func setUpWithError() throws {
        dir =
            FileManager.default.temporaryDirectory.appendingPathComponent("ctlsrv-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        chmod(dir, 0o755)
        let streams = self.streams
        server = ControlServer(path: dir + "/control.sock", adminGroup: "doorgateway-test-no-such-group") {
            request, _ in
            guard request.method == ControlMethod.logFollow.rawValue else { return .value(.string(request.method)) }
            var first = true
            return .stream {
                if first { streams.value.withLock { $0 += 1 } }
                first = false
                return []
            }
        }
        // The group is missing: a warning, and root (the tests) is still admitted.
        XCTAssertNotNil(try server.start())
    }

    override func tearDownWithError() throws {
        server?.stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    private var socket: String { dir + "/control.sock" }

    func testTheClientPastTheLimitIsToldBusyAndALeaverMakesRoom() throws {
        // Each answered once, so each has its own client thread.
        var held: [ControlClient] = []
        for _ in 0..<ControlServer.maxClients {
            let client = try ControlClient(path: socket)
            XCTAssertEqual(try client.call(.status), .string("status"))
            held.append(client)
        }
        XCTAssertThrowsError(try ControlClient(path: socket).call(.status)) { error in
            guard case ControlClientError.refused(let code, let message)? = error as? ControlClientError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(code, "busy")
            XCTAssertTrue(message.contains("\(ControlServer.maxClients) clients are connected"), message)
        }
        // The held ones are still served.
        XCTAssertEqual(try held[0].call(.status), .string("status"))

        held.removeLast()  // closes its connection; its thread ends and frees the place
        XCTAssertTrue(try waitUntil { try servedRatherThanBusy() })
    }

    /// A new client's `status`: true when answered, false when refused as busy.
    private func servedRatherThanBusy() throws -> Bool {
        do {
            return try ControlClient(path: socket).call(.status) == .string("status")
        } catch ControlClientError.refused(let code, _) where code == "busy" {
            return false
        }
    }

    func testStopWakesAFollowingClientAndClosesTheListenerOnce() throws {
        let ended = Shared<String?>(nil)
        let path = socket
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            do {
                try ControlClient(path: path).follow(.logFollow) { _ in }
                ended.value.withLock { $0 = "returned" }
            } catch {
                ended.value.withLock { $0 = "\(error)" }
            }
            done.signal()
        }
        XCTAssertTrue(try waitUntil { streams.value.withLock { $0 } == 1 })
        XCTAssertNil(ended.value.withLock { $0 }, "the stream runs until the server stops")

        let before = openDescriptors()
        server.stop()
        // The follower is woken: its connection ends without another line.
        XCTAssertEqual(done.wait(timeout: .now() + 30 * TestTiming.scale), .success)
        XCTAssertEqual(ended.value.withLock { $0 }, "the daemon closed the connection without an answer")
        XCTAssertFalse(FileManager.default.fileExists(atPath: socket))

        // The listener's number is free again: fill every free number up to
        // the highest the server had open, then stop again — none of ours may go.
        let highest = before.max() ?? 0
        var ours: [Int32] = []
        defer { for fd in ours { close(fd) } }
        while (ours.last ?? -1) < highest {
            let fd = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return XCTFail("open: errno \(errno)") }
            ours.append(fd)
        }
        server.stop()
        for fd in ours { XCTAssertNotEqual(fcntl(fd, F_GETFD), -1, "descriptor \(fd) was closed by the second stop") }
    }

    private func openDescriptors() -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
    }
}

/// A Mutex that closures can share.
private final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}
