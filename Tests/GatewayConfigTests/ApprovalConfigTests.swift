import DoorCore
import Foundation
import GatewayConfig
import TestSupport
import XCTest

/// `approval = { timeout_s, by }` in `[[actions]]` (docs/policy.md
/// "Approval"), and docs/policy.md's configurations: every TOML block of
/// its Approval section and walk-throughs loads.
final class ApprovalConfigTests: XCTestCase {
    static let base = ConfigText.sim(id: "d1")

    func issues(_ text: String) -> [String] { loadIssues(Self.base + text).map { "\($0.key): \($0.message)" } }

    func action(_ approval: String) -> String {
        "[[actions]]\nindex = 0\nsteps = [{ pulse = \"strike\", ms = 3000 }]\napproval = \(approval)\n"
    }

    func testApprovalLoads() throws {
        let c = try GatewayConfiguration.load(
            toml: Self.base + action(#"{ timeout_s = 45, by = ["phone", "gatewayctl"] }"#)
                + "[[actions]]\nindex = 1\nsteps = [{ pulse = \"strike\", ms = 3000 }]\n")
        XCTAssertEqual(c.door.actions[0].approval, ApprovalPolicy(timeout: .seconds(45), by: [.phone, .gatewayctl]))
        XCTAssertNil(c.door.actions[1].approval)
        let d = try GatewayConfiguration.load(toml: Self.base + action(#"{ by = ["home_assistant"] }"#))
        XCTAssertEqual(d.door.actions[0].approval?.timeout, .seconds(120), "the default timeout")
        XCTAssertNil(try GatewayConfiguration.load(toml: Self.base).door.actions[0].approval, "off by default")
    }

    func testBadApprovalsAreRefusedNamingTheKey() {
        XCTAssertEqual(
            issues(action(#"{ timeout_s = 3600, by = ["phone"] }"#)),
            [
                "actions[0].approval.timeout_s: 3600 s is outside 10…900: long enough to reach the approver, short enough that the visitor is still at the door"
            ])
        XCTAssertEqual(
            issues(action(#"{ timeout_s = 0, by = ["phone"] }"#)).first?.hasPrefix(
                "actions[0].approval.timeout_s: 0 s"),
            true)
        XCTAssertEqual(
            issues(action(#"{ by = ["phone", "alexa"] }"#)),
            [
                "actions[0].approval.by[1]: \"alexa\" is not an approver (approvers: \"home_assistant\", \"phone\", \"gatewayctl\")"
            ])
        XCTAssertEqual(
            issues(action(#"{ by = [] }"#)),
            [
                "actions[0].approval.by: names no approver: nobody could open the door (approvers: \"home_assistant\", \"phone\", \"gatewayctl\")"
            ])
        XCTAssertEqual(
            issues(action(#"{ timeout_s = 60 }"#)),
            ["actions[0].approval.by: is required: who may approve, from \"home_assistant\", \"phone\", \"gatewayctl\""]
        )
        XCTAssertEqual(
            issues(action(#"{ by = ["phone"], quorum = 2 }"#)), ["actions[0].approval.quorum: unknown key"])
        XCTAssertEqual(issues(action(#""yes""#)), ["actions[0].approval: expected a table, found a string"])
        XCTAssertEqual(
            issues(action(#"{ timeout_s = "2m", by = ["phone"] }"#)),
            ["actions[0].approval.timeout_s: expected an integer, found a string"])
    }

    /// docs/policy.md: each ```toml block of "Approval" and "Walkthroughs"
    /// loads (with the device and board every file has), and the front
    /// door's visitors need approval.
    func testThePolicyDocsConfigurationsLoad() throws {
        let text = try String(contentsOf: Fixtures.root.appendingPathComponent("docs/policy.md"), encoding: .utf8)
        var section = ""
        var blocks: [(section: String, toml: String)] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#"), current == nil { section = String(line) }
            if line == "```toml" {
                current = []
            } else if line == "```", let lines = current {
                blocks.append((section, lines.joined(separator: "\n")))
                current = nil
            } else if current != nil {
                current?.append(line)
            }
        }
        let wanted = [
            "## Approval", "### A shop door: passage during opening hours",
            "### An office: staff hours and the cleaner's evening", "### A front door with visitor approval",
        ]
        XCTAssertEqual(Set(blocks.map(\.section)).intersection(wanted), Set(wanted), "a walk-through lost its config")
        for block in blocks where wanted.contains(block.section) {
            // [[schedules]] tables the walk-through's actions name are in the same block.
            do {
                let c = try GatewayConfiguration.load(toml: Self.base + block.toml)
                if block.section == "### A front door with visitor approval" {
                    XCTAssertNil(c.door.actions[0].approval)
                    XCTAssertEqual(
                        c.door.actions[1].approval,
                        ApprovalPolicy(timeout: .seconds(90), by: [.homeAssistant, .phone, .gatewayctl]))
                    XCTAssertTrue(c.mqtt.labelInEvents)
                }
                if block.section.hasPrefix("### A shop") { XCTAssertEqual(c.door.passageSchedule, "shop") }
                if block.section.hasPrefix("### An office") {
                    XCTAssertEqual(c.door.actions.map(\.schedule), ["staff", "cleaner"])
                }
            } catch {
                XCTFail("\(block.section): \(error.issues.map { "\($0.key): \($0.message)" })")
            }
        }
    }
}
