import DoorCore
import GatewayConfig
import GatewayControl
import GatewayMQTT
import GatewayStore
import RemoteSettings

extension RemoteService {
    /// MQTT (`[remote] transport = "mqtt"`, the default): the link made with
    /// the fleet's retained topics, Home Assistant's discovery and admin
    /// screen, and what it is handed at start (its commands, HA's hook). Nil,
    /// logged, when `[mqtt]` is off or its login cannot be read.
    func makeMQTT() -> (link: MQTTLink, wiring: RemoteWiring)? {
        guard configuration.mqtt.enabled else { return nil }
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
            return nil
        }
        guard let commands = makeRemoteCommands("mqtt") else { return nil }
        let outbox = StoreOutbox(store: store, limit: mqtt.outboxLimit)
        let link = MQTTLink(
            settings: settings, deviceID: configuration.deviceID, outbox: outbox, log: log, fleet: makeFleet())
        let topics = link.topics
        let eventTypes = DoorEvent.Kind.allCases.map(\.rawValue)
        let (device, doorContact) = (configuration.deviceID, configuration.doorContact != nil)
        // What a reload can change (the actions, schedules, approval) is read
        // from the configuration in effect each time discovery is made; the
        // rest ([mqtt], the board) is fixed until a restart.
        let live = self.live
        let actions: @Sendable () -> [(index: ActionIndex, name: String)] = {
            live.current.door.actions.map { (index: $0.index, name: $0.name) }
        }
        typealias Discovery = @Sendable (HomeAssistantAdminMenu?) -> [(topic: String, payload: [UInt8])]
        let makeDiscovery: Discovery = { [mqtt] admin in
            let c = live.current
            let hasSchedule = c.door.passageSchedule != nil || c.door.actions.contains { $0.schedule != nil }
            let approval = Self.approvalDiscovery(c)
            return Payloads.discovery(
                device: device, name: mqtt.homeAssistantName ?? device, topics: topics, doorContact: doorContact,
                eventTypes: eventTypes, canOpen: mqtt.homeAssistantOpen, actions: actions(),
                area: mqtt.homeAssistantArea, schedule: hasSchedule, admin: admin, approval: approval.entity,
                approvalButtons: approval.buttons, fireAlarm: c.fireAlarm != nil, occupancy: c.tracksPassage,
                outdoorReaders: c.readers.filter { $0.kind != .pn532 }.map {
                    Payloads.OutdoorReader(name: $0.name, reportsStatus: $0.kind == .osdp)
                })
        }
        // Home Assistant as the admin screen: its UIDs are always hashed.
        var hashed: @Sendable (TagUID) -> String? = { _ in nil }
        if mqtt.homeAssistantAdmin { hashed = eventUIDText(.hmac, transport: "mqtt (home_assistant_admin)") }
        let admin = HomeAssistantAdmin(
            enabled: mqtt.homeAssistantAdmin, link: link, store: store, runtime: runtime, log: log,
            actions: actions, defaultAction: { live.current.door.provisioning.action }, hashed: hashed,
            discovery: { makeDiscovery($0) })
        link.discovery = mqtt.homeAssistantAdmin ? admin.initialDiscovery : makeDiscovery(nil)
        if mqtt.homeAssistantAdmin {
            discoveryReload = { admin.configurationReloaded() }
        } else {
            discoveryReload = { link.replaceDiscovery(makeDiscovery(nil)) }
        }
        commands.admin = { admin.received($0) }
        let afterConnect = admin.prepare()
        homeAssistantAdmin = admin
        return (link, RemoteWiring(commands: commands, afterConnect: afterConnect))
    }

    /// The fleet receiver for the MQTT link: retained documents, one topic per door.
    private func makeFleet() -> MQTTFleet? {
        guard configuration.fleet.enabled else { return nil }
        let prefix = configuration.mqtt.topicPrefix
        let site = configuration.fleet.siteID
        let receiver = makeFleetReceiver(
            publish: prefix + "/fleet/" + site,
            subscription: configuration.fleet.subscribe
                ?? FleetReceiver.defaultSubscription(prefix: prefix, site: site))
        return MQTTFleet(subscription: receiver.subscription, publishTopic: receiver.publishTopic, handler: receiver)
    }
}
