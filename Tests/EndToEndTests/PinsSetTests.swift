import Foundation
import TestSupport
import XCTest

/// `gatewayctl pins set` (issue 35, DoorCore `PINRules`): a PIN goes only
/// on an enrolled card whose action lists "card+pin" — the one place the door
/// asks for a card's PIN. A card whose action opens without one, a UID fob
/// and a PIN-only code (whose PIN is the code) are refused, nothing stored.
final class PinsSetTests: XCTestCase {
    func testPinsSetTakesOnlyACardWhoseActionAsksForItsPIN() throws {
        let g = try GatewayUnderTest()
        try g.writeConfig(
            actions: ConfigText.action(0, "front", ms: 300, "credentials = [\"wiegand\", \"uid\", \"pin\"]")
                + "\n" + ConfigText.action(1, "gate", ms: 300, "credentials = [\"card+pin\"]"))
        try g.start()
        defer { g.stop() }
        try g.ctlJSON(["tags", "enroll-card", "--action", "0", "26:7:100"])
        try g.ctlJSON(["tags", "enroll-card", "--action", "1", "26:7:200"])
        try g.ctlJSON(["tags", "enroll-uid", "--action", "0", "04A1B2C3D4E5F6"])
        let code = try g.ctlJSON(["pins", "add-code", "--action", "0", "--label", "courier"], stdin: "135790\n")
        let codeKey = try XCTUnwrap(code["code"]?.stringValue)

        for (credential, why) in [
            ("26:7:100", "does not list \"card+pin\""), ("04A1B2C3D4E5F6", "not a card number"),
            (codeKey, "PIN-only code"), ("26:7:999", "not enrolled"),
        ] {
            let r = try g.ctl(["pins", "set", credential], stdin: "97531864\n")
            XCTAssertNotEqual(r.status, 0, "pins set \(credential) was taken")
            XCTAssertTrue(r.stderr.contains(why), "\(credential): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("97531864"), "a PIN in an error")
        }
        let set = try g.ctlJSON(["pins", "set", "26:7:200"], stdin: "97531864\n")
        XCTAssertNotNil(set["pin_set"]?.stringValue, "\(set)")
        // Only the card + PIN card got a PIN: its removal works, the others have none to remove.
        XCTAssertEqual(try g.ctl(["pins", "remove", "26:7:200"]).status, 0)
        let none = try g.ctl(["pins", "remove", "26:7:100"])
        XCTAssertTrue(none.stderr.contains("has no PIN"), none.stderr)
        XCTAssertFalse(g.log.contains("97531864"), "a PIN in the log")
    }
}
