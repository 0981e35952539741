import DoorCore
import GatewayConfig
import GatewayControl
import GatewayNATS
import GatewayStore
import RemoteSettings

extension RemoteService {
    /// NATS instead of MQTT (`[remote] transport = "nats"`): the same store
    /// outbox, the same command handler and rules (`[mqtt.commands]`), the
    /// same event payloads, the fleet in the JetStream key-value bucket.
    /// Nil, logged, when its login cannot be read.
    func makeNATS() -> (link: NATSLink, wiring: RemoteWiring)? {
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
            return nil
        }
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
        guard let commands = makeRemoteCommands("nats") else { return nil }
        let link = NATSLink(
            settings: settings, deviceID: configuration.deviceID,
            outbox: StoreOutbox(store: store, limit: mqtt.outboxLimit), log: log, fleet: makeFleet())
        return (link, RemoteWiring(commands: commands))
    }

    /// The fleet over NATS: documents in the JetStream key-value bucket, one key per door.
    private func makeFleet() -> NATSFleet? {
        guard configuration.fleet.enabled else { return nil }
        let (bucket, site) = (configuration.nats.fleetBucket, configuration.fleet.siteID)
        let receiver = makeFleetReceiver(
            publish: NATSFleet.source(bucket: bucket, key: NATSFleet.key(site: site, device: configuration.deviceID)),
            subscription: NATSFleet.source(bucket: bucket, key: NATSFleet.watched(site: site)))
        return NATSFleet(bucket: bucket, site: site, handler: receiver)
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
