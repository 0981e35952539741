import DoorCore
import GatewayMQTT
import XCTest

/// Issue 35: Home Assistant's entities of the outdoor readers — per OSDP
/// reader its link and tamper, per outdoor reader its keypad's lockout, read
/// from the state document's `readers`, each named by its reader — and the
/// duress alarm, an event entity that fires on `duress` events only.
final class OutdoorReaderDiscoveryTests: XCTestCase {
    func entries(_ readers: [Payloads.OutdoorReader]) -> [(topic: String, payload: [UInt8])] {
        Payloads.discovery(
            device: "front-door", name: "Front", topics: MQTTLink.Topics(prefix: "doorgateway/front-door"),
            doorContact: false, eventTypes: ["duress"], canOpen: false, outdoorReaders: readers)
    }

    func entry(_ all: [(topic: String, payload: [UInt8])], _ component: String, _ object: String) throws -> JSONValue {
        let topic = "homeassistant/\(component)/doorgateway_front-door/\(object)/config"
        return try JSONValue.parse(XCTUnwrap(all.first { $0.topic == topic }, topic).payload)
    }

    func testEachOutdoorReaderHasItsEntitiesAndTheDuressAlarmFiresOnDuressOnly() throws {
        XCTAssertFalse(entries([]).contains { $0.topic.contains("reader_") || $0.topic.contains("duress") })
        let all = entries([.init(name: "street", reportsStatus: true), .init(name: "yard", reportsStatus: false)])
        let online = try entry(all, "binary_sensor", "reader_street_online")
        XCTAssertEqual(online["device_class"]?.stringValue, "connectivity")
        XCTAssertEqual(online["state_topic"]?.stringValue, "doorgateway/front-door/state")
        XCTAssertEqual(
            online["value_template"]?.stringValue,
            "{{ 'ON' if ((value_json.readers or {}).get('street') or {}).get('online') else 'OFF' }}")
        XCTAssertEqual(online["name"]?.stringValue, "Reader street")
        XCTAssertEqual(try entry(all, "binary_sensor", "reader_street_tamper")["device_class"]?.stringValue, "tamper")
        let lockout = try entry(all, "binary_sensor", "reader_yard_keypad_lockout")
        XCTAssertEqual(
            lockout["value_template"]?.stringValue,
            "{{ 'ON' if ((value_json.readers or {}).get('yard') or {}).get('keypad_lockout') else 'OFF' }}")
        XCTAssertFalse(all.contains { $0.topic.contains("reader_yard_online") }, "a Wiegand reader reports no link")
        let duress = try entry(all, "event", "duress")
        XCTAssertEqual(duress["state_topic"]?.stringValue, "doorgateway/front-door/event")
        XCTAssertEqual(duress["event_types"], .array([.string("duress")]))
        XCTAssertEqual(
            duress["value_template"]?.stringValue, "{{ value if value_json.event_type == 'duress' else '' }}")
        XCTAssertTrue(
            Payloads.discoveryCatalog.contains { $0 == ("event", "duress") }, "cleared when no reader offers it")
    }
}
