import DoorCore
import GatewayConfig
import TestSupport
import XCTest

/// `[fire_alarm]` and `on_fire` (docs/policy.md "Fire alarm"), read from the
/// shipped example with its block uncommented.
final class FireAlarmConfigTests: XCTestCase {
    static let base = ConfigText.sim(id: "d1")

    func issues(_ text: String) -> [String] { loadIssues(Self.base + text).map { "\($0.key): \($0.message)" } }

    /// The example's commented `[fire_alarm]` block, uncommented as a user would.
    static var exampleBlock: String {
        var out: [Substring] = []
        var inBlock = false
        for line in ConfigExample.text(board: .sim).split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "# [fire_alarm]" { inBlock = true }
            if inBlock && line.isEmpty { break }
            if inBlock { out.append(line.dropFirst(2)) }
        }
        return out.joined(separator: "\n") + "\n"
    }

    func testTheShippedBlockLoadsSupervisedWithAPullUp() throws {
        XCTAssertTrue(Self.exampleBlock.hasPrefix("[fire_alarm]\nline = "), Self.exampleBlock)
        let text = ConfigExample.text(board: .sim).replacingOccurrences(
            of: "# [fire_alarm]\n"
                + Self.exampleBlock.dropFirst("[fire_alarm]\n".count).split(separator: "\n")
                .map { "# " + $0 }.joined(separator: "\n"),
            with: Self.exampleBlock.dropLast())
        XCTAssertNotEqual(text, ConfigExample.text(board: .sim), "the block was uncommented")
        let c = try GatewayConfiguration.load(toml: text)
        let fire = try XCTUnwrap(c.fireAlarm)
        XCTAssertEqual(fire.input.line, .name("GPIO21"))
        XCTAssertFalse(fire.input.activeLow, "alarm reads high: the pull-up once the loop opens")
        XCTAssertEqual(fire.input.bias, .pullUp)
        XCTAssertEqual(fire.input.debounceMilliseconds, 20)
        XCTAssertTrue(fire.supervised)
        XCTAssertNil(try GatewayConfiguration.load(toml: ConfigExample.text(board: .sim)).fireAlarm, "off as shipped")
    }

    func testASupervisedInputWhoseCutWireReadsNormalIsRefused() {
        XCTAssertEqual(
            issues("[fire_alarm]\nline = \"GPIO21\"\nalarm_level = \"low\"\n"),
            [
                "fire_alarm.alarm_level: \"low\" with bias \"pull-up\": a cut wire reads high, which would be taken as no alarm; wire the panel's contact normally closed with alarm_level = \"high\" (board/wiring.md), or set supervised = false"
            ])
        XCTAssertEqual(issues("[fire_alarm]\nline = 21\nbias = \"pull-down\"\n").count, 1)
        XCTAssertEqual(issues("[fire_alarm]\nline = 21\nbias = \"pull-down\"\nalarm_level = \"low\"\n"), [])
        XCTAssertEqual(issues("[fire_alarm]\nline = 21\nbias = \"as-is\"\n").first?.hasPrefix("fire_alarm.bias:"), true)
        XCTAssertEqual(issues("[fire_alarm]\nline = 21\nbias = \"as-is\"\nsupervised = false\n"), [])
        XCTAssertEqual(
            issues("[fire_alarm]\nline = 21\nalarm_level = \"low\"\nsupervised = false\n"), [],
            "unsupervised: the installer's choice")
    }

    func testTheDebounceIsBoundedAndTheLineRequiredAndUnique() {
        XCTAssertEqual(issues("[fire_alarm]\nline = 21\ndebounce_ms = 51\n").count, 1)
        XCTAssertEqual(issues("[fire_alarm]\nline = 21\ndebounce_ms = 50\n"), [])
        XCTAssertEqual(issues("[fire_alarm]\n").first?.hasPrefix("fire_alarm.line: is required"), true)
        XCTAssertEqual(issues("[fire_alarm]\nline = \"GPIO17\"\n").count, 1, "the strike's line")
        XCTAssertEqual(issues("[fire_alarm]\nline = 21\nwhen = 1\n"), ["fire_alarm.when: unknown key"])
    }

    func testOnFireDefaultsByLockedLevelAndCanBeSaid() throws {
        let outputs =
            ConfigText.maglock + """
                [[outputs]]
                name = "strike"
                line = 6
                [[outputs]]
                name = "gate"
                line = 12
                on_fire = "release"
                [[outputs]]
                name = "mag2"
                line = 13
                locked_level = "energised"
                on_fire = "keep"

                """
        let c = try GatewayConfiguration.load(toml: Self.base + outputs)
        XCTAssertEqual(c.door.outputs.map(\.onFire), [.release, .keep, .release, .keep])
        XCTAssertEqual(
            issues("[[outputs]]\nname = \"m\"\nline = 5\non_fire = \"open\"\n"),
            ["outputs[0].on_fire: \"open\" is not one of \"release\", \"keep\""])
    }

    /// docs/policy.md's walkthrough "An office with a maglock and a fire
    /// panel": its configuration loads, the maglock is released in a fire.
    func testThePolicyWalkthroughLoads() throws {
        let text = try String(contentsOf: Fixtures.root.appendingPathComponent("docs/policy.md"), encoding: .utf8)
        let section = try XCTUnwrap(
            text.components(separatedBy: "### An office with a maglock and a fire panel\n").dropFirst().first)
        let toml = try XCTUnwrap(
            section.components(separatedBy: "```toml\n").dropFirst().first?
                .components(separatedBy: "\n```").first)
        let c = try GatewayConfiguration.load(toml: Self.base + toml)
        XCTAssertEqual(c.fireAlarm?.input.line, .name("GPIO21"))
        XCTAssertEqual(c.door.outputs.map(\.onFire), [.release])
        XCTAssertEqual(c.door.passageSchedule, "office")
    }
}
