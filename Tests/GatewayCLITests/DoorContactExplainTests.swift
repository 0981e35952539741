import DoorCore
import GatewayConfig
import GatewayControl
import TestSupport
import XCTest

/// `policy explain` for the office with a maglock (docs/policy.md
/// "Walkthroughs"): the held-open stages, forced open, the request to exit,
/// and a passage schedule that waits for its first person.
final class DoorContactExplainTests: XCTestCase {
    let office =
        ConfigText.simMaglock(id: "office") + """
            [inputs.door_contact]
            line = 6
            [inputs.request_to_exit]
            line = 7
            [door_contact]
            warn_s = 15
            alert_s = 30
            escalate_s = 120
            [[schedules]]
            name = "office"
            windows = [{ days = ["mon", "tue", "wed", "thu", "fri"], from = "08:00", to = "18:00" }]
            first_person_in = true
            [door]
            passage_schedule = "office"

            """

    func testTheOfficeWithAMaglock() throws {
        let c = try GatewayConfiguration.load(toml: office)
        // Monday 2026-12-07 08:30 UTC.
        let v = try PolicyExplain.explain(
            configuration: c, zone: .utc, action: 0, tag: nil, at: 1_796_601_600 + 8 * 3600 + 1800, note: nil,
            registryConsulted: false)
        XCTAssertEqual(v["schedules"]?.arrayValue?.first?["first_person_in"]?.boolValue, true)
        XCTAssertEqual(v["door_contact"]?["warn_s"]?.intValue, 15)
        XCTAssertEqual(v["door_contact"]?["request_to_exit"]?.stringValue, "shunt")
        let text = PolicyExplain.render(v)
        XCTAssertTrue(
            text.contains(
                "schedule office (passage mode after the first grant inside a window: first person in): inside a window"
            ),
            text)
        XCTAssertTrue(
            text.contains(
                "door contact: held open (not in passage nor in a fire alarm), it warns at the door after 15 s, alerts after 30 s, escalates to the site after 120 s; an opening without a grant (or 10 s after one), passage, a fire alarm or a request to exit is forced: an alarm until it closes; a request to exit (shunt only) makes an opening within 10 s an exit"
            ), text)
        // Without a door contact nothing is said of it.
        let plain = try GatewayConfiguration.load(toml: "[device]\nid = \"d\"\n[board]\nkind = \"sim\"\n")
        let p = try PolicyExplain.explain(
            configuration: plain, zone: .utc, action: 0, tag: nil, at: 0, note: nil, registryConsulted: false)
        XCTAssertNil(p["door_contact"])
        XCTAssertFalse(PolicyExplain.render(p).contains("door contact"))
    }
}
