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
        let pd = try LibosdpReader(scbk: nil, address: 3)
        let g = try GatewayUnderTest(
            extra: """
                [[readers]]
                name = "pn532"
                kind = "pn532"
                [[readers]]
                name = "street"
                kind = "osdp"
                side = "entry"
                device = "\(FileManager.default.temporaryDirectory.path)/osdp-e2e-\(getpid())"
                baud = 115200
                address = 3

                """)
        let link = "\(FileManager.default.temporaryDirectory.path)/osdp-e2e-\(getpid())"
        try? FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: pd.tty)
        defer {
            pd.stop()
            try? FileManager.default.removeItem(atPath: link)
        }
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

        // The key the reader got never reached gatewayd's log.
        let hex = String(keyset.split(separator: "'").first { $0.count == 32 && $0.allSatisfy(\.isHexDigit) } ?? "")
        XCTAssertEqual(hex.count, 32, keyset)
        XCTAssertFalse(g.log.lowercased().contains(hex), "the reader's key is in the log")
        try g.assertChainIntact()
    }
}
