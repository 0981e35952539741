import DoorCore
import GatewayMQTT
import Logging
import TestSupport
import XCTest

/// The transport names the channel of each topic it hears; deciding is the core's.
final class TransportTests: XCTestCase {
    func testEachCommandTopicHasItsChannelAndNoOtherTopicHasOne() {
        let link = MQTTLink(
            settings: MQTTSettings(
                host: "localhost", port: 1, clientID: "c", tls: .init(enabled: false),
                topicPrefix: "doorgateway/front-door", compatCommandTopics: ["phone/front-door", "phone/all"]),
            deviceID: "front-door", outbox: MemoryOutbox(), log: Logger(label: "test"))
        let expected: [(String, RemoteChannel?)] = [
            ("doorgateway/front-door/command", .native), ("phone/front-door", .compat), ("phone/all", .compat),
            ("doorgateway/front-door/lock/set", .homeAssistantLock),
            ("doorgateway/front-door/mode/set", .homeAssistantMode),
            ("doorgateway/front-door/lockout/clear", .homeAssistantLockoutClear),
            ("doorgateway/front-door/action/set", .homeAssistantAction),
            ("doorgateway/front-door/admin/provision_action/set", .homeAssistantProvisionAction),
            ("doorgateway/front-door/admin/provision_label/set", .homeAssistantProvisionLabel),
            ("doorgateway/front-door/admin/provision/set", .homeAssistantProvision),
            ("doorgateway/front-door/admin/revoke_tag/set", .homeAssistantRevokeChoice),
            ("doorgateway/front-door/admin/revoke/set", .homeAssistantRevoke),
            ("doorgateway/front-door/admin/lockdown/set", .homeAssistantLockdown),
            ("doorgateway/front-door/admin/enroll_card/set", .homeAssistantEnrollCard),
            ("doorgateway/front-door/approval/set", .homeAssistantApproval),
            ("doorgateway/front-door/approval", nil),
            ("doorgateway/front-door/admin/state", nil), ("doorgateway/front-door/tags", nil),
            ("doorgateway/front-door/denied", nil),
            ("homeassistant/status", nil), ("phone/other", nil), ("doorgateway/front-door/state", nil),
            ("doorgateway/back-door/command", nil), ("doorgateway/front-door/command/x", nil),
        ]
        for (topic, channel) in expected { XCTAssertEqual(link.channel(of: topic), channel, topic) }
        XCTAssertEqual(
            Set(expected.compactMap(\.1)), Set(RemoteChannel.allCases), "every channel has its topic")
    }
}
