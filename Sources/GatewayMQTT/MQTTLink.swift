import CBrokerTLS
import CMosquitto
import DoorCore
import LinkThreads
import Logging
import MulticastDNS
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the link reports for status and telemetry.
public struct MQTTStatus: Equatable, Sendable {
    public var connected: Bool
    public var lastError: String?
    public var outboxDepth: Int
    public var published: Int
    public var acknowledged: Int
    /// Publishes the broker refused (MQTT 5 PUBACK reason code ≥ 0x80, e.g.
    /// 0x87 not authorised by its ACL). Always 0 under MQTT 3.1.1, where a
    /// broker acknowledges a denied publish like any other.
    public var denied: Int = 0
    /// The newest refusal: topic and reason.
    public var lastDenied: String? = nil
}

/// The fleet's topics on MQTT (docs/fleet.md): the filter every door's
/// retained document is read from, this door's own topic, and where they go.
public struct MQTTFleet: Sendable {
    public var subscription: String
    public var publishTopic: String
    public var handler: any FleetDocumentHandler
    public init(subscription: String, publishTopic: String, handler: any FleetDocumentHandler) {
        self.subscription = subscription
        self.publishTopic = publishTopic
        self.handler = handler
    }
}

/// The MQTT adapter: the only code that touches libmosquitto, and a
/// transport only — bytes in, payloads out. One client on its own network
/// thread (`mosquitto_loop` in `runNetwork`), MQTT 3.1.1 by default, mutual
/// TLS, last will = retained `offline`, retained `online` after each
/// connect, reconnect with exponential backoff (1 s doubling to 60 s),
/// command topics subscribed in a clean session. Events go through the
/// durable `Outbox` the daemon provides: committed, published at QoS 1,
/// deleted on PUBACK; after a reconnect or a restart the backlog goes out in
/// order. Messages on command topics go, named by their channel, to the
/// daemon's `RemoteCommandHandler`; deciding them is `RemoteJudge`'s.
// @unchecked: libmosquitto calls back on the network thread (userdata: this link); shared state is in `shared` (Mutex) and `queue` (Condition); `client`, `networkStarted` and the hooks are written before `start` returns, and `client` again by `stop` after the committer and the daemon's publishers have stopped.
public final class MQTTLink: RemoteTransport, @unchecked Sendable {
    public var transportName: String { "mqtt" }

    public let settings: MQTTSettings
    public let deviceID: String
    public let topics: Topics
    let outbox: any Outbox
    let log: Logger
    private var client: OpaquePointer?
    /// Calls into `client` from other threads than the network thread
    /// (`borrowClient`): `stop` marks it closing, waits for the calls in
    /// flight and only then destroys it. Before, a publish from another queue
    /// (Home Assistant's redraw after a reload, a tag scan) could read the
    /// handle just before `stop` destroyed it.
    private let clientUse = Mutex((closing: false, inUse: 0))

    /// `client` for one call, or nil once `stop` has begun; `returnClient()` after it.
    private func borrowClient() -> OpaquePointer? {
        clientUse.withLock { u in
            guard !u.closing, let c = client else { return nil }
            u.inUse += 1
            return c
        }
    }

    private func returnClient() { clientUse.withLock { $0.inUse -= 1 } }

    /// Everything libmosquitto's thread and the callers share.
    private struct Shared {
        var connected = false
        var lastError: String?
        var inFlight: [Int32: Int64] = [:]
        var earlyAcks: Set<Int32> = []
        var directMids: Set<Int32> = []
        var publishedUpTo: Int64 = 0
        var publishedCount = 0
        var acknowledgedCount = 0
        var deniedCount = 0
        var lastDenied: String?
        /// Topic of each publish awaiting its PUBACK (to name a refusal).
        var midTopics: [Int32: String] = [:]
        /// Refusals whose PUBACK beat the recording of their mid (and topic).
        var earlyDenials: [Int32: Int32] = [:]
        var lastState: [UInt8]?
        var lastAccess: [UInt8]?
        /// Retained documents re-sent after every connect, by topic, in the
        /// order first published (an empty one clears the topic).
        var kept: [(topic: String, payload: [UInt8])] = []
        /// Home Assistant discovery (the daemon's; entries replaced by topic).
        var discovery: [(topic: String, payload: [UInt8])] = []
        var stoppingNetwork = false
    }
    private let shared = Mutex(Shared())
    /// Keeps flushes in order (libmosquitto is called without `shared` held).
    private let flushLock = Mutex(())
    /// Keeps a discovery entry or a kept document published at connect from
    /// overtaking a newer one published meanwhile.
    private let announceLock = Mutex(())

    /// Acknowledged rows for the committer thread to delete, and the network thread's end.
    private struct Queue {
        var acks: [Int64] = []
        var networkDone = false
    }
    private let queue = Condition(Queue())
    /// Commits queued messages and publishes them (LinkThreads' `OutboxCommitter`, shared with NATS).
    private let committer: OutboxCommitter
    private var networkStarted = false

    /// Where each message on a command topic goes (set before `start`).
    public var commands: (any RemoteCommandHandler)?
    /// Home Assistant discovery, rebuilt by the daemon (it knows the door).
    public var discovery: [(topic: String, payload: [UInt8])] {
        get { shared.withLock { $0.discovery } }
        set { shared.withLock { $0.discovery = newValue } }
    }
    /// Called on the network thread after each connect's announcements
    /// (set before `start`).
    public var afterConnect: (@Sendable () -> Void)?
    /// The fleet's topic filter and where its documents go (set before `start`; docs/fleet.md).
    public var fleet: MQTTFleet?

    public struct Topics: Sendable {
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
        /// Consent-first approval (docs/mqtt.md "Approval"): each approval
        /// event, door → (HA's approval event entity), and HA's Approve and
        /// Deny buttons, → door.
        public var approval: String { prefix + "/approval" }
        public var approvalSet: String { prefix + "/approval/set" }
        public static let homeAssistantStatus = "homeassistant/status"
    }

    public init(settings: MQTTSettings, deviceID: String, outbox: any Outbox, log: Logger) {
        self.settings = settings
        self.deviceID = deviceID
        self.outbox = outbox
        self.log = log
        topics = Topics(prefix: settings.topicPrefix)
        committer = OutboxCommitter(outbox: outbox)
    }

    deinit {
        if let client { mosquitto_destroy(client) }
    }

    /// The channel of a command topic; nil for any other topic.
    public func channel(of topic: String) -> RemoteChannel? {
        switch topic {
        case topics.command: return .native
        case topics.lockSet: return .homeAssistantLock
        case topics.modeSet: return .homeAssistantMode
        case topics.lockoutClear: return .homeAssistantLockoutClear
        case topics.actionSet: return .homeAssistantAction
        case topics.provisionActionSet: return .homeAssistantProvisionAction
        case topics.provisionLabelSet: return .homeAssistantProvisionLabel
        case topics.provisionSet: return .homeAssistantProvision
        case topics.revokeTagSet: return .homeAssistantRevokeChoice
        case topics.revokeSet: return .homeAssistantRevoke
        case topics.approvalSet: return .homeAssistantApproval
        default: return settings.compatCommandTopics.contains(topic) ? .compat : nil
        }
    }

    // MARK: Lifecycle

    public func start() throws {
        mosquitto_lib_init()
        let selfPointer = Unmanaged.passUnretained(self).toOpaque()
        guard let m = mosquitto_new(settings.clientID, true, selfPointer) else {
            throw MQTTError.setup("mosquitto_new failed")
        }
        client = m
        try Self.configure(m, settings)
        let offline = Array("offline".utf8)
        try check(mosquitto_will_set(m, topics.availability, Int32(offline.count), offline, 1, true), "last will")
        // Unused by runNetwork (it keeps its own backoff); kept for libmosquitto's defaults.
        mosquitto_reconnect_delay_set(m, 1, 60, true)
        mosquitto_connect_callback_set(m) { _, obj, rc in MQTTLink.from(obj).connected(rc) }
        mosquitto_disconnect_callback_set(m) { _, obj, rc in MQTTLink.from(obj).disconnected(rc) }
        // A failed TLS handshake ends libmosquitto's thread with MOSQ_ERR_TLS,
        // which nobody sees; its log line has OpenSSL's reason (e.g.
        // "certificate verify failed"), which status then names.
        mosquitto_log_callback_set(m) { _, obj, level, message in
            guard level & Int32(MOSQ_LOG_ERR) != 0, let message else { return }
            let text = String(cString: message)
            guard text.hasPrefix("OpenSSL Error") else { return }
            MQTTLink.from(obj).tlsFailed(text)
        }
        if settings.protocolVersion == .v5 {
            // MQTT 5's PUBACK carries a reason code: a publish the broker's
            // ACL refused is acknowledged with 0x87 instead of going unseen.
            mosquitto_publish_v5_callback_set(m) { _, obj, mid, reason, _ in
                MQTTLink.from(obj).acknowledged(mid, reason: reason)
            }
        } else {
            mosquitto_publish_callback_set(m) { _, obj, mid in MQTTLink.from(obj).acknowledged(mid, reason: 0) }
        }
        mosquitto_message_callback_set(m) { _, obj, message in
            guard let message else { return }
            MQTTLink.from(obj).received(message.pointee)
        }
        try check(mosquitto_threaded_set(m, true), "network thread")
        try startThread(name: "gatewayd.mqtt") { [self] in
            if let m = client { runNetwork(m) }
            queue.update { $0.networkDone = true }
        }
        networkStarted = true
        try startCommitter()
    }

    /// The network thread: `mosquitto_loop` until `stop`, and after any
    /// failure — a lost connection, a refused or failed connect, a TLS error
    /// (which ends libmosquitto's own `loop_forever` thread for good) — a
    /// reconnect after a backoff of 1 s doubling to 60 s, reset
    /// by every successful connect. Owning the loop means `stop` ends it for
    /// certain: a libmosquitto thread joined with `loop_stop(force: false)`
    /// that has just reconnected never returns (measured: gatewayd hung on
    /// SIGTERM after the broker restarted under it).
    private func runNetwork(_ m: OpaquePointer) {
        var backoff = 1.0
        var attemptAt = ContinuousClock.now
        connect(m)
        while !networkStopping {
            let rc = mosquitto_loop(m, 250, 1)
            if isConnected {
                backoff = 1
                continue
            }
            // Not connected: a failure, or an attempt that has not completed
            // in 10 s (libmosquitto can leave a connect pending with nothing
            // to wake it: measured, a door waited 60 s for its next publish).
            guard rc != MOSQ_ERR_SUCCESS.rawValue || ContinuousClock.now - attemptAt > .seconds(10) else { continue }
            // Sleep the backoff in short steps, so stop is not kept waiting.
            let until = ContinuousClock.now + .milliseconds(Int(backoff * 1000))
            while !networkStopping && ContinuousClock.now < until { usleep(50_000) }
            if networkStopping { break }
            backoff = min(backoff * 2, 60)
            attemptAt = ContinuousClock.now
            connect(m)
        }
    }

    /// One blocking connect (TCP and the TLS handshake; the CONNACK arrives
    /// in the loop), as libmosquitto's own loop_forever reconnects: an
    /// asynchronous connect with TLS was seen to stall for good.
    /// A `*.local` broker is asked for by multicast DNS before every attempt
    /// (its address may have changed with DHCP); a name nobody answers is a
    /// failed attempt like a broker that is down, retried after the backoff.
    private func connect(_ m: OpaquePointer) {
        let address: String
        do { address = try Self.address(of: settings.host) } catch {
            noteError("\(error); retrying")
            return
        }
        if address != settings.host && address != resolvedAddress {
            log.info("mqtt: \(settings.host) is \(address) (multicast DNS)")
            resolvedAddress = address
        }
        let rc = mosquitto_connect(m, address, Int32(settings.port), Int32(settings.keepaliveSeconds))
        if rc != MOSQ_ERR_SUCCESS.rawValue {
            noteError("connect to \(settings.host):\(settings.port): \(Self.describe(rc))")
        }
    }

    /// The address last found for a `*.local` broker (network thread only).
    private var resolvedAddress: String?

    /// What to hand libmosquitto as the host: `host` itself, or for a
    /// `*.local` name the first IPv4 address a multicast DNS answer gives.
    static func address(of host: String) throws(MulticastDNS.ResolveError) -> String {
        guard MulticastDNS.isLocalName(host) else { return host }
        return try MulticastDNS.resolveIPv4(host)[0]
    }

    private var networkStopping: Bool { shared.withLock { $0.stoppingNetwork } }

    /// Publishes `offline` (retained) first, then disconnects and joins the network thread.
    public func stop(flushWithin: Duration = .seconds(2)) {
        committer.requestStop()
        committer.waitStopped(within: .seconds(10))
        guard let m = client else { return }
        if isConnected {
            // Give the backlog a moment to be acknowledged.
            let deadline = ContinuousClock.now + flushWithin
            while ContinuousClock.now < deadline && waitingRows() > 0 { usleep(20_000) }
            let offline = Array("offline".utf8)
            var mid: Int32 = 0
            mosquitto_publish(m, &mid, topics.availability, Int32(offline.count), offline, 1, true)
            usleep(100_000)
        }
        shared.withLock { $0.stoppingNetwork = true }
        mosquitto_disconnect(m)
        // The loop returns within its 250 ms select timeout once told to stop.
        guard !networkStarted || queue.wait(for: .seconds(5), until: { $0.networkDone }) else {
            log.error("mqtt: the network thread did not stop within 5 s; leaving it to the exit")
            clientUse.withLock { u in
                u.closing = true
                client = nil
            }
            return
        }
        clientUse.withLock { $0.closing = true }
        let deadline = ContinuousClock.now + .seconds(2)
        while clientUse.withLock({ $0.inUse }) > 0 && ContinuousClock.now < deadline { usleep(1_000) }
        let idle = clientUse.withLock { u in
            defer { client = nil }
            return u.inUse == 0
        }
        // A call still in libmosquitto after 2 s keeps the handle (the process is on its way out).
        if idle { mosquitto_destroy(m) } else { log.error("mqtt: a publish did not return within 2 s; handle left") }
    }

    /// Rows in the outbox; a store that cannot say counts as empty (and is noted).
    private func waitingRows() -> Int {
        do { return try outbox.depth() } catch {
            noteError("outbox: \(error)")
            return 0
        }
    }

    public var isConnected: Bool { shared.withLock { $0.connected } }

    public var transportStatus: TransportStatus {
        let s = status
        return TransportStatus(
            connected: s.connected, lastError: s.lastError, outboxDepth: s.outboxDepth, published: s.published,
            acknowledged: s.acknowledged, denied: s.denied, lastDenied: s.lastDenied)
    }

    public var status: MQTTStatus {
        let depth = waitingRows() + queuedCount
        return shared.withLock {
            MQTTStatus(
                connected: $0.connected, lastError: $0.lastError, outboxDepth: depth, published: $0.publishedCount,
                acknowledged: $0.acknowledgedCount, denied: $0.deniedCount, lastDenied: $0.lastDenied)
        }
    }

    // MARK: Publishing

    /// Queues the event for the outbox. The committer thread commits what is
    /// queued in one transaction (group commit) and only then publishes it;
    /// `stop` commits anything still queued.
    public func record(_ event: DoorEvent, at time: Int64, uidText: String?, label: String? = nil) {
        queueMessage(eventEntry(event, at: time, uidText: uidText, label: label))
    }

    /// The outbox message announcing `event`, for a caller that commits it
    /// itself in the same transaction as the event's audit row (then calls
    /// `outboxCommitted`).
    public func eventEntry(_ event: DoorEvent, at time: Int64, uidText: String?, label: String? = nil)
        -> OutgoingMessage
    {
        let cls: MessageClass = [.accessGranted, .accessDenied].contains(event.kind) ? .access : .event
        let device = deviceID
        return OutgoingMessage(topic: topics.event, class: cls, created: time) { seq in
            Payloads.event(event, seq: seq, time: time, device: device, uidText: uidText, label: label)
        }
    }

    /// Rows were committed to the outbox by someone else: publish them
    /// (on the committer thread, which owns publishing from the outbox).
    public func outboxCommitted() {
        committer.requestFlush()
    }

    public func publishTelemetry(_ fields: [(String, JSONValue)], at time: Int64) {
        queueMessage(
            // Retained: Home Assistant's diagnostics read the latest as soon as
            // they subscribe (after a restart of HA, or before its discovery
            // of the door has subscribed them); the outbox keeps the order, so
            // the retained one is the newest.
            OutgoingMessage(topic: topics.telemetry, class: .telemetry, retain: true, created: time) { seq in
                Array(
                    JSONValue.object([("seq", .int(Int(seq))), ("time", .string(UTCTime.iso8601(time)))] + fields)
                        .serialized.utf8)
            })
    }

    private func queueMessage(_ entry: OutgoingMessage) {
        committer.enqueue(entry)
    }

    /// One round of the committer thread: commits what was queued (one
    /// transaction), publishes it, and deletes the acknowledged rows (another).
    private func commitRound(_ round: OutboxCommitter.Round) {
        let acked = queue.update { q -> [Int64] in
            defer { q.acks = [] }
            return q.acks
        }
        if !round.batch.isEmpty {
            if let failure = committer.commit(round) { noteError(failure) }
            flush()
        }
        if !acked.isEmpty {
            do {
                try outbox.acknowledge(acked)
                shared.withLock { $0.acknowledgedCount += acked.count }
            } catch {
                noteError("outbox: \(error)")
            }
        }
        if round.flushRequested { flush() }
    }

    private func startCommitter() throws {
        try committer.start(name: "gatewayd.outbox", drained: { [queue] in queue.read { $0.acks.isEmpty } }) {
            [self] round in commitRound(round)
        }
    }

    /// Messages queued or being committed, less acknowledged rows not yet deleted.
    public var queuedCount: Int { committer.queuedCount - queue.read { $0.acks.count } }

    /// The retained door state; re-sent after every connect.
    public func publishState(_ state: JSONValue) {
        let bytes = Array(state.serialized.utf8)
        shared.withLock { $0.lastState = bytes }
        if isConnected { publishDirect(topics.state, bytes, retain: true) }
    }

    /// The newest open (`{"time":…,"source":…}`), retained on its own topic so
    /// Home Assistant's timestamp sensor stays unknown, without a warning,
    /// until there is one; re-sent after every connect.
    public func publishLastAccess(_ access: JSONValue) {
        let bytes = Array(access.serialized.utf8)
        shared.withLock { $0.lastAccess = bytes }
        if isConnected { publishDirect(topics.lastAccess, bytes, retain: true) }
    }

    /// A retained document on `topic`, kept and re-sent after every connect
    /// (an empty payload clears the topic on the broker, also after a
    /// reconnect). Not through the outbox: only the newest matters.
    public func publishKept(topic: String, payload: [UInt8]) {
        announceLock.withLock { _ in
            shared.withLock { s in
                if let i = s.kept.firstIndex(where: { $0.topic == topic }) {
                    s.kept[i].payload = payload
                } else {
                    s.kept.append((topic, payload))
                }
            }
            if isConnected { publishDirect(topic, payload, retain: true) }
        }
    }

    /// Removes the retained message on `topic` from the broker (an empty
    /// retained publish) when connected; false when not.
    @discardableResult
    public func clearRetained(topic: String) -> Bool {
        guard isConnected else { return false }
        publishDirect(topic, [], retain: true)
        return true
    }

    /// Replaces the discovery entries with the same topics (adding new
    /// ones) and, when connected with discovery on, publishes them: HA
    /// updates the entity (a selector's options).
    public func updateDiscovery(_ entries: [(topic: String, payload: [UInt8])]) {
        announceLock.withLock { _ in
            shared.withLock { s in
                for e in entries {
                    if let i = s.discovery.firstIndex(where: { $0.topic == e.topic }) {
                        s.discovery[i] = e
                    } else {
                        s.discovery.append(e)
                    }
                }
            }
            guard settings.homeAssistantDiscovery, isConnected else { return }
            for e in entries { publishDirect(e.topic, e.payload, retain: true) }
        }
    }

    /// Replaces every discovery entry (a reload: an action's button or the
    /// schedule's sensor added or gone) and, when connected, announces them:
    /// the offered ones published, the catalog's others emptied so HA
    /// removes their entities.
    public func replaceDiscovery(_ entries: [(topic: String, payload: [UInt8])]) {
        announceLock.withLock { _ in
            shared.withLock { $0.discovery = entries }
            guard isConnected else { return }
            announceLocked()
        }
    }

    /// A sticker was presented: `{"uid": …}` on `…/tag` (not retained, not
    /// through the outbox: a tag scan replayed later would fire automations late).
    public func publishTagScan(uidText: String) {
        guard isConnected else { return }
        publishDirect(topics.tag, Array(JSONValue.object([("uid", .string(uidText))]).serialized.utf8), retain: false)
    }

    /// An approval event on `…/approval` (not retained: HA's event entity
    /// fires once per message); the same event went to `…/event` through
    /// the outbox with its audit row.
    public func publishApproval(_ payload: [UInt8]) {
        guard isConnected else { return }
        publishDirect(topics.approval, payload, retain: false)
    }

    /// The device report of compat command 5 (docs/formats.md §3), on the compat topics.
    public func publishReport(_ report: JSONValue) {
        let bytes = Array(report.serialized.utf8)
        for topic in settings.compatCommandTopics + [topics.report] { publishDirect(topic, bytes, retain: false) }
    }

    /// Sends the waiting outbox rows not yet handed to libmosquitto, in order.
    /// libmosquitto's calls are made without `shared` held (its network thread
    /// takes it in the PUBACK callback); `flushLock` keeps flushes in order.
    func flush() {
        guard let m = borrowClient() else { return }
        defer { returnClient() }
        flushLock.withLock { _ in
            while true {
                guard let after = shared.withLock({ $0.connected ? $0.publishedUpTo : nil }) else { return }
                let rows: [OutboxRow]
                do { rows = try outbox.waiting(after: after, limit: 200) } catch {
                    noteError("outbox: \(error)")
                    return
                }
                if rows.isEmpty { return }
                for row in rows {
                    var mid: Int32 = 0
                    let rc = mosquitto_publish(
                        m, &mid, row.topic, Int32(row.payload.count), row.payload, 1, row.retain)
                    guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                        noteError("publish: \(Self.describe(rc))")
                        return
                    }
                    let (ackedAlready, refused) = shared.withLock { s -> (Bool, Int32?) in
                        s.publishedUpTo = row.seq
                        s.publishedCount += 1
                        let refused = Self.recordTopic(&s, mid, row.topic)
                        if s.earlyAcks.remove(mid) != nil { return (true, refused) }
                        s.inFlight[mid] = row.seq
                        return (false, refused)
                    }
                    if let refused { noteDenied(row.topic, refused) }
                    if ackedAlready { acknowledge(row.seq) }
                }
            }
        }
    }

    private func publishDirect(_ topic: String, _ bytes: [UInt8], retain: Bool) {
        guard let m = borrowClient() else { return }
        defer { returnClient() }
        var mid: Int32 = 0
        let rc = mosquitto_publish(m, &mid, topic, Int32(bytes.count), bytes, 1, retain)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { return noteError("publish \(topic): \(Self.describe(rc))") }
        // Not an outbox row: its PUBACK must not be taken for one.
        let refused = shared.withLock { s -> Int32? in
            let refused = Self.recordTopic(&s, mid, topic)
            if s.earlyAcks.remove(mid) == nil { s.directMids.insert(mid) }
            return refused
        }
        if let refused { noteDenied(topic, refused) }
    }

    // MARK: Callbacks (libmosquitto's network thread)

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> MQTTLink {
        Unmanaged<MQTTLink>.fromOpaque(pointer!).takeUnretainedValue()
    }

    private func connected(_ rc: Int32) {
        guard rc == 0 else {
            noteError("broker refused the connection: \(String(cString: mosquitto_connack_string(rc)))")
            return
        }
        if settings.tls.insecure {
            log.warning("mqtt: connected WITHOUT verifying the broker's certificate (mqtt.tls.insecure = true)")
        }
        log.info("mqtt: connected to \(settings.host):\(settings.port)")
        guard let m = client else { return }
        shared.withLock { s in
            s.connected = true
            s.lastError = nil
            // A clean session: whatever was in flight is sent again (consumers
            // drop duplicates by seq).
            s.inFlight = [:]
            s.earlyAcks = []
            s.directMids = []
            s.publishedUpTo = 0
        }
        publishDirect(topics.availability, Array("online".utf8), retain: true)
        var commandTopics = [topics.command] + settings.compatCommandTopics
        // lock/set always: with home_assistant_open off, HA's Unlock/Open are
        // refused and audited rather than unheard; the same for the admin
        // topics with home_assistant_admin off.
        commandTopics += [topics.lockSet, topics.modeSet, topics.lockoutClear, topics.actionSet]
        commandTopics += [
            topics.provisionActionSet, topics.provisionLabelSet, topics.provisionSet, topics.revokeTagSet,
            topics.revokeSet, topics.approvalSet,
        ]
        if settings.homeAssistantDiscovery { commandTopics.append(Topics.homeAssistantStatus) }
        for t in commandTopics { mosquitto_subscribe(m, nil, t, 1) }
        if let fleet { mosquitto_subscribe(m, nil, fleet.subscription, 1) }
        announce()
        if let state = shared.withLock({ $0.lastState }) { publishDirect(topics.state, state, retain: true) }
        if let access = shared.withLock({ $0.lastAccess }) { publishDirect(topics.lastAccess, access, retain: true) }
        announceLock.withLock { _ in
            for (topic, payload) in shared.withLock({ $0.kept }) { publishDirect(topic, payload, retain: true) }
        }
        flush()
        afterConnect?()
    }

    private func disconnected(_ rc: Int32) {
        shared.withLock { $0.connected = false }
        // A refused CONNACK is followed by this callback with MOSQ_ERR_CONN_REFUSED:
        // the broker's own reason ("not authorised": a wrong login) is kept, not
        // replaced by the generic "The connection was refused".
        let refusalKnown =
            rc == MOSQ_ERR_CONN_REFUSED.rawValue
            && shared.withLock { $0.lastError?.hasPrefix("broker refused the connection") == true }
        // Likewise a TLS failure OpenSSL named ("TLS: certificate verify failed")
        // is kept over the generic "A TLS error occurred." / "Protocol error" the
        // disconnect reports after it (which of the two libmosquitto reports, and
        // whether at all, depends on timing: seen under qemu-user).
        let tlsKnown = shared.withLock { $0.lastError?.hasPrefix("TLS: ") == true }
        if rc != 0 && !refusalKnown && !tlsKnown { noteError("connection lost: \(Self.describe(rc)); reconnecting") }
    }

    private func acknowledged(_ mid: Int32, reason: Int32) {
        if reason >= 0x80 {
            let topic = shared.withLock { s -> String? in
                guard let topic = s.midTopics.removeValue(forKey: mid) else {
                    s.earlyDenials[mid] = reason
                    return nil
                }
                return topic
            }
            if let topic { noteDenied(topic, reason) }
        } else {
            shared.withLock { _ = $0.midTopics.removeValue(forKey: mid) }
        }
        // A PUBACK can beat `flush` to recording the mid; it is kept for it.
        let seq = shared.withLock { s -> Int64? in
            if s.directMids.remove(mid) != nil { return nil }
            if let seq = s.inFlight.removeValue(forKey: mid) { return seq }
            s.earlyAcks.insert(mid)
            return nil
        }
        if let seq { acknowledge(seq) }
    }

    /// Queues a PUBACKed row for deletion by the committer thread.
    private func acknowledge(_ seq: Int64) {
        queue.update { $0.acks.append(seq) }
        committer.wake()
    }

    /// Home Assistant discovery, retained.
    /// Entities the configuration does not offer (all of them with
    /// discovery off) get an empty retained config, which removes them from HA.
    func announce() {
        announceLock.withLock { _ in announceLocked() }
    }

    private func announceLocked() {
        let offered = settings.homeAssistantDiscovery ? discovery : []
        for d in offered { publishDirect(d.topic, d.payload, retain: true) }
        let live = Set(offered.map(\.topic))
        for (component, object) in Payloads.discoveryCatalog {
            let topic = Payloads.discoveryTopic(device: deviceID, component: component, object: object)
            if !live.contains(topic) { publishDirect(topic, [], retain: true) }
        }
    }

    private func received(_ message: mosquitto_message) {
        let topic = String(cString: message.topic)
        let payload: [UInt8] =
            message.payloadlen > 0
            ? Array(UnsafeRawBufferPointer(start: message.payload, count: Int(message.payloadlen))) : []
        if topic == Topics.homeAssistantStatus {
            if payload == Array("online".utf8) { announce() }
            return
        }
        if let fleet, Self.topic(topic, matches: fleet.subscription) {
            fleet.handler.received(fleetDocument: payload, topic: topic, retained: message.retain)
            return
        }
        guard let channel = channel(of: topic) else { return }
        commands?.received(RemoteMessage(channel: channel, payload: payload, retained: message.retain))
    }

    // MARK: Fleet (docs/fleet.md)

    /// Publishes this door's fleet document on its topic, retained, QoS 1,
    /// at once (not through the outbox: a push is answered now or refused).
    /// False when not connected or there is no fleet.
    public func publishFleet(_ document: [UInt8]) -> Bool {
        guard let fleet else { return false }
        return publishRetained(topic: fleet.publishTopic, payload: document)
    }

    /// Publishes `payload` retained, QoS 1, at once. False when not connected.
    public func publishRetained(topic: String, payload: [UInt8]) -> Bool {
        guard isConnected else { return false }
        publishDirect(topic, payload, retain: true)
        return true
    }

    /// Subscribes the fleet filter again: the broker sends its retained
    /// documents anew (MQTT 3.1.1 §3.8.4). False when not connected.
    public func refreshFleet() -> Bool {
        guard isConnected, let fleet, let m = borrowClient() else { return false }
        defer { returnClient() }
        return mosquitto_subscribe(m, nil, fleet.subscription, 1) == MOSQ_ERR_SUCCESS.rawValue
    }

    static func topic(_ topic: String, matches filter: String) -> Bool {
        var result = false
        return mosquitto_topic_matches_sub(filter, topic, &result) == MOSQ_ERR_SUCCESS.rawValue && result
    }

    /// A publish the broker refused: the row still leaves the outbox (the
    /// broker will not take it however often it is sent, and the audit log
    /// keeps the event), but the refusal is counted, shown in status and
    /// telemetry, and logged.
    private func noteDenied(_ topic: String, _ reason: Int32) {
        let what =
            "\(topic): \(String(cString: mosquitto_reason_string(reason))) (reason code 0x\(String(reason, radix: 16)))"
        shared.withLock {
            $0.deniedCount += 1
            $0.lastDenied = what
        }
        log.error("mqtt: the broker refused the publish to \(what); check its ACL for this device")
    }

    /// Records the topic of a publish awaiting its PUBACK; names a refusal
    /// that arrived first. Called with `shared` held; returns the early refusal.
    private static func recordTopic(_ s: inout Shared, _ mid: Int32, _ topic: String) -> Int32? {
        if let reason = s.earlyDenials.removeValue(forKey: mid) { return reason }
        if !s.earlyAcks.contains(mid) { s.midTopics[mid] = topic }
        return nil
    }

    /// `OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed`
    /// → `TLS: certificate verify failed`; logged once per distinct reason.
    private func tlsFailed(_ line: String) {
        let reason = line.split(separator: ":").last.map { Self.trimmed($0) } ?? line
        let text = "TLS: \(reason)"
        let repeated = shared.withLock { s -> Bool in
            defer { s.lastError = text }
            return s.lastError == text
        }
        if !repeated { log.warning("mqtt: \(text) (\(settings.host):\(settings.port))") }
    }

    /// `text` without leading and trailing spaces and tabs.
    static func trimmed(_ text: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) })
        else { return "" }
        return String(text[first...last])
    }

    private func noteError(_ text: String) {
        shared.withLock { $0.lastError = text }
        log.warning("mqtt: \(text)")
    }

    private func check(_ rc: Int32, _ what: String) throws { try Self.check(rc, what) }

    private static func check(_ rc: Int32, _ what: String) throws {
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError.setup("\(what): \(describe(rc))") }
    }

    /// Protocol version and TLS (files, and `insecure`) of a fresh client:
    /// the link's and `gatewayctl config check --broker`'s, the same way.
    static func configure(_ m: OpaquePointer, _ c: MQTTSettings) throws {
        let version = c.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, version), "protocol version")
        if let login = c.login {
            try check(mosquitto_username_pw_set(m, login.username, login.password), "username and password")
        }
        guard c.tls.enabled else { return }
        try check(
            mosquitto_tls_set(m, c.tls.caFile, c.tls.caDirectory, c.tls.certFile, c.tls.keyFile, nil), "TLS files")
        if c.tls.insecure { try check(mosquitto_tls_insecure_set(m, true), "TLS insecure") }
        guard MulticastDNS.isLocalName(c.host), !c.tls.insecure else { return }
        // A `*.local` broker is connected to by address, and libmosquitto 2.0.11
        // checks the certificate against the host it connects to. So the link
        // brings its own TLS context, which checks the name (OpenSSL's
        // X509_VERIFY_PARAM_set1_host) with the same CA and client certificate,
        // and libmosquitto uses it as it is (MOSQ_OPT_SSL_CTX_WITH_DEFAULTS off:
        // with its defaults it would install its own verify callback, which
        // 2.0.11 cannot run for a context it did not make).
        var error = [CChar](repeating: 0, count: 320)
        guard
            let context = door_broker_tls_new(
                c.tls.caFile, c.tls.caDirectory, c.tls.certFile, c.tls.keyFile, MulticastDNS.canonical(c.host),
                &error, error.count)
        else {
            throw MQTTError.setup(
                "TLS for \(c.host): \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"
            )
        }
        defer { door_broker_tls_free(context) }
        try check(mosquitto_int_option(m, MOSQ_OPT_SSL_CTX_WITH_DEFAULTS, 0), "TLS context defaults")
        try check(mosquitto_void_option(m, MOSQ_OPT_SSL_CTX, context), "TLS context")
    }

    static func describe(_ rc: Int32) -> String {
        if rc == MOSQ_ERR_ERRNO.rawValue { return String(cString: strerror(errno)) }
        return String(cString: mosquitto_strerror(rc))
    }
}

public enum MQTTError: Error, CustomStringConvertible {
    case setup(String)
    public var description: String {
        switch self {
        case .setup(let m): return "MQTT setup: \(m)"
        }
    }
}
