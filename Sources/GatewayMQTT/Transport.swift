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
    public var host: String
    public var port: Int
    public var clientID: String
    public var protocolVersion: ProtocolVersion
    public var tls: TLS
    public var keepaliveSeconds: Int
    public var topicPrefix: String
    /// Topics where phone-app compat commands (COMPAT §3) arrive; device
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

/// How an outbox message is kept when the outbox is over its bound:
/// telemetry goes first, then the oldest events; access events never.
public enum MessageClass: String, Equatable, Sendable, CaseIterable { case access, event, telemetry }

/// A message for the outbox; its payload is built from the sequence number
/// the outbox gives it.
public struct OutgoingMessage: @unchecked Sendable {
    public var topic: String
    public var messageClass: MessageClass
    public var retain: Bool
    public var created: Int64
    public var make: (Int64) -> [UInt8]
    public init(
        topic: String, class messageClass: MessageClass, retain: Bool = false, created: Int64,
        make: @escaping (Int64) -> [UInt8]
    ) {
        self.topic = topic
        self.messageClass = messageClass
        self.retain = retain
        self.created = created
        self.make = make
    }
}

/// One committed message waiting for the broker's PUBACK.
public struct OutboxRow: Equatable, Sendable {
    public var seq: Int64
    public var topic: String
    public var payload: [UInt8]
    public var retain: Bool
    public init(seq: Int64, topic: String, payload: [UInt8], retain: Bool) {
        self.seq = seq
        self.topic = topic
        self.payload = payload
        self.retain = retain
    }
}

/// The durable outbox the link publishes from: the daemon serves it from the
/// store (committed with synchronous FULL, deleted on PUBACK), tests from memory.
public protocol Outbox: AnyObject, Sendable {
    /// Commits the messages (one transaction) with the next sequence numbers.
    func commit(_ messages: [OutgoingMessage]) throws
    /// Waiting rows after `seq`, oldest first.
    func waiting(after seq: Int64, limit: Int) throws -> [OutboxRow]
    /// The broker acknowledged these rows.
    func acknowledge(_ seqs: [Int64]) throws
    /// Rows waiting.
    func depth() throws -> Int
}

/// Where the link hands each message heard on a command topic. The daemon's
/// handler reads the key and the replay record, asks `RemoteJudge`, saves the
/// new record and submits the outcome to the door.
public protocol RemoteCommandHandler: AnyObject, Sendable {
    func received(_ message: RemoteMessage)
}

/// Where the link hands each message heard on the fleet's topic filter
/// (docs/fleet.md): the bytes only. Checking the signature, the site and the
/// version, and applying, is the daemon's (DoorCore `FleetRules`). Called on
/// the network thread: hand the work to another queue.
public protocol FleetDocumentHandler: AnyObject, Sendable {
    func received(fleetDocument payload: [UInt8], topic: String, retained: Bool)
}
