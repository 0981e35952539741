import DoorCore
import TestSupport
import XCTest

@testable import DoorIO

final class PatternPlayerTests: XCTestCase {
    private func ms(_ v: UInt64) -> MonotonicInstant { MonotonicInstant(nanoseconds: v * 1_000_000) }
    private func on(_ names: String...) -> [LineChange] { names.map { LineChange(line: $0, on: true) } }
    private func off(_ names: String...) -> [LineChange] { names.map { LineChange(line: $0, on: false) } }
    private let patterns = FeedbackPattern.defaultPatterns

    func testGrantedPlaysTwoBeepsThenLeavesEveryLineOff() {
        var player = PatternPlayer()
        XCTAssertEqual(player.start(patterns[.granted]!, at: ms(1000)), on("buzzer", "green"))
        XCTAssertEqual(player.nextDeadline, ms(1100))
        XCTAssertEqual(player.advance(to: ms(1099)), [])
        XCTAssertEqual(player.advance(to: ms(1100)), off("buzzer", "green"))
        XCTAssertEqual(player.advance(to: ms(1200)), on("buzzer", "green"))
        XCTAssertEqual(player.advance(to: ms(1300)), off("buzzer", "green"))
        XCTAssertNotNil(player.pattern)
        XCTAssertEqual(player.advance(to: ms(1400)), [])
        XCTAssertNil(player.pattern)
        XCTAssertNil(player.nextDeadline)
        XCTAssertEqual(player.lit, [])
    }

    func testALateAdvanceJumpsToTheEndAndSwitchesEverythingOff() {
        var player = PatternPlayer()
        _ = player.start(patterns[.denied]!, at: ms(0))
        XCTAssertEqual(player.lit, ["red", "buzzer"])
        XCTAssertEqual(player.advance(to: ms(60_000)), off("buzzer", "red"))
        XCTAssertNil(player.pattern)
    }

    func testHigherPriorityPreemptsAndTurnsOffTheLinesOfTheLesserPattern() {
        var player = PatternPlayer()
        XCTAssertEqual(player.start(patterns[.readerFault]!, at: ms(0)), on("red"))
        XCTAssertEqual(player.start(patterns[.granted]!, at: ms(500)), off("red") + on("buzzer", "green"))
        // A lesser pattern is ignored while granted plays.
        XCTAssertEqual(player.start(patterns[.heartbeat]!, at: ms(550)), [])
        XCTAssertEqual(player.pattern, patterns[.granted])
        // An equal one replaces it, from its first step.
        XCTAssertEqual(player.start(patterns[.denied]!, at: ms(560)), off("green") + on("red"))
        XCTAssertEqual(player.nextDeadline, ms(1360))
    }

    func testRepeatingPatternLoopsUntilStopped() {
        var player = PatternPlayer()
        let armed = patterns[.provisioningArmed]!  // 100 on, 100 off
        XCTAssertEqual(player.start(armed, at: ms(0)), on("green", "red"))
        XCTAssertEqual(player.advance(to: ms(150)), off("green", "red"))
        XCTAssertEqual(player.advance(to: ms(250)), on("green", "red"))
        // After a long gap it lands in the right phase, without replaying every pass.
        XCTAssertEqual(player.advance(to: ms(1_000_150)), off("green", "red"))
        XCTAssertEqual(player.nextDeadline, ms(1_000_200))
        XCTAssertEqual(player.stop(), [])
        XCTAssertNil(player.pattern)
        _ = player.start(armed, at: ms(0))
        XCTAssertEqual(player.stop(), off("green", "red"))
    }

    /// The background (the idle heartbeat, a reader fault) plays when nothing
    /// else does and comes back after a pattern that interrupted it ends or is
    /// stopped; `stop` ends it too. (Before, the heartbeat stopped at the first
    /// tap and a reader-fault blink ended after any grant.)
    func testTheBackgroundComesBackAfterAnInterruption() {
        var player = PatternPlayer()
        XCTAssertEqual(player.setBackground(patterns[.readerFault]!, at: ms(0)), on("red"))
        XCTAssertTrue(player.playingBackground)
        // A grant interrupts it, and when the grant ends the reader fault shows again.
        XCTAssertEqual(player.start(patterns[.granted]!, at: ms(100)), off("red") + on("buzzer", "green"))
        XCTAssertFalse(player.playingBackground)
        XCTAssertEqual(player.advance(to: ms(200)), off("buzzer", "green"))
        XCTAssertEqual(player.advance(to: ms(500)), on("red"))
        XCTAssertTrue(player.playingBackground)
        XCTAssertEqual(player.pattern, patterns[.readerFault])
        // A new background while another pattern plays waits for it to end.
        _ = player.start(patterns[.denied]!, at: ms(1000))
        XCTAssertEqual(player.setBackground(patterns[.heartbeat]!, at: ms(1001)), [])
        XCTAssertEqual(player.pattern, patterns[.denied])
        _ = player.advance(to: ms(60_000))
        XCTAssertEqual(player.pattern, patterns[.heartbeat])
        XCTAssertTrue(player.playingBackground)
        // A repeating pattern in front (provisioning armed) stopped: the background again.
        _ = player.start(patterns[.provisioningArmed]!, at: ms(61_000))
        _ = player.stopForeground(at: ms(62_000))
        XCTAssertEqual(player.pattern, patterns[.heartbeat])
        // Stopping the background's own pattern from the front does nothing.
        XCTAssertEqual(player.stopForeground(at: ms(63_000)), [])
        XCTAssertEqual(player.pattern, patterns[.heartbeat])
        // `stop` (shutdown, reload) ends everything.
        _ = player.stop()
        XCTAssertNil(player.pattern)
        XCTAssertNil(player.background)
        XCTAssertEqual(player.lit, [])
        XCTAssertEqual(player.advance(to: ms(100_000)), [])
    }

    func testDegeneratePatternsEndInsteadOfSpinning() {
        var player = PatternPlayer()
        XCTAssertEqual(player.start(FeedbackPattern(steps: [], priority: 1), at: ms(0)), [])
        XCTAssertNil(player.pattern)
        let zero = FeedbackPattern(steps: [PatternStep(on: ["green"], duration: .zero)], repeats: true, priority: 1)
        XCTAssertEqual(player.start(zero, at: ms(0)), [])
        XCTAssertNil(player.pattern)
        XCTAssertEqual(player.lit, [])
    }

    /// Random starts, advances and stops: applying the returned changes to a
    /// model of the lines always gives the player's `lit`, a line is never
    /// switched to the state it is already in, and once the clock passes the
    /// end of every non-repeating pattern, or after stop, nothing is on.
    func testNoLineIsEverLeftOnUnderRandomSchedules() {
        var random = SeededRandom(seed: 0xD00D)
        let kinds = FeedbackKind.allCases
        for _ in 0..<200 {
            var player = PatternPlayer()
            var lines: Set<String> = []
            var now: UInt64 = 0
            func apply(_ changes: [LineChange]) {
                for c in changes {
                    XCTAssertNotEqual(lines.contains(c.line), c.on, "redundant change \(c)")
                    if c.on { lines.insert(c.line) } else { lines.remove(c.line) }
                }
                XCTAssertEqual(lines, player.lit)
            }
            for _ in 0..<30 {
                now += UInt64.random(in: 0...700, using: &random)
                switch UInt8.random(in: 0...9, using: &random) {
                case 0...3: apply(player.start(patterns[kinds.randomElement(using: &random)!]!, at: ms(now)))
                case 4: apply(player.stop())
                default: apply(player.advance(to: ms(now)))
                }
            }
            if player.pattern?.repeats == true { apply(player.stop()) }
            apply(player.advance(to: ms(now + 60_000)))
            XCTAssertEqual(lines, [])
            XCTAssertNil(player.pattern)
        }
    }
}
