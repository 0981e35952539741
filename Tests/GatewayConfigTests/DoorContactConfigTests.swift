import DoorCore
@testable import GatewayConfig
import XCTest

/// `[door_contact]`'s held-open stages and the migration from the one
/// `held_open_s`, `[inputs.request_to_exit]` and `[request_to_exit]`,
/// `first_person_in` (ConfigDoorContact.swift, docs/policy.md "Door contact").
final class DoorContactConfigTests: XCTestCase, ExpectsConfigIssues {
    static let base = "[device]\nid = \"d1\"\n[board]\nkind = \"sim\"\n[inputs.door_contact]\nline = \"GPIO5\"\n"

    func load(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> GatewayConfiguration {
        do {
            return try GatewayConfiguration.load(toml: Self.base + text)
        } catch {
            XCTFail("unexpected issues:\n\(error)", file: file, line: line)
            throw error
        }
    }

    /// A file from before the stages keeps working as it did: its
    /// `held_open_s` is the alert, nothing warns and nothing escalates.
    func testAnOldFilesHeldOpenSIsTheAlertAlone() throws {
        let old = try load("[door_contact]\nheld_open_s = 45\nopen_grace_s = 5\n")
        XCTAssertEqual(
            old.door.doorContact,
            DoorContactPolicy(
                enabled: true, heldOpenAfter: .seconds(45), openGrace: .seconds(5), warnAfter: .zero,
                escalateAfter: .zero))
        XCTAssertEqual(old.door.doorContact.heldOpenStages.map(\.stage), [.alert])
        // An old file that asks for a stage gets it.
        let asked = try load("[door_contact]\nheld_open_s = 45\nescalate_s = 90\n")
        XCTAssertEqual(asked.door.doorContact.heldOpenStages.map(\.stage), [.alert, .escalated])
    }

    /// A file without held_open_s gets the stages: 15, 30, 120 s; a default
    /// stage out of order with a given one is off, not an error.
    func testTheDefaultStages() throws {
        let plain = try load("")
        XCTAssertEqual(
            plain.door.doorContact.heldOpenStages.map(\.after), [.seconds(15), .seconds(30), .seconds(120)])
        let early = try load("[door_contact]\nalert_s = 10\n")
        XCTAssertEqual(early.door.doorContact.heldOpenStages.map(\.stage), [.alert, .escalated])
        let late = try load("[door_contact]\nalert_s = 600\n")
        XCTAssertEqual(late.door.doorContact.heldOpenStages.map(\.after), [.seconds(15), .seconds(600)])
    }

    func testTheStagesAndTheirOrder() throws {
        let c = try load("[door_contact]\nwarn_s = 10\nalert_s = 30\nescalate_s = 300\n")
        XCTAssertEqual(c.door.doorContact.heldOpenStages.map(\.stage), [.warning, .alert, .escalated])
        XCTAssertEqual(c.door.doorContact.heldOpenStages.map(\.after), [.seconds(10), .seconds(30), .seconds(300)])
        XCTAssertEqual(
            try load("[door_contact]\nalert_s = 0\n").door.doorContact.heldOpenStages.map(\.stage),
            [.warning, .escalated])
        XCTAssertEqual(
            try load("[door_contact]\nwarn_s = 0\nalert_s = 0\nescalate_s = 0\n").door.doorContact.heldOpenStages.count,
            0)
        XCTAssertEqual(
            issues(Self.base + "[door_contact]\nheld_open_s = 30\nalert_s = 30\n"),
            [
                ConfigIssue(
                    key: "door_contact.held_open_s", line: 8, message: "is the old name of alert_s: give only alert_s")
            ])
        XCTAssertEqual(
            issues(Self.base + "[door_contact]\nwarn_s = 30\nalert_s = 30\n").map(\.key), ["door_contact.warn_s"])
        XCTAssertEqual(
            issues(Self.base + "[door_contact]\nwarn_s = 10\nalert_s = 30\nescalate_s = 20\n").map(\.key),
            ["door_contact.escalate_s"])
    }

    func testRequestToExitInputAndPolicy() throws {
        let plain = try load("")
        XCTAssertNil(plain.requestToExit)
        XCTAssertEqual(plain.door.requestToExit, RequestToExitPolicy(grace: .seconds(10), action: nil))
        let c = try load(
            "[inputs.request_to_exit]\nline = \"GPIO18\"\n[request_to_exit]\ngrace_s = 20\naction = 0\n")
        XCTAssertEqual(
            c.requestToExit, .init(line: .name("GPIO18"), activeLow: true, bias: .pullUp, debounceMilliseconds: 30))
        XCTAssertEqual(c.door.requestToExit, RequestToExitPolicy(grace: .seconds(20), action: 0))
        XCTAssertEqual(
            issues(Self.base + "[inputs.request_to_exit]\nline = \"GPIO5\"\n").map(\.key),
            ["inputs.request_to_exit.line"], "one line, one input")
        XCTAssertEqual(issues(Self.base + "[request_to_exit]\naction = 9\n").map(\.key), ["request_to_exit.action"])
    }

    func testFirstPersonInIsPerSchedule() throws {
        let c = try load(
            """
            [door]
            passage_schedule = "office"
            [[schedules]]
            name = "office"
            windows = [{ days = ["mon"], from = "08:00", to = "18:00" }]
            first_person_in = true
            [[schedules]]
            name = "plain"
            windows = [{ days = ["mon"], from = "08:00", to = "18:00" }]

            """)
        XCTAssertEqual(c.door.schedules.map(\.firstPersonIn), [true, false])
    }

    /// The example file as shipped: the stages on, shunt only.
    func testTheExampleHasTheStages() throws {
        let c = try GatewayConfiguration.load(toml: ConfigExample.text(board: .sim))
        XCTAssertEqual(c.door.doorContact.warnAfter, .seconds(15))
        XCTAssertEqual(c.door.doorContact.heldOpenAfter, .seconds(30))
        XCTAssertEqual(c.door.doorContact.escalateAfter, .seconds(120))
        XCTAssertEqual(c.door.requestToExit, RequestToExitPolicy(grace: .seconds(10), action: nil))
    }
}
