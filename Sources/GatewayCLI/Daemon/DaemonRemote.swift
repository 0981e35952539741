import Dispatch
import DoorCore
import DoorIO
import GatewayConfig
import GatewayMQTT
import GatewayStore
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

extension Daemon {
    /// MQTT, before the door starts: the link made (not yet connected) and
    /// wired, so every event from the first has its outbox message.
    func prepareRemote() {
        if configuration.remote.transport == .nats { return prepareNATS() }
        guard configuration.mqtt.enabled else { return }
        var mqtt = configuration.mqtt
        // Relative TLS paths are systemd credentials (LoadCredential=).
        if let creds = environment["CREDENTIALS_DIRECTORY"] {
            func resolve(_ p: String?) -> String? { p.map { $0.hasPrefix("/") ? $0 : creds + "/" + $0 } }
            mqtt.tls.certFile = resolve(mqtt.tls.certFile)
            mqtt.tls.keyFile = resolve(mqtt.tls.keyFile)
            mqtt.tls.caFile = resolve(mqtt.tls.caFile)
        }
        var settings = MQTTSettings(mqtt)
        do {
            settings.login = try MQTTSettings.Login.load(mqtt, credentials: environment["CREDENTIALS_DIRECTORY"])
        } catch {
            log.error("mqtt: \(error); not connecting, events stay in the audit log")
            return
        }
        for warning in configuration.warnings { log.warning("configuration: \(warning)") }
        let outbox = StoreOutbox(store: store, limit: mqtt.outboxLimit)
        let commands: StoreCommands
        do {
            commands = try StoreCommands(
                store: store,
                policy: RemotePolicy(
                    mqtt, deviceID: configuration.deviceID, actionCount: configuration.door.actions.count),
                actionCount: { [live] in live.current.door.actions.count },
                clockSynchronised: { [runtime] in runtime.clockSynchronised() },
                submit: { [runtime] outcome in runtime.submit(.remoteCommand(outcome)) }, log: log)
        } catch {
            log.error("mqtt: \(error); events stay in the audit log")
            return
        }
        let link = MQTTLink(settings: settings, deviceID: configuration.deviceID, outbox: outbox, log: log)
        link.commands = commands
        attachFleet(link)
        let topics = link.topics
        let actions = configuration.door.actions.map { (index: $0.index, name: $0.name) }
        let eventTypes = DoorEvent.Kind.allCases.map(\.rawValue)
        let (device, doorContact) = (configuration.deviceID, configuration.doorContact != nil)
        let hasSchedule =
            configuration.door.passageSchedule != nil || configuration.door.actions.contains { $0.schedule != nil }
        let makeDiscovery: (HomeAssistantAdminMenu?) -> [(topic: String, payload: [UInt8])] = { admin in
            Payloads.discovery(
                device: device, name: mqtt.homeAssistantName ?? device, topics: topics, doorContact: doorContact,
                eventTypes: eventTypes, canOpen: mqtt.homeAssistantOpen, actions: actions,
                area: mqtt.homeAssistantArea, schedule: hasSchedule, admin: admin)
        }
        // Home Assistant as the admin screen: its UIDs are always hashed.
        var hashed: @Sendable (TagUID) -> String? = { _ in nil }
        if mqtt.homeAssistantAdmin { hashed = eventUIDText(.hmac, transport: "mqtt (home_assistant_admin)") }
        let admin = HomeAssistantAdmin(
            enabled: mqtt.homeAssistantAdmin, link: link, store: store, runtime: runtime, log: log,
            actions: actions, defaultAction: configuration.door.provisioning.action, hashed: hashed,
            discovery: makeDiscovery)
        link.discovery = mqtt.homeAssistantAdmin ? admin.initialDiscovery : makeDiscovery(nil)
        commands.admin = { admin.received($0) }
        admin.prepare()
        homeAssistantAdmin = admin
        let uidText = eventUIDText(mqtt.uidInEvents, transport: "mqtt")
        eventOutbox.attach({ link.outboxCommitted() }, limit: mqtt.outboxLimit) { [mqtt, store, log] event, time in
            var label: String?
            if mqtt.labelInEvents, let uid = event.uid, [.accessGranted, .accessDenied].contains(event.kind) {
                do { label = try store.issuedTag(uid)?.label } catch { log.error("label of \(uid.hex): \(error)") }
            }
            return GatewayStore.OutboxEntry(
                link.eventEntry(event, at: time, uidText: event.uid.flatMap(uidText), label: label))
        }
        // The event itself went out with its audit row; every sticker
        // presented is also a tag scan, for HA's tag_scanned automations
        // (none while the UID is withheld: a scan without one says nothing).
        runtime.publish = { event, time in
            if let uid = event.uid, [.accessGranted, .accessDenied].contains(event.kind), let text = uidText(uid) {
                link.publishTagScan(uidText: text)
            }
            admin.observe(event, at: time)
        }
        runtime.publishState = { link.publishState($0) }
        runtime.publishReport = { [configuration] in link.publishReport(Self.deviceReport(configuration.deviceID)) }
        preparedRemote = link
    }

    /// How events and tag scans name a UID (`uid_in_events`, either
    /// transport): in full, or hashed with the device key, read once here.
    /// Without a device key hashed UIDs fail closed (issue 24 L3): events go
    /// out without `uid` and no tag scan is sent, rather than an HMAC under
    /// the empty key that anyone can reverse; logged once, here.
    func eventUIDText(_ mode: UIDInEvents, transport: String) -> @Sendable (TagUID) -> String? {
        Self.eventUIDText(mode, transport: transport, log: log) { [store] in try store.key(.device) }
    }

    static func eventUIDText(
        _ mode: UIDInEvents, transport: String, log: Logger, deviceKey: () throws -> [UInt8]?
    ) -> @Sendable (TagUID) -> String? {
        guard mode == .hmac else { return { Payloads.uidText($0, hashed: false, deviceKey: []) } }
        var key: [UInt8] = []
        var problem = "missing"
        do { key = try deviceKey() ?? [] } catch { problem = "unreadable (\(error))" }
        if key.count < Payloads.minimumDeviceKeyLength {
            log.error(
                "\(transport): the device key is \(problem); with uid_in_events = \"hmac\" events carry no UID and no tag scans are sent (restart gatewayd once the store is readable)"
            )
        }
        let frozen = key
        return { Payloads.uidText($0, hashed: true, deviceKey: frozen) }
    }

    /// MQTT: events through the durable outbox, retained state, telemetry,
    /// remote commands into the door queue, Home Assistant discovery.
    func startRemote() {
        if let nats = natsRemote { return startNATS(nats) }
        guard let link = preparedRemote else { return }
        do {
            try link.start()
        } catch {
            log.error("mqtt: \(error)")
            return
        }
        remote = link
        // Set on the door queue, which reads it: the door runs already (issue 25 §3's race).
        runtime.queue.async { [runtime] in
            runtime.publishLastAccess = { link.publishLastAccess($0) }
            link.publishState(runtime.stateDocument())
            if let access = runtime.lastAccessDocument() { link.publishLastAccess(access) }
        }
        startTelemetry(link, every: configuration.mqtt.telemetrySeconds)
    }

    /// What the audit closure asks for each event: the outbox message (made
    /// by the MQTT link, once there is one) to commit with the audit row.
    final class EventOutbox: Sendable {
        private struct Attached {
            var committed: @Sendable () -> Void
            var limit: Int
            var make: @Sendable (DoorEvent, Int64) -> GatewayStore.OutboxEntry
        }
        private let attached = Mutex<Attached?>(nil)

        /// `committed` tells the transport (MQTT or NATS) to publish.
        func attach(
            _ committed: @escaping @Sendable () -> Void, limit: Int,
            make: @escaping @Sendable (DoorEvent, Int64) -> GatewayStore.OutboxEntry
        ) {
            attached.withLock { $0 = Attached(committed: committed, limit: limit, make: make) }
        }

        /// Nil while MQTT is off (or its link could not be made).
        func message(for event: DoorEvent, at time: Int64) -> (entry: GatewayStore.OutboxEntry, limit: Int)? {
            guard let a = attached.withLock({ $0 }) else { return nil }
            return (a.make(event, time), a.limit)
        }

        /// The audit row and its message are committed: publish.
        func committed() { attached.withLock { $0?.committed }?() }
    }

    private func startTelemetry(_ link: MQTTLink, every seconds: Int) {
        let timer = DispatchSource.makeTimerSource(queue: runtime.queue)
        // The first soon after start, so HA's diagnostics do not wait a period.
        timer.schedule(deadline: .now() + .seconds(2), repeating: .seconds(seconds))
        timer.setEventHandler { [runtime, started, auditWriter, store] in
            let st = link.status
            let fields: [(String, JSONValue)] = [
                ("uptime_s", .int(Int(MonotonicClock.now().since(started).millisecondsClamped / 1000))),
                ("counters", .object(runtime.counters.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                ("reader", .string(runtime.readerHealth)), ("outbox", .int(st.outboxDepth)),
                ("clock_synchronised", .bool(runtime.clockSynchronised())), ("broker_denied", .int(st.denied)),
                ("store_writable", .bool(auditWriter.health.writable)),
                ("unsaved_events", .int(auditWriter.health.unsaved)),
                Daemon.auditHeadField(store),
            ]
            link.publishTelemetry(fields, at: Int64(time(nil)))
        }
        timer.activate()
        telemetryTimer = timer
    }

    func stopRemote() {
        telemetryTimer?.cancel()
        remote?.stop()
        natsRemote?.stop()
    }

    func remoteStatus() -> JSONValue {
        if let nats = natsRemote { return natsStatus(nats) }
        guard let link = remote else {
            return .object([("enabled", .bool(configuration.mqtt.enabled)), ("connected", .bool(false))])
        }
        let s = link.status
        return .object([
            ("enabled", .bool(true)), ("connected", .bool(s.connected)), ("outbox", .int(s.outboxDepth)),
            ("published", .int(s.published)), ("acknowledged", .int(s.acknowledged)),
            ("last_error", .optional(s.lastError)), ("denied", .int(s.denied)),
            ("last_denied", .optional(s.lastDenied)),
        ])
    }

    /// COMPAT §3 device report (command 5): TT_ID, event_timestamp,
    /// firmware_version, tt_net_info.ipv4.
    static func deviceReport(_ device: String) -> JSONValue {
        .object([
            ("TT_ID", .string(device)), ("event_timestamp", .int(Int(time(nil)))),
            ("firmware_version", .string("doorgateway-\(GatewayVersion.string)")),
            ("tt_net_info", .object([("ipv4", .string(firstIPv4() ?? ""))])),
        ])
    }

    /// The first non-loopback IPv4 address (getifaddrs).
    static func firstIPv4() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return nil }
        defer { freeifaddrs(list) }
        var p = list
        while let a = p {
            defer { p = a.pointee.ifa_next }
            guard let sa = a.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            var host = [CChar](repeating: 0, count: 64)
            let ok = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin -> Bool in
                var addr = sin.pointee.sin_addr
                return inet_ntop(AF_INET, &addr, &host, socklen_t(host.count)) != nil
            }
            let text = String(decoding: host.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if ok && !text.hasPrefix("127.") { return text }
        }
        return nil
    }
}

// MARK: The store behind the MQTT transport

extension MQTTSettings {
    /// `[mqtt]` as the transport needs it.
    public init(_ c: GatewayConfiguration.MQTT) {
        self.init(
            host: c.host, port: c.port, clientID: c.clientID, protocolVersion: c.protocolVersion == .v5 ? .v5 : .v311,
            tls: TLS(
                enabled: c.tls.enabled, caFile: c.tls.caFile, caDirectory: c.tls.caDirectory, certFile: c.tls.certFile,
                keyFile: c.tls.keyFile, insecure: c.tls.insecure),
            keepaliveSeconds: c.keepaliveSeconds, topicPrefix: c.topicPrefix,
            compatCommandTopics: c.compatCommandTopics,
            homeAssistantDiscovery: c.homeAssistantDiscovery)
    }
}

extension MQTTSettings.Login {
    /// `[mqtt] username`, and the password from `password_file` (`SecretFile`).
    static func load(_ c: GatewayConfiguration.MQTT, credentials: String?) throws -> MQTTSettings.Login? {
        guard let username = c.username else { return nil }
        guard let file = c.passwordFile else { return MQTTSettings.Login(username: username, password: nil) }
        let password = try SecretFile.contents(key: "mqtt.password_file", file, credentials: credentials)
        return MQTTSettings.Login(username: username, password: password)
    }
}

/// A password or token named in gateway.toml: an absolute path, or a bare
/// name read from `credentials` (`$CREDENTIALS_DIRECTORY`). One line, at most
/// 4 KiB; a final newline is not part of it. Errors name the key and the
/// file, never the content.
enum SecretFile {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func contents(key: String, _ file: String, credentials: String?) throws -> String {
        let path: String
        if file.hasPrefix("/") {
            path = file
        } else if let credentials, !credentials.isEmpty {
            path = credentials + "/" + file
        } else {
            throw Failure(
                description: "\(key) \"\(file)\" names a systemd credential, but there is no "
                    + "$CREDENTIALS_DIRECTORY (give gatewayd LoadCredential=\(file):/etc/doorgateway/\(file), "
                    + "or use an absolute path)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            throw Failure(description: "\(key) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4097)
        while bytes.count <= 4096 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw Failure(description: "\(key) \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= 4096 else { throw Failure(description: "\(key) \(path): larger than 4 KiB") }
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard !bytes.isEmpty else { throw Failure(description: "\(key) \(path) is empty") }
        guard !bytes.contains(where: { $0 == 0 || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) else {
            throw Failure(description: "\(key) \(path) must hold one line: the secret")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension RemotePolicy {
    /// `[mqtt]`'s rules for remote commands.
    init(_ c: GatewayConfiguration.MQTT, deviceID: String, actionCount: Int) {
        self.init(
            commands: CommandJudge(
                mapping: c.commandMapping, tolerance: Int64(c.toleranceSeconds), deviceID: deviceID,
                actionCount: actionCount),
            homeAssistantOpen: c.homeAssistantOpen, homeAssistantAdmin: c.homeAssistantAdmin)
    }
}

extension BrokerCheck {
    /// `gatewayctl config check --broker` with the door's `[mqtt]`.
    static func run(
        configuration c: GatewayConfiguration.MQTT, credentials: String? = nil, timeout: Duration = .seconds(5)
    ) throws -> [String] {
        var settings = MQTTSettings(c)
        settings.login = try MQTTSettings.Login.load(c, credentials: credentials)
        return try run(settings: settings, timeout: timeout)
    }
}

extension GatewayStore.OutboxEntry {
    init(_ m: OutgoingMessage) {
        let cls: OutboxMessage.Class
        switch m.messageClass {
        case .access: cls = .access
        case .event: cls = .event
        case .telemetry: cls = .telemetry
        }
        self.init(topic: m.topic, class: cls, retain: m.retain, created: m.created, make: m.make)
    }
}

/// The durable outbox on the store (synchronous FULL, bounded by `[mqtt] outbox_limit`).
public final class StoreOutbox: Outbox, Sendable {
    let store: GatewayStore
    let limit: Int
    public init(store: GatewayStore, limit: Int) {
        self.store = store
        self.limit = limit
    }
    public func commit(_ messages: [OutgoingMessage]) throws {
        try store.enqueue(messages.map(GatewayStore.OutboxEntry.init), limit: limit)
    }
    public func waiting(after seq: Int64, limit: Int) throws -> [OutboxRow] {
        try store.outbox(after: seq, limit: limit).map {
            OutboxRow(seq: $0.seq, topic: $0.topic, payload: $0.payload, retain: $0.retain)
        }
    }
    public func acknowledge(_ seqs: [Int64]) throws { try store.acknowledge(seqs) }
    public func depth() throws -> Int { try store.outboxDepth() }
}

/// Remote commands as the daemon takes them: the key and the replay record
/// from the store, `RemoteJudge`'s decision, the new record saved before an
/// accepted command reaches the door, the outcome into the door's queue.
/// Judged on the daemon's own serial queue, in the order they came: the
/// transport's network thread only hands the bytes over, and never waits on
/// the store (a slow or full disk must not stall keepalives and acks).
final class StoreCommands: RemoteCommandHandler, Sendable {
    let store: GatewayStore
    private let basePolicy: RemotePolicy
    /// The number of actions in effect, read at each message (a reload may change it).
    private let actionCount: @Sendable () -> Int
    /// The policy a message is judged by: the one made at start, with today's actions.
    var policy: RemotePolicy {
        var p = basePolicy
        p.commands.actionCount = actionCount()
        return p
    }
    let clockSynchronised: @Sendable () -> Bool
    let submit: @Sendable (RemoteOutcome) -> Void
    let log: Logger
    /// Where Home Assistant's admin requests go once allowed and parsed
    /// (set before the link starts).
    var admin: (@Sendable (HomeAssistantAdminRequest) -> Void)? {
        get { adminHook.withLock { $0 } }
        set { adminHook.withLock { $0 = newValue } }
    }
    private let adminHook = Mutex<(@Sendable (HomeAssistantAdminRequest) -> Void)?>(nil)
    /// The replay record as last saved; one message judged at a time.
    private let replay: Mutex<ReplayGuard>
    /// Where messages are judged, one after the other.
    let queue = DispatchQueue(label: "gatewayd.commands")

    init(
        store: GatewayStore, policy: RemotePolicy, actionCount: @escaping @Sendable () -> Int,
        clockSynchronised: @escaping @Sendable () -> Bool,
        submit: @escaping @Sendable (RemoteOutcome) -> Void, log: Logger
    ) throws {
        self.store = store
        self.basePolicy = policy
        self.actionCount = actionCount
        self.clockSynchronised = clockSynchronised
        self.submit = submit
        self.log = log
        replay = Mutex(try store.replayGuard())
    }

    func received(_ message: RemoteMessage) {
        queue.async { [self] in
            if let outcome = judge(message) { submit(outcome) }
        }
    }

    /// The outcome of one message (nil: not a command), the record saved.
    func judge(_ message: RemoteMessage) -> RemoteOutcome? {
        let now = WallClock(unixSeconds: Int64(time(nil)), synchronised: clockSynchronised())
        return replay.withLock { record -> RemoteOutcome? in
            let key: RemoteKey
            switch message.channel.keyName {
            // Each door its own native key, derived from the site's (M3):
            // a client holding one door's key opens no other door.
            case .native?: key = readKey(.nativeCommand).doorCommandKey(device: policy.commands.deviceID)
            case .compat?: key = readKey(.compatTimestamp)
            case nil: key = .absent
            }
            let judgement = RemoteJudge.judge(message, policy: policy, key: key, replay: record, now: now)
            if let request = judgement.admin { admin?(request) }
            guard let newRecord = judgement.replay else { return judgement.outcome }
            // Saved before the command acts: a crash after the door opened
            // must not revive the message.
            do {
                try store.saveReplayGuard(newRecord)
                record = newRecord
                return judgement.outcome
            } catch {
                log.error("mqtt: replay record not saved, command refused: \(error)")
                return judgement.replayNotSaved("\(error)")
            }
        }
    }

    private func readKey(_ name: KeyName) -> RemoteKey {
        do { return RemoteKey(try store.key(name)) } catch { return .unreadable("\(error)") }
    }
}
