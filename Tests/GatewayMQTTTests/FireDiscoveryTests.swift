import DoorCore
import GatewayMQTT
import XCTest

/// docs/policy.md "Fire alarm": Home Assistant's fire entity, offered only
/// when the door has a `[fire_alarm]` input, read from the state document's
/// `fire` (on from the alarm until the reset).
final class FireDiscoveryTests: XCTestCase {
    func entries(fire: Bool) -> [(topic: String, payload: [UInt8])] {
        Payloads.discovery(
            device: "front-door", name: "Front", topics: MQTTLink.Topics(prefix: "doorgateway/front-door"),
            doorContact: false, eventTypes: ["fire_alarm"], canOpen: false, fireAlarm: fire)
    }

    func testTheFireEntityIsASafetySensorOnTheStateDocument() throws {
        let topic = "homeassistant/binary_sensor/doorgateway_front-door/fire/config"
        XCTAssertFalse(entries(fire: false).contains { $0.topic == topic }, "no [fire_alarm], no entity")
        let entry = try XCTUnwrap(entries(fire: true).first { $0.topic == topic })
        let j = try JSONValue.parse(entry.payload)
        XCTAssertEqual(j["device_class"]?.stringValue, "safety")
        XCTAssertEqual(j["state_topic"]?.stringValue, "doorgateway/front-door/state")
        XCTAssertEqual(
            j["value_template"]?.stringValue, "{{ 'ON' if value_json.fire in ['alarm', 'cleared'] else 'OFF' }}")
        XCTAssertEqual(j["unique_id"]?.stringValue, "doorgateway_front-door_fire")
        XCTAssertEqual(Set(FireState.allCases.map(\.rawValue)), ["normal", "alarm", "cleared"], "the template's words")
    }
}
