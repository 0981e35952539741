import DoorCore
import GatewayMQTT
import XCTest

/// docs/policy.md "Door contact": Home Assistant's door alarm, offered with
/// the door contact, read from the state document's `door_alarm` (forced
/// open, or held open past `alert_s`), cleared from the catalogue without one.
final class DoorAlarmDiscoveryTests: XCTestCase {
    func entries(contact: Bool) -> [(topic: String, payload: [UInt8])] {
        Payloads.discovery(
            device: "front-door", name: "Front", topics: MQTTLink.Topics(prefix: "doorgateway/front-door"),
            doorContact: contact, eventTypes: ["door_forced_open"], canOpen: false)
    }

    func testTheDoorAlarmIsAProblemSensorOnTheStateDocument() throws {
        let topic = "homeassistant/binary_sensor/doorgateway_front-door/door_alarm/config"
        XCTAssertFalse(entries(contact: false).contains { $0.topic == topic }, "no door contact, no alarm entity")
        XCTAssertTrue(
            Payloads.discoveryCatalog.contains { $0.component == "binary_sensor" && $0.object == "door_alarm" },
            "in the catalogue, so a door whose contact goes away clears it")
        let entry = try XCTUnwrap(entries(contact: true).first { $0.topic == topic })
        let j = try JSONValue.parse(entry.payload)
        XCTAssertEqual(j["device_class"]?.stringValue, "problem")
        XCTAssertEqual(j["state_topic"]?.stringValue, "doorgateway/front-door/state")
        XCTAssertEqual(
            j["value_template"]?.stringValue,
            "{{ 'ON' if value_json.door_alarm in ['forced_open', 'held_open'] else 'OFF' }}")
        XCTAssertEqual(j["unique_id"]?.stringValue, "doorgateway_front-door_door_alarm")
        XCTAssertEqual(
            [DoorAlarm.forcedOpen, .heldOpen].map(\.rawValue), ["forced_open", "held_open"], "the template's words")
    }
}
