import Foundation
import TestSupport
import XCTest

/// Waits for the end-to-end tests that stay right when the binaries under test
/// run emulated: `make test-e2e-arm64` runs the aarch64 gatewayd, gatewayctl and
/// pn532-sim on this x86_64 machine through qemu-user (binfmt_misc).
///
/// Under emulation every `gatewayctl` call is a new emulated process of a
/// ~100 MB static binary: a `status --json` round trip takes a few hundred
/// milliseconds instead of ~10 ms. A 300 ms strike pulse can then begin and
/// end between two status polls, so `waitUntil { status … == "unlocked" }`
/// never sees it, however long it waits. The daemon's own log has every
/// transition of the simulated board ("sim output strike → unlocked (high)"),
/// so waiting on that log cannot miss a pulse, natively or emulated.
enum E2ETiming {
    /// The `gateway` under test runs through qemu-user (TestSupport's `TestTiming`).
    static var binaryIsForeign: Bool { TestTiming.binaryIsForeign }

    /// Factor for the tests' time bounds (TestSupport's `TestTiming.scale`, which
    /// `waitUntil` applies too).
    static var scale: Double { TestTiming.scale }

    /// `seconds` stretched by `scale`.
    static func timeout(_ seconds: TimeInterval) -> TimeInterval { seconds * scale }

    /// Waits out the door's same-tag quiet window (the tests' `same_tag_quiet_ms = 1000`, the
    /// stock value too) after a `sim remove`, so the next tap of that tag is judged again. The
    /// window runs from when the daemon's reader *notices* the removal, which on a loaded
    /// machine (CI's lanes side by side) came up to ~1 s after gatewayctl returned: a 1.2 s
    /// sleep then let a reinsert count as the same tap and nothing was judged. 2 s, stretched
    /// by `scale` (under emulation the daemon sees the removal later still).
    static func outlastQuietWindow() { usleep(UInt32(2_000_000 * scale)) }
}

extension GatewayUnderTest {
    /// How often the simulated board has driven `output` to `state` since this
    /// gatewayd started, from the daemon's log (one line per transition).
    func outputTransitions(_ output: String, to state: String) -> Int {
        let marker = "sim output \(output) → \(state) ("
        return log.split(separator: "\n").filter { $0.contains(marker) }.count
    }

    /// Waits until the simulated board has driven `output` to `state` at least
    /// `times` times since gatewayd started (a pulse counts even when it is
    /// already over). The bound is `timeout` × `E2ETiming.scale`.
    func waitForOutput(
        _ output: String, _ state: String, times: Int = 1, timeout: TimeInterval = 10,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        if poll(timeout: timeout, { outputTransitions(output, to: state) >= times ? true : nil }) != nil { return }
        XCTFail(
            "\(output) not driven \(state) \(times)× within \(E2ETiming.timeout(timeout)) s (\(outputTransitions(output, to: state))×); log:\n\(log.suffix(2000))",
            file: file, line: line)
    }
}
