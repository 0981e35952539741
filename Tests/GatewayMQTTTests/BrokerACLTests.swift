import DoorCore
import Foundation
import GatewayConfig
import GatewayMQTT
import Logging
import TestSupport
import XCTest

/// The shipped broker configuration and ACL (provisioning/), loaded by a real
/// mosquitto with per-client certificates whose CN is the username. MQTT
/// 3.1.1 acknowledges a denied publish, so every "denied" below is checked
/// where it matters — on the receiving side — after a permitted marker sent
/// later on the same path has arrived.
final class BrokerACLTests: BrokerTestCase<MosquittoBroker> {
    func testTheShippedFilesLoad() throws {
        XCTAssertTrue(broker.process?.isRunning ?? false, broker.log)
        XCTAssertFalse(broker.log.contains("Error"), broker.log)
        XCTAssertTrue(
            try String(contentsOf: MosquittoBroker.shippedConfiguration, encoding: .utf8).contains("acl_file"))
    }

    /// Dropped into a broker that already serves others: the shipped file's
    /// security lines bind to the doors' listener only (per_listener_settings),
    /// so a client of another listener keeps working (its topics are in no ACL
    /// of ours), while the doors' listener still wants a certificate.
    func testAnotherListenersClientKeepsWorking() throws {
        let neighbourSub = try MosquittoBroker.Subscription(
            arguments: broker.neighbourArguments + ["-q", "1", "-t", "zigbee2mqtt/#", "-F", "%t|%r|%p"])
        let pub = try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_pub"),
            broker.neighbourArguments + ["-q", "1", "-t", "zigbee2mqtt/bridge/state", "-m", "online"], timeout: 20)
        XCTAssertEqual(pub.status, 0, pub.stderr)
        let seen = neighbourSub.wait { !$0.isEmpty }
        XCTAssertEqual(seen, ["zigbee2mqtt/bridge/state|0|online"], broker.log)
        XCTAssertFalse(broker.log.contains("Denied PUBLISH from"), broker.log)

        // The doors' listener is unchanged: no certificate, no connection.
        let anonymous = try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_pub"),
            ["-h", "localhost", "-p", "\(broker.port)", "--cafile", broker.path("ca.crt"), "-t", "x", "-m", "y"],
            timeout: 20)
        XCTAssertNotEqual(anonymous.status, 0, "a client without a certificate reached the doors' listener")
    }

    /// A second door's certificate can neither read nor write the first door's
    /// topics. One certificate is one connection (its CN is the client id:
    /// `use_username_as_clientid`), so the listening door `back-door` and the
    /// writing door `side-door` are two, and each identity's publish comes
    /// when its own subscription is gone.
    func testAnotherDoorCannotReadOrWriteThisDoorsTopics() throws {
        // The spy also reads a topic back-door may read: a marker sent there
        // after everything else is the barrier for "nothing else arrived".
        let spy = try MosquittoBroker.Subscription(
            arguments: broker.clientArguments("back-door") + [
                "-q", "1", "-t", "doorgateway/front-door/#", "-t", "phone/front-door", "-t", "homeassistant/status",
                "-F", "%t|%r|%p",
            ])
        var owner: MosquittoBroker.Subscription? = try broker.subscribe("doorgateway/front-door/#", as: "phone-alice")

        // side-door writes into front-door's prefix: dropped; front-door's own event: delivered.
        XCTAssertEqual(try broker.publish("doorgateway/front-door/command", "forged", as: "side-door").status, 0)
        XCTAssertEqual(try broker.publish("doorgateway/front-door/state", "forged", as: "side-door").status, 0)
        XCTAssertEqual(try broker.publish("doorgateway/front-door/event", "real-event", as: "front-door").status, 0)
        let seen = owner?.wait { $0.contains { $0.hasSuffix("|real-event") } } ?? []
        XCTAssertTrue(seen.contains("doorgateway/front-door/event|0|real-event"), "\(seen)")
        XCTAssertFalse(seen.contains { $0.contains("forged") }, "\(seen)")
        owner = nil  // alice writes next

        // side-door writes the compat topic: dropped; alice's command: delivered.
        let door = try broker.subscribe("phone/front-door", as: "front-door")
        XCTAssertEqual(try broker.publish("phone/front-door", "forged", as: "side-door").status, 0)
        XCTAssertEqual(try broker.publish("phone/front-door", "real-command", as: "phone-alice").status, 0)
        let heard = door.wait { $0.contains { $0.hasSuffix("|real-command") } }
        XCTAssertEqual(heard, ["phone/front-door|0|real-command"])
        // Sent after every publish above had been acknowledged: the broker
        // hands it to the spy after anything of theirs it would have.
        XCTAssertEqual(try broker.publish("homeassistant/status", "marker", as: "homeassistant").status, 0)
        let spied = spy.wait { $0.contains("homeassistant/status|0|marker") }
        XCTAssertTrue(spy.isRunning, broker.log)
        XCTAssertEqual(spied, ["homeassistant/status|0|marker"], "back-door read front-door's topics")
        XCTAssertTrue(broker.log.contains("Denied PUBLISH from"), broker.log)
        XCTAssertFalse(broker.log.contains("already connected, closing old connection"), broker.log)
    }

    /// Home Assistant reads the doors and sends lock/set, but cannot send a
    /// native or phone-app command (it holds no MAC key or OTP key). The door
    /// listens with one connection (its certificate's only one) and publishes
    /// its state once it has stopped listening; HA listens once it has written.
    func testHomeAssistantSendsOnlyWhatADoorAcceptsFromIt() throws {
        var door: MosquittoBroker.Subscription? = try MosquittoBroker.Subscription(
            arguments: broker.clientArguments("front-door") + [
                "-q", "1", "-t", "doorgateway/front-door/#", "-t", "phone/front-door", "-F", "%t|%r|%p",
            ])

        XCTAssertEqual(try broker.publish("doorgateway/front-door/command", "ha-native", as: "homeassistant").status, 0)
        XCTAssertEqual(try broker.publish("phone/front-door", "ha-compat", as: "homeassistant").status, 0)
        XCTAssertEqual(try broker.publish("doorgateway/front-door/lock/set", "UNLOCK", as: "homeassistant").status, 0)

        let got = door?.wait { $0.contains { $0.hasSuffix("/lock/set|0|UNLOCK") } } ?? []
        XCTAssertEqual(got, ["doorgateway/front-door/lock/set|0|UNLOCK"], "only lock/set from HA")
        door = nil
        let ha = try broker.subscribe("doorgateway/+/state", as: "homeassistant")
        XCTAssertEqual(
            try broker.publish("doorgateway/front-door/state", #"{"lock":"LOCKED"}"#, as: "front-door").status, 0)
        XCTAssertEqual(
            ha.wait { !$0.isEmpty }, [#"doorgateway/front-door/state|0|{"lock":"LOCKED"}"#], "HA reads door state")
    }

    /// Approval (docs/policy.md "Approval"): Home Assistant reads a door's
    /// `…/approval` and writes its `…/approval/set` (the two ACL lines of its
    /// own); another door can do neither, and HA still cannot write the
    /// native command topic a phone's signed answer takes.
    func testHomeAssistantReadsApprovalRequestsAndPressesItsButtons() throws {
        var door: MosquittoBroker.Subscription? = try MosquittoBroker.Subscription(
            arguments: broker.clientArguments("front-door") + [
                "-q", "1", "-t", "doorgateway/front-door/#", "-F", "%t|%r|%p",
            ])
        XCTAssertEqual(
            try broker.publish("doorgateway/front-door/approval/set", "APPROVE", as: "side-door").status, 0)
        XCTAssertEqual(
            try broker.publish("doorgateway/front-door/command", #"{"approval":"K7M2QX"}"#, as: "homeassistant").status,
            0)
        XCTAssertEqual(
            try broker.publish("doorgateway/front-door/approval/set", "DENY", as: "homeassistant").status, 0)
        let got = door?.wait { $0.contains { $0.hasSuffix("/approval/set|0|DENY") } } ?? []
        XCTAssertEqual(got, ["doorgateway/front-door/approval/set|0|DENY"], "only HA's button reaches the door")
        door = nil
        // The spy also reads homeassistant/status, which back-door may: a marker
        // sent there after the request is the barrier for "the request did not arrive".
        let spy = try MosquittoBroker.Subscription(
            arguments: broker.clientArguments("back-door") + [
                "-q", "1", "-t", "doorgateway/front-door/approval", "-t", "homeassistant/status", "-F", "%t|%r|%p",
            ])
        let ha = try broker.subscribe("doorgateway/+/approval", as: "homeassistant")
        let request = #"{"event_type":"approval_requested","code":"K7M2QX"}"#
        XCTAssertEqual(try broker.publish("doorgateway/front-door/approval", request, as: "front-door").status, 0)
        XCTAssertEqual(ha.wait { !$0.isEmpty }, ["doorgateway/front-door/approval|0|\(request)"], "HA reads requests")
        XCTAssertEqual(try broker.publish("homeassistant/status", "marker", as: "homeassistant").status, 0)
        let spied = spy.wait { $0.contains("homeassistant/status|0|marker") }
        XCTAssertTrue(spy.isRunning, broker.log)
        XCTAssertEqual(spied, ["homeassistant/status|0|marker"], "another door reads no approval request")
    }

    /// The door's discovery entries reach Home Assistant, and HA's birth
    /// message reaches the door, which announces again (defects 1–3 of
    /// issue 11: the old ACL did not load, then denied every discovery topic
    /// and hid homeassistant/status from the doors).
    func testDiscoveryReachesHomeAssistantAndItsBirthMessageReachesTheDoor() throws {
        let ha = try broker.subscribe("homeassistant/+/+/+/config", as: "homeassistant")
        let toml = """
            [device]
            id = "\(MosquittoBroker.doorID)"
            [board]
            kind = "sim"
            \(broker.configurationSection(compatTopic: "phone/front-door"))
            """
        let configuration = try GatewayConfiguration.load(toml: toml).mqtt
        let link = MQTTLink(
            settings: MQTTSettings(configuration), deviceID: MosquittoBroker.doorID, outbox: MemoryOutbox(),
            log: Logger(label: "test"))
        let topics = MQTTLink.Topics(prefix: "doorgateway/\(MosquittoBroker.doorID)")
        link.discovery = Payloads.discovery(
            device: MosquittoBroker.doorID, name: "Front door", topics: topics, doorContact: true,
            eventTypes: ["access_granted", "access_denied"], canOpen: false)
        XCTAssertFalse(link.discovery.isEmpty)
        try link.start(RemoteWiring(commands: UnexpectedCommands()))
        defer { link.stop() }
        let expected = Set(link.discovery.map(\.topic))
        // Entities not offered get an empty retained config (a removal), not counted here.
        func configs(_ lines: [String]) -> [String] { lines.filter { !$0.hasSuffix("|") } }
        let first = configs(
            ha.wait { lines in expected.isSubset(of: Set(configs(lines).map { String($0.split(separator: "|")[0]) })) })
        XCTAssertEqual(Set(first.map { String($0.split(separator: "|")[0]) }), expected, broker.log)
        XCTAssertTrue(expected.contains("homeassistant/lock/doorgateway_front-door/lock/config"), "\(expected)")

        // A door's certificate cannot write another door's discovery entry.
        XCTAssertEqual(
            try broker.publish(
                "homeassistant/lock/doorgateway_front-door/lock/config", "{}", retain: false, as: "back-door"
            ).status, 0)

        let count = first.count
        XCTAssertEqual(try broker.publish("homeassistant/status", "online", as: "homeassistant").status, 0)
        let again = configs(ha.wait { configs($0).count >= 2 * count })
        XCTAssertEqual(again.count, 2 * count, "the door announced again on HA's birth message: \(again)")
        XCTAssertFalse(again.contains { $0.hasSuffix("|{}") }, "back-door overwrote a discovery entry")
    }
}

/// A command handler for links whose test sends no command: one heard fails the test.
final class UnexpectedCommands: RemoteCommandHandler, Sendable {
    func received(_ message: RemoteMessage) { XCTFail("no command was sent, yet one was heard") }
}
