import CMosquitto
import DoorCore
import Logging
import RemoteLink
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
/// `RemoteCommandHandler` handed over at `start`; deciding them is `RemoteJudge`'s.
///
/// What both transports keep alike (counters, error notes, kept documents,
/// the outbox round, telemetry, the threads) is RemoteLink's `LinkCore`;
/// what Home Assistant needs of the link is `HomeAssistantLink`
/// (HomeAssistant.swift). Everything the link is given comes at `init` or
/// `start`; what changes after is in a `Mutex` or a `Condition`.
public final class MQTTLink: RemoteTransport, CoreLink, HomeAssistantLink, Sendable {
    public typealias Topics = MQTTTopics
    public var transportName: String { "mqtt" }

    public let settings: MQTTSettings
    public var deviceID: String { core.deviceID }
    public let topics: Topics
    /// The fleet's topic filter and where its documents go (docs/fleet.md).
    public let fleet: MQTTFleet?
    public let core: LinkCore
    public var eventTopic: String { topics.event }
    var log: Logger { core.log }
    private let homeAssistant: HomeAssistantDiscovery

    /// The client (made by `start`), and the calls into it from other threads
    /// than the network thread (`borrowClient`): `stop` marks it closing,
    /// waits for the calls in flight and only then destroys it. Before, a
    /// publish from another queue (Home Assistant's redraw after a reload, a
    /// tag scan) could read the handle just before `stop` destroyed it.
    private struct ClientUse {
        var client: MosquittoClient?
        var closing = false
        var inUse = 0
    }
    private let clientUse = Mutex(ClientUse())

    /// `client` for one call, or nil once `stop` has begun; `returnClient()` after it.
    private func borrowClient() -> OpaquePointer? {
        clientUse.withLock { u -> MosquittoClient? in
            guard !u.closing, let c = u.client else { return nil }
            u.inUse += 1
            return c
        }?.handle
    }

    private func returnClient() { clientUse.withLock { $0.inUse -= 1 } }

    /// The publishes awaiting their PUBACK, shared by the callers and libmosquitto's thread.
    private struct Shared {
        var inFlight: [Int32: Int64] = [:]
        var earlyAcks: Set<Int32> = []
        var directMids: Set<Int32> = []
        var publishedUpTo: Int64 = 0
        /// Topic of each publish awaiting its PUBACK (to name a refusal).
        var midTopics: [Int32: String] = [:]
        /// Refusals whose PUBACK beat the recording of their mid (and topic).
        var earlyDenials: [Int32: Int32] = [:]
        var stoppingNetwork = false
    }
    private let shared = Mutex(Shared())
    /// Keeps flushes in order (libmosquitto is called without `shared` held).
    private let flushLock = Mutex(())
    /// Acknowledged rows for the committer thread to delete.
    private let acks = Mutex<[Int64]>([])

    /// Home Assistant discovery, rebuilt by the daemon (it knows the door).
    public var discovery: [(topic: String, payload: [UInt8])] {
        get { homeAssistant.all }
        set { homeAssistant.all = newValue }
    }

    public init(settings: MQTTSettings, deviceID: String, outbox: any Outbox, log: Logger, fleet: MQTTFleet? = nil) {
        self.settings = settings
        self.fleet = fleet
        topics = Topics(prefix: settings.topicPrefix)
        core = LinkCore(
            name: "mqtt", deviceID: deviceID, outbox: outbox, log: log, kept: [topics.state, topics.lastAccess])
        homeAssistant = HomeAssistantDiscovery(enabled: settings.homeAssistantDiscovery, deviceID: deviceID)
    }

    deinit {
        if let client = clientUse.withLock({ $0.client }) { mosquitto_destroy(client.handle) }
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
        case topics.lockdownSet: return .homeAssistantLockdown
        case topics.enrollCardSet: return .homeAssistantEnrollCard
        case topics.approvalSet: return .homeAssistantApproval
        default: return settings.compatCommandTopics.contains(topic) ? .compat : nil
        }
    }

    // MARK: Lifecycle

    public func start(_ wiring: RemoteWiring) throws {
        core.wire(wiring)
        mosquitto_lib_init()
        let selfPointer = Unmanaged.passUnretained(self).toOpaque()
        guard let m = mosquitto_new(settings.clientID, true, selfPointer) else {
            throw MQTTError.setup("mosquitto_new failed")
        }
        let client = MosquittoClient(m)
        clientUse.withLock { $0.client = client }
        try Mosquitto.configure(m, settings)
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
        try core.threads.start(name: "gatewayd.mqtt") { [self] in runNetwork(client.handle) }
        try core.committer.start(name: "gatewayd.outbox", drained: { [self] in acks.withLock { $0.isEmpty } }) {
            [self] round in commitRound(round)
        }
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
        /// The address last found for a `*.local` broker.
        var resolved: String?
        connect(m, &resolved)
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
            connect(m, &resolved)
        }
    }

    /// One blocking connect (TCP and the TLS handshake; the CONNACK arrives
    /// in the loop), as libmosquitto's own loop_forever reconnects: an
    /// asynchronous connect with TLS was seen to stall for good.
    /// A `*.local` broker is asked for by multicast DNS before every attempt
    /// (its address may have changed with DHCP); a name nobody answers is a
    /// failed attempt like a broker that is down, retried after the backoff.
    private func connect(_ m: OpaquePointer, _ resolved: inout String?) {
        let address: String
        do { address = try Mosquitto.address(of: settings.host) } catch {
            core.noteError("\(error); retrying")
            return
        }
        if address != settings.host && address != resolved {
            log.info("mqtt: \(settings.host) is \(address) (multicast DNS)")
            resolved = address
        }
        let rc = mosquitto_connect(m, address, Int32(settings.port), Int32(settings.keepaliveSeconds))
        if rc != MOSQ_ERR_SUCCESS.rawValue {
            core.noteError("connect to \(settings.host):\(settings.port): \(Mosquitto.describe(rc))")
        }
    }

    private var networkStopping: Bool { shared.withLock { $0.stoppingNetwork } }

    /// Publishes `offline` (retained) first, then disconnects and joins the network thread.
    public func stop(flushWithin: Duration = .seconds(2)) {
        core.committer.requestStop()
        core.committer.waitStopped(within: .seconds(10))
        guard let m = clientUse.withLock({ $0.client })?.handle else { return }
        if isConnected {
            // Give the backlog a moment to be acknowledged.
            let deadline = ContinuousClock.now + flushWithin
            while ContinuousClock.now < deadline && core.waitingRows() > 0 { usleep(20_000) }
            let offline = Array("offline".utf8)
            var mid: Int32 = 0
            mosquitto_publish(m, &mid, topics.availability, Int32(offline.count), offline, 1, true)
            usleep(100_000)
        }
        shared.withLock { $0.stoppingNetwork = true }
        mosquitto_disconnect(m)
        // The loop returns within its 250 ms select timeout once told to stop.
        guard core.threads.waitAll(within: .seconds(5)) else {
            log.error("mqtt: the network thread did not stop within 5 s; leaving it to the exit")
            clientUse.withLock { u in
                u.closing = true
                u.client = nil
            }
            return
        }
        clientUse.withLock { $0.closing = true }
        let deadline = ContinuousClock.now + .seconds(2)
        while clientUse.withLock({ $0.inUse }) > 0 && ContinuousClock.now < deadline { usleep(1_000) }
        let idle = clientUse.withLock { u in
            defer { u.client = nil }
            return u.inUse == 0
        }
        // A call still in libmosquitto after 2 s keeps the handle (the process is on its way out).
        if idle { mosquitto_destroy(m) } else { log.error("mqtt: a publish did not return within 2 s; handle left") }
    }

    public var transportStatus: TransportStatus { status }

    /// The common counters (`denied`: publishes the broker refused, MQTT 5
    /// PUBACK reason code ≥ 0x80, e.g. 0x87 not authorised by its ACL;
    /// always 0 under MQTT 3.1.1, where a broker acknowledges a denied
    /// publish like any other).
    public var status: TransportStatus { core.status(queued: queuedCount) }

    // MARK: Publishing

    /// Retained: Home Assistant's diagnostics read the latest as soon as
    /// they subscribe (after a restart of HA, or before its discovery of the
    /// door has subscribed them); the outbox keeps the order, so the
    /// retained one is the newest.
    public func publishTelemetry(_ fields: [(String, JSONValue)], at time: Int64) {
        core.queueTelemetry(on: topics.telemetry, retain: true, fields, at: time)
    }

    /// One round of the committer thread: commits what was queued (one
    /// transaction), publishes it, and deletes the acknowledged rows (another).
    private func commitRound(_ round: OutboxCommitter.Round) {
        let acked = acks.withLock { a -> [Int64] in
            defer { a = [] }
            return a
        }
        if !round.batch.isEmpty {
            core.commit(round)
            flush()
        }
        core.acknowledge(acked)
        if round.flushRequested { flush() }
    }

    /// Messages queued or being committed, less acknowledged rows not yet deleted.
    public var queuedCount: Int { core.committer.queuedCount - acks.withLock { $0.count } }

    /// The retained door state; re-sent after every connect.
    public func publishState(_ state: JSONValue) {
        publishKept(topic: topics.state, payload: Array(state.serialized.utf8))
    }

    /// The newest open (`{"time":…,"source":…}`), retained on its own topic so
    /// Home Assistant's timestamp sensor stays unknown, without a warning,
    /// until there is one; re-sent after every connect.
    public func publishLastAccess(_ access: JSONValue) {
        publishKept(topic: topics.lastAccess, payload: Array(access.serialized.utf8))
    }

    /// A retained document on `topic`, kept and re-sent after every connect
    /// (an empty payload clears the topic on the broker, also after a
    /// reconnect). Not through the outbox: only the newest matters.
    public func publishKept(topic: String, payload: [UInt8]) {
        core.kept.keep(payload, on: topic) { topic, payload in
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
        homeAssistant.update(entries, connected: { isConnected }) { publishDirect($0, $1, retain: true) }
    }

    /// Replaces every discovery entry (a reload: an action's button or the
    /// schedule's sensor added or gone) and, when connected, announces them:
    /// the offered ones published, the catalog's others emptied so HA
    /// removes their entities.
    public func replaceDiscovery(_ entries: [(topic: String, payload: [UInt8])]) {
        homeAssistant.replace(entries, connected: { isConnected }) { publishDirect($0, $1, retain: true) }
    }

    /// A sticker was presented: `{"uid": …}` on `…/tag` (not retained, not
    /// through the outbox: a tag scan replayed later would fire automations late).
    public func publishTagScan(uidText: String) {
        guard isConnected else { return }
        publishDirect(topics.tag, LinkPayloads.tagScan(uidText: uidText), retain: false)
    }

    /// An approval event on `…/approval` (not retained: HA's event entity
    /// fires once per message); the same event went to `…/event` through
    /// the outbox with its audit row. Other events are not sent here.
    public func publishApproval(_ event: DoorEvent, at time: Int64, uidText: String?, label: String?) {
        guard
            let payload = LinkPayloads.approvalEvent(
                event, time: time, device: deviceID, uidText: uidText, label: label)
        else { return }
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
            while isConnected {
                let after = shared.withLock { $0.publishedUpTo }
                let rows: [OutboxRow]
                do { rows = try core.outbox.waiting(after: after, limit: 200) } catch {
                    core.noteError("outbox: \(error)")
                    return
                }
                if rows.isEmpty { return }
                for row in rows {
                    var mid: Int32 = 0
                    let rc = mosquitto_publish(
                        m, &mid, row.topic, Int32(row.payload.count), row.payload, 1, row.retain)
                    guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                        core.noteError("publish: \(Mosquitto.describe(rc))")
                        return
                    }
                    core.update { $0.published += 1 }
                    let (ackedAlready, refused) = shared.withLock { s -> (Bool, Int32?) in
                        s.publishedUpTo = row.seq
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
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            return core.noteError("publish \(topic): \(Mosquitto.describe(rc))")
        }
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
            core.noteError("broker refused the connection: \(String(cString: mosquitto_connack_string(rc)))")
            return
        }
        if settings.tls.insecure {
            log.warning("mqtt: connected WITHOUT verifying the broker's certificate (mqtt.tls.insecure = true)")
        }
        log.info("mqtt: connected to \(settings.host):\(settings.port)")
        guard let m = clientUse.withLock({ $0.client })?.handle else { return }
        shared.withLock { s in
            // A clean session: whatever was in flight is sent again (consumers
            // drop duplicates by seq).
            s.inFlight = [:]
            s.earlyAcks = []
            s.directMids = []
            s.publishedUpTo = 0
        }
        core.update {
            $0.connected = true
            $0.lastError = nil
        }
        publishDirect(topics.availability, Array("online".utf8), retain: true)
        var commandTopics = [topics.command] + settings.compatCommandTopics
        // lock/set always: with home_assistant_open off, HA's Unlock/Open are
        // refused and audited rather than unheard; the same for the admin
        // topics with home_assistant_admin off.
        commandTopics += [topics.lockSet, topics.modeSet, topics.lockoutClear, topics.actionSet]
        commandTopics += [
            topics.provisionActionSet, topics.provisionLabelSet, topics.provisionSet, topics.revokeTagSet,
            topics.revokeSet, topics.approvalSet, topics.lockdownSet, topics.enrollCardSet,
        ]
        if settings.homeAssistantDiscovery { commandTopics.append(Topics.homeAssistantStatus) }
        for t in commandTopics { mosquitto_subscribe(m, nil, t, 1) }
        if let fleet { mosquitto_subscribe(m, nil, fleet.subscription, 1) }
        announce()
        // The door state, the last access, then Home Assistant's kept documents.
        core.kept.resend { publishDirect($0, $1, retain: true) }
        flush()
        core.afterConnect()
    }

    private func disconnected(_ rc: Int32) {
        core.update { $0.connected = false }
        // A refused CONNACK is followed by this callback with MOSQ_ERR_CONN_REFUSED:
        // the broker's own reason ("not authorised": a wrong login) is kept, not
        // replaced by the generic "The connection was refused".
        let lastError = core.lastError
        let refusalKnown =
            rc == MOSQ_ERR_CONN_REFUSED.rawValue && lastError?.hasPrefix("broker refused the connection") == true
        // Likewise a TLS failure OpenSSL named ("TLS: certificate verify failed")
        // is kept over the generic "A TLS error occurred." / "Protocol error" the
        // disconnect reports after it (which of the two libmosquitto reports, and
        // whether at all, depends on timing: seen under qemu-user).
        let tlsKnown = lastError?.hasPrefix("TLS: ") == true
        if rc != 0 && !refusalKnown && !tlsKnown {
            core.noteError("connection lost: \(Mosquitto.describe(rc)); reconnecting")
        }
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
        acks.withLock { $0.append(seq) }
        core.committer.wake()
    }

    /// Home Assistant discovery, retained.
    /// Entities the configuration does not offer (all of them with
    /// discovery off) get an empty retained config, which removes them from HA.
    func announce() {
        homeAssistant.announce { publishDirect($0, $1, retain: true) }
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
        if let fleet, Mosquitto.topic(topic, matches: fleet.subscription) {
            fleet.handler.received(fleetDocument: payload, topic: topic, retained: message.retain)
            return
        }
        guard let channel = channel(of: topic) else { return }
        core.commands?.received(RemoteMessage(channel: channel, payload: payload, retained: message.retain))
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

    /// A signed site command (SiteCommand.swift) on this door's fleet topic,
    /// not retained: it never replaces the retained document, and only the
    /// doors connected now hear it (each judges it: site key, freshness, replay).
    public func publishSiteCommand(_ command: [UInt8]) -> Bool {
        guard isConnected, let fleet else { return false }
        publishDirect(fleet.publishTopic, command, retain: false)
        return true
    }

    /// Subscribes the fleet filter again: the broker sends its retained
    /// documents anew (MQTT 3.1.1 §3.8.4). False when not connected.
    public func refreshFleet() -> Bool {
        guard isConnected, let fleet, let m = borrowClient() else { return false }
        defer { returnClient() }
        return mosquitto_subscribe(m, nil, fleet.subscription, 1) == MOSQ_ERR_SUCCESS.rawValue
    }

    /// A publish the broker refused: the row still leaves the outbox (the
    /// broker will not take it however often it is sent, and the audit log
    /// keeps the event), but the refusal is counted, shown in status and
    /// telemetry, and logged.
    private func noteDenied(_ topic: String, _ reason: Int32) {
        let what =
            "\(topic): \(String(cString: mosquitto_reason_string(reason))) (reason code 0x\(String(reason, radix: 16)))"
        core.noteDenied(what, log: "the broker refused the publish to \(what); check its ACL for this device")
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
        let reason = line.split(separator: ":").last.map { Mosquitto.trimmed($0) } ?? line
        let text = "TLS: \(reason)"
        let repeated = core.update { s -> Bool in
            defer { s.lastError = text }
            return s.lastError == text
        }
        if !repeated { log.warning("mqtt: \(text) (\(settings.host):\(settings.port))") }
    }

    private func check(_ rc: Int32, _ what: String) throws { try Mosquitto.check(rc, what) }
}
