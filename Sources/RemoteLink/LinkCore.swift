import DoorCore
import Logging
import Synchronization

/// What both remote links (GatewayMQTT's `MQTTLink`, GatewayNATS'
/// `NATSLink`) keep alike, composed by each: the status counters and the
/// error notes, the ports handed over at `start` (`RemoteWiring`), the
/// outbox (its committer, its round's commit and acknowledgement), the kept
/// documents re-sent at each connect, the event and telemetry messages, and
/// the link's own threads. A link adds only what its library needs: the
/// client or connection handle, its callbacks, its subjects or topics.
public final class LinkCore: Sendable {
    /// `mqtt` or `nats`: the first word of each log line.
    public let name: String
    public let deviceID: String
    public let outbox: any Outbox
    public let log: Logger
    /// Commits queued messages (one transaction a round) for the link to publish.
    public let committer: OutboxCommitter
    /// The documents re-sent after every (re)connect: the door state, the last access, and the link's own.
    public let kept: KeptDocuments
    /// The link's threads besides the committer.
    public let threads = ThreadGroup()

    /// The counters every transport reports (`TransportStatus`).
    public struct Counters: Sendable {
        public var connected = false
        public var lastError: String?
        public var published = 0
        public var acknowledged = 0
        /// Publishes the broker or server refused (ACL, permissions).
        public var denied = 0
        /// The newest refusal.
        public var lastDenied: String?
    }
    private let counters = Mutex(Counters())
    private let wiring = Mutex<RemoteWiring?>(nil)

    /// `kept`: topics whose kept documents go first at each connect, in this order.
    public init(name: String, deviceID: String, outbox: any Outbox, log: Logger, kept: [String]) {
        self.name = name
        self.deviceID = deviceID
        self.outbox = outbox
        self.log = log
        committer = OutboxCommitter(outbox: outbox)
        self.kept = KeptDocuments(first: kept)
    }

    // MARK: The ports handed over at start

    /// Called by the link's `start`, before any of its threads runs.
    public func wire(_ ports: RemoteWiring) { wiring.withLock { $0 = ports } }

    /// Where messages heard on a command topic or subject go.
    public var commands: (any RemoteCommandHandler)? { wiring.withLock { $0?.commands } }

    /// Runs the daemon's hook after a connect's announcements (on the link's thread).
    public func afterConnect() { wiring.withLock { $0?.afterConnect }?() }

    // MARK: Status and error notes

    public var isConnected: Bool { counters.withLock { $0.connected } }
    public var lastError: String? { counters.withLock { $0.lastError } }

    /// Reads or changes the counters (held only around `body`).
    @discardableResult
    public func update<T>(_ body: (inout Counters) -> T) -> T { counters.withLock { body(&$0) } }

    /// Keeps `text` as the last error (status and telemetry show it) and logs it.
    public func noteError(_ text: String) {
        counters.withLock { $0.lastError = text }
        log.warning("\(name): \(text)")
    }

    /// A publish the broker or server refused: counted, kept as the last refusal, and logged as `line`.
    public func noteDenied(_ what: String, log line: String) {
        counters.withLock {
            $0.denied += 1
            $0.lastDenied = what
        }
        log.error("\(name): \(line)")
    }

    /// Rows in the outbox; a store that cannot say counts as empty (and is noted).
    public func waitingRows() -> Int {
        do { return try outbox.depth() } catch {
            noteError("outbox: \(error)")
            return 0
        }
    }

    /// The common counters, with `queued` messages not yet committed on top
    /// of the waiting rows, and the transport's own `details`.
    public func status(queued: Int, details: [(String, JSONValue)] = []) -> TransportStatus {
        let depth = waitingRows() + queued
        return counters.withLock {
            TransportStatus(
                connected: $0.connected, lastError: $0.lastError, outboxDepth: depth, published: $0.published,
                acknowledged: $0.acknowledged, denied: $0.denied, lastDenied: $0.lastDenied, details: details)
        }
    }

    // MARK: The outbox round

    /// Commits the round's messages (one transaction); a failure is noted.
    public func commit(_ round: OutboxCommitter.Round) {
        if let failure = committer.commit(round) { noteError(failure) }
    }

    /// Deletes the acknowledged rows and counts them; false (noted) when the store refused.
    @discardableResult
    public func acknowledge(_ seqs: [Int64]) -> Bool {
        guard !seqs.isEmpty else { return true }
        do {
            try outbox.acknowledge(seqs)
            counters.withLock { $0.acknowledged += seqs.count }
            return true
        } catch {
            noteError("outbox: \(error)")
            return false
        }
    }

    // MARK: Messages

    /// The outbox message announcing `event` on `topic` (LinkPayloads.event):
    /// access events — and the alarms a person may be in danger behind
    /// (`duress`, `fire_alarm`) — are kept longest when the outbox is over its bound.
    public func eventMessage(
        on topic: String, _ event: DoorEvent, at time: Int64, uidText: String?, label: String?
    ) -> OutgoingMessage {
        let cls: MessageClass =
            [.accessGranted, .accessDenied, .duress, .fireAlarm].contains(event.kind) ? .access : .event
        let device = deviceID
        return OutgoingMessage(topic: topic, class: cls, created: time) { seq in
            LinkPayloads.event(event, seq: seq, time: time, device: device, uidText: uidText, label: label)
        }
    }

    /// Queues telemetry (`seq`, `time`, then `fields`) for the committer.
    public func queueTelemetry(on topic: String, retain: Bool, _ fields: [(String, JSONValue)], at time: Int64) {
        committer.enqueue(
            OutgoingMessage(topic: topic, class: .telemetry, retain: retain, created: time) { seq in
                LinkPayloads.telemetry(seq: seq, time: time, fields)
            })
    }
}

/// A link built on a `LinkCore`: the part of the `RemoteTransport` port the
/// core answers alike for MQTT and NATS (connected, events into the outbox,
/// a flush after rows committed by the daemon).
public protocol CoreLink: AnyObject, Sendable {
    var core: LinkCore { get }
    /// Where events go: the MQTT topic or NATS subject `…/event`.
    var eventTopic: String { get }
}

extension CoreLink {
    public var isConnected: Bool { core.isConnected }

    /// Queues the event for the outbox. The committer thread commits what is
    /// queued in one transaction (group commit) and only then publishes it;
    /// `stop` commits anything still queued.
    public func record(_ event: DoorEvent, at time: Int64, uidText: String?, label: String? = nil) {
        core.committer.enqueue(eventEntry(event, at: time, uidText: uidText, label: label))
    }

    /// The outbox message announcing `event`, for a caller that commits it
    /// itself in the same transaction as the event's audit row (then calls
    /// `outboxCommitted`).
    public func eventEntry(_ event: DoorEvent, at time: Int64, uidText: String?, label: String? = nil)
        -> OutgoingMessage
    {
        core.eventMessage(on: eventTopic, event, at: time, uidText: uidText, label: label)
    }

    /// Rows were committed to the outbox by someone else: publish them (on
    /// the committer thread, which owns publishing from the outbox).
    public func outboxCommitted() { core.committer.requestFlush() }
}
