import DoorCore
import Foundation
import TestSupport
import XCTest

/// Issue 35: enrolling a card number from Home Assistant's admin screen — the
/// `enroll_card` text entity (`PREFIX/admin/enroll_card/set`) — for the
/// action and label chosen for provisioning, authorised as HA's other admin
/// actions (`home_assistant_admin`, on mosquitto's shipped ACL with HA's
/// certificate) and audited with source `homeassistant`. With the option off
/// (the stock configuration) the same message enrols nothing and is audited refused.
final class HomeAssistantEnrollCardTests: XCTestCase {
    let prefix = "doorgateway/front-door"
    var broker: MosquittoBroker!

    override func tearDown() {
        broker?.stop()
        broker = nil
        super.tearDown()
    }

    func door(admin: Bool) throws -> GatewayUnderTest {
        let section = broker.configurationSection(compatTopic: "phone/front-door")
        let g = try GatewayUnderTest(
            extra: admin
                ? section.replacingOccurrences(of: "[mqtt]\n", with: "[mqtt]\nhome_assistant_admin = true\n")
                : section,
            deviceID: MosquittoBroker.doorID)
        try g.start()
        try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
        return g
    }

    func cards(_ g: GatewayUnderTest) throws -> [JSONValue] {
        (try g.ctlJSON(["tags", "list"])["tags"]?.arrayValue ?? []).filter { $0["kind"]?.stringValue == "wiegand" }
    }

    func testHomeAssistantEnrollsACardForTheChosenActionAndLabel() throws {
        broker = try MosquittoBroker()
        try broker.start()
        let g = try door(admin: true)
        defer { g.stop() }
        func ha(_ topic: String, _ payload: String) throws {
            XCTAssertEqual(try broker.publish("\(prefix)/\(topic)", payload, as: "homeassistant").status, 0)
        }
        var seen = try g.eventCount()
        try ha("admin/provision_label/set", "Gate card")
        try ha("admin/provision_action/set", "long")
        try g.waitForEvent("remote_accepted", reason: "provision_action", after: seen)
        try ha("admin/enroll_card/set", "26:7:4242")
        let row = try g.waitForEvent("provisioning_written", reason: "card_enrolled", after: seen)
        XCTAssertEqual(row["source"]?.stringValue, "homeassistant")
        XCTAssertEqual(row["action"]?.intValue, 1)
        let key = try XCTUnwrap(CardNumber(text: "26:7:4242")).registryKey.hex
        XCTAssertEqual(row["uid"]?.stringValue, key)
        let enrolled = try cards(g)
        XCTAssertEqual(enrolled.count, 1, "\(enrolled)")
        XCTAssertEqual(enrolled.first?["uid"]?.stringValue, key)
        XCTAssertEqual(enrolled.first?["label"]?.stringValue, "Gate card")
        XCTAssertEqual(enrolled.first?["action"]?.intValue, 1)
        XCTAssertEqual(enrolled.first?["state"]?.stringValue, "active")

        // Not a card number: refused and audited, nothing enrolled.
        seen = try g.eventCount()
        try ha("admin/enroll_card/set", "26:7")
        XCTAssertEqual(
            try g.waitForEvent("remote_rejected", after: seen)["reason"]?.stringValue, "malformed")
        XCTAssertEqual(try cards(g).count, 1)
        XCTAssertEqual(g.stop(), 0)
    }

    /// The attack: an HA-side message without admin rights (the stock
    /// configuration) enrols nothing, and the refusal is audited.
    func testWithoutTheAdminOptionAnEnrollMessageEnrollsNothing() throws {
        broker = try MosquittoBroker()
        try broker.start()
        let g = try door(admin: false)
        defer { g.stop() }
        let seen = try g.eventCount()
        XCTAssertEqual(
            try broker.publish("\(prefix)/admin/enroll_card/set", "26:7:4242", as: "homeassistant").status, 0)
        let row = try g.waitForEvent("remote_rejected", after: seen)
        XCTAssertEqual(row["reason"]?.stringValue, "ha_admin_disabled")
        XCTAssertEqual(row["source"]?.stringValue, "homeassistant")
        usleep(300_000)
        XCTAssertEqual(try cards(g).count, 0, "nothing enrolled")
        XCTAssertFalse(try g.auditKinds().contains("provisioning_written"))
    }
}
