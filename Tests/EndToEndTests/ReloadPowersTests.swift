import DoorCore
import Foundation
import TestSupport
import XCTest

/// Issue 32 L-3 on the real gatewayd and the real broker (the shipped
/// mosquitto configuration and ACL): a reload that turns Home Assistant's
/// powers off is refused naming the key — never "configuration reloaded"
/// while HA still opens — and `[mqtt.commands]`' mapping is applied live (a
/// command number taken out of it stops opening at once). Before the fix
/// each reload said "configuration reloaded" and every old power stayed.
final class ReloadPowersTests: XCTestCase {
    var broker: MosquittoBroker!

    override func tearDown() {
        broker?.stop()
        broker = nil
        super.tearDown()
    }

    func testAReloadNeverKeepsAPowerItSaysItDropped() throws {
        let broker = try MosquittoBroker()
        self.broker = broker
        try broker.start()
        let section = broker.configurationSection(compatTopic: "phone/front-door")
        func extra(open: Bool, admin: Bool, mapping: String = "") -> String {
            section.replacingOccurrences(
                of: "[mqtt]\n", with: "[mqtt]\nhome_assistant_open = \(open)\nhome_assistant_admin = \(admin)\n")
                + "\n" + mapping
        }
        let g = try GatewayUnderTest(extra: extra(open: true, admin: true), deviceID: MosquittoBroker.doorID)
        try g.start()
        defer { g.stop() }
        try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
        let pid = try XCTUnwrap(g.process?.processIdentifier)
        func haOpen() throws -> JSONValue {
            let n = try g.eventCount()
            XCTAssertEqual(try broker.publish("doorgateway/front-door/lock/set", "OPEN", as: "homeassistant").status, 0)
            return try g.waitForEvent(anyOf: ["remote_accepted", "remote_rejected"], after: n)
        }
        XCTAssertEqual(try haOpen()["kind"]?.stringValue, "remote_accepted", "HA opens with home_assistant_open")

        // Each power turned off and reloaded: refused, named, nothing applied.
        for (text, key) in [
            (extra(open: false, admin: true), "[mqtt] home_assistant_open"),
            (extra(open: true, admin: false), "[mqtt] home_assistant_admin"),
        ] {
            try g.writeConfig(extra: text, door: "mode = \"passage\"")
            let before = g.log.components(separatedBy: "reload refused").count
            kill(pid, SIGHUP)
            try waitUntil { g.log.components(separatedBy: "reload refused").count > before }
            XCTAssertTrue(g.log.contains("\(key) changed"), String(g.log.suffix(2000)))
            XCTAssertTrue(g.log.contains("restart gatewayd"), String(g.log.suffix(2000)))
            XCTAssertFalse(g.log.contains("configuration reloaded"), String(g.log.suffix(2000)))
            XCTAssertFalse(try g.auditKinds().contains("configuration_reloaded"), "nothing of \(key) applied")
            XCTAssertEqual(try g.status()["mode"]?.stringValue, "normal", "the running configuration kept")
        }

        // The command mapping is live: command 1 opens, then a reload takes it out and it no longer does.
        let keyFile = g.dir.appendingPathComponent("otp.key").path
        try g.ctlJSON(["keys", "otp", "new"])
        try g.ctl(["keys", "otp", "export"]).stdout.write(toFile: keyFile, atomically: true, encoding: .utf8)
        func phone(_ command: Int, ahead: Int = 0) throws -> String {
            let at = Int(Date().timeIntervalSince1970) + ahead
            return try g.ctl(["otp", "make", "--key-file", keyFile, "--command", "\(command)", "--now", "\(at)"])
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var n = try g.eventCount()
        XCTAssertEqual(try broker.publish("phone/front-door", try phone(1)).status, 0)
        try g.waitForEvent("remote_accepted", after: n)
        try g.writeConfig(extra: extra(open: true, admin: true, mapping: "[mqtt.commands.mapping]\n5 = \"report\"\n"))
        n = try g.eventCount()
        kill(pid, SIGHUP)
        try g.waitForEvent("configuration_reloaded", after: n)
        n = try g.eventCount()
        // A block two seconds on (within the 5 s tolerance): newer than the one accepted, so not a replay.
        XCTAssertEqual(try broker.publish("phone/front-door", try phone(1, ahead: 2)).status, 0)
        let rejected = try g.waitForEvent("remote_rejected", after: n)
        XCTAssertNotEqual(rejected["reason"]?.stringValue, "replay", "\(rejected)")
        XCTAssertFalse(try g.auditKinds().dropFirst(n).contains("remote_accepted"), "command 1 after the reload")
    }
}
