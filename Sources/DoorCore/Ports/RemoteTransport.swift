/// The remote transport as the daemon holds it: one port that GatewayMQTT's
/// `MQTTLink` and GatewayNATS' `NATSLink` both implement, so the daemon
/// wires events, state, telemetry, status and the fleet once and chooses
/// the transport only where it builds it (`[remote] transport`).
///
/// Bytes in, payloads out: deciding commands is the `RemoteCommandHandler`'s,
/// keeping messages the `Outbox`'s, checking fleet documents `FleetRules`'.
/// Every method may be called from any thread (the door's queue among them)
/// and never waits on the network.
public protocol RemoteTransport: AnyObject, Sendable {
    /// `mqtt` or `nats`: how log lines name it.
    var transportName: String { get }

    /// Connects (in the background: a broker that is down is retried, not an
    /// error), with the ports it is handed: nothing is set on a transport
    /// "before start" (`RemoteWiring`).
    func start(_ wiring: RemoteWiring) throws
    /// Publishes what waits within `flushWithin`, says `offline`, and joins the transport's threads.
    func stop(flushWithin: Duration)

    // MARK: Events, through the outbox

    /// The outbox message announcing `event`, for the caller to commit in the
    /// same transaction as the event's audit row (then `outboxCommitted`).
    func eventEntry(_ event: DoorEvent, at time: Int64, uidText: String?, label: String?) -> OutgoingMessage
    /// Rows were committed to the outbox by someone else: publish them.
    func outboxCommitted()
    /// Telemetry (`seq`, `time`, then `fields`, and what the transport adds):
    /// queued, committed by the transport's committer, then published.
    func publishTelemetry(_ fields: [(String, JSONValue)], at time: Int64)

    // MARK: Direct: only the newest matters, never through the outbox

    /// The door state; kept and re-sent after every (re)connect.
    func publishState(_ state: JSONValue)
    /// The newest open (`{"time":…,"source":…}`); kept and re-sent after every (re)connect.
    func publishLastAccess(_ access: JSONValue)
    /// A sticker was presented: `{"uid": …}`, only while connected (a scan
    /// replayed later would fire automations late).
    func publishTagScan(uidText: String)
    /// The device report of compat command 5 (docs/formats.md §3).
    func publishReport(_ report: JSONValue)
    /// An approval event (docs/policy.md "Approval") where the transport has
    /// a place of its own for them (MQTT: `…/approval`, Home Assistant's event
    /// entity); every event, approvals among them, also went through the outbox.
    func publishApproval(_ event: DoorEvent, at time: Int64, uidText: String?, label: String?)

    // MARK: State

    var isConnected: Bool { get }
    /// What `gatewayctl status` and telemetry show.
    var transportStatus: TransportStatus { get }

    // MARK: The fleet (docs/fleet.md), once its handler is attached

    /// Writes this door's fleet document (retained topic or key-value entry),
    /// now; false when not connected or there is no fleet.
    func publishFleet(_ document: [UInt8]) -> Bool
    /// Reads every door's document again; false when not connected or there is no fleet.
    func refreshFleet() -> Bool
    /// Sends a signed site command (SiteCommand.swift) where every door of the
    /// site hears it: this door's fleet topic, not retained (MQTT), or its key (NATS).
    func publishSiteCommand(_ command: [UInt8]) -> Bool
}

extension RemoteTransport {
    /// Where the transport has no lighter way: this door's fleet document's place
    /// (the door puts its document back once it hears its command there).
    public func publishSiteCommand(_ command: [UInt8]) -> Bool { publishFleet(command) }
}

/// What the daemon hands a transport at `start`, the only way to start one:
/// a transport never runs without somewhere for its commands to go.
public struct RemoteWiring: Sendable {
    /// Where each message heard on a command topic or subject goes.
    public var commands: any RemoteCommandHandler
    /// Run on the transport's thread after each connect's announcements.
    public var afterConnect: (@Sendable () -> Void)?

    public init(commands: any RemoteCommandHandler, afterConnect: (@Sendable () -> Void)? = nil) {
        self.commands = commands
        self.afterConnect = afterConnect
    }
}

/// A transport's counters, the same for MQTT and NATS, and what only one
/// of them reports.
public struct TransportStatus: Sendable {
    public var connected: Bool
    public var lastError: String?
    /// Rows waiting in the outbox and messages queued for it.
    public var outboxDepth: Int
    public var published: Int
    public var acknowledged: Int
    /// Publishes the broker or server refused (ACL, permissions).
    public var denied: Int
    public var lastDenied: String?
    /// Status fields of this transport only (NATS: `transport`, connection
    /// counts, credentials), after the common ones.
    public var details: [(String, JSONValue)]

    public init(
        connected: Bool, lastError: String?, outboxDepth: Int, published: Int, acknowledged: Int, denied: Int,
        lastDenied: String?, details: [(String, JSONValue)] = []
    ) {
        self.connected = connected
        self.lastError = lastError
        self.outboxDepth = outboxDepth
        self.published = published
        self.acknowledged = acknowledged
        self.denied = denied
        self.lastDenied = lastDenied
        self.details = details
    }

    /// `gatewayctl status`'s `broker` object: `enabled`, the common fields, then `details`.
    public var json: JSONValue {
        .object(
            [
                ("enabled", .bool(true)), ("connected", .bool(connected)), ("outbox", .int(outboxDepth)),
                ("published", .int(published)), ("acknowledged", .int(acknowledged)),
                ("last_error", .optional(lastError)), ("denied", .int(denied)), ("last_denied", .optional(lastDenied)),
            ] + details)
    }
}
