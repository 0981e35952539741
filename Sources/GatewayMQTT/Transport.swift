import DoorCore

/// Where the broker is and how the link talks to it: the daemon fills it
/// from `[mqtt]` (GatewayConfig is not a dependency of this transport).
public struct MQTTSettings: Equatable, Sendable {
    public enum ProtocolVersion: Equatable, Sendable { case v311, v5 }
    public typealias TLS = BrokerTLS
    /// A broker login. The password never appears in a description or a log.
    public struct Login: Equatable, Sendable, CustomStringConvertible {
        public var username: String
        public var password: String?
        public init(username: String, password: String?) {
            self.username = username
            self.password = password
        }
        public var description: String { "\(username)" + (password == nil ? " (no password)" : " (password set)") }
    }
    public var host: String
    public var port: Int
    public var clientID: String
    public var login: Login? = nil
    public var protocolVersion: ProtocolVersion
    public var tls: TLS
    public var keepaliveSeconds: Int
    public var topicPrefix: String
    /// Topics where phone-app compat commands (docs/formats.md §3) arrive; device
    /// reports (command 5) are published there too.
    public var compatCommandTopics: [String]
    /// Publish Home Assistant discovery and answer `homeassistant/status`.
    public var homeAssistantDiscovery: Bool

    public init(
        host: String, port: Int, clientID: String, protocolVersion: ProtocolVersion = .v311, tls: TLS,
        keepaliveSeconds: Int = 30, topicPrefix: String, compatCommandTopics: [String] = [],
        homeAssistantDiscovery: Bool = true
    ) {
        self.host = host
        self.port = port
        self.clientID = clientID
        self.protocolVersion = protocolVersion
        self.tls = tls
        self.keepaliveSeconds = keepaliveSeconds
        self.topicPrefix = topicPrefix
        self.compatCommandTopics = compatCommandTopics
        self.homeAssistantDiscovery = homeAssistantDiscovery
    }
}

/// The door's MQTT topics, under `[mqtt] topic_prefix` (docs/mqtt.md).
public struct MQTTTopics: Sendable {
    public let prefix: String
    public init(prefix: String) { self.prefix = prefix }
    public var availability: String { prefix + "/availability" }
    public var state: String { prefix + "/state" }
    public var event: String { prefix + "/event" }
    public var telemetry: String { prefix + "/telemetry" }
    public var command: String { prefix + "/command" }
    public var lockSet: String { prefix + "/lock/set" }
    public var report: String { prefix + "/report" }
    public var lastAccess: String { prefix + "/last_access" }
    /// Every sticker presented, `{"uid": …}`, for HA's tag integration.
    public var tag: String { prefix + "/tag" }
    /// Home Assistant's mode selector, lockout button and action buttons.
    public var modeSet: String { prefix + "/mode/set" }
    public var lockoutClear: String { prefix + "/lockout/clear" }
    public var actionSet: String { prefix + "/action/set" }
    /// Home Assistant as the admin screen (`home_assistant_admin`,
    /// docs/home-assistant.md): the selections (retained, door →), the
    /// issued tags and the last denied tag (retained, door →), and what
    /// HA's selectors, text and buttons send (→ door).
    public var adminState: String { prefix + "/admin/state" }
    public var tags: String { prefix + "/tags" }
    public var denied: String { prefix + "/denied" }
    public var provisionActionSet: String { prefix + "/admin/provision_action/set" }
    public var provisionLabelSet: String { prefix + "/admin/provision_label/set" }
    public var provisionSet: String { prefix + "/admin/provision/set" }
    public var revokeTagSet: String { prefix + "/admin/revoke_tag/set" }
    public var revokeSet: String { prefix + "/admin/revoke/set" }
    /// The lockdown switch (docs/policy.md "Lockdown"); its state is the state document's `lockdown`.
    public var lockdownSet: String { prefix + "/admin/lockdown/set" }
    /// A card number to enroll from HA's admin screen (issue 35).
    public var enrollCardSet: String { prefix + "/admin/enroll_card/set" }
    /// Consent-first approval (docs/mqtt.md "Approval"): each approval
    /// event, door → (HA's approval event entity), and HA's Approve and
    /// Deny buttons, → door.
    public var approval: String { prefix + "/approval" }
    public var approvalSet: String { prefix + "/approval/set" }
    public static let homeAssistantStatus = "homeassistant/status"
}

// The outbox and command-handler ports (`Outbox`, `RemoteCommandHandler`,
// `OutgoingMessage`, `OutboxRow`, `MessageClass`, `FleetDocumentHandler`)
// live in DoorCore/Ports: the NATS transport implements the same ones.
