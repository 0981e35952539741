import DoorCore
import XCTest

@testable import DoorIO

final class DebouncerTests: XCTestCase {
    private func ms(_ v: UInt64) -> MonotonicInstant { MonotonicInstant(nanoseconds: v * 1_000_000) }

    func testBouncesShorterThanTheDebounceTimeAreIgnored() {
        var d = Debouncer(initial: false)
        var edges: [Debouncer.Edge] = []
        for (level, t) in [(true, 0), (false, 5), (true, 12), (false, 20), (true, 41), (false, 70)] as [(Bool, UInt64)]
        {
            edges += d.sample(level, at: ms(t))
        }
        if let e = d.advance(to: ms(500)) { edges.append(e) }
        XCTAssertEqual(edges, [])
        XCTAssertFalse(d.level)
        XCTAssertNil(d.deadline)
    }

    func testACleanPressIsReportedOnceWithTheTimeItBegan() {
        var d = Debouncer(initial: false)
        // Contact bounce at the press, then held.
        XCTAssertEqual(d.sample(true, at: ms(100)), [])
        XCTAssertEqual(d.sample(false, at: ms(102)), [])
        XCTAssertEqual(d.sample(true, at: ms(104)), [])
        XCTAssertEqual(d.deadline, ms(134))
        XCTAssertNil(d.advance(to: ms(133)))
        XCTAssertEqual(d.advance(to: ms(134)), Debouncer.Edge(active: true, at: ms(104)))
        XCTAssertNil(d.advance(to: ms(200)))
        XCTAssertTrue(d.level)
        // A repeated raw level (a missed edge) does not restart or repeat anything.
        XCTAssertEqual(d.sample(true, at: ms(300)), [])
        XCTAssertNil(d.advance(to: ms(400)))
        // Release, with bounce.
        XCTAssertEqual(d.sample(false, at: ms(900)), [])
        XCTAssertEqual(d.sample(true, at: ms(901)), [])
        XCTAssertEqual(d.sample(false, at: ms(903)), [])
        XCTAssertEqual(d.advance(to: ms(933)), Debouncer.Edge(active: false, at: ms(903)))
    }

    func testASampleAfterTheDeadlineFirstReportsTheMaturedEdge() {
        var d = Debouncer(interval: .milliseconds(30), initial: false)
        XCTAssertEqual(d.sample(true, at: ms(0)), [])
        XCTAssertEqual(d.sample(false, at: ms(50)), [Debouncer.Edge(active: true, at: ms(0))])
        XCTAssertEqual(d.advance(to: ms(80)), Debouncer.Edge(active: false, at: ms(50)))
    }

    func testCustomAndZeroIntervals() {
        var slow = Debouncer(interval: .milliseconds(100), initial: true)
        XCTAssertEqual(slow.sample(false, at: ms(0)), [])
        XCTAssertNil(slow.advance(to: ms(99)))
        XCTAssertEqual(slow.advance(to: ms(100)), Debouncer.Edge(active: false, at: ms(0)))
        var none = Debouncer(interval: .zero, initial: false)
        XCTAssertEqual(none.sample(true, at: ms(7)), [Debouncer.Edge(active: true, at: ms(7))])
    }
}
