import DoorCore
import RemoteLink

/// Home Assistant's documents (documented with examples in docs/mqtt.md):
/// MQTT discovery and the admin screen's tags, last denied tag and
/// selections. What both transports publish alike (events, telemetry, tag
/// scans) is RemoteLink's `LinkPayloads`.
public enum Payloads {
    /// Every entity the door can offer Home Assistant, as (component, object):
    /// on each connect the door clears (empty retained config) those its
    /// configuration does not offer now, so an entity removed from the
    /// configuration, or all of them with discovery off, leaves HA.
    public static let discoveryCatalog: [(component: String, object: String)] =
        [
            ("lock", "lock"), ("event", "access"), ("binary_sensor", "reader"), ("sensor", "last_access"),
            ("binary_sensor", "door"), ("binary_sensor", "lockout"), ("sensor", "uptime"), ("sensor", "outbox"),
            ("binary_sensor", "clock"), ("select", "mode"), ("button", "clear_lockout"), ("tag", "tag"),
            ("binary_sensor", "schedule"), ("event", "approval"), ("button", "approve"), ("button", "deny"),
            ("sensor", "occupancy"),
        ] + homeAssistantActionButtons.map { ("button", "action_\($0)") } + homeAssistantAdminEntities
        // docs/policy.md "Door contact".
        + [("binary_sensor", "door_alarm")]
        + outdoorReaderCatalog

    /// The admin screen's entities (`home_assistant_admin`), as (component, object).
    public static let homeAssistantAdminEntities: [(component: String, object: String)] = [
        ("select", "provision_action"), ("text", "provision_label"), ("button", "provision_arm"),
        ("button", "provision_cancel"), ("binary_sensor", "provisioning"), ("sensor", "tags"),
        ("select", "revoke_tag"), ("button", "revoke"), ("sensor", "last_denied"), ("switch", "lockdown"),
        ("text", "enroll_card"),
    ]

    /// Actions 1–3 (the phone app's other buttons) get an HA button when
    /// configured; action 0 is the lock entity's Open.
    public static let homeAssistantActionButtons = 1...3

    public static func discoveryTopic(device: String, component: String, object: String) -> String {
        "homeassistant/\(component)/doorgateway_\(device)/\(object)/config"
    }

    /// Home Assistant MQTT discovery (retained config messages).
    public static func discovery(
        device: String, name: String, topics: MQTTTopics, doorContact: Bool, eventTypes: [String], canOpen: Bool,
        actions: [(index: Int, name: String)] = [], area: String? = nil, schedule: Bool = false,
        admin: HomeAssistantAdminMenu? = nil, approval: Bool = false, approvalButtons: Bool = false,
        fireAlarm: Bool = false, occupancy: Bool = false, outdoorReaders: [OutdoorReader] = []
    ) -> [(topic: String, payload: [UInt8])] {
        var devFields: [(String, JSONValue)] = [
            ("identifiers", .array([.string("doorgateway_\(device)")])), ("name", .string(name)),
            ("manufacturer", .string("DoorGateway")), ("model", .string("Raspberry Pi NFC door controller")),
            ("sw_version", .string(GatewayVersion.string)),
        ]
        if let area { devFields.append(("suggested_area", .string(area))) }
        let dev: JSONValue = .object(devFields)
        func common(_ object: String, _ title: String) -> [(String, JSONValue)] {
            [
                ("name", .string(title)), ("unique_id", .string("doorgateway_\(device)_\(object)")),
                ("object_id", .string("\(device)_\(object)")), ("availability_topic", .string(topics.availability)),
                ("payload_available", .string("online")), ("payload_not_available", .string("offline")),
                ("device", dev),
            ]
        }
        func entry(_ component: String, _ object: String, _ fields: [(String, JSONValue)]) -> (
            topic: String, payload: [UInt8]
        ) {
            (
                discoveryTopic(device: device, component: component, object: object),
                Array(JSONValue.object(fields).serialized.utf8)
            )
        }
        var lockFields =
            common("lock", "Door") + [
                ("command_topic", .string(topics.lockSet)), ("state_topic", .string(topics.state)),
                ("value_template", .string("{{ value_json.lock }}")), ("payload_open", .string("OPEN")),
                ("payload_unlock", .string("UNLOCK")), ("payload_lock", .string("LOCK")),
                ("state_locked", .string("LOCKED")), ("state_unlocked", .string("UNLOCKED")),
            ]
        if !canOpen { lockFields.append(("optimistic", .bool(false))) }
        var out = [
            entry("lock", "lock", lockFields),
            entry(
                "event", "access",
                common("access", "Access") + [
                    ("state_topic", .string(topics.event)), ("event_types", .array(eventTypes.map(JSONValue.string))),
                ]),
            entry(
                "binary_sensor", "reader",
                common("reader", "Reader problem") + [
                    ("state_topic", .string(topics.state)), ("device_class", .string("problem")),
                    ("value_template", .string("{{ 'OFF' if value_json.reader == 'ok' else 'ON' }}")),
                    ("entity_category", .string("diagnostic")),
                ]),
            entry(
                "binary_sensor", "lockout",
                common("lockout", "Lockout") + [
                    ("state_topic", .string(topics.state)), ("device_class", .string("problem")),
                    ("value_template", .string("{{ 'ON' if value_json.lockout else 'OFF' }}")),
                ]),
            // Diagnostics from telemetry (every telemetry_s, first one at start).
            entry(
                "sensor", "uptime",
                common("uptime", "Uptime") + [
                    ("state_topic", .string(topics.telemetry)), ("device_class", .string("duration")),
                    ("unit_of_measurement", .string("s")), ("value_template", .string("{{ value_json.uptime_s }}")),
                    ("entity_category", .string("diagnostic")),
                ]),
            entry(
                "sensor", "outbox",
                common("outbox", "Outbox depth") + [
                    ("state_topic", .string(topics.telemetry)), ("state_class", .string("measurement")),
                    ("value_template", .string("{{ value_json.outbox }}")), ("entity_category", .string("diagnostic")),
                ]),
            entry(
                "binary_sensor", "clock",
                common("clock", "Clock synchronised") + [
                    ("state_topic", .string(topics.telemetry)),
                    ("value_template", .string("{{ 'ON' if value_json.clock_synchronised else 'OFF' }}")),
                    ("entity_category", .string("diagnostic")),
                ]),
            entry(
                "sensor", "last_access",
                // A timestamp sensor on its own retained topic: nothing is
                // published before the first access, so HA shows unknown.
                common("last_access", "Last access") + [
                    ("state_topic", .string(topics.lastAccess)), ("device_class", .string("timestamp")),
                    ("value_template", .string("{{ value_json.time }}")),
                    ("json_attributes_topic", .string(topics.lastAccess)),
                    ("json_attributes_template", .string("{{ {'source': value_json.source} | tojson }}")),
                ]),
        ]
        // HA's tag integration: each sticker presented fires tag_scanned with
        // the UID as events name it (hashed unless uid_in_events = "full").
        out.append(
            (
                discoveryTopic(device: device, component: "tag", object: "tag"),
                Array(
                    JSONValue.object([
                        ("topic", .string(topics.tag)), ("value_template", .string("{{ value_json.uid }}")),
                        ("device", dev),
                    ]).serialized.utf8)
            ))
        if canOpen {
            // HA acts on the door only when it may open it (home_assistant_open).
            out.append(
                entry(
                    "select", "mode",
                    common("mode", "Mode") + [
                        ("command_topic", .string(topics.modeSet)), ("state_topic", .string(topics.state)),
                        ("value_template", .string("{{ value_json.mode }}")),
                        ("options", .array(DoorMode.allCases.map { .string($0.rawValue) })),
                    ]))
            out.append(
                entry(
                    "button", "clear_lockout",
                    common("clear_lockout", "Clear lockout") + [
                        ("command_topic", .string(topics.lockoutClear)), ("payload_press", .string("PRESS")),
                    ]))
            for (index, title) in actions where homeAssistantActionButtons.contains(index) {
                out.append(
                    entry(
                        "button", "action_\(index)",
                        common("action_\(index)", title) + [
                            ("command_topic", .string(topics.actionSet)), ("payload_press", .string("\(index)")),
                        ]))
            }
        }
        if let admin {
            out += adminEntries(admin, topics: topics, entry: entry, common: common)
        }
        out += outdoorReaderEntries(outdoorReaders, topics: topics, entry: entry, common: common)
        if doorContact {
            out.append(
                entry(
                    "binary_sensor", "door",
                    common("door", "Door contact") + [
                        ("state_topic", .string(topics.state)), ("device_class", .string("door")),
                        ("value_template", .string("{{ 'ON' if value_json.door_open else 'OFF' }}")),
                    ]))
            // docs/policy.md "Door contact": on while the door is forced open or
            // held open past alert_s, until it closes; which, and the held-open
            // stage, as attributes.
            out.append(
                entry(
                    "binary_sensor", "door_alarm",
                    common("door_alarm", "Door alarm") + [
                        ("state_topic", .string(topics.state)), ("device_class", .string("problem")),
                        (
                            "value_template",
                            .string("{{ 'ON' if value_json.door_alarm in ['forced_open', 'held_open'] else 'OFF' }}")
                        ),
                        ("json_attributes_topic", .string(topics.state)),
                        (
                            "json_attributes_template",
                            .string(
                                "{{ {'door_alarm': value_json.door_alarm, 'held_open': value_json.held_open} | tojson }}"
                            )
                        ),
                    ]))
        }
        if fireAlarm {
            // docs/policy.md "Fire alarm": on from the alarm until the reset
            // (`cleared`: the input cleared, the outputs still released).
            out.append(
                entry(
                    "binary_sensor", "fire",
                    common("fire", "Fire alarm") + [
                        ("state_topic", .string(topics.state)), ("device_class", .string("safety")),
                        ("value_template", .string("{{ 'ON' if value_json.fire in ['alarm', 'cleared'] else 'OFF' }}")),
                        ("json_attributes_topic", .string(topics.state)),
                        ("json_attributes_template", .string("{{ {'fire': value_json.fire} | tojson }}")),
                    ]))
        }
        if occupancy {
            // docs/policy.md "Entry, exit and anti-passback": how many are in, who as attributes.
            out.append(
                entry(
                    "sensor", "occupancy",
                    common("occupancy", "Occupancy") + [
                        ("state_topic", .string(topics.state)), ("state_class", .string("measurement")),
                        ("unit_of_measurement", .string("people")), ("icon", .string("mdi:account-group")),
                        ("value_template", .string("{{ value_json.occupancy.count if value_json.occupancy else 0 }}")),
                        ("json_attributes_topic", .string(topics.state)),
                        ("json_attributes_template", .string("{{ (value_json.occupancy or {}) | tojson }}")),
                    ]))
        }
        if approval {
            // docs/policy.md "Approval": each request and its end, with the code (and label).
            out.append(
                entry(
                    "event", "approval",
                    common("approval", "Approval") + [
                        ("state_topic", .string(topics.approval)),
                        ("event_types", .array(LinkPayloads.approvalEventTypes.map { .string($0.rawValue) })),
                        ("icon", .string("mdi:doorbell")),
                    ]))
        }
        if approvalButtons {
            // An action lists "home_assistant" among its approvers.
            for (object, title, payload, icon) in [
                ("approve", "Approve", "APPROVE", "mdi:door-open"), ("deny", "Deny", "DENY", "mdi:door-closed-lock"),
            ] {
                out.append(
                    entry(
                        "button", object,
                        common(object, title) + [
                            ("command_topic", .string(topics.approvalSet)), ("payload_press", .string(payload)),
                            ("icon", .string(icon)),
                        ]))
            }
        }
        if schedule {
            // docs/policy.md: the state's `schedule` {name, active, next_change}:
            // on inside a window, the name and the next change as attributes.
            out.append(
                entry(
                    "binary_sensor", "schedule",
                    common("schedule", "Schedule") + [
                        ("state_topic", .string(topics.state)),
                        (
                            "value_template",
                            .string("{{ 'ON' if value_json.schedule and value_json.schedule.active else 'OFF' }}")
                        ),
                        ("json_attributes_topic", .string(topics.state)),
                        ("json_attributes_template", .string("{{ (value_json.schedule or {}) | tojson }}")),
                    ]))
        }
        return out
    }

    /// The admin screen (`home_assistant_admin`): provisioning (an action
    /// selector, the label, arm and cancel), the issued tags, revoking a tag
    /// chosen by label, and the last denied tag. Controls are in HA's
    /// configuration category (off the default dashboard).
    static func adminEntries(
        _ menu: HomeAssistantAdminMenu, topics: MQTTTopics,
        entry: (String, String, [(String, JSONValue)]) -> (topic: String, payload: [UInt8]),
        common: (String, String) -> [(String, JSONValue)]
    ) -> [(topic: String, payload: [UInt8])] {
        let config: (String, JSONValue) = ("entity_category", .string("config"))
        func button(_ object: String, _ title: String, _ topic: String, _ payload: String, _ icon: String) -> (
            topic: String, payload: [UInt8]
        ) {
            entry(
                "button", object,
                common(object, title) + [
                    ("command_topic", .string(topic)), ("payload_press", .string(payload)), ("icon", .string(icon)),
                    config,
                ])
        }
        func select(_ object: String, _ title: String, _ topic: String, _ options: [String], _ icon: String) -> (
            topic: String, payload: [UInt8]
        ) {
            entry(
                "select", object,
                common(object, title) + [
                    ("command_topic", .string(topic)), ("state_topic", .string(topics.adminState)),
                    ("value_template", .string("{{ value_json.\(object) }}")),
                    ("options", .array(options.map(JSONValue.string))), ("icon", .string(icon)), config,
                ])
        }
        return [
            select(
                "provision_action", "Provision: action", topics.provisionActionSet, menu.actionOptions,
                "mdi:tag-plus"),
            entry(
                "text", "provision_label",
                common("provision_label", "Provision: label") + [
                    ("command_topic", .string(topics.provisionLabelSet)), ("state_topic", .string(topics.adminState)),
                    ("value_template", .string("{{ value_json.provision_label }}")), ("min", .int(0)),
                    ("max", .int(HomeAssistantAdminRequest.maximumLabel)), ("mode", .string("text")),
                    ("icon", .string("mdi:label-outline")), config,
                ]),
            button("provision_arm", "Provision: arm", topics.provisionSet, "ARM", "mdi:nfc"),
            button("provision_cancel", "Provision: cancel", topics.provisionSet, "CANCEL", "mdi:nfc-off"),
            entry(
                "binary_sensor", "provisioning",
                common("provisioning", "Provisioning armed") + [
                    ("state_topic", .string(topics.state)),
                    (
                        "value_template",
                        .string("{{ 'ON' if value_json.state in ['provisioning_armed', 'writing'] else 'OFF' }}")
                    ),
                    ("icon", .string("mdi:nfc-variant")),
                ]),
            // The count of active tags; every issued tag (label, state, last
            // seen, hashed UID, action) in the attributes.
            entry(
                "sensor", "tags",
                common("tags", "Active tags") + [
                    ("state_topic", .string(topics.tags)), ("value_template", .string("{{ value_json.active }}")),
                    ("json_attributes_topic", .string(topics.tags)), ("icon", .string("mdi:tag-multiple")),
                ]),
            select("revoke_tag", "Revoke: tag", topics.revokeTagSet, menu.tagOptions, "mdi:tag-remove"),
            button("revoke", "Revoke: revoke tag", topics.revokeSet, "REVOKE", "mdi:tag-off"),
            // A card number (26:FACILITY:NUMBER, raw:BITS:HEX) enrolled for the provisioning action and label.
            entry(
                "text", "enroll_card",
                common("enroll_card", "Enroll card: number") + [
                    ("command_topic", .string(topics.enrollCardSet)), ("state_topic", .string(topics.adminState)),
                    ("value_template", .string("{{ value_json.enroll_card | default('') }}")), ("min", .int(0)),
                    ("max", .int(HomeAssistantAdminRequest.maximumText)), ("mode", .string("text")),
                    ("icon", .string("mdi:card-account-details-outline")), config,
                ]),
            // The hashed UID of the last tag refused, with reason, time and label.
            entry(
                "sensor", "last_denied",
                common("last_denied", "Last denied tag") + [
                    ("state_topic", .string(topics.denied)),
                    ("value_template", .string("{{ value_json.uid or 'withheld' }}")),
                    ("json_attributes_topic", .string(topics.denied)), ("icon", .string("mdi:tag-hidden")),
                ]),
            // The lockdown (docs/policy.md "Lockdown"): on = this door locked down; who and since
            // in the attributes (the state document's `lockdown`).
            entry(
                "switch", "lockdown",
                common("lockdown", "Lockdown") + [
                    ("command_topic", .string(topics.lockdownSet)), ("state_topic", .string(topics.state)),
                    ("value_template", .string("{{ 'ON' if value_json.lockdown.active else 'OFF' }}")),
                    ("payload_on", .string("ON")), ("payload_off", .string("OFF")),
                    ("json_attributes_topic", .string(topics.state)),
                    ("json_attributes_template", .string("{{ value_json.lockdown | tojson }}")),
                    ("icon", .string("mdi:shield-lock")), config,
                ]),
        ]
    }

    /// `…/tags`: the count of active tags and every issued tag (newest
    /// first, at most `maximumListedTags`), UIDs hashed (`hashed` nil: withheld).
    public static func tags(
        _ tags: [(hashed: String?, label: String, state: String, action: Int, issued: Int64, lastSeen: Int64?)]
    ) -> [UInt8] {
        let newest = tags.sorted { ($0.issued, $0.hashed ?? "") > ($1.issued, $1.hashed ?? "") }
        let listed: [JSONValue] = newest.prefix(maximumListedTags).map { t in
            .object([
                ("label", .string(t.label)), ("state", .string(t.state)),
                ("last_seen", .optional(t.lastSeen.map(UTCTime.iso8601))), ("uid", .optional(t.hashed)),
                ("action", .int(t.action)), ("issued", .string(UTCTime.iso8601(t.issued))),
            ])
        }
        return Array(
            JSONValue.object([
                ("active", .int(tags.filter { $0.state == "active" }.count)), ("total", .int(tags.count)),
                ("tags", .array(listed)),
            ]).serialized.utf8)
    }

    /// HA's recorder keeps attributes up to 16 KiB: about this many tags.
    public static let maximumListedTags = 100

    /// `…/denied`: the last tag refused (hashed UID, reason, time, label when issued here).
    public static func denied(hashed: String?, reason: String, time: Int64, label: String?) -> [UInt8] {
        Array(
            JSONValue.object([
                ("uid", .optional(hashed)), ("reason", .string(reason)), ("time", .string(UTCTime.iso8601(time))),
                ("label", .optional(label)),
            ]).serialized.utf8)
    }

    /// `…/admin/state`: what HA's selectors and text show.
    public static func adminState(provisionAction: String, provisionLabel: String, revokeTag: String) -> [UInt8] {
        Array(
            JSONValue.object([
                ("provision_action", .string(provisionAction)), ("provision_label", .string(provisionLabel)),
                ("revoke_tag", .string(revokeTag)),
            ]).serialized.utf8)
    }
}
