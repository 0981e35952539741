import Foundation
import XCTest

/// SIGTERM while the reader goes too: systemd stops the unit's whole cgroup,
/// gatewayd and its pn532-sim at once, so the reader fails while the daemon
/// shuts down. The outputs are locked once and stay locked: nothing reported
/// after that reaches the relay, the indicators or the audit log, and
/// gatewayd exits 0. Before the door runtime stopped running effects at
/// shutdown, the reader's fault played its pattern after "outputs locked"
/// (every round), was recorded as the process exited, and gatewayd died of
/// SIGBUS or SIGILL in 2 of 10 rounds.
final class ShutdownTests: XCTestCase {
    func testStoppingWithTheReaderGoingTooLocksOnceAndExitsCleanly() throws {
        for round in 1...6 {
            let door = try GatewayUnderTest()
            try door.writeConfig()
            try door.start()
            let sims = door.simulatorPIDs()
            XCTAssertFalse(sims.isEmpty, "round \(round): the daemon's pn532-sim")
            guard let process = door.process else { return XCTFail("round \(round): no process") }
            kill(process.processIdentifier, SIGTERM)
            for pid in sims { kill(pid, SIGTERM) }
            let deadline = Date() + E2ETiming.timeout(10)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            XCTAssertFalse(process.isRunning, "round \(round): gatewayd still running 10 s after SIGTERM")
            door.stop()
            XCTAssertEqual(
                process.terminationReason, .exit,
                "round \(round): killed by signal \(process.terminationStatus)\n\(door.log)")
            XCTAssertEqual(process.terminationStatus, 0, "round \(round)\n\(door.log)")

            // The stop locks the outputs first from the signal's thread, then
            // again on the door queue as the runtime stops: nothing may move
            // or light after that second lock.
            let lines = door.log.split(separator: "\n").map(String.init)
            guard let stopping = lines.firstIndex(where: { $0.contains("signal 15: stopping") }) else {
                return XCTFail("round \(round): no stop in the log:\n\(door.log)")
            }
            let locks = lines.indices.filter { $0 > stopping && lines[$0].contains("all outputs locked") }
            guard locks.count >= 2 else {
                return XCTFail("round \(round): the stop did not lock twice:\n\(door.log)")
            }
            let locked = locks[1]
            let after = lines[(locked + 1)...].filter {
                $0.contains("→ unlocked") || $0.contains("=on") || $0.contains("gatewayd: event ")
            }
            XCTAssertEqual(after, [], "round \(round): after the outputs were locked:\n\(door.log)")
            // The services stop in reverse of their start (issue 34 Move C):
            // the door runtime first (it stops acting), the outputs last.
            XCTAssertTrue(
                door.log.contains(
                    "services stopped: door runtime, timers, control socket, transport, osdp readers, wiegand reader, reader, "
                        + "audit writer, outputs\n"
                ), "round \(round):\n\(door.log)")
        }
    }
}
