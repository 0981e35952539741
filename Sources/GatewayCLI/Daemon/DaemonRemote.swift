import DoorCore
import DoorIO
import Foundation
import GatewayConfig
import GatewayMQTT
import GatewayStore

extension Daemon {
    /// MQTT: events through the durable outbox, retained state, telemetry,
    /// remote commands into the door queue, Home Assistant discovery.
    func startRemote() {
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
        let deviceKey = (try? store.key(.device)) ?? []
        link.actionCount = configuration.door.actions.count
        link.clockSynchronised = { [runtime] in runtime.clockSynchronised() }
        link.onCommand = { [runtime] outcome in runtime.submit(.remoteCommand(outcome)) }
        link.discovery = Payloads.discovery(
            device: configuration.deviceID, name: mqtt.homeAssistantName ?? configuration.deviceID, topics: link.topics,
            doorContact: configuration.doorContact != nil, eventTypes: DoorEvent.Kind.allCases.map(\.rawValue),
            canOpen: mqtt.homeAssistantOpen, actions: configuration.door.actions.map { ($0.index, $0.name) },
            area: mqtt.homeAssistantArea)
        runtime.publish = { [mqtt, store, log] event, time in
            let uidText = event.uid.map { Payloads.uidText($0, mode: mqtt.uidInEvents, deviceKey: deviceKey) }
            var label: String?
            if mqtt.labelInEvents, let uid = event.uid, [.accessGranted, .accessDenied].contains(event.kind) {
                do { label = try store.issuedTag(uid)?.label } catch { log.error("label of \(uid.hex): \(error)") }
            }
            link.record(event, at: time, uidText: uidText, label: label)
            // Every sticker presented, for HA's tag_scanned automations.
            if let uidText, [.accessGranted, .accessDenied].contains(event.kind) {
                link.publishTagScan(uidText: uidText)
            }
        }
        runtime.publishState = { link.publishState($0) }
        runtime.publishReport = { [configuration] in link.publishReport(Self.deviceReport(configuration.deviceID)) }
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

    private func startTelemetry(_ link: MQTTLink, every seconds: Int) {
        let timer = DispatchSource.makeTimerSource(queue: runtime.queue)
        // The first soon after start, so HA's diagnostics do not wait a period.
        timer.schedule(deadline: .now() + .seconds(2), repeating: .seconds(seconds))
        timer.setEventHandler { [runtime, started] in
            let st = link.status
            let fields: [(String, JSONValue)] = [
                ("uptime_s", .int(Int(MonotonicClock.now().since(started).millisecondsClamped / 1000))),
                ("counters", .object(runtime.counters.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })),
                ("reader", .string(runtime.readerHealth)), ("outbox", .int(st.outboxDepth)),
                ("clock_synchronised", .bool(runtime.clockSynchronised())), ("broker_denied", .int(st.denied)),
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
