import DoorCore
import DoorIO
import Foundation
import GatewayConfig
import GatewayMQTT
import GatewayStore

extension Daemon {
    /// MQTT, before the door starts: the link made (not yet connected) and
    /// wired, so every event from the first has its outbox message.
    func prepareRemote() {
        guard configuration.mqtt.enabled else { return }
        var mqtt = configuration.mqtt
        // Relative TLS paths are systemd credentials (LoadCredential=).
        if let creds = environment["CREDENTIALS_DIRECTORY"] {
            func resolve(_ p: String?) -> String? { p.map { $0.hasPrefix("/") ? $0 : creds + "/" + $0 } }
            mqtt.tls.certFile = resolve(mqtt.tls.certFile)
            mqtt.tls.keyFile = resolve(mqtt.tls.keyFile)
            mqtt.tls.caFile = resolve(mqtt.tls.caFile)
        }
        let link: MQTTLink
        do {
            link = try MQTTLink(configuration: mqtt, deviceID: configuration.deviceID, store: store, log: log)
        } catch {
            log.error("mqtt: \(error); events stay in the audit log")
            return
        }
        let deviceKey: [UInt8]
        do { deviceKey = try store.key(.device) ?? [] } catch {
            log.error("mqtt: the device key is unreadable (\(error)); UIDs in events are keyed with an empty key")
            deviceKey = []
        }
        link.actionCount = configuration.door.actions.count
        link.clockSynchronised = { [runtime] in runtime.clockSynchronised() }
        link.onCommand = { [runtime] outcome in runtime.submit(.remoteCommand(outcome)) }
        link.discovery = Payloads.discovery(
            device: configuration.deviceID, name: mqtt.homeAssistantName ?? configuration.deviceID, topics: link.topics,
            doorContact: configuration.doorContact != nil, eventTypes: DoorEvent.Kind.allCases.map(\.rawValue),
            canOpen: mqtt.homeAssistantOpen, actions: configuration.door.actions.map { ($0.index, $0.name) },
            area: mqtt.homeAssistantArea)
        let uidText = { (uid: TagUID) in Payloads.uidText(uid, mode: mqtt.uidInEvents, deviceKey: deviceKey) }
        eventOutbox.attach(link) { [mqtt, store, log] event, time in
            var label: String?
            if mqtt.labelInEvents, let uid = event.uid, [.accessGranted, .accessDenied].contains(event.kind) {
                do { label = try store.issuedTag(uid)?.label } catch { log.error("label of \(uid.hex): \(error)") }
            }
            return link.eventEntry(event, at: time, uidText: event.uid.map(uidText), label: label)
        }
        // The event itself went out with its audit row; every sticker
        // presented is also a tag scan, for HA's tag_scanned automations.
        runtime.publish = { event, _ in
            if let uid = event.uid, [.accessGranted, .accessDenied].contains(event.kind) {
                link.publishTagScan(uidText: uidText(uid))
            }
        }
        runtime.publishState = { link.publishState($0) }
        runtime.publishReport = { [configuration] in link.publishReport(Self.deviceReport(configuration.deviceID)) }
        preparedRemote = link
    }

    /// MQTT: events through the durable outbox, retained state, telemetry,
    /// remote commands into the door queue, Home Assistant discovery.
    func startRemote() {
        guard let link = preparedRemote else { return }
        let mqtt = link.configuration
        do {
            try link.start()
        } catch {
            log.error("mqtt: \(error)")
            return
        }
        remote = link
        runtime.publishLastAccess = { link.publishLastAccess($0) }
        runtime.queue.async { [runtime] in
            link.publishState(runtime.stateDocument())
            if let access = runtime.lastAccessDocument() { link.publishLastAccess(access) }
        }
        startTelemetry(link, every: mqtt.telemetrySeconds)
    }

    /// What the audit closure asks for each event: the outbox message (made
    /// by the MQTT link, once there is one) to commit with the audit row.
    final class EventOutbox: @unchecked Sendable {
        private let lock = NSLock()
        private var link: MQTTLink?
        private var make: ((DoorEvent, Int64) -> GatewayStore.OutboxEntry)?

        func attach(_ link: MQTTLink, make: @escaping (DoorEvent, Int64) -> GatewayStore.OutboxEntry) {
            lock.withLock {
                self.link = link
                self.make = make
            }
        }

        /// Nil while MQTT is off (or its link could not be made).
        func message(for event: DoorEvent, at time: Int64) -> (entry: GatewayStore.OutboxEntry, limit: Int)? {
            guard let (link, make) = lock.withLock({ self.link.flatMap { l in self.make.map { (l, $0) } } }) else {
                return nil
            }
            return (make(event, time), link.outboxLimit)
        }

        /// The audit row and its message are committed: publish.
        func committed() { lock.withLock { link }?.outboxCommitted() }
    }

    private func startTelemetry(_ link: MQTTLink, every seconds: Int) {
        let timer = DispatchSource.makeTimerSource(queue: runtime.queue)
        // The first soon after start, so HA's diagnostics do not wait a period.
        timer.schedule(deadline: .now() + .seconds(2), repeating: .seconds(seconds))
        timer.setEventHandler { [runtime, started, auditWriter] in
            let st = link.status
            let fields: [(String, JSONValue)] = [
                ("uptime_s", .int(Int(MonotonicClock.now().since(started).millisecondsClamped / 1000))),
                ("counters", .object(runtime.counters.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                ("reader", .string(runtime.readerHealth)), ("outbox", .int(st.outboxDepth)),
                ("clock_synchronised", .bool(runtime.clockSynchronised())), ("broker_denied", .int(st.denied)),
                ("store_writable", .bool(auditWriter.health.writable)),
                ("unsaved_events", .int(auditWriter.health.unsaved)),
            ]
            link.publishTelemetry(fields, at: Int64(time(nil)))
        }
        timer.activate()
        telemetryTimer = timer
    }

    func stopRemote() {
        telemetryTimer?.cancel()
        remote?.stop()
    }

    func remoteStatus() -> JSONValue {
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
            let text = String(cString: host)
            if ok && !text.hasPrefix("127.") { return text }
        }
        return nil
    }
}
