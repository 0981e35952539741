import DoorCore
import GatewayConfig
import GatewayControl
import TestSupport
import XCTest

/// `policy explain` says lockdown (docs/policy.md "Lockdown") with the
/// door's own rule: asked of a door in lockdown, an action that is not
/// `lockdown_exempt` stays shut (`lockdown`), an exempt one opens — and the
/// door machine built from the same file decides a tap the same way.
final class LockdownExplainTests: XCTestCase {
    func testExplainAndTheDoorAgreeOnALockdownDenial() throws {
        let c = try GatewayConfiguration.load(
            toml: ConfigText.simMaglock(id: "lockdown") + """
                [[actions]]
                index = 0
                name = "staff"
                steps = [{ pulse = "maglock", ms = 3000 }]
                [[actions]]
                index = 1
                name = "security"
                steps = [{ pulse = "maglock", ms = 3000 }]
                lockdown_exempt = true
                """)
        XCTAssertEqual(c.door.actions.map(\.lockdownExempt), [false, true], "the key is read")
        let held = Lockdown(by: "alice", source: "site", since: 1_799_064_000)
        func explain(_ action: Int, _ lockdown: (mode: DoorMode, held: Lockdown?)?) throws -> JSONValue {
            try PolicyExplain.explain(
                configuration: c, zone: .utc, action: action, tag: nil, at: 1_799_064_000, note: nil,
                registryConsulted: false, lockdown: lockdown)
        }
        let staff = try explain(0, (.lockdown, held))
        XCTAssertEqual(staff["reason"]?.stringValue, "lockdown")
        XCTAssertEqual(staff["allowed"]?.boolValue, false)
        XCTAssertEqual(staff["lockdown"]?["by"]?.stringValue, "alice")
        XCTAssertTrue(
            PolicyExplain.render(staff).contains(
                "lockdown: in force since 2027-01-04T12:00:00Z by alice (site) — only lockdown_exempt actions open, not this one"
            ), PolicyExplain.render(staff))
        let security = try explain(1, (.lockdown, held))
        XCTAssertEqual(security["reason"]?.stringValue, "granted")
        XCTAssertEqual(security["lockdown"]?["exempt"]?.boolValue, true)
        // An admin's `mode lockdown` is a lockdown too; out of lockdown, and offline, nothing is said.
        XCTAssertEqual(try explain(0, (.lockdown, nil))["reason"]?.stringValue, "lockdown")
        XCTAssertEqual(try explain(0, (.normal, nil))["reason"]?.stringValue, "granted")
        XCTAssertNil(try explain(0, (.normal, nil))["lockdown"])
        XCTAssertNil(try explain(0, nil)["lockdown"])

        // The door, from the same settings, in the same lockdown.
        var settings = c.door
        settings.initialLockdown = held
        var h = MachineHarness(settings: settings)
        h.start()
        for (action, uid) in [(0, "04A1B2C3D4E5F6"), (1, "04A1B2C3D4E5F7")] {
            let fx = h.send(
                .tagArrived(
                    TagPresentation(
                        uid: TagUID(hex: uid)!, content: .ours, verdict: .grant(action: action, reason: "valid_v2"))))
            let event = fx.compactMap { if case .emit(let e) = $0 { return e } else { return nil } }.first
            let explained = try explain(action, (.lockdown, held))["reason"]?.stringValue
            XCTAssertEqual(event?.kind == .accessGranted ? "granted" : event?.reason, explained, "action \(action)")
        }
    }
}
