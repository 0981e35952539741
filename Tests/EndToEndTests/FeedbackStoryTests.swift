import Foundation
import TestSupport
import XCTest

/// docs/troubleshooting.md's legend: the idle heartbeat (green, 0.05 s every
/// 5 s) is what the door shows between patterns, so it comes back after any
/// pattern that interrupted it — on the real gatewayd and its simulated
/// board, whose indicator lines it logs. Before, it stopped at the first
/// pattern (a tap, `feedback play`) and never came back until a restart.
final class FeedbackStoryTests: XCTestCase {
    func testTheHeartbeatComesBackAfterAPatternInterruptsIt() throws {
        let g = try GatewayUnderTest()
        try g.start()
        func greens() -> Int { g.log.components(separatedBy: "sim indicator green=on").count - 1 }
        try waitUntil(timeout: 12) { greens() >= 2 }  // heartbeats since the start
        try g.ctlJSON(["feedback", "play", "granted"])
        try waitUntil { g.log.components(separatedBy: "sim indicator buzzer=off").count - 1 >= 2 }  // granted ended
        let after = greens()
        // The next heartbeat within its 5 s period (and one more, so it keeps going).
        try waitUntil(timeout: 12) { greens() >= after + 2 }
        XCTAssertEqual(g.stop(), 0)
    }
}
