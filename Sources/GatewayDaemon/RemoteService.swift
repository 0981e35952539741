import Dispatch
import DoorCore
import DoorIO
import GatewayConfig
import GatewayControl
import GatewayStore
import Logging
import RemoteLink
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The remote transport as one of the daemon's services (MQTT or NATS,
/// `[remote] transport`): it owns the link and what the link is handed at
/// start, the fleet receiver and Home Assistant's admin screen made with it,
/// and its telemetry timer. Made and wired before the door starts (`prepare`),
/// started and stopped in the daemon's service list (`service`); the control
/// socket reads its status, its fleet and its Home Assistant admin.
final class RemoteService: Sendable, MadeWithParts {
    let parts: ServiceParts
    /// The audit writer's hook: each event's outbox message, once a transport is made.
    let eventOutbox: EventOutbox
    /// Home Assistant's entities redrawn after each reload, in reload order.
    private let redrawQueue = DispatchQueue(label: "gatewayd.discovery")

    /// What is made while wiring (`prepare`, on the main thread) and read
    /// from any thread: held only to read or replace a reference, never
    /// across a call to one of them.
    private struct Made {
        /// The transport with what it is handed at its start (its command
        /// handler, Home Assistant's hook): kept together, so it never starts without them.
        var remote: (link: any RemoteTransport, wiring: RemoteWiring)?
        var running = false
        var fleetReceiver: FleetReceiver?
        var homeAssistantAdmin: HomeAssistantAdmin?
        var discoveryReload: (@Sendable () -> Void)?
        var telemetry: (any DispatchSourceProtocol)?
    }
    private let made = Mutex(Made())

    init(parts: ServiceParts, eventOutbox: EventOutbox) {
        self.parts = parts
        self.eventOutbox = eventOutbox
    }

    /// Its place in the daemon's service list.
    var service: DoorService {
        DoorService(
            name: "transport", start: { [self] in start() }, stop: { [self] in stop() },
            reloaded: { [self] _, _ in redrawDiscovery() })
    }

    /// The transport (MQTT or NATS), once made.
    var transport: (any RemoteTransport)? { made.withLock { $0.remote?.link } }
    /// Whether the transport started.
    var running: Bool { made.withLock { $0.running } }
    /// The fleet (docs/fleet.md), made with the transport when `[fleet]` is on.
    var fleetReceiver: FleetReceiver? {
        get { made.withLock { $0.fleetReceiver } }
        set { made.withLock { $0.fleetReceiver = newValue } }
    }
    /// Home Assistant as the admin screen (DaemonHomeAssistantAdmin.swift), with MQTT.
    var homeAssistantAdmin: HomeAssistantAdmin? {
        get { made.withLock { $0.homeAssistantAdmin } }
        set { made.withLock { $0.homeAssistantAdmin = newValue } }
    }
    /// After a reload: Home Assistant's entities redrawn from the configuration
    /// now in effect (an action's button, the provisioning selector, the
    /// schedule and approval entities); set by `makeMQTT`.
    var discoveryReload: (@Sendable () -> Void)? {
        get { made.withLock { $0.discoveryReload } }
        set { made.withLock { $0.discoveryReload = newValue } }
    }

    /// The remote transport, before the door starts: made (not yet
    /// connected) and wired, so every event from the first has its outbox
    /// message. The one place that asks which transport is configured
    /// (RemoteMQTT.swift, RemoteNATS.swift); everything after is the same
    /// for both.
    func prepare() {
        let made: (link: any RemoteTransport, wiring: RemoteWiring)?
        switch configuration.remote.transport {
        case .mqtt: made = makeMQTT().map { ($0.link, $0.wiring) }
        case .nats: made = makeNATS().map { ($0.link, $0.wiring) }
        }
        guard let made else { return }
        wire(made.link)
        self.made.withLock { $0.remote = made }
    }

    /// Events into the outbox with their audit rows, tag scans, state and
    /// reports from the door to `link`; the fleet's own document back out.
    private func wire(_ link: any RemoteTransport) {
        let mqtt = configuration.mqtt
        let storedLabel: @Sendable (TagUID) -> String? = { [store, log] uid in
            do { return try store.issuedTag(uid)?.label } catch {
                log.error("label of \(uid.hex): \(error)")
                return nil
            }
        }
        let glue = RemoteGlue(
            link: link, uidText: eventUIDText(mqtt.uidInEvents, transport: link.transportName),
            label: mqtt.labelInEvents ? storedLabel : nil)
        eventOutbox.attach({ link.outboxCommitted() }, limit: mqtt.outboxLimit) { event, time in
            glue.outboxMessage(for: event, at: time)
        }
        let approval = Self.approvalPublisher(link, uidText: glue.uidText, label: glue.label)
        let homeAssistantAdmin = homeAssistantAdmin
        let deviceID = configuration.deviceID
        runtime.setHooks(
            publish: { event, time in
                glue.published(event)
                homeAssistantAdmin?.observe(event, at: time)
                approval(event, time)
            },
            publishState: { link.publishState($0) },
            publishReport: { link.publishReport(Self.deviceReport(deviceID)) })
        fleetReceiver?.republish = { link.publishFleet($0) }
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
        guard mode == .hmac else { return { LinkPayloads.uidText($0, hashed: false, deviceKey: []) } }
        var key: [UInt8] = []
        var problem = "missing"
        do { key = try deviceKey() ?? [] } catch { problem = "unreadable (\(error))" }
        if key.count < LinkPayloads.minimumDeviceKeyLength {
            log.error(
                "\(transport): the device key is \(problem); with uid_in_events = \"hmac\" events carry no UID and no tag scans are sent (restart gatewayd once the store is readable)"
            )
        }
        let frozen = key
        return { LinkPayloads.uidText($0, hashed: true, deviceKey: frozen) }
    }

    /// Connects the prepared transport: events through the durable outbox,
    /// retained state, telemetry, remote commands into the door queue.
    func start() {
        guard let (link, wiring) = made.withLock({ $0.remote }) else { return }
        do {
            try link.start(wiring)
        } catch {
            log.error("\(link.transportName): \(error)")
            return
        }
        made.withLock { $0.running = true }
        // Set on the door queue, which reads it: the door runs already (issue 25 §3's race).
        runtime.queue.async { [runtime] in
            runtime.setPublishLastAccess { link.publishLastAccess($0) }
            link.publishState(runtime.stateDocument())
            if let access = runtime.lastAccessDocument() { link.publishLastAccess(access) }
        }
        startTelemetry(link, every: configuration.mqtt.telemetrySeconds)
    }

    private func startTelemetry(_ link: any RemoteTransport, every seconds: Int) {
        keepTelemetry {
            let timer = DispatchSource.makeTimerSource(queue: runtime.queue)
            // The first soon after start, so HA's diagnostics do not wait a period.
            timer.schedule(deadline: .now() + .seconds(2), repeating: .seconds(seconds))
            timer.setEventHandler { [runtime, started, auditWriter, store] in
                let st = link.transportStatus
                // NATS adds `nats_credentials` (state, subject, expires, expires_in).
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
            return timer
        }
    }

    /// Keeps the telemetry timer `make` makes; one kept before is cancelled.
    /// `make` runs inside the lock (a Dispatch source is not Sendable), so it
    /// only makes the source.
    private func keepTelemetry(_ make: () -> any DispatchSourceProtocol) {
        made.withLock {
            $0.telemetry?.cancel()
            $0.telemetry = make()
        }
    }

    func stop() {
        let (running, link) = made.withLock { m -> (Bool, (any RemoteTransport)?) in
            m.telemetry?.cancel()
            m.telemetry = nil
            return (m.running, m.remote?.link)
        }
        if running { link?.stop(flushWithin: .seconds(2)) }
    }

    /// After a reload: Home Assistant's entities redrawn once the door queue
    /// has applied it (discovery reads the live configuration), off the
    /// signal queue: SIGTERM must not wait on it.
    func redrawDiscovery() {
        guard let redraw = discoveryReload else { return }
        redrawQueue.async { [runtime] in
            runtime.committed()
            redraw()
        }
    }

    /// `status`'s `broker` object (NATS adds the transport, connection
    /// counts and the credential state).
    func status() -> JSONValue {
        guard running, let link = transport else {
            return .object([("enabled", .bool(configuration.mqtt.enabled)), ("connected", .bool(false))])
        }
        return link.transportStatus.json
    }

    /// docs/formats.md §3 device report (command 5): TT_ID, event_timestamp,
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

/// What the audit closure asks for each event: the outbox message (made
/// by the transport, once there is one) to commit with the audit row.
final class EventOutbox: Sendable {
    private struct Attached {
        var committed: @Sendable () -> Void
        var limit: Int
        var make: @Sendable (DoorEvent, Int64) -> OutgoingMessage
    }
    private let attached = Mutex<Attached?>(nil)

    /// `committed` tells the transport (MQTT or NATS) to publish.
    func attach(
        _ committed: @escaping @Sendable () -> Void, limit: Int,
        make: @escaping @Sendable (DoorEvent, Int64) -> OutgoingMessage
    ) {
        attached.withLock { $0 = Attached(committed: committed, limit: limit, make: make) }
    }

    /// Nil while there is no transport (off, or its link could not be made).
    func message(for event: DoorEvent, at time: Int64) -> (entry: OutgoingMessage, limit: Int)? {
        guard let a = attached.withLock({ $0 }) else { return nil }
        return (a.make(event, time), a.limit)
    }

    /// The audit row and its message are committed: publish.
    func committed() { attached.withLock { $0?.committed }?() }
}

/// What the door hands the remote transport, whichever it is (made once by
/// `RemoteService.wire`; pure, so tests drive it with a fake transport): each
/// event's outbox message, and each sticker presented as a tag scan.
struct RemoteGlue: Sendable {
    let link: any RemoteTransport
    /// How events and tag scans name a UID (`Daemon.eventUIDText`); nil withholds it.
    let uidText: @Sendable (TagUID) -> String?
    /// The label of the tag an access or approval event names (`[mqtt] label_in_events`); nil: none.
    let label: (@Sendable (TagUID) -> String?)?

    private static func isAccess(_ event: DoorEvent) -> Bool {
        [.accessGranted, .accessDenied].contains(event.kind)
    }

    /// The outbox message announcing `event`, committed with its audit row.
    func outboxMessage(for event: DoorEvent, at time: Int64) -> OutgoingMessage {
        var tagLabel: String?
        // Access and approval events name a tap (docs/policy.md "Approval").
        if let label, let uid = event.uid, event.carriesLabel { tagLabel = label(uid) }
        return link.eventEntry(event, at: time, uidText: event.uid.flatMap(uidText), label: tagLabel)
    }

    /// The event itself went out with its audit row; every sticker
    /// presented is also a tag scan, for HA's tag_scanned automations
    /// (none while the UID is withheld: a scan without one says nothing).
    func published(_ event: DoorEvent) {
        guard let uid = event.uid, Self.isAccess(event), let text = uidText(uid) else { return }
        link.publishTagScan(uidText: text)
    }
}
