import DoorCore
import XCTest

/// First person in (FirstPersonIn.swift, docs/policy.md "First person in"):
/// a passage window opens only after a grant inside it, ends at its end, and
/// a restart inside an opened window keeps passage.
final class FirstPersonInTests: XCTestCase {
    /// Monday 2026-12-07 00:00 UTC.
    let monday: Int64 = 1_796_601_600
    let hour: Int64 = 3600
    var office: WeeklySchedule {
        var s = WeeklySchedule(
            name: "office", windows: [ScheduleWindow(days: [1, 2, 3, 4, 5], from: 8 * 60, to: 18 * 60)])
        s.firstPersonIn = true
        return s
    }

    /// What the door would do at `t` with `fpi`: the schedule's reading and the passage.
    func passage(_ fpi: FirstPersonIn, at t: Int64, required: Bool = true) -> Bool {
        let active = office.isActive(at: t, zone: .utc)
        return fpi.passage(active: active, windowEnd: office.nextChange(after: t, zone: .utc), required: required)
    }

    func testTheWindowOpensOnlyAfterAGrantInsideItAndEndsAtItsEnd() {
        var fpi = FirstPersonIn()
        let eight = monday + 8 * hour
        XCTAssertFalse(passage(fpi, at: eight), "in the window, nobody in yet: locked")
        XCTAssertTrue(passage(fpi, at: eight, required: false), "a plain passage schedule opens at 08:00")
        // A grant before the window opens nothing.
        XCTAssertFalse(fpi.granted(active: false, windowEnd: eight))
        XCTAssertFalse(passage(fpi, at: eight + 60))
        // The first grant at 08:59 opens it until 18:00.
        XCTAssertTrue(fpi.granted(active: true, windowEnd: office.nextChange(after: eight + 59 * 60, zone: .utc)))
        XCTAssertEqual(fpi.openedUntil, monday + 18 * hour)
        XCTAssertTrue(passage(fpi, at: eight + 59 * 60))
        XCTAssertTrue(passage(fpi, at: monday + 18 * hour - 1), "the window's last second")
        XCTAssertFalse(passage(fpi, at: monday + 18 * hour), "its end ends passage, as a plain schedule's")
        // A second grant in the same window changes nothing.
        XCTAssertFalse(fpi.granted(active: true, windowEnd: monday + 18 * hour))
        // Tuesday's window is another one: locked until its own first grant.
        let tuesday = monday + 24 * hour
        XCTAssertFalse(passage(fpi, at: tuesday + 9 * hour))
        XCTAssertTrue(fpi.granted(active: true, windowEnd: tuesday + 18 * hour))
        XCTAssertTrue(passage(fpi, at: tuesday + 9 * hour))
    }

    /// A restart inside an opened window keeps passage (the persisted end);
    /// a file from yesterday's window, or an unreadable one, does not.
    func testARestartInsideTheOpenedWindowKeepsPassage() {
        var fpi = FirstPersonIn()
        XCTAssertTrue(fpi.granted(active: true, windowEnd: monday + 18 * hour))
        XCTAssertEqual(fpi.persisted, "\(monday + 18 * hour)\n")
        let restarted = FirstPersonIn(persisted: fpi.persisted)
        XCTAssertEqual(restarted, fpi)
        XCTAssertTrue(passage(restarted, at: monday + 13 * hour), "rebooted at lunch: still open")
        XCTAssertFalse(passage(restarted, at: monday + 24 * hour + 9 * hour), "the next day starts locked")
        XCTAssertFalse(passage(FirstPersonIn(persisted: ""), at: monday + 13 * hour))
        XCTAssertFalse(passage(FirstPersonIn(persisted: "garbage\n"), at: monday + 13 * hour), "fail closed")
        XCTAssertEqual(FirstPersonIn(persisted: "").persisted, "")
    }

    /// A window without an end in sight (always on) is one window.
    func testAWindowWithoutAnEndIsOneWindow() {
        var fpi = FirstPersonIn()
        XCTAssertFalse(fpi.passage(active: true, windowEnd: nil, required: true))
        XCTAssertTrue(fpi.granted(active: true, windowEnd: nil))
        XCTAssertTrue(fpi.passage(active: true, windowEnd: nil, required: true))
        XCTAssertFalse(fpi.passage(active: false, windowEnd: nil, required: true))
    }
}
