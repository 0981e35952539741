/// The ports a remote transport (GatewayMQTT, GatewayNATS) is given by the
/// daemon: the durable outbox it publishes from and the handler that decides
/// the commands it hears. Transports are bytes in, payloads out.

/// How an outbox message is kept when the outbox is over its bound:
/// telemetry goes first, then the oldest events; access events never.
public enum MessageClass: String, Equatable, Sendable, CaseIterable { case access, event, telemetry }

/// A message for the outbox; its payload is built from the sequence number
/// the outbox gives it.
public struct OutgoingMessage: Sendable {
    public var topic: String
    public var messageClass: MessageClass
    public var retain: Bool
    public var created: Int64
    public var make: @Sendable (Int64) -> [UInt8]
    public init(
        topic: String, class messageClass: MessageClass, retain: Bool = false, created: Int64,
        make: @escaping @Sendable (Int64) -> [UInt8]
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

/// Where a transport hands each fleet document it hears (docs/fleet.md): a
/// retained message on the fleet's MQTT topic filter, or an entry of the NATS
/// JetStream key-value bucket. The bytes only: checking the signature, the
/// site and the version, and applying, is the daemon's (`FleetRules`).
/// Called on the transport's thread: hand the work to another queue.
public protocol FleetDocumentHandler: AnyObject, Sendable {
    /// `source` names where it came from (the MQTT topic, or `kv:<bucket>/<key>`);
    /// `retained`: a stored copy (MQTT's retained flag; always true for a KV entry).
    func received(fleetDocument payload: [UInt8], topic source: String, retained: Bool)
}
