import DoorCore
import Foundation
import TestSupport
import XCTest

/// A keypad lockout at a real gatewayd (issue 35), typed on libosdp's peripheral device
/// (scripts/osdp/pd.py) inside Secure Channel: five wrong codes lock the street reader's
/// keypad; `gatewayctl lockout status` names the reader with the time left and its end,
/// `gatewayctl status` counts it, `gatewayctl lockout clear` ends it (the right code then
/// opens), and — like the door's tag lockouts, kept in memory — a restart ends it too.
final class KeypadLockoutTests: XCTestCase {
    func testAKeypadLockoutIsShownClearedAndEndedByARestart() throws {
        let osdp = try OSDPReaderFixture("keypad", [.init(name: "street", address: 1)])
        defer { osdp.stop() }
        let pd = try XCTUnwrap(osdp.pd["street"])
        let g = try GatewayUnderTest()
        try g.writeConfig(
            extra: osdp.section(),
            actions: ConfigText.action(0, "front", ms: 300, "credentials = [\"osdp\", \"pin\"]"))
        try g.start()
        defer { g.stop() }
        try osdp.install(g)
        try osdp.waitOnline(g)
        try g.ctlJSON(["pins", "add-code", "--action", "0", "--label", "courier"], stdin: "135790\n")

        for n in 1...5 {
            let seen = try g.eventCount()
            try pd.send("keys 000000#")
            let denied = try g.accessEvent(after: seen)
            XCTAssertEqual(denied["reason"]?.stringValue, "wrong_pin", "entry \(n): \(denied)")
            XCTAssertEqual(denied["source"]?.stringValue, "reader:street")
        }
        try g.waitForEvent("lockout", reason: "keypad")
        let status = try g.ctlJSON(["lockout", "status"])
        let keypads = try XCTUnwrap(status["keypads"]?.arrayValue, "\(status)")
        XCTAssertEqual(keypads.count, 1, "\(status)")
        XCTAssertEqual(keypads.first?["reader"]?.stringValue, "street")
        let remaining = try XCTUnwrap(keypads.first?["remaining_ms"]?.intValue)
        XCTAssertTrue((50_000...60_000).contains(remaining), "a first lockout lasts a minute: \(remaining)")
        let until = try XCTUnwrap(keypads.first?["until"]?.stringValue, "\(keypads)")
        let now = Int64(Date().timeIntervalSince1970)
        XCTAssertTrue(
            (now + 40...now + 70).map(UTCTime.iso8601).contains(until), "the end on the wall clock: \(until)")
        XCTAssertEqual(try g.status()["lockout"]?["keypads"]?.intValue, 1)

        // Locked: the right code opens nothing. Cleared: it opens.
        var seen = try g.eventCount()
        try pd.send("keys 135790#")
        usleep(500_000)
        XCTAssertEqual(g.outputTransitions("strike", to: "unlocked"), 0, "a locked keypad opened")
        try g.ctlJSON(["lockout", "clear"])
        try g.waitForEvent("lockout_cleared", after: seen)
        XCTAssertEqual(try g.ctlJSON(["lockout", "status"])["keypads"], .array([]))
        XCTAssertEqual(try g.status()["lockout"]?["keypads"]?.intValue, 0)
        seen = try g.eventCount()
        try pd.send("keys 135790#")
        let granted = try g.accessEvent(after: seen)
        XCTAssertEqual(granted["kind"]?.stringValue, "access_granted", "\(granted)")
        XCTAssertEqual(granted["source"]?.stringValue, "reader:street")

        // Locked again, then a restart: kept in memory like the tag lockouts, it ends.
        for _ in 1...5 {
            let before = try g.eventCount()
            try pd.send("keys 000000#")
            try g.accessEvent(after: before)
        }
        try waitFor("locked again", timeout: 5, interval: 0.05, context: { g.log }) {
            (try g.ctlJSON(["lockout", "status"])["keypads"]?.arrayValue?.count ?? 0) == 1 ? true : nil
        }
        XCTAssertEqual(g.stop(), 0)
        try g.start()
        XCTAssertEqual(try g.ctlJSON(["lockout", "status"])["keypads"], .array([]), "a restart ends keypad lockouts")
        XCTAssertFalse(g.log.contains("135790"), "a PIN in the log")
    }
}
