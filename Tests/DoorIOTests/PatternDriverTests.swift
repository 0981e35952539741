import Dispatch
import DoorCore
import Logging
import Synchronization
import TestSupport
import XCTest

@testable import DoorIO

/// `PatternDriver` played from many threads at once while its timer ticks:
/// the board gets the changes in the order the player made them, and every
/// line ends off.
final class PatternDriverTests: XCTestCase {
    /// A board that records its indicator lines and every change that did not
    /// flip a line (one applied out of order: on when already on, off when off).
    private final class RecordingBoard: DoorBoard, Sendable {
        struct Record {
            var lines: [String: Bool]
            var changes = 0
            var redundant: [LineChange] = []
        }
        let outputs: [OutputDefinition] = []
        let indicatorNames: [String]
        let record: Mutex<Record>

        init(indicators: [String]) {
            indicatorNames = indicators
            record = Mutex(Record(lines: Dictionary(uniqueKeysWithValues: indicators.map { ($0, false) })))
        }

        func drive(_ output: String, _ state: OutputState) throws { throw DoorBoardError.unknownOutput(output) }
        func setIndicators(_ changes: [LineChange]) throws {
            record.withLock { r in
                for change in changes {
                    if r.lines[change.line] == change.on { r.redundant.append(change) }
                    r.lines[change.line] = change.on
                    r.changes += 1
                }
            }
        }
        func lockAll() { record.withLock { r in for name in indicatorNames { r.lines[name] = false } } }
        func snapshot() -> BoardSnapshot {
            BoardSnapshot(outputs: [:], indicators: record.withLock { $0.lines }, inputs: [:])
        }
        func setInputHandler(_ handler: @escaping @Sendable (InputEvent) -> Void) {}
    }

    func testPlaysFromManyThreadsReachTheBoardInOrderAndEndOff() throws {
        let board = RecordingBoard(indicators: ["green", "red", "buzzer"])
        var driver: PatternDriver? = PatternDriver(board: board, logger: LogCapture().logger)
        func ms(_ v: Int) -> Duration { .milliseconds(v) }
        // Short steps, so the timer ticks between (and during) the plays.
        let patterns = [
            FeedbackPattern(
                steps: [PatternStep(on: ["green", "buzzer"], duration: ms(1)), .off(ms(1))], repeats: true,
                priority: 10),
            FeedbackPattern(
                steps: [
                    PatternStep(on: ["red"], duration: ms(2)), PatternStep(on: ["red", "buzzer"], duration: ms(1)),
                ],
                repeats: true, priority: 10),
            FeedbackPattern(steps: [PatternStep(on: ["green", "red"], duration: ms(1))], priority: 20),
        ]
        do {
            let shared = driver!
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for i in 0..<150 {
                    switch (thread + i) % 5 {
                    case 4: shared.stop()
                    default: shared.play(patterns[(thread * 7 + i) % patterns.count])
                    }
                    if i % 10 == 0 { _ = shared.isPlaying }
                }
            }
        }
        XCTAssertGreaterThan(board.record.withLock { $0.changes }, 0, "the patterns reached the board")
        driver?.stop()
        XCTAssertEqual(driver?.isPlaying, false)
        XCTAssertEqual(board.snapshot().indicators, ["green": false, "red": false, "buzzer": false])

        // A pattern still playing is switched off by the release (deinit).
        driver?.play(FeedbackPattern(steps: [PatternStep(on: ["green"], duration: .seconds(60))], priority: 10))
        XCTAssertEqual(board.snapshot().indicators["green"], true, "play is synchronous")
        driver = nil
        XCTAssertEqual(board.snapshot().indicators, ["green": false, "red": false, "buzzer": false])
        XCTAssertEqual(board.record.withLock { $0.redundant }, [], "changes applied out of order")
    }
}
