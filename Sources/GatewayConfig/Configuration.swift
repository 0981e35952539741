import DoorCore

/// A GPIO line by offset on its chip (`17`) or by line name (`GPIO17`, which
/// names the same header pin on a Pi 3, 4 and 5 whatever the chip numbering).
/// `description` is the text DoorIO's `LineSpec(_:)` reads back unchanged.
public enum LineRef: Equatable, Hashable, Sendable, CustomStringConvertible {
    case offset(UInt32)
    case name(String)
    public var description: String {
        switch self {
        case .offset(let o): return "\(o)"
        case .name(let n): return n
        }
    }
}

public enum BoardKind: String, Sendable, CaseIterable { case real, sim }

/// Line bias, as libgpiod v1 request flags name it (`GPIOD_LINE_REQUEST_FLAG_BIAS_*`);
/// the raw values match DoorIO's `BoardDescription.Bias`.
public enum LineBias: String, Sendable, CaseIterable {
    case asIs = "as-is", disable, pullUp = "pull-up", pullDown = "pull-down"
}

/// The physical level of a line.
public enum LineLevel: String, Sendable, CaseIterable { case high, low }

public enum MQTTProtocol: String, Sendable, CaseIterable { case v311 = "3.1.1", v5 = "5" }

/// How events name a sticker's UID: in full, or as an HMAC with the device key
/// (docs/design.md "Keys"), so the broker never learns raw UIDs.
public enum UIDInEvents: String, Sendable, CaseIterable { case full, hmac }

/// The whole gateway's configuration (`/etc/doorgateway/gateway.toml`), as
/// `GatewayConfiguration.load(toml:)` reads it. Every value but `device.id`
/// and `board.kind` has a default. Secrets never live here: keys are in the
/// store, and the MQTT client key is a file path.
public struct GatewayConfiguration: Equatable, Sendable {
    /// A relay output and where it is wired.
    public struct Output: Equatable, Sendable {
        public var name: String
        public var line: LineRef
        /// The coil is energised when the line is physically low.
        public var activeLow: Bool
        public var lockedLevel: CoilLevel
        /// `on_fire`; nil: `FireBehaviour.standard(lockedLevel:)` (docs/policy.md "Fire alarm").
        public var onFire: FireBehaviour? = nil
        public var definition: OutputDefinition {
            OutputDefinition(name: name, lockedLevel: lockedLevel, onFire: onFire)
        }
    }

    /// An LED or active buzzer line, named as feedback patterns name it.
    public struct IndicatorLine: Equatable, Sendable {
        public var name: String
        public var line: LineRef
        public var activeLow: Bool
    }

    /// A push button or door contact. Active = pressed (door open for a contact).
    public struct Input: Equatable, Sendable {
        public var line: LineRef
        public var activeLow: Bool
        public var bias: LineBias
        public var debounceMilliseconds: Int
    }

    public struct Reader: Equatable, Sendable {
        /// libnfc connstring on a real board (`pn532_i2c:/dev/i2c-1`,
        /// `pn532_spi:/dev/spidev0.0:500000`, `pn532_uart:/dev/ttyS1`).
        public var connstring: String
        /// On the simulated board: `spawn` starts a pn532-sim child; an absolute
        /// path is a running pn532-sim's control socket.
        public var simulator: String
    }

    public struct MQTT: Equatable, Sendable {
        public typealias TLS = BrokerTLS
        public var enabled: Bool
        public var host: String
        public var port: Int
        public var clientID: String
        public var protocolVersion: MQTTProtocol
        public var tls: TLS
        public var keepaliveSeconds: Int
        public var topicPrefix: String
        /// Topics where phone-app compat commands (docs/formats.md §3) arrive.
        public var compatCommandTopics: [String]
        /// Compat command number → what it does (docs/formats.md §3).
        public var commandMapping: [Int: CommandTarget]
        /// Freshness window of remote commands, `|now − ts| ≤ tolerance` (docs/formats.md §3).
        public var toleranceSeconds: Int
        public var uidInEvents: UIDInEvents
        public var homeAssistantDiscovery: Bool
        /// Honour Home Assistant's lock commands (`OPEN` / `UNLOCK` on
        /// `PREFIX/lock/set`), which carry no MAC: anyone who may publish there opens.
        public var homeAssistantOpen: Bool
        /// Home Assistant as the admin screen (provisioning, tags, revoking; ConfigHomeAssistant.swift).
        public var homeAssistantAdmin: Bool = false
        /// Events kept while the broker is away; the oldest go beyond this.
        public var outboxLimit: Int
        public var telemetrySeconds: Int
        /// The device's name in Home Assistant (default: the device id).
        public var homeAssistantName: String? = nil
        /// The area Home Assistant suggests for the device ("Hallway").
        public var homeAssistantArea: String? = nil
        /// Put the sticker's label (given at provisioning) on access events;
        /// off by default: labels are often people's names.
        public var labelInEvents: Bool = false
        /// The broker login (Home Assistant OS's Mosquitto add-on, a shared
        /// mosquitto): `username`, and the password in a file — an absolute
        /// path, or a bare name for a systemd credential
        /// (`$CREDENTIALS_DIRECTORY/NAME`) — never in gateway.toml.
        public var username: String? = nil
        public var passwordFile: String? = nil
        /// Send the password over plain TCP to a `*.local` broker all the same
        /// (issue 32 L-6): whoever answers the multicast DNS query for the
        /// name receives it. Off: such a file is refused.
        public var allowPasswordOverPlainMulticastDNS: Bool = false

        /// A `*.local` name: the door finds it by multicast DNS, which anyone
        /// on the link may answer (MulticastDNS.isLocalName's rule).
        public static func isMulticastDNSName(_ host: String) -> Bool {
            var h = host.lowercased()
            if h.hasSuffix(".") { h.removeLast() }
            return h.hasSuffix(".local") && h.count > ".local".count
        }

        /// The password would go in the clear to whoever answers multicast DNS.
        public var sendsPasswordOverPlainMulticastDNS: Bool {
            enabled && passwordFile != nil && !tls.enabled && Self.isMulticastDNSName(host)
        }
    }

    public struct Control: Equatable, Sendable {
        /// The control socket; nil = `<runtime_dir>/control.sock`.
        public var socket: String?
        /// Members of this group may run admin commands over the socket.
        public var adminGroup: String
    }

    public struct Paths: Equatable, Sendable {
        public var stateDirectory: String
        public var runtimeDirectory: String
    }

    public var deviceID: String
    public var board: BoardKind
    /// libgpiod chip: name (`gpiochip0`), path, label (`pinctrl-rp1`) or number.
    public var chip: String
    public var reader: Reader
    /// `[[readers]]` (ConfigReaders.swift); without it, the PN532 of `[reader]` alone.
    public var readers: [ReaderSettings] = [.legacy]
    public var outputs: [Output]
    public var indicators: [IndicatorLine]
    public var button: Input
    public var doorContact: Input?
    /// `[inputs.request_to_exit]`: a request-to-exit button or PIR (docs/policy.md "Door contact").
    public var requestToExit: Input?
    /// What the pure door machine is told (outputs, actions, patterns, policies).
    public var door: DoorSettings
    /// Treat the wall clock as synchronised without asking `adjtimex`
    /// (simulations and tests).
    public var declareClockSynchronised: Bool
    public var mqtt: MQTT
    public var control: Control
    public var paths: Paths
    /// `[remote]` and `[nats]` (ConfigNATS.swift).
    public var remote = Remote()
    public var nats = NATS()

    // MARK: [fleet] (docs/fleet.md)

    /// Revocations and issued tags shared by a site's doors: signed
    /// documents on the MQTT broker, checked with the site public key.
    public struct Fleet: Equatable, Sendable {
        public var enabled: Bool
        /// The site's name, in every signed document.
        public var siteID: String
        /// The site's Ed25519 public key (32 bytes); the private key is the operator's.
        public var sitePublicKey: [UInt8]
        /// The topic filter the door reads documents on; nil = the parent of
        /// `mqtt.topic_prefix` + `/+/fleet/<site_id>` (every door's document).
        public var subscribe: String?
        /// The site box private key (X25519, 64 hex digits, a 0600 file) that
        /// opens the secrets of documents; nil = secrets are neither read nor pushed.
        public var boxKeyFile: String?
        public static let off = Fleet(enabled: false, siteID: "", sitePublicKey: [], subscribe: nil)
        public init(
            enabled: Bool, siteID: String, sitePublicKey: [UInt8], subscribe: String?, boxKeyFile: String? = nil
        ) {
            self.enabled = enabled
            self.siteID = siteID
            self.sitePublicKey = sitePublicKey
            self.subscribe = subscribe
            self.boxKeyFile = boxKeyFile
        }
    }
    public var fleet: Fleet = .off
    /// `clock.time_zone` (docs/policy.md); nil: the system's, /etc/localtime.
    public var timeZone: String?
    /// `[fire_alarm]` (ConfigFire.swift); nil: none.
    public var fireAlarm: FireAlarm? = nil

    /// The control socket path.
    public var controlSocket: String { control.socket ?? paths.runtimeDirectory + "/control.sock" }

    /// The configuration file when none is named: `$CONFIGURATION_DIRECTORY/gateway.toml`
    /// under systemd (`ConfigurationDirectory=`), else `/etc/doorgateway/gateway.toml`.
    public static func defaultFile(environment env: [String: String]) -> String {
        (firstDirectory(env["CONFIGURATION_DIRECTORY"]) ?? "/etc/doorgateway") + "/gateway.toml"
    }

    /// Applies systemd's `STATE_DIRECTORY` and `RUNTIME_DIRECTORY` (set by
    /// `StateDirectory=` / `RuntimeDirectory=` in the unit), which win over the file.
    public func applying(environment env: [String: String]) -> GatewayConfiguration {
        var c = self
        if let s = Self.firstDirectory(env["STATE_DIRECTORY"]) { c.paths.stateDirectory = s }
        if let r = Self.firstDirectory(env["RUNTIME_DIRECTORY"]) { c.paths.runtimeDirectory = r }
        return c
    }

    /// systemd passes several directories colon-separated when the unit names
    /// several; the first is ours.
    static func firstDirectory(_ value: String?) -> String? {
        guard let first = value?.split(separator: ":").first, !first.isEmpty else { return nil }
        return String(first)
    }
}
