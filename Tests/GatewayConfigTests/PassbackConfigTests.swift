import DoorCore
import GatewayConfig
import TestSupport
import XCTest

/// `passback` and `passback_reset_minutes` on an action (issue 36): read strictly, and only at a
/// door that has an entry and an exit reader.
final class PassbackConfigTests: XCTestCase {
    func toml(_ action: String, readers: Bool = true) -> String {
        ConfigText.sim(id: "club") + ConfigText.action(0, "members", ms: 3000, action)
            + (readers ? "\n" + ConfigText.entryAndExitReaders : "")
    }

    func errors(_ text: String) -> String {
        do {
            _ = try GatewayConfiguration.load(toml: text)
            return "loaded"
        } catch {
            return "\(error)"
        }
    }

    func testTheRuleAndItsResetAreRead() throws {
        let c = try GatewayConfiguration.load(toml: toml("passback = \"hard\"\npassback_reset_minutes = 720"))
        XCTAssertEqual(c.door.actions[0].passback, PassbackRule(mode: .hard, resetAfter: 720 * 60))
        XCTAssertTrue(c.tracksPassage)
        XCTAssertEqual(c.passageSide(reader: "street"), .entry)
        XCTAssertEqual(c.passageSide(reader: "yard"), .exit)
        XCTAssertNil(c.passageSide(reader: nil))
        XCTAssertTrue(c.summary.contains("passback 0 hard (reset 720 min)"), "\(c.summary)")
        let soft = try GatewayConfiguration.load(toml: toml("passback = \"soft\""))
        XCTAssertEqual(soft.door.actions[0].passback, PassbackRule(mode: .soft))
        let off = try GatewayConfiguration.load(toml: toml(""))
        XCTAssertEqual(off.door.actions[0].passback, .off, "off unless asked")
    }

    func testBadRulesAreRefusedByName() {
        XCTAssertTrue(
            errors(toml("passback = \"strict\"")).contains(#"passback: "strict" is not one of "off", "soft", "hard""#),
            errors(toml("passback = \"strict\"")))
        XCTAssertTrue(
            errors(toml("passback_reset_minutes = 30")).contains("passback_reset_minutes: needs passback"),
            errors(toml("passback_reset_minutes = 30")))
        XCTAssertTrue(
            errors(toml("passback = \"hard\"\npassback_reset_minutes = 0")).contains("out of range"),
            errors(toml("passback = \"hard\"\npassback_reset_minutes = 0")))
    }

    func testARuleNeedsAnEntryAndAnExitReader() {
        let text = toml("passback = \"hard\"", readers: false)
        XCTAssertTrue(
            errors(text).contains(#"actions[0].passback: "hard" needs an entry and an exit reader in [[readers]]"#),
            errors(text))
        // A door without an exit reader records no passage.
        let single = try? GatewayConfiguration.load(toml: toml("", readers: false))
        XCTAssertEqual(single?.tracksPassage, false)
        XCTAssertNil(single?.passageSide(reader: "pn532"))
    }
}
