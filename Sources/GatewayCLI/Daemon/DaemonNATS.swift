import Dispatch
import DoorCore
import DoorIO
import GatewayConfig
import GatewayMQTT
import GatewayNATS
import GatewayStore
import Logging

#if canImport(Glibc)
    import Glibc
#endif

extension Daemon {
    /// NATS instead of MQTT (`[remote] transport = "nats"`): the same store
    /// outbox, the same command handler and rules (`[mqtt.commands]`), the
    /// same event payloads; the link made and wired before the door starts.
    func prepareNATS() {
        let mqtt = configuration.mqtt
        let n = configuration.nats
        // Relative TLS paths are systemd credentials (LoadCredential=), as for MQTT.
        let creds = environment["CREDENTIALS_DIRECTORY"]
        func resolve(_ p: String?) -> String? {
            guard let p, let creds, !p.hasPrefix("/") else { return p }
            return creds + "/" + p
        }
        let files = n.credentialPaths(stateDirectory: configuration.paths.stateDirectory)
        let login: NATSLogin?
        do {
            login = try NATSLogin.load(n, credentials: creds)
        } catch {
            log.error("nats: \(error); not connecting, events stay in the audit log")
            return
        }
        for warning in configuration.warnings { log.warning("configuration: \(warning)") }
        var settings = NATSSettings(
            servers: n.servers, prefix: n.prefix,
            tls: .init(
                enabled: n.tls.enabled, caFile: resolve(n.tls.caFile), certFile: resolve(n.tls.certFile),
                keyFile: resolve(n.tls.keyFile)),
            credentials: NATSCredentialFiles(jwtPath: files.jwt, seedPath: files.seed), accountKeys: n.accountKeys,
            jetStream: n.jetStream,
            reconnectWaitMilliseconds: n.reconnectWaitMilliseconds, refreshFraction: Double(n.refreshPercent) / 100,
            name: "doorgateway \(configuration.deviceID)")
        if let login {
            settings.login = login
            settings.credentials = nil
        }
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
            log.error("nats: \(error); events stay in the audit log")
            return
        }
        let device = configuration.deviceID
        let link = NATSLink(
            settings: settings, deviceID: device, outbox: StoreOutbox(store: store, limit: mqtt.outboxLimit),
            log: log,
            eventPayload: { event, seq, time, uidText, label in
                Payloads.event(event, seq: seq, time: time, device: device, uidText: uidText, label: label)
            })
        link.commands = commands
        attachFleet(link)
        let uidText = eventUIDText(mqtt.uidInEvents, transport: "nats")
        eventOutbox.attach({ link.outboxCommitted() }, limit: mqtt.outboxLimit) { [mqtt, store, log] event, time in
            var label: String?
            if mqtt.labelInEvents, let uid = event.uid, event.carriesLabel {
                do { label = try store.issuedTag(uid)?.label } catch { log.error("label of \(uid.hex): \(error)") }
            }
            return GatewayStore.OutboxEntry(
                link.eventEntry(event, at: time, uidText: event.uid.flatMap(uidText), label: label))
        }
        runtime.publish = { event, _ in
            if let uid = event.uid, [.accessGranted, .accessDenied].contains(event.kind), let text = uidText(uid) {
                link.publishTagScan(uidText: text)
            }
        }
        runtime.publishState = { link.publishState($0) }
        runtime.publishReport = { [configuration] in link.publishReport(Self.deviceReport(configuration.deviceID)) }
        natsRemote = link
    }

    func startNATS(_ link: NATSLink) {
        do {
            try link.start()
        } catch {
            log.error("nats: \(error)")
            natsRemote = nil
            return
        }
        // Set on the door queue, which reads it: the door runs already (issue 25 §3's race).
        runtime.queue.async { [runtime] in
            runtime.publishLastAccess = { link.publishLastAccess($0) }
            link.publishState(runtime.stateDocument())
            if let access = runtime.lastAccessDocument() { link.publishLastAccess(access) }
        }
        let timer = DispatchSource.makeTimerSource(queue: runtime.queue)
        timer.schedule(deadline: .now() + .seconds(2), repeating: .seconds(configuration.mqtt.telemetrySeconds))
        timer.setEventHandler { [runtime, started, auditWriter, store] in
            let st = link.status
            // The link adds `nats_credentials` (state, subject, expires, expires_in).
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

    /// `status`'s `broker` object with NATS: the MQTT fields, plus the
    /// transport, connection counts and the credential state.
    func natsStatus(_ link: NATSLink) -> JSONValue {
        let s = link.status
        return .object([
            ("enabled", .bool(true)), ("transport", .string("nats")), ("connected", .bool(s.connected)),
            ("outbox", .int(s.outboxDepth)), ("published", .int(s.published)), ("acknowledged", .int(s.acknowledged)),
            ("last_error", .optional(s.lastError)), ("denied", .int(s.denied)),
            ("last_denied", .optional(s.lastDenied)),
            ("connections", .int(s.connections)), ("reconnects", .int(s.reconnects)), ("refreshes", .int(s.refreshes)),
            ("credentials", s.credentials?.json ?? .null),
        ])
    }
}

extension NATSLogin {
    /// `[nats] user` + `password_file`, or `token_file`; nil for a JWT login.
    static func load(_ n: GatewayConfiguration.NATS, credentials: String?) throws -> NATSLogin? {
        if let file = n.tokenFile {
            return .token(try SecretFile.contents(key: "nats.token_file", file, credentials: credentials))
        }
        guard let user = n.user, let file = n.passwordFile else { return nil }
        return .user(user, password: try SecretFile.contents(key: "nats.password_file", file, credentials: credentials))
    }
}
