import DoorCore
import GatewayMQTT
import XCTest

/// docs/policy.md "Who is in": Home Assistant's occupancy sensor, offered only at a door with an
/// entry and an exit reader, read from the state document's `occupancy` (the count as its state,
/// the list as its attributes), and in the catalog so a door that stops offering it clears it.
final class OccupancyDiscoveryTests: XCTestCase {
    func entries(occupancy: Bool) -> [(topic: String, payload: [UInt8])] {
        Payloads.discovery(
            device: "club", name: "Club", topics: MQTTLink.Topics(prefix: "doorgateway/club"),
            doorContact: false, eventTypes: ["access_granted"], canOpen: false, occupancy: occupancy)
    }

    func testTheOccupancySensorCountsFromTheStateDocumentWithTheListAsAttributes() throws {
        let topic = "homeassistant/sensor/doorgateway_club/occupancy/config"
        XCTAssertFalse(entries(occupancy: false).contains { $0.topic == topic }, "no entry/exit pair, no sensor")
        let entry = try XCTUnwrap(entries(occupancy: true).first { $0.topic == topic })
        let j = try JSONValue.parse(entry.payload)
        XCTAssertEqual(j["state_topic"]?.stringValue, "doorgateway/club/state")
        XCTAssertEqual(
            j["value_template"]?.stringValue, "{{ value_json.occupancy.count if value_json.occupancy else 0 }}")
        XCTAssertEqual(j["json_attributes_topic"]?.stringValue, "doorgateway/club/state")
        XCTAssertEqual(j["json_attributes_template"]?.stringValue, "{{ (value_json.occupancy or {}) | tojson }}")
        XCTAssertEqual(j["state_class"]?.stringValue, "measurement")
        XCTAssertEqual(j["unique_id"]?.stringValue, "doorgateway_club_occupancy")
        XCTAssertTrue(Payloads.discoveryCatalog.contains { $0 == ("sensor", "occupancy") })
    }
}
