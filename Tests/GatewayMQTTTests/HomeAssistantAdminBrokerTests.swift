import DoorCore
import Foundation
import GatewayConfig
import GatewayMQTT
import Logging
import Synchronization
import TestSupport
import XCTest

/// Home Assistant as the admin screen (`home_assistant_admin`) on the
/// transport: its discovery entries, its topics through the shipped broker
/// configuration and ACL, the retained documents HA reads (re-sent after a
/// broker restart) and the removal of its entities when the option is off.
final class HomeAssistantAdminBrokerTests: BrokerTestCase<MosquittoBroker> {
    let topics = MQTTLink.Topics(prefix: "doorgateway/front-door")
    let alice = TagUID(hex: "04A1B2C3D4E5F6")!
    let bob = TagUID(hex: "04B0B0B0B0B0B0")!

    override func setUpWithError() throws {
        try XCTSkipUnless(
            FileManager.default.isExecutableFile(atPath: "/usr/sbin/mosquitto"), "mosquitto is not installed")
        try super.setUpWithError()
    }

    /// The broker logged a denied publish to `topic`.
    func denied(_ topic: String) -> Bool {
        broker.log.split(separator: "\n").contains { $0.contains("Denied PUBLISH") && $0.contains("'\(topic)'") }
    }

    var menu: HomeAssistantAdminMenu {
        HomeAssistantAdminMenu(
            actions: [(0, "front"), (1, "garage")],
            tags: [
                .init(uid: alice, label: "Alice", hashed: "aaaaaaaaaaaaaaaa"),
                .init(uid: bob, label: "Bob", hashed: "bbbbbbbbbbbbbbbb"),
            ])
    }

    func discovery(admin: HomeAssistantAdminMenu?) -> [(topic: String, payload: [UInt8])] {
        Payloads.discovery(
            device: "front-door", name: "Front", topics: topics, doorContact: false, eventTypes: ["access_denied"],
            canOpen: false, actions: [(0, "front"), (1, "garage")], admin: admin)
    }

    func object(_ topic: String) -> String { String(topic.split(separator: "/")[3]) }

    func testAdminEntitiesAreOfferedOnlyWithTheOptionAndCanBeRemoved() throws {
        let adminObjects = Set(Payloads.homeAssistantAdminEntities.map(\.object))
        XCTAssertEqual(adminObjects.count, 11, "with the lockdown switch (issue 36) and enroll_card (issue 35)")
        XCTAssertTrue(Set(discovery(admin: nil).map { object($0.topic) }).isDisjoint(with: adminObjects))
        let on = discovery(admin: menu)
        XCTAssertEqual(
            Set(on.map { object($0.topic) }).intersection(adminObjects), adminObjects, "every admin entity offered")
        let catalog = Set(
            Payloads.discoveryCatalog.map {
                Payloads.discoveryTopic(device: "front-door", component: $0.component, object: $0.object)
            })
        XCTAssertTrue(Set(on.map(\.topic)).isSubset(of: catalog), "each can be removed again (empty retained config)")
        let link = MQTTLink(
            settings: MQTTSettings(
                host: "localhost", port: 1, clientID: "c", tls: .init(enabled: false),
                topicPrefix: "doorgateway/front-door", compatCommandTopics: []),
            deviceID: "front-door", outbox: MemoryOutbox(), log: Logger(label: "test"))

        func entity(_ component: String, _ object: String) throws -> JSONValue {
            try JSONValue.parse(
                try XCTUnwrap(
                    on.first {
                        $0.topic == Payloads.discoveryTopic(device: "front-door", component: component, object: object)
                    }
                )
                .payload)
        }
        for (component, object) in Payloads.homeAssistantAdminEntities {
            let j = try entity(component, object)
            XCTAssertEqual(j["availability_topic"]?.stringValue, topics.availability, object)
            if let command = j["command_topic"]?.stringValue {
                XCTAssertEqual(link.channel(of: command)?.isHomeAssistantAdmin, true, "\(object): \(command)")
                XCTAssertEqual(j["entity_category"]?.stringValue, "config", "controls off the default dashboard")
            }
        }
        let provision = try entity("select", "provision_action")
        XCTAssertEqual(provision["options"], .array([.string("front"), .string("garage")]))
        XCTAssertEqual(provision["state_topic"]?.stringValue, topics.adminState)
        let revoke = try entity("select", "revoke_tag")
        XCTAssertEqual(revoke["options"], .array(menu.tagOptions.map(JSONValue.string)))
        XCTAssertEqual(menu.tagOptions, ["(none)", "Alice", "Bob"])
        XCTAssertEqual(try entity("button", "provision_arm")["payload_press"]?.stringValue, "ARM")
        XCTAssertEqual(try entity("button", "provision_cancel")["payload_press"]?.stringValue, "CANCEL")
        XCTAssertEqual(try entity("button", "revoke")["payload_press"]?.stringValue, "REVOKE")
        XCTAssertEqual(try entity("text", "provision_label")["max"], .int(HomeAssistantAdminRequest.maximumLabel))
        XCTAssertEqual(try entity("sensor", "tags")["json_attributes_topic"]?.stringValue, topics.tags)
        XCTAssertEqual(try entity("sensor", "last_denied")["state_topic"]?.stringValue, topics.denied)
        XCTAssertEqual(try entity("switch", "lockdown")["command_topic"]?.stringValue, topics.lockdownSet)
        for e in on {
            let text = String(decoding: e.payload, as: UTF8.self)
            XCTAssertFalse(text.contains(alice.hex) || text.contains(bob.hex), "a raw UID in \(e.topic)")
        }
    }

    func testTheDocumentsHomeAssistantReads() throws {
        let tags = try JSONValue.parse(
            Payloads.tags([
                (
                    hashed: "aaaaaaaaaaaaaaaa", label: "Alice", state: "active", action: 0, issued: 1_700_000_000,
                    lastSeen: 1_700_000_100
                ),
                (
                    hashed: "bbbbbbbbbbbbbbbb", label: "Bob", state: "revoked", action: 1, issued: 1_700_000_050,
                    lastSeen: nil
                ),
            ]))
        XCTAssertEqual(tags["active"], .int(1))
        XCTAssertEqual(tags["total"], .int(2))
        let listed = try XCTUnwrap(tags["tags"]?.arrayValue)
        XCTAssertEqual(listed[0]["label"]?.stringValue, "Bob", "newest first")
        XCTAssertEqual(listed[0]["state"]?.stringValue, "revoked")
        XCTAssertEqual(listed[0]["last_seen"], .null)
        XCTAssertEqual(listed[1]["last_seen"]?.stringValue, "2023-11-14T22:15:00Z")
        XCTAssertEqual(listed[1]["uid"]?.stringValue, "aaaaaaaaaaaaaaaa")
        let many = try JSONValue.parse(
            Payloads.tags(
                (0..<150).map {
                    (hashed: "h\($0)", label: "t\($0)", state: "active", action: 0, issued: Int64($0), lastSeen: nil)
                }))
        XCTAssertEqual(many["active"], .int(150))
        XCTAssertEqual(many["tags"]?.arrayValue?.count, Payloads.maximumListedTags, "bounded for HA's recorder")
        let denied = try JSONValue.parse(
            Payloads.denied(hashed: "aaaaaaaaaaaaaaaa", reason: "revoked", time: 1_700_000_000, label: "Alice"))
        XCTAssertEqual(denied["uid"]?.stringValue, "aaaaaaaaaaaaaaaa")
        XCTAssertEqual(denied["reason"]?.stringValue, "revoked")
        XCTAssertEqual(denied["label"]?.stringValue, "Alice")
    }

    /// What the daemon's handler hears: refusals (audited) and admin requests.
    final class Heard: RemoteCommandHandler, Sendable {
        let policy: RemotePolicy
        private let heard = Mutex<(outcomes: [RemoteOutcome], requests: [HomeAssistantAdminRequest])>(([], []))
        var outcomes: [RemoteOutcome] { heard.withLock { $0.outcomes } }
        var requests: [HomeAssistantAdminRequest] { heard.withLock { $0.requests } }
        init(_ policy: RemotePolicy) { self.policy = policy }
        func received(_ message: RemoteMessage) {
            let j = RemoteJudge.judge(
                message, policy: policy, key: .absent, replay: ReplayGuard(),
                now: WallClock(unixSeconds: Int64(time(nil)), synchronised: true))
            heard.withLock {
                if let o = j.outcome { $0.outcomes.append(o) }
                if let r = j.admin { $0.requests.append(r) }
            }
        }
        func wait(_ count: Int) -> (outcomes: [RemoteOutcome], requests: [HomeAssistantAdminRequest]) {
            wait { $0.count + $1.count >= count }
        }
        func wait(until done: ([RemoteOutcome], [HomeAssistantAdminRequest]) -> Bool) -> (
            outcomes: [RemoteOutcome], requests: [HomeAssistantAdminRequest]
        ) {
            _ = try? waitUntil { heard.withLock { done($0.outcomes, $0.requests) } }
            return heard.withLock { ($0.outcomes, $0.requests) }
        }
    }

    func link(admin: Bool, _ heard: Heard? = nil) throws -> MQTTLink {
        let toml = """
            [device]
            id = "front-door"
            [board]
            kind = "sim"
            \(broker.configurationSection(compatTopic: "phone/front-door").replacingOccurrences(of: "[mqtt]\n", with: "[mqtt]\nhome_assistant_admin = \(admin)\n"))
            """
        let c = try GatewayConfiguration.load(toml: toml).mqtt
        XCTAssertEqual(c.homeAssistantAdmin, admin)
        let link = MQTTLink(
            settings: MQTTSettings(c), deviceID: "front-door", outbox: MemoryOutbox(), log: Logger(label: "test"))
        link.discovery = discovery(admin: admin ? menu : nil)
        let commands =
            heard
            ?? Heard(
                RemotePolicy(
                    commands: CommandJudge(deviceID: "front-door"), homeAssistantOpen: false,
                    homeAssistantAdmin: admin))
        try link.start(RemoteWiring(commands: commands))
        XCTAssertTrue(try waitUntil { link.isConnected })
        return link
    }

    /// The shipped ACL lets Home Assistant send the admin topics (and only it:
    /// another door's certificate cannot); with the option off each is refused
    /// with its reason, on it is parsed for the daemon.
    func testAdminTopicsThroughTheShippedACL() throws {
        let sends: [(String, String)] = [
            ("admin/provision_action/set", "garage"), ("admin/provision_label/set", "Carol"),
            ("admin/provision/set", "ARM"), ("admin/revoke_tag/set", "Alice"), ("admin/revoke/set", "REVOKE"),
        ]
        for admin in [false, true] {
            let heard = Heard(
                RemotePolicy(
                    commands: CommandJudge(deviceID: "front-door"), homeAssistantOpen: true, homeAssistantAdmin: admin))
            let l = try link(admin: admin, heard)
            defer { l.stop() }
            // Another door cannot write this door's admin topics.
            for (topic, payload) in sends {
                XCTAssertEqual(
                    try broker.publish("doorgateway/front-door/\(topic)", payload, as: "back-door").status, 0)
            }
            for (topic, payload) in sends {
                XCTAssertEqual(
                    try broker.publish("doorgateway/front-door/\(topic)", payload, as: "homeassistant").status, 0)
            }
            // The marker, sent last (a lock command, judged with an outcome
            // that is no admin refusal): once it is heard, anything another
            // door's publish had made would have been heard before it.
            XCTAssertEqual(try broker.publish("doorgateway/front-door/lock/set", "LOCK", as: "homeassistant").status, 0)
            let isMarker = { (o: RemoteOutcome) in o.code != "ha_admin_disabled" }
            let heardAll = heard.wait { outcomes, _ in outcomes.contains(where: isMarker) }
            XCTAssertEqual(heardAll.outcomes.filter(isMarker).count, 1, "the marker: \(heardAll)")
            let got = (outcomes: heardAll.outcomes.filter { !isMarker($0) }, requests: heardAll.requests)
            if admin {
                XCTAssertEqual(got.outcomes, [], "\(got)")
                XCTAssertEqual(
                    got.requests,
                    [.chooseAction("garage"), .setLabel("Carol"), .arm, .chooseTag("Alice"), .revoke],
                    "only Home Assistant's five, not another door's")
            } else {
                XCTAssertEqual(got.requests, [])
                XCTAssertEqual(
                    got.outcomes.map(\.code),
                    Array(repeating: "ha_admin_disabled", count: sends.count), "only Home Assistant's five, refused")
            }
        }
        XCTAssertTrue(denied("doorgateway/front-door/admin/revoke/set"), broker.log)
    }

    /// The documents HA's admin entities read: Home Assistant may read them
    /// and cannot forge them; the door re-sends them after a broker restart
    /// (this broker keeps no retained messages across one); a discovery
    /// update (the revoke selector's options) reaches HA.
    func testKeptDocumentsSurviveABrokerRestartAndCannotBeForged() throws {
        let l = try link(admin: true)
        defer { l.stop() }
        let doc = Payloads.tags([
            (hashed: "aaaaaaaaaaaaaaaa", label: "Alice", state: "active", action: 0, issued: 1, lastSeen: nil)
        ])
        l.publishKept(topic: topics.tags, payload: doc)
        l.publishKept(
            topic: topics.denied, payload: Payloads.denied(hashed: "cc", reason: "revoked", time: 1, label: nil))
        XCTAssertEqual(
            try broker.publish(topics.tags, #"{"active":99}"#, retain: true, as: "homeassistant").status, 0)
        func retained(_ topic: String) throws -> String? {
            let sub = try broker.subscribe(topic, as: "homeassistant")
            return sub.wait(timeout: 5) { !$0.isEmpty }.first
        }
        XCTAssertEqual(try retained(topics.tags), "\(topics.tags)|1|\(String(decoding: doc, as: UTF8.self))")
        XCTAssertTrue(denied(topics.tags), broker.log)

        broker.stop()
        try broker.start()
        XCTAssertTrue(try waitUntil(timeout: 30) { l.isConnected })
        XCTAssertEqual(try retained(topics.tags), "\(topics.tags)|1|\(String(decoding: doc, as: UTF8.self))")
        XCTAssertEqual(try retained(topics.denied)?.contains(#""reason":"revoked""#), true)

        // The revoke selector after Alice is revoked: the update reaches HA.
        let revokeTopic = Payloads.discoveryTopic(device: "front-door", component: "select", object: "revoke_tag")
        let configs = try broker.subscribe(revokeTopic, as: "homeassistant")
        let fewer = HomeAssistantAdminMenu(
            actions: [(0, "front"), (1, "garage")], tags: [.init(uid: bob, label: "Bob", hashed: "bbbbbbbbbbbbbbbb")])
        l.updateDiscovery(discovery(admin: fewer).filter { $0.topic == revokeTopic })
        let lines = configs.wait { $0.contains { $0.contains(#"["(none)","Bob"]"#) } }
        XCTAssertTrue(lines.contains { $0.contains(#""options":["(none)","Bob"]"#) }, "\(lines)")
        XCTAssertEqual(
            l.discovery.first { $0.topic == revokeTopic }.map { String(decoding: $0.payload, as: UTF8.self) }?
                .contains(#"["(none)","Bob"]"#), true, "kept for the next connect")
    }

    /// Home Assistant cannot forge anything the door publishes for it to show
    /// — the admin documents (the sticker list, the last denied tag, the
    /// admin selections) nor the door's other read-outs: each retained
    /// publish with HA's certificate is denied by the shipped ACL. Checked
    /// where it matters, on the door's own subscription to its prefix:
    /// HA's `lock/set` marker, sent after every forgery was acknowledged,
    /// arrives alone; then a reader of them all (Home Assistant: the phone may
    /// not read the admin documents or approval requests, L-7) finds none of
    /// the forgeries retained.
    func testHomeAssistantCannotForgeWhatTheDoorPublishesForIt() throws {
        let forged: [String] = [
            topics.tags, topics.denied, topics.adminState,
            "doorgateway/front-door/state", "doorgateway/front-door/availability", "doorgateway/front-door/event",
            "doorgateway/front-door/telemetry", "doorgateway/front-door/last_access", "doorgateway/front-door/tag",
            "doorgateway/front-door/approval",
        ]
        var door: MosquittoBroker.Subscription? = try MosquittoBroker.Subscription(
            arguments: broker.clientArguments("front-door") + [
                "-q", "1", "-t", "doorgateway/front-door/#", "-F", "%t|%r|%p",
            ])
        for topic in forged {
            XCTAssertEqual(
                try broker.publish(topic, #"{"forged":"by-homeassistant"}"#, retain: true, as: "homeassistant").status,
                0, topic)
        }
        XCTAssertEqual(try broker.publish("doorgateway/front-door/lock/set", "LOCK", as: "homeassistant").status, 0)
        let got = door?.wait { $0.contains { $0.hasSuffix("/lock/set|0|LOCK") } } ?? []
        XCTAssertEqual(got, ["doorgateway/front-door/lock/set|0|LOCK"], "only the marker reached the door")
        door = nil
        for topic in forged { XCTAssertTrue(denied(topic), "\(topic): \(broker.log)") }

        // Nothing forged is retained. mosquitto queues a new subscription's
        // retained messages as it answers it, so the door's live event,
        // published once the reader's subscription is answered, comes after
        // any of them.
        let reader = try broker.subscribe("doorgateway/front-door/#", as: "homeassistant")
        XCTAssertEqual(try broker.publish("doorgateway/front-door/event", "barrier", as: "front-door").status, 0)
        let retained = reader.wait { $0.contains { $0.hasSuffix("|barrier") } }
        XCTAssertEqual(retained, ["doorgateway/front-door/event|0|barrier"], "a forgery was retained")
    }

    /// The option turned off after being on: every admin entity leaves HA
    /// (an empty retained config) at the door's next connect.
    func testTurningTheOptionOffRemovesTheAdminEntities() throws {
        func retainedConfigs() throws -> Set<String> {
            let sub = try broker.subscribe("homeassistant/+/+/+/config", as: "homeassistant")
            return Set(
                sub.wait(timeout: 1.5) { _ in false }.filter { $0.contains("|1|") }.map {
                    object(String($0.split(separator: "|")[0]))
                })
        }
        let adminObjects = Set(Payloads.homeAssistantAdminEntities.map(\.object))
        var l: MQTTLink? = try link(admin: true)
        XCTAssertEqual(try retainedConfigs().intersection(adminObjects), adminObjects)
        l?.stop()
        l = try link(admin: false)
        let after = try retainedConfigs()
        XCTAssertTrue(after.isDisjoint(with: adminObjects), "\(after)")
        XCTAssertTrue(after.contains("lock"), "the rest stays")
        l?.stop()
    }
}

extension RemoteOutcome {
    fileprivate var code: String? {
        if case .rejected(let c, _, _) = self { return c }
        return nil
    }
}
