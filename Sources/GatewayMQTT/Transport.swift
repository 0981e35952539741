import DoorCore

/// Where the broker is and how the link talks to it: the daemon fills it
/// from `[mqtt]` (GatewayConfig is not a dependency of this transport).
public struct MQTTSettings: Equatable, Sendable {
    public enum ProtocolVersion: Equatable, Sendable { case v311, v5 }
    public struct TLS: Equatable, Sendable {
        public var enabled: Bool
        public var caFile: String?
        public var caDirectory: String?
        public var certFile: String?
        public var keyFile: String?
        /// Skip verifying the broker's certificate and host name (tests only).
        public var insecure: Bool
        public init(
            enabled: Bool, caFile: String? = nil, caDirectory: String? = nil, certFile: String? = nil,
            keyFile: String? = nil, insecure: Bool = false
        ) {
            self.enabled = enabled
            self.caFile = caFile
            self.caDirectory = caDirectory
            self.certFile = certFile
            self.keyFile = keyFile
            self.insecure = insecure
        }
    }
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

// The outbox and command-handler ports (`Outbox`, `RemoteCommandHandler`,
// `OutgoingMessage`, `OutboxRow`, `MessageClass`, `FleetDocumentHandler`)
// live in DoorCore/Ports: the NATS transport implements the same ones.
