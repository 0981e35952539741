import DoorCore
import RemoteLink

/// Home Assistant's entities of the door's outdoor readers (issue 35): per
/// OSDP reader its link (connectivity: on while it answers) and its tamper
/// switch; per outdoor reader (OSDP or Wiegand) its keypad's lockout; and
/// the duress alarm. States come from the retained state document's
/// `readers` object (`{"NAME": {"online", "tamper", "keypad_lockout"}}`),
/// the alarm from the events topic.
extension Payloads {
    /// An outdoor reader as discovery offers it: its name and whether it
    /// reports its link and tamper (OSDP does; Wiegand cannot).
    public struct OutdoorReader: Equatable, Sendable {
        public var name: String
        public var reportsStatus: Bool
        public init(name: String, reportsStatus: Bool) {
            self.name = name
            self.reportsStatus = reportsStatus
        }
    }

    /// The entities of the catalog that do not depend on a reader's name
    /// (those are offered or not by the configuration alone).
    public static let outdoorReaderCatalog: [(component: String, object: String)] = [("event", "duress")]

    static func outdoorReaderEntries(
        _ readers: [OutdoorReader], topics: MQTTTopics,
        entry: (String, String, [(String, JSONValue)]) -> (topic: String, payload: [UInt8]),
        common: (String, String) -> [(String, JSONValue)]
    ) -> [(topic: String, payload: [UInt8])] {
        guard !readers.isEmpty else { return [] }
        var out: [(topic: String, payload: [UInt8])] = []
        func sensor(_ reader: String, _ field: String, _ object: String, _ title: String, _ deviceClass: String)
            -> (topic: String, payload: [UInt8])
        {
            // Reader names are letters, digits, - and _ (the configuration's rule): safe in the template.
            entry(
                "binary_sensor", object,
                common(object, title) + [
                    ("state_topic", .string(topics.state)), ("device_class", .string(deviceClass)),
                    (
                        "value_template",
                        .string(
                            "{{ 'ON' if ((value_json.readers or {}).get('\(reader)') or {}).get('\(field)') else 'OFF' }}"
                        )
                    ),
                    ("entity_category", .string("diagnostic")),
                ])
        }
        for r in readers {
            if r.reportsStatus {
                out.append(sensor(r.name, "online", "reader_\(r.name)_online", "Reader \(r.name)", "connectivity"))
                out.append(sensor(r.name, "tamper", "reader_\(r.name)_tamper", "Reader \(r.name) tamper", "tamper"))
            }
            out.append(
                sensor(
                    r.name, "keypad_lockout", "reader_\(r.name)_keypad_lockout", "Reader \(r.name) keypad lockout",
                    "problem"))
        }
        // The silent alarm: fires on a `duress` event only (other events render
        // empty and HA ignores them); the door itself shows nothing more than a grant.
        out.append(
            entry(
                "event", "duress",
                common("duress", "Duress alarm") + [
                    ("state_topic", .string(topics.event)),
                    ("event_types", .array([.string(DoorEvent.Kind.duress.rawValue)])),
                    ("value_template", .string("{{ value if value_json.event_type == 'duress' else '' }}")),
                    ("icon", .string("mdi:alarm-light")),
                ]))
        return out
    }
}
