import CMosquitto
import DoorCore
import Foundation
import GatewayConfig
import GatewayStore
import Logging

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

/// The MQTT adapter: the only code that touches libmosquitto. One client on
/// its own network thread (`mosquitto_loop` in `runNetwork`), MQTT 3.1.1 by
/// default, mutual TLS, last will = retained `offline`, retained `online`
/// after each connect, reconnect with exponential backoff (1 s doubling to
/// 60 s), command topics subscribed in a clean session. Events go through
/// the durable outbox: committed to SQLite, published at QoS 1, deleted on
/// PUBACK; after a reconnect or a restart the backlog goes out in order.
public final class MQTTLink: @unchecked Sendable {
    public let configuration: GatewayConfiguration.MQTT
    public let deviceID: String
    public let topics: Topics
    let store: GatewayStore
    let log: Logger
    private var client: OpaquePointer?
    private let lock = NSLock()
    private var connected = false
    private var lastError: String?
    private var inFlight: [Int32: Int64] = [:]
    private var earlyAcks: Set<Int32> = []
    private var directMids: Set<Int32> = []
    private let flushLock = NSLock()
    private var publishedUpTo: Int64 = 0
    private var publishedCount = 0
    private var acknowledgedCount = 0
    private var deniedCount = 0
    private var lastDenied: String?
    /// Topic of each publish awaiting its PUBACK (to name a refusal).
    private var midTopics: [Int32: String] = [:]
    /// Refusals whose PUBACK beat the recording of their mid (and topic).
    private var earlyDenials: [Int32: Int32] = [:]
    private var replay: ReplayGuard
    private var lastState: [UInt8]?
    private var lastAccess: [UInt8]?
    private var stoppingNetwork = false
    private var networkStarted = false
    private let networkDone = DispatchSemaphore(value: 0)
    private var pending: [GatewayStore.OutboxEntry] = []
    private var acks: [Int64] = []
    private var committing = 0
    private let pendingCondition = NSCondition()
    private var committerStopping = false
    /// Rows committed by `appendAudit(outbox:)` wait to be published.
    private var flushRequested = false
    private let committerDone = DispatchSemaphore(value: 0)
    /// Asked for the clock's sync state when a command is judged.
    public var clockSynchronised: @Sendable () -> Bool = { false }
    /// Each remote command's outcome (accepted or rejected with its reason).
    public var onCommand: (@Sendable (RemoteOutcome) -> Void)?
    /// Home Assistant discovery, rebuilt by the daemon (it knows the door).
    public var discovery: [(topic: String, payload: [UInt8])] = []
    public var actionCount = 4

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
        public static let homeAssistantStatus = "homeassistant/status"
    }

    public init(configuration: GatewayConfiguration.MQTT, deviceID: String, store: GatewayStore, log: Logger) throws {
        self.configuration = configuration
        self.deviceID = deviceID
        self.store = store
        self.log = log
        topics = Topics(prefix: configuration.topicPrefix)
        replay = try store.replayGuard()
    }

    deinit {
        if let client { mosquitto_destroy(client) }
    }

    // MARK: Lifecycle

    public func start() throws {
        mosquitto_lib_init()
        let selfPointer = Unmanaged.passUnretained(self).toOpaque()
        guard let m = mosquitto_new(configuration.clientID, true, selfPointer) else {
            throw MQTTError.setup("mosquitto_new failed")
        }
        client = m
        try Self.configure(m, configuration)
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
        if configuration.protocolVersion == .v5 {
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
        let thread = Thread { [self] in
            if let m = client { runNetwork(m) }
            networkDone.signal()
        }
        thread.name = "gatewayd.mqtt"
        networkStarted = true
        thread.start()
        startCommitter()
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
    private func connect(_ m: OpaquePointer) {
        let rc = mosquitto_connect(
            m, configuration.host, Int32(configuration.port), Int32(configuration.keepaliveSeconds))
        if rc != MOSQ_ERR_SUCCESS.rawValue {
            noteError("connect to \(configuration.host):\(configuration.port): \(Self.describe(rc))")
        }
    }

    private var networkStopping: Bool { lock.withLock { stoppingNetwork } }

    /// Publishes `offline` (retained) first, then disconnects and joins the network thread.
    public func stop(flushWithin: Duration = .seconds(2)) {
        pendingCondition.withLock {
            committerStopping = true
            pendingCondition.signal()
        }
        if client != nil { _ = committerDone.wait(timeout: .now() + 10) }
        guard let m = client else { return }
        if isConnected {
            // Give the backlog a moment to be acknowledged.
            let deadline = ContinuousClock.now + flushWithin
            while ContinuousClock.now < deadline && ((try? store.outboxDepth()) ?? 0) > 0 { usleep(20_000) }
            let offline = Array("offline".utf8)
            var mid: Int32 = 0
            mosquitto_publish(m, &mid, topics.availability, Int32(offline.count), offline, 1, true)
            usleep(100_000)
        }
        lock.withLock { stoppingNetwork = true }
        mosquitto_disconnect(m)
        // The loop returns within its 250 ms select timeout once told to stop.
        guard !networkStarted || networkDone.wait(timeout: .now() + 5) == .success else {
            log.error("mqtt: the network thread did not stop within 5 s; leaving it to the exit")
            client = nil
            return
        }
        mosquitto_destroy(m)
        client = nil
    }

    public var isConnected: Bool { lock.withLock { connected } }

    public var status: MQTTStatus {
        let depth = ((try? store.outboxDepth()) ?? 0) + queuedCount
        return lock.withLock {
            MQTTStatus(
                connected: connected, lastError: lastError, outboxDepth: depth, published: publishedCount,
                acknowledged: acknowledgedCount, denied: deniedCount, lastDenied: lastDenied)
        }
    }

    // MARK: Publishing

    /// Queues the event for the outbox. The committer thread commits what is
    /// queued in one transaction (group commit, synchronous FULL) and only
    /// then publishes it; `stop` commits anything still queued.
    public func record(_ event: DoorEvent, at time: Int64, uidText: String?, label: String? = nil) {
        queue(eventEntry(event, at: time, uidText: uidText, label: label))
    }

    /// The outbox message announcing `event`, for a caller that commits it
    /// itself in the same transaction as the event's audit row (then calls
    /// `outboxCommitted`).
    public func eventEntry(_ event: DoorEvent, at time: Int64, uidText: String?, label: String? = nil)
        -> GatewayStore.OutboxEntry
    {
        let cls: OutboxMessage.Class = [.accessGranted, .accessDenied].contains(event.kind) ? .access : .event
        let device = deviceID
        return GatewayStore.OutboxEntry(topic: topics.event, class: cls, created: time) { seq in
            Payloads.event(event, seq: seq, time: time, device: device, uidText: uidText, label: label)
        }
    }

    /// The bound `enqueue` keeps the outbox to (`[mqtt] outbox_limit`).
    public var outboxLimit: Int { configuration.outboxLimit }

    /// Rows were committed to the outbox by someone else: publish them
    /// (on the committer thread, which owns publishing from the outbox).
    public func outboxCommitted() {
        pendingCondition.withLock {
            flushRequested = true
            pendingCondition.signal()
        }
    }

    public func publishTelemetry(_ fields: [(String, JSONValue)], at time: Int64) {
        queue(
            // Retained: Home Assistant's diagnostics read the latest as soon as
            // they subscribe (after a restart of HA, or before its discovery
            // of the door has subscribed them); the outbox keeps the order, so
            // the retained one is the newest.
            GatewayStore.OutboxEntry(topic: topics.telemetry, class: .telemetry, retain: true, created: time) { seq in
                Array(
                    JSONValue.object([("seq", .int(Int(seq))), ("time", .string(UTCTime.iso8601(time)))] + fields)
                        .serialized.utf8)
            })
    }

    private func queue(_ entry: GatewayStore.OutboxEntry) {
        pendingCondition.lock()
        pending.append(entry)
        pendingCondition.signal()
        pendingCondition.unlock()
    }

    /// Commits everything queued (one transaction), publishes it, and
    /// deletes the acknowledged rows (another).
    private func commitPending() {
        pendingCondition.lock()
        let batch = pending
        let acked = acks
        pending = []
        acks = []
        committing = batch.count
        pendingCondition.unlock()
        if !batch.isEmpty {
            do {
                try store.enqueue(batch, limit: configuration.outboxLimit)
            } catch {
                noteError("outbox commit of \(batch.count) messages failed: \(error)")
            }
            pendingCondition.withLock { committing = 0 }
            flush()
        }
        if !acked.isEmpty {
            do {
                try store.acknowledge(acked)
                lock.withLock { acknowledgedCount += acked.count }
            } catch {
                noteError("outbox: \(error)")
            }
        }
    }

    private func startCommitter() {
        let t = Thread { [self] in
            while true {
                pendingCondition.lock()
                while pending.isEmpty && acks.isEmpty && !flushRequested && !committerStopping {
                    pendingCondition.wait()
                }
                let stopping = committerStopping && pending.isEmpty && acks.isEmpty
                let flushNow = flushRequested
                flushRequested = false
                pendingCondition.unlock()
                if stopping { break }
                commitPending()
                if flushNow { flush() }
            }
            committerDone.signal()
        }
        t.name = "gatewayd.outbox"
        t.start()
    }

    /// Messages queued or being committed, less acknowledged rows not yet deleted.
    public var queuedCount: Int { pendingCondition.withLock { pending.count + committing - acks.count } }

    /// The retained door state; re-sent after every connect.
    public func publishState(_ state: JSONValue) {
        let bytes = Array(state.serialized.utf8)
        lock.withLock { lastState = bytes }
        if isConnected { publishDirect(topics.state, bytes, retain: true) }
    }

    /// The newest open (`{"time":…,"source":…}`), retained on its own topic so
    /// Home Assistant's timestamp sensor stays unknown, without a warning,
    /// until there is one; re-sent after every connect.
    public func publishLastAccess(_ access: JSONValue) {
        let bytes = Array(access.serialized.utf8)
        lock.withLock { lastAccess = bytes }
        if isConnected { publishDirect(topics.lastAccess, bytes, retain: true) }
    }

    /// A sticker was presented: `{"uid": …}` on `…/tag` (not retained, not
    /// through the outbox: a tag scan replayed later would fire automations late).
    public func publishTagScan(uidText: String) {
        guard isConnected else { return }
        publishDirect(topics.tag, Array(JSONValue.object([("uid", .string(uidText))]).serialized.utf8), retain: false)
    }

    /// The device report of compat command 5 (COMPAT §3), on the compat topics.
    public func publishReport(_ report: JSONValue) {
        let bytes = Array(report.serialized.utf8)
        for topic in configuration.compatCommandTopics + [topics.report] { publishDirect(topic, bytes, retain: false) }
    }

    /// Sends the waiting outbox rows not yet handed to libmosquitto, in order.
    /// libmosquitto's calls are made without `lock` held (its network thread
    /// takes `lock` in the PUBACK callback); `flushLock` keeps flushes in order.
    func flush() {
        guard let m = client else { return }
        flushLock.lock()
        defer { flushLock.unlock() }
        while true {
            guard let after = lock.withLock({ connected ? publishedUpTo : nil }) else { return }
            let rows: [OutboxMessage]
            do { rows = try store.outbox(after: after, limit: 200) } catch {
                noteError("outbox: \(error)")
                return
            }
            if rows.isEmpty { return }
            for row in rows {
                var mid: Int32 = 0
                let rc = mosquitto_publish(m, &mid, row.topic, Int32(row.payload.count), row.payload, 1, row.retain)
                guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                    noteError("publish: \(Self.describe(rc))")
                    return
                }
                let (ackedAlready, refused) = lock.withLock { () -> (Bool, Int32?) in
                    publishedUpTo = row.seq
                    publishedCount += 1
                    let refused = recordTopicLocked(mid, row.topic)
                    if earlyAcks.remove(mid) != nil { return (true, refused) }
                    inFlight[mid] = row.seq
                    return (false, refused)
                }
                if let refused { noteDenied(row.topic, refused) }
                if ackedAlready { acknowledge(row.seq) }
            }
        }
    }

    private func publishDirect(_ topic: String, _ bytes: [UInt8], retain: Bool) {
        guard let m = client else { return }
        var mid: Int32 = 0
        let rc = mosquitto_publish(m, &mid, topic, Int32(bytes.count), bytes, 1, retain)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { return noteError("publish \(topic): \(Self.describe(rc))") }
        // Not an outbox row: its PUBACK must not be taken for one.
        let refused = lock.withLock { () -> Int32? in
            let refused = recordTopicLocked(mid, topic)
            if earlyAcks.remove(mid) == nil { directMids.insert(mid) }
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
        if configuration.tls.insecure {
            log.warning("mqtt: connected WITHOUT verifying the broker's certificate (mqtt.tls.insecure = true)")
        }
        log.info("mqtt: connected to \(configuration.host):\(configuration.port)")
        guard let m = client else { return }
        lock.withLock {
            connected = true
            lastError = nil
            // A clean session: whatever was in flight is sent again (consumers
            // drop duplicates by seq).
            inFlight = [:]
            earlyAcks = []
            directMids = []
            publishedUpTo = 0
        }
        publishDirect(topics.availability, Array("online".utf8), retain: true)
        var commandTopics = [topics.command] + configuration.compatCommandTopics
        // lock/set always: with home_assistant_open off, HA's Unlock/Open are
        // refused and audited rather than unheard.
        commandTopics += [topics.lockSet, topics.modeSet, topics.lockoutClear, topics.actionSet]
        if configuration.homeAssistantDiscovery { commandTopics.append(Topics.homeAssistantStatus) }
        for t in commandTopics { mosquitto_subscribe(m, nil, t, 1) }
        announce()
        if let state = lock.withLock({ lastState }) { publishDirect(topics.state, state, retain: true) }
        if let access = lock.withLock({ lastAccess }) { publishDirect(topics.lastAccess, access, retain: true) }
        flush()
    }

    private func disconnected(_ rc: Int32) {
        lock.withLock { connected = false }
        if rc != 0 { noteError("connection lost: \(Self.describe(rc)); reconnecting") }
    }

    private func acknowledged(_ mid: Int32, reason: Int32) {
        if reason >= 0x80 {
            let topic = lock.withLock { () -> String? in
                guard let topic = midTopics.removeValue(forKey: mid) else {
                    earlyDenials[mid] = reason
                    return nil
                }
                return topic
            }
            if let topic { noteDenied(topic, reason) }
        } else {
            lock.withLock { _ = midTopics.removeValue(forKey: mid) }
        }
        // A PUBACK can beat `flush` to recording the mid; it is kept for it.
        let seq = lock.withLock { () -> Int64? in
            if directMids.remove(mid) != nil { return nil }
            if let seq = inFlight.removeValue(forKey: mid) { return seq }
            earlyAcks.insert(mid)
            return nil
        }
        if let seq { acknowledge(seq) }
    }

    /// Queues a PUBACKed row for deletion by the committer thread.
    private func acknowledge(_ seq: Int64) {
        pendingCondition.withLock {
            acks.append(seq)
            pendingCondition.signal()
        }
    }

    /// Home Assistant discovery, retained.
    /// Entities the configuration does not offer (all of them with
    /// discovery off) get an empty retained config, which removes them from HA.
    func announce() {
        let offered = configuration.homeAssistantDiscovery ? discovery : []
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
        guard let outcome = judge(topic: topic, payload: payload, retained: message.retain) else { return }
        onCommand?(outcome)
    }

    /// The verdict on a command message; nil for messages that are not commands
    /// (device reports on a shared topic).
    func judge(topic: String, payload: [UInt8], retained: Bool) -> RemoteOutcome? {
        let now = WallClock(unixSeconds: Int64(time(nil)), synchronised: clockSynchronised())
        let judge = CommandJudge(
            mapping: configuration.commandMapping, tolerance: Int64(configuration.toleranceSeconds), deviceID: deviceID,
            actionCount: actionCount)
        if let outcome = judgeHomeAssistantControl(topic: topic, payload: payload, retained: retained) {
            return outcome
        }
        if topic == topics.lockSet {
            guard !retained else {
                return .rejected(code: "retained", detail: "retained messages are ignored", source: "homeassistant")
            }
            let text = String(decoding: payload, as: UTF8.self)
            switch text {
            case "OPEN",
                "UNLOCK" where !configuration.homeAssistantOpen:
                return .rejected(
                    code: "ha_open_disabled", detail: "[mqtt] home_assistant_open = false: HA may not open the door",
                    source: "homeassistant")
            case "OPEN", "UNLOCK": return .accepted(.action(0), source: "homeassistant")
            case "LOCK":
                return .rejected(
                    code: "lock_is_automatic", detail: "the strike locks by itself when its pulse ends",
                    source: "homeassistant")
            default:
                return .rejected(
                    code: "malformed", detail: "Home Assistant lock payload must be OPEN or UNLOCK",
                    source: "homeassistant")
            }
        }
        let native = topic == topics.command
        if !native && payload.starts(with: Array("{\"TT_ID\"".utf8)) { return nil }  // a device report (COMPAT §3)
        return lock.withLock { () -> RemoteOutcome in
            var guardState = replay
            let key: [UInt8]?
            do { key = try store.key(native ? .nativeCommand : .compatTimestamp) } catch {
                return .rejected(code: "no_key", detail: "store: \(error)", source: native ? "native" : "compat")
            }
            let verdict =
                native
                ? judge.judgeNative(payload: payload, retained: retained, key: key, now: now, replay: &guardState)
                : judge.judgeCompat(payload: payload, retained: retained, key: key, now: now, replay: &guardState)
            let source = native ? "native" : "compat"
            if let r = verdict.rejection { return .rejected(code: r.code.rawValue, detail: r.detail, source: source) }
            // Persist the replay record before the command acts: a crash after
            // the door opened must not revive the message.
            do {
                try store.saveReplayGuard(guardState)
                replay = guardState
            } catch {
                return .rejected(code: "store", detail: "replay record not saved: \(error)", source: source)
            }
            guard let target = verdict.target else {
                return .rejected(code: "malformed", detail: "no target", source: source)
            }
            return .accepted(target, source: source)
        }
    }

    /// Home Assistant's mode selector, "clear lockout" and action buttons:
    /// honoured only with `home_assistant_open = true` (HA holds no MAC key;
    /// these are as strong as opening), refused and audited otherwise. Nil
    /// for other topics.
    func judgeHomeAssistantControl(topic: String, payload: [UInt8], retained: Bool) -> RemoteOutcome? {
        guard [topics.modeSet, topics.lockoutClear, topics.actionSet].contains(topic) else { return nil }
        let ha = "homeassistant"
        guard !retained else { return .rejected(code: "retained", detail: "retained messages are ignored", source: ha) }
        guard configuration.homeAssistantOpen else {
            return .rejected(
                code: "ha_open_disabled", detail: "[mqtt] home_assistant_open = false: HA may not act on the door",
                source: ha)
        }
        let text = String(decoding: payload.prefix(64), as: UTF8.self)
        switch topic {
        case topics.modeSet:
            guard let mode = DoorMode(rawValue: text) else {
                return .rejected(code: "malformed", detail: "mode must be normal, passage or lockdown", source: ha)
            }
            return .accepted(.mode(mode), source: ha)
        case topics.lockoutClear:
            return .accepted(.clearLockout, source: ha)
        default:
            guard let index = Int(text), (0..<actionCount).contains(index) else {
                return .rejected(
                    code: "unknown_action", detail: "action must be 0…\(actionCount - 1)", source: ha)
            }
            return .accepted(.action(index), source: ha)
        }
    }

    /// A publish the broker refused: the row still leaves the outbox (the
    /// broker will not take it however often it is sent, and the audit log
    /// keeps the event), but the refusal is counted, shown in status and
    /// telemetry, and logged.
    private func noteDenied(_ topic: String, _ reason: Int32) {
        let what =
            "\(topic): \(String(cString: mosquitto_reason_string(reason))) (reason code 0x\(String(reason, radix: 16)))"
        lock.withLock {
            deniedCount += 1
            lastDenied = what
        }
        log.error("mqtt: the broker refused the publish to \(what); check its ACL for this device")
    }

    /// Records the topic of a publish awaiting its PUBACK; names a refusal
    /// that arrived first. Called with `lock` held; returns the early refusal.
    private func recordTopicLocked(_ mid: Int32, _ topic: String) -> Int32? {
        if let reason = earlyDenials.removeValue(forKey: mid) { return reason }
        if !earlyAcks.contains(mid) { midTopics[mid] = topic }
        return nil
    }

    /// `OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed`
    /// → `TLS: certificate verify failed`; logged once per distinct reason.
    private func tlsFailed(_ line: String) {
        let reason = line.split(separator: ":").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? line
        let text = "TLS: \(reason)"
        let repeated = lock.withLock { () -> Bool in
            defer { lastError = text }
            return lastError == text
        }
        if !repeated { log.warning("mqtt: \(text) (\(configuration.host):\(configuration.port))") }
    }

    private func noteError(_ text: String) {
        lock.withLock { lastError = text }
        log.warning("mqtt: \(text)")
    }

    private func check(_ rc: Int32, _ what: String) throws { try Self.check(rc, what) }

    private static func check(_ rc: Int32, _ what: String) throws {
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { throw MQTTError.setup("\(what): \(describe(rc))") }
    }

    /// Protocol version and TLS (files, and `insecure`) of a fresh client:
    /// the link's and `gatewayctl config check --broker`'s, the same way.
    static func configure(_ m: OpaquePointer, _ c: GatewayConfiguration.MQTT) throws {
        let version = c.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try check(mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, version), "protocol version")
        guard c.tls.enabled else { return }
        try check(
            mosquitto_tls_set(m, c.tls.caFile, c.tls.caDirectory, c.tls.certFile, c.tls.keyFile, nil), "TLS files")
        if c.tls.insecure { try check(mosquitto_tls_insecure_set(m, true), "TLS insecure") }
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
