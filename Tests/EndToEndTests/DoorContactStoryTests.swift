import DoorCore
import Foundation
import TestSupport
import XCTest

/// docs/policy.md "Door contact" and "First person in" on the real gatewayd
/// (the simulated board, its inputs driven through `gatewayctl sim`): forced
/// open as an alarm state cleared by the close, a request to exit shunting
/// the next opening, the held-open stages and their clear, and a
/// first-person-in passage schedule that opens on the first grant and keeps
/// passage across a restart.
final class DoorContactStoryTests: XCTestCase {
    func testTheOfficeWithAMaglockEndToEnd() throws {
        let g = try GatewayUnderTest()
        defer { g.stop() }
        let all = #"["mon", "tue", "wed", "thu", "fri", "sat", "sun"]"#
        try g.writeConfig(
            extra: """
                [inputs.door_contact]
                line = "GPIO5"
                [inputs.request_to_exit]
                line = "GPIO18"
                [door_contact]
                warn_s = 1
                alert_s = 2
                escalate_s = 3
                [request_to_exit]
                grace_s = 10
                [[schedules]]
                name = "office"
                windows = [{ days = \(all), from = "00:00", to = "24:00" }]
                first_person_in = true
                """,
            door: "passage_schedule = \"office\"", actions: GatewayUnderTest.baseActions)
        try g.start()
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "normal", "inside the window, nobody in yet: locked")
        XCTAssertEqual(try g.status()["door_alarm"]?.stringValue, "none")

        // Forced open: an alarm state at once, cleared (and audited) by the close.
        var seen = try g.eventCount()
        try g.ctlJSON(["sim", "door", "open"])
        try g.waitForEvent("door_forced_open", after: seen)
        XCTAssertEqual(try g.status()["door_alarm"]?.stringValue, "forced_open")
        seen = try g.eventCount()
        try g.ctlJSON(["sim", "door", "closed"])
        let cleared = try g.waitForEvent("door_alarm_cleared", after: seen)
        XCTAssertTrue(cleared["reason"]?.stringValue?.hasPrefix("forced_open") == true, "\(cleared)")
        XCTAssertEqual(try g.status()["door_alarm"]?.stringValue, "none")

        // A request to exit: the next opening is an exit; held open, the stages.
        seen = try g.eventCount()
        try g.ctlJSON(["sim", "press", "--input", "request_to_exit", "--hold", "0.2"])
        try g.waitForEvent("request_to_exit", reason: "shunt", after: seen)
        XCTAssertEqual(g.outputTransitions("strike", to: "unlocked"), 0, "shunt only: the strike never moved")
        try g.ctlJSON(["sim", "door", "open"])
        try g.waitForEvent("door_opened", after: seen)
        try g.waitForEvent("door_held_open_warning", after: seen, timeout: E2ETiming.timeout(10))
        try g.waitForEvent("door_held_open", after: seen, timeout: E2ETiming.timeout(10))
        XCTAssertEqual(try g.status()["door_alarm"]?.stringValue, "held_open")
        try g.waitForEvent("door_held_open_escalated", after: seen, timeout: E2ETiming.timeout(10))
        XCTAssertEqual(try g.status()["held_open"]?.stringValue, "escalated")
        let exit = try g.auditKinds().dropFirst(seen)
        XCTAssertFalse(exit.contains("door_forced_open"), "the exit was not forced: \(exit)")
        seen = try g.eventCount()
        try g.ctlJSON(["sim", "door", "closed"])
        XCTAssertEqual(try g.waitForEvent("door_alarm_cleared", after: seen)["reason"]?.stringValue, "held_open")

        // First person in: the first grant opens the window (passage), and a
        // restart inside it comes back in passage.
        let dump = try g.issueSticker("04A1B2C3D4E5F6")
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "normal")
        seen = try g.eventCount()
        try g.tapSticker(dump, expect: "access_granted")
        let passage = try g.waitForEvent("mode_changed", reason: "passage", after: seen)
        XCTAssertEqual(passage["source"]?.stringValue, "schedule")
        XCTAssertTrue(FileManager.default.fileExists(atPath: g.dir.path + "/state/first-person-in"))
        XCTAssertEqual(g.stop(), 0)
        try g.start()
        XCTAssertTrue(
            try waitUntil(timeout: 10) { try g.status()["mode"]?.stringValue == "passage" },
            "passage again after the restart")
        try g.assertChainIntact()
    }
}
