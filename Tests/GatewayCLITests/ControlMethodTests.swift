import Foundation
import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// The control socket's method names: one enum for gatewayctl and gatewayd,
/// the wire names unchanged.
final class ControlMethodTests: XCTestCase {
    /// Every name gatewayctl sent and gatewayd answered before the enum.
    static let wireNames = [
        "status", "open", "mode", "provision", "provision.cancel", "lockout.status", "lockout.clear",
        "feedback.play", "reader.info", "secrets.list", "secrets.new", "secrets.rotate", "secrets.remove",
        "secrets.import", "secrets.export", "keys.new", "keys.import", "keys.export", "sim.tap", "sim.remove",
        "sim.reinsert", "sim.dump", "sim.press", "sim.door", "sim.tear", "tags.list", "tags.revoke", "tags.expire",
        "tags.forget", "log", "log.verify", "log.follow", "backup", "debug.stall",
        // The fleet (docs/fleet.md).
        "fleet.status", "fleet.publish", "fleet.pull",
        // A clock floor raised by a bad time source.
        "clock.reset_floor",
        // docs/policy.md.
        "policy.explain",
        // docs/ntag424.md "uid fobs", and `provision reset` of a 424.
        "tags.enroll_uid", "provision.reset",
        // docs/policy.md "Approval": gatewayctl approve|deny CODE.
        "approval.answer",
        // docs/policy.md "Fire alarm": gatewayctl fire reset.
        "fire.reset",
        // Issue 35: a card number an outdoor reader sends; keypad PINs.
        "tags.enroll_card", "pins.set", "pins.add_code", "pins.remove",
        // Issue 35: gatewayctl reader osdp install NAME | status.
        "reader.osdp.install", "reader.osdp.status",
        // Issue 36: gatewayctl lockdown start|end|status, and a signed site command (lockdown, fire).
        "lockdown.start", "lockdown.end", "lockdown.status", "site.command",
        // Issue 36: gatewayctl occupancy, gatewayctl passback reset.
        "occupancy", "passback.reset",
    ]

    func testWireNamesAreTheEnumsRawValues() {
        // A debug build (the tests') has debug.stall; a release build does not.
        XCTAssertEqual(Set(ControlMethod.allCases.map(\.rawValue)), Set(Self.wireNames))
        XCTAssertEqual(ControlMethod.allCases.count, Self.wireNames.count)
        XCTAssertEqual(ControlMethod(rawValue: "provision.cancel"), .provisionCancel)
        XCTAssertEqual(ControlMethod(rawValue: "log.follow"), .logFollow)
        XCTAssertNil(ControlMethod(rawValue: "door.explode"))
        XCTAssertNil(ControlMethod(rawValue: "Status"))
        XCTAssertNil(ControlMethod(rawValue: ""))
    }

    func testCodableAsTheWireString() throws {
        let encoded = try JSONEncoder().encode([ControlMethod.tagsRevoke, .status])
        XCTAssertEqual(String(decoding: encoded, as: UTF8.self), #"["tags.revoke","status"]"#)
        XCTAssertEqual(try JSONDecoder().decode([ControlMethod].self, from: Data(#"["sim.tap"]"#.utf8)), [.simTap])
        XCTAssertThrowsError(try JSONDecoder().decode([ControlMethod].self, from: Data(#"["sim.explode"]"#.utf8)))
    }

    /// The methods whose use is logged with the caller: the set before the enum.
    func testChangesStateIsTheLoggedSet() {
        let logged: Set<String> = [
            "open", "mode", "provision", "provision.cancel", "lockout.clear", "secrets.new", "secrets.rotate",
            "secrets.remove", "secrets.import", "secrets.export", "keys.new", "keys.import", "keys.export",
            "tags.revoke", "tags.expire", "tags.forget", "backup",
            // The fleet: publishing a signed document, re-reading the retained
            // ones. (fleet.snapshot is gone: the daemon is not asked what to
            // sign, docs/security.md "H2".)
            "fleet.publish", "fleet.pull",
            // Lowering the clock floor changes what expiry and replay checks accept.
            "clock.reset_floor",
            // A fob enrolled opens where "uid" is listed; a 424 reset to factory keys.
            "tags.enroll_uid", "provision.reset",
            // An approval opens the door (docs/policy.md "Approval").
            "approval.answer",
            // A fire reset locks the released outputs again (docs/policy.md "Fire alarm").
            "fire.reset",
            // A card enrolled opens where "wiegand" or "osdp" is listed (issue 35).
            "tags.enroll_card",
            // A PIN set, a code added, a PIN removed (issue 35).
            "pins.set", "pins.add_code", "pins.remove",
            // An OSDP reader's install window hands it a new key (issue 35).
            "reader.osdp.install",
            // The site's lockdown, here or signed for every door (issue 36).
            "lockdown.start", "lockdown.end", "site.command",
            // A passage forgotten lets a credential in again (issue 36).
            "passback.reset",
        ]
        XCTAssertEqual(Set(ControlMethod.allCases.filter(\.changesState).map(\.rawValue)), logged)
    }
}
