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

    /// Issue 34 Move C on the real gatewayd: a reload applies what it says it
    /// applied. `[door] mode` changed in the file is the door's mode after the
    /// reload (the old door kept the mode it was in); `[provisioning]
    /// auth_limit` is the AUTHLIM of the next sticker written (the old door's
    /// reader kept the limit it started with); a key read at start only
    /// (`[reader] connstring`, `[mqtt] enabled`) is refused, named.
    func testAReloadAppliesTheModeAndTheAuthLimitAndNamesTheRest() throws {
        let g = try GatewayUnderTest()
        try g.start()
        defer { g.stop() }
        let pid = try XCTUnwrap(g.process?.processIdentifier)
        func reload() throws {
            let n = try g.eventCount()
            kill(pid, SIGHUP)
            try g.waitForEvent("configuration_reloaded", after: n)
        }
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "normal")
        try g.writeConfig(door: "mode = \"passage\"")
        try reload()
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "passage", "the file's new mode")

        // Back to normal in the file, stickers protected with AUTHLIM 3.
        let provisioning = "[provisioning]\nprotect = true\nauth_limit = 3\n"
        try g.writeConfig(extra: provisioning, door: "mode = \"normal\"")
        try reload()
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "normal")
        let n = try g.eventCount()
        try g.ctlJSON(["provision", "--action", "0"])
        try g.ctlJSON(["sim", "tap", "--blank", "--uid", "04A1B2C3D4E5F7"])
        try g.waitForEvent("provisioning_written", after: n)
        let dump = g.dir.appendingPathComponent("protected.dump").path
        try g.ctlJSON(["sim", "dump", dump])
        let image = try TagImage(dump: Array(try Data(contentsOf: URL(fileURLWithPath: dump))))
        XCTAssertLessThan(image.auth0, image.type.pages, "protected: the reload's protect = true")
        XCTAssertEqual(image.bytes[image.type.cfg1Page * 4] & 0x07, 3, "AUTHLIM: the reload's auth_limit")

        // Unchanged in the file, the mode a person set stays through a reload.
        try g.ctlJSON(["mode", "lockdown"])
        try g.writeConfig(extra: provisioning.replacingOccurrences(of: "= 3", with: "= 4"), door: "mode = \"normal\"")
        try reload()
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "lockdown", "the running mode, the file's unchanged")

        // Read at start only: refused, named, nothing applied.
        for (text, reader, key) in [
            ("", "simulator = \"spawn\"\nconnstring = \"pn532_uart:/dev/ttyS9\"", "[reader] connstring"),
            ("[mqtt]\nenabled = true\n[mqtt.tls]\nenabled = false\n", "simulator = \"spawn\"", "[mqtt] enabled"),
        ] {
            try g.writeConfig(
                extra: provisioning + text, door: "mode = \"passage\"", reader: reader,
                actions: GatewayUnderTest.baseActions)
            let before = g.log.components(separatedBy: "reload refused").count
            kill(pid, SIGHUP)
            try waitUntil { g.log.components(separatedBy: "reload refused").count > before }
            let refusal = g.log.components(separatedBy: "reload refused").last ?? ""
            XCTAssertTrue(refusal.prefix { $0 != "\n" }.contains(key), String(g.log.suffix(2000)))
            XCTAssertEqual(try g.status()["mode"]?.stringValue, "lockdown", "nothing of the file applied")
        }
    }
}
