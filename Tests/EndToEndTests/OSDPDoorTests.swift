import DoorCore
import Foundation
import TestSupport
import XCTest

/// An OSDP reader at a real gatewayd (issue 35): `[[readers]]` with the door's PN532 and an
/// OSDP reader — libosdp's peripheral device (scripts/osdp/pd.py) on a pseudo-terminal the
/// configuration names through a symlink, as /dev/serial/by-id/… names /dev/ttyUSB0. Every
/// row the reader causes names it (`source`); its key is installed through `gatewayctl reader
/// osdp install` and never appears in the log.
final class OSDPDoorTests: XCTestCase {
    func rows(_ g: GatewayUnderTest, source: String) throws -> [JSONValue] {
        (try g.ctlJSON(["log", "--limit", "500"]).arrayValue ?? []).filter { $0["source"]?.stringValue == source }
    }

    func waitForRow(_ g: GatewayUnderTest, _ kind: String, reasonContains text: String, timeout: TimeInterval = 10)
        throws -> JSONValue
    {
        try waitFor("no \(kind) (\(text)) row from the reader", timeout: timeout, interval: 0.05, context: { g.log }) {
            try rows(g, source: "reader:street").first {
                $0["kind"]?.stringValue == kind && ($0["reason"]?.stringValue ?? "").contains(text)
            }
        }
    }

    func testAnOSDPReaderIsInstalledComesUpSecureShowsTheDoorsFeedbackAndGoesOffline() throws {
        let osdp = try OSDPReaderFixture("door", [.init(name: "street", address: 3, keys: ["side = \"entry\""])])
        defer { osdp.stop() }
        let pd = try XCTUnwrap(osdp.pd["street"])
        let g = try GatewayUnderTest(extra: osdp.section())
        try g.start()
        defer { g.stop() }
        XCTAssertTrue(g.log.contains("readers pn532 pn532 entry, street osdp "), g.log)

        // No key yet: the reader (in install mode) is refused, not driven with SCBK-D.
        try waitForRow(g, "reader_fault", reasonContains: "no Secure Channel key yet")
        let install = try g.ctlJSON(["reader", "osdp", "install", "street", "--seconds", "20"])
        XCTAssertEqual(install["install_window_s"]?.intValue, 20)
        try waitForRow(g, "reader_recovered", reasonContains: "osdp key installed")
        try waitForRow(g, "reader_recovered", reasonContains: "osdp online, secure channel")
        try pd.waitFor("sc-active")
        let keyset = try pd.waitFor("keyset")
        let status = try g.ctlJSON(["reader", "osdp", "status"])
        let street = try XCTUnwrap(status.arrayValue?.first)
        XCTAssertEqual(street["online"]?.boolValue, true)
        XCTAssertEqual(street["secure_channel"]?.boolValue, true)
        XCTAssertEqual(street["install_window"]?.boolValue, false)
        XCTAssertFalse("\(status)".contains("key\""), "no key in the status: \(status)")
        // `gatewayctl status` lists the outdoor reader too: online, Secure Channel, tamper.
        let current = try g.status()
        let outdoor = try XCTUnwrap(current["outdoor_readers"]?.arrayValue?.first, "\(current)")
        XCTAssertEqual(outdoor["reader"]?.stringValue, "street")
        XCTAssertEqual(outdoor["online"]?.boolValue, true)
        XCTAssertEqual(outdoor["secure_channel"]?.boolValue, true)
        XCTAssertEqual(outdoor["tamper"]?.boolValue, false)

        // The door's feedback on the reader: `feedback play granted` → osdp_LED green and two beeps.
        try g.ctlJSON(["feedback", "play", "granted"])
        let led = try pd.waitFor("command", containing: "('on_color', 2)")
        XCTAssertTrue(led.contains("('temporary', True)"), led)
        try pd.waitFor("command", containing: "('rep_count', 2)")

        // A second install outside an OSDP reader, and an unknown reader, are refused by name.
        XCTAssertNotEqual(try g.ctl(["reader", "osdp", "install", "pn532"]).status, 0)
        let unknown = try g.ctl(["reader", "osdp", "install", "yard"])
        XCTAssertNotEqual(unknown.status, 0)
        XCTAssertTrue(unknown.stderr.contains("no OSDP reader named \"yard\""), unknown.stderr)

        // The reader goes away: reported offline within 2 s; the door goes on (its PN532 answers).
        pd.stop()
        let stopped = Date()
        try waitForRow(g, "reader_fault", reasonContains: "osdp offline", timeout: 5)
        XCTAssertLessThanOrEqual(Date().timeIntervalSince(stopped), 2.5, "offline reported within 2 s (+ log poll)")
        XCTAssertEqual(try g.status()["reader"]?.stringValue, "ok")
        XCTAssertEqual(try g.status()["outdoor_readers"]?.arrayValue?.first?["online"]?.boolValue, false)

        // The key the reader got never reached gatewayd's log.
        let hex = String(keyset.split(separator: "'").first { $0.count == 32 && $0.allSatisfy(\.isHexDigit) } ?? "")
        XCTAssertEqual(hex.count, 32, keyset)
        XCTAssertFalse(g.log.lowercased().contains(hex), "the reader's key is in the log")
        try g.assertChainIntact()
    }

    /// Issue 35 step 4: a card at the OSDP reader is the door's tap. Enrolled for action 0 (whose
    /// credentials list "osdp"), read over Secure Channel at the entry reader: granted, the strike
    /// pulsed, the row names the reader, and the reader shows the door's "granted" (green, two
    /// beeps). An unknown card: denied, shown red. The same card at a second reader whose
    /// `actions` leave out action 0: denied `credential_not_allowed`, the strike untouched. A
    /// PIN-only code typed on the reader's keypad opens its action.
    func testACardAtTheOSDPReaderOpensWhereItsReaderAndActionAllowIt() throws {
        let osdp = try OSDPReaderFixture(
            "card",
            [
                .init(name: "street", address: 1),
                .init(name: "yard", address: 2, keys: ["side = \"exit\"", "actions = [1]"]),
            ])
        defer { osdp.stop() }
        let street = try XCTUnwrap(osdp.pd["street"])
        let yard = try XCTUnwrap(osdp.pd["yard"])
        let g = try GatewayUnderTest()
        try g.writeConfig(
            extra: osdp.section(),
            actions: ConfigText.action(0, "front", ms: 300, "credentials = [\"osdp\", \"sticker-v2\"]") + "\n"
                + ConfigText.action(1, "long", ms: 3000, "credentials = [\"osdp\", \"pin\"]"))
        try g.start()
        defer { g.stop() }
        try osdp.install(g)
        try osdp.waitOnline(g)
        try g.ctlJSON(["tags", "enroll-card", "--action", "0", "--label", "alice", "raw:26:AABBCCC0"])

        var seen = try g.eventCount()
        try street.send("card 26 AABBCCC0")
        let granted = try g.accessEvent(after: seen)
        XCTAssertEqual(granted["kind"]?.stringValue, "access_granted", "\(granted)")
        XCTAssertEqual(granted["source"]?.stringValue, "reader:street")
        XCTAssertEqual(granted["action"]?.intValue, 0)
        try waitFor("the strike pulsed", timeout: 5, interval: 0.05, context: { g.log }) {
            g.outputTransitions("strike", to: "unlocked") == 1 ? true : nil
        }
        let led = try street.waitFor("command", containing: "('on_color', 2)")
        XCTAssertTrue(led.contains("('temporary', True)"), led)
        try street.waitFor("command", containing: "('rep_count', 2)")

        seen = try g.eventCount()
        try street.send("card 26 11223340")
        let unknown = try g.accessEvent(after: seen)
        XCTAssertEqual(unknown["kind"]?.stringValue, "access_denied", "\(unknown)")
        XCTAssertEqual(unknown["source"]?.stringValue, "reader:street")
        try street.waitFor("command", containing: "('on_color', 1)")

        // The same card again only after the door's same-tag quiet time (1 s here).
        E2ETiming.outlastQuietWindow()
        seen = try g.eventCount()
        try yard.send("card 26 AABBCCC0")
        let elsewhere = try g.accessEvent(after: seen)
        XCTAssertEqual(elsewhere["kind"]?.stringValue, "access_denied", "\(elsewhere)")
        XCTAssertEqual(elsewhere["reason"]?.stringValue, "credential_not_allowed")
        XCTAssertEqual(elsewhere["source"]?.stringValue, "reader:yard")
        usleep(500_000)
        XCTAssertEqual(g.outputTransitions("strike", to: "unlocked"), 1, "the strike stayed locked")

        // The reader's keypad: a PIN-only code for action 1, typed at the street reader
        // (osdp_KEYPAD inside Secure Channel) → the keypad desk → granted, naming the reader.
        // A 4-digit code is refused: a code opens without a card (review finding: brute force in days).
        let short = try g.ctl(["pins", "add-code", "--action", "1", "--label", "courier"], stdin: "4711\n")
        XCTAssertNotEqual(short.status, 0)
        XCTAssertTrue(short.stderr.contains("at least 6 digits"), short.stderr)
        let code = try g.ctl(["pins", "add-code", "--action", "1", "--label", "courier"], stdin: "471108\n")
        XCTAssertEqual(code.status, 0, code.stderr)
        seen = try g.eventCount()
        try street.send("keys 471108#")
        let pin = try g.accessEvent(after: seen)
        XCTAssertEqual(pin["kind"]?.stringValue, "access_granted", "\(pin)")
        XCTAssertEqual(pin["action"]?.intValue, 1)
        XCTAssertEqual(pin["source"]?.stringValue, "reader:street")
        XCTAssertFalse(g.log.contains("4711"), "a PIN in the log")
        try g.assertChainIntact()
    }
}
