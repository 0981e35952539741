import DoorCore
import GatewayConfig
import GatewayControl
import Synchronization

/// The configuration in effect, and its only owner (issue 25 §3).
///
/// The daemon, the door runtime and the remote command judge all read the
/// configuration from here, from any thread. A reload changes it in one
/// place, on the door queue, at the moment the door machine restarts on the
/// new settings, so `open --action`, `provision`, remote commands and taps
/// never disagree about which actions exist.
///
/// Every setting is either applied by a reload (live) or a reload that
/// changes it is refused, naming it (`restartRequired`, issue 34 Move C):
/// never "configuration reloaded" while the old value still runs. What is
/// live: the door settings (`[door]`, `[[actions]]`, `[[schedules]]`,
/// `[feedback.*]`, `[lockout]`, `[button]`, `[provisioning]`,
/// `[door_contact]`), `[clock]` and `[mqtt.commands]`' mapping and tolerance
/// — everything that reads them reads them here, at each use. Everything
/// else is made at start from the file (lines, reader, transports, Home
/// Assistant's powers, NATS, fleet, control socket, paths) and refused. The
/// table of both is ReloadTableTests' and README's "Reloading".
final class LiveConfiguration: Sendable {
    private let value: Mutex<GatewayConfiguration>

    init(_ configuration: GatewayConfiguration) {
        value = Mutex(configuration)
    }

    var current: GatewayConfiguration { value.withLock { $0 } }

    /// Applies what a reload can apply to the running door and returns the
    /// configuration now in effect. Only called once `restartRequired` found
    /// nothing, so what it does not copy is unchanged or inert (a section
    /// that is off before and after).
    @discardableResult
    func applyReload(_ new: GatewayConfiguration) -> GatewayConfiguration {
        value.withLock { running in
            running = Self.live(running, new)
            return running
        }
    }

    /// `old` with what a reload applies taken from `new`.
    static func live(_ old: GatewayConfiguration, _ new: GatewayConfiguration) -> GatewayConfiguration {
        var running = old
        running.door = new.door
        running.declareClockSynchronised = new.declareClockSynchronised
        running.timeZone = new.timeZone
        // Read at each remote command (StoreCommands' live policy).
        running.mqtt.commandMapping = new.mqtt.commandMapping
        running.mqtt.toleranceSeconds = new.mqtt.toleranceSeconds
        return running
    }

    /// What a reload cannot apply to the running door and must not pretend
    /// to have applied (issue 24 M4, issue 32 L-3, issue 34): each changed
    /// key as `[section] key`. The fleet's trust is fixed when its receiver
    /// is made, the control socket when it is bound, the transport (its
    /// topics, Home Assistant's powers, the NATS account keys) when it is
    /// made, the lines when they are requested, the reader when it opens.
    /// A section off before and after (`[fleet]`, `[mqtt]` with MQTT off and
    /// NATS not the transport, `[nats]` with MQTT the transport) is inert.
    /// A change this does not name but `live` does not apply either is
    /// refused all the same ("a setting read at start"), so a key added
    /// later is refused until it is named or made live.
    static func restartRequired(from old: GatewayConfiguration, to new: GatewayConfiguration) -> [String] {
        var changed = Changes()
        changed.key("[device] id", old.deviceID != new.deviceID)
        changed.key("[board] kind", old.board != new.board)
        changed.key("[board] chip", old.chip != new.chip)
        changed.key("[reader] connstring", old.reader.connstring != new.reader.connstring)
        changed.key("[reader] simulator", old.reader.simulator != new.reader.simulator)
        changed.readers(old.readers, new.readers)  // ReaderReload.swift (issue 35)
        changed.lines(old, new)
        changed.key("[remote] transport", old.remote != new.remote)
        let fleetInUse = old.fleet.enabled || new.fleet.enabled
        if fleetInUse { changed.fleet(old.fleet, new.fleet) }
        // `[mqtt]`'s event and outbox keys are NATS's too (docs/nats.md).
        let mqttInUse =
            old.mqtt.enabled || new.mqtt.enabled || old.remote.transport == .nats
            || new.remote.transport == .nats
        if mqttInUse { changed.mqtt(old.mqtt, new.mqtt) }
        let natsInUse = old.remote.transport == .nats || new.remote.transport == .nats
        if natsInUse { changed.nats(old.nats, new.nats) }
        changed.key("[control] socket", old.control.socket != new.control.socket)
        changed.key("[control] admin_group", old.control.adminGroup != new.control.adminGroup)
        changed.key("[paths] state_dir", old.paths.stateDirectory != new.paths.stateDirectory)
        changed.key("[paths] runtime_dir", old.paths.runtimeDirectory != new.paths.runtimeDirectory)
        if changed.names.isEmpty {
            // The safety net: what a reload would leave as it was, inert sections aside.
            var (a, b) = (live(old, new), new)
            if !fleetInUse { (a.fleet, b.fleet) = (.off, .off) }
            if !mqttInUse { (a.mqtt, b.mqtt) = (old.mqtt, old.mqtt) }
            if !natsInUse { (a.nats, b.nats) = (.init(), .init()) }
            changed.key("a setting read at start only", a != b)
        }
        return changed.names
    }

    /// The names of changed keys, in the order checked.
    struct Changes {
        var names: [String] = []

        mutating func key(_ name: String, _ differs: Bool) { if differs { names.append(name) } }

        /// The lines: requested once at start, each at its locked level.
        mutating func lines(_ old: GatewayConfiguration, _ new: GatewayConfiguration) {
            if old.outputs.count != new.outputs.count {
                names.append("[[outputs]]")
            } else {
                for (a, b) in zip(old.outputs, new.outputs) {
                    key("[[outputs]] name", a.name != b.name)
                    key("[[outputs]] line", a.line != b.line)
                    key("[[outputs]] active_low", a.activeLow != b.activeLow)
                    key("[[outputs]] locked_level", a.lockedLevel != b.lockedLevel)
                    key("[[outputs]] on_fire", a.onFire != b.onFire)
                }
            }
            if old.indicators.map(\.name) != new.indicators.map(\.name) {
                names.append("[indicators]")
            } else {
                for (a, b) in zip(old.indicators, new.indicators) {
                    key("[indicators.\(a.name)] line", a.line != b.line)
                    key("[indicators.\(a.name)] active_low", a.activeLow != b.activeLow)
                }
            }
            input("[inputs.button]", old.button, new.button, level: "active_low")
            optional("[inputs.door_contact]", old.doorContact, new.doorContact) { changes, a, b in
                changes.input("[inputs.door_contact]", a, b, level: "open_level")
            }
            optional("[inputs.request_to_exit]", old.requestToExit, new.requestToExit) { changes, a, b in
                changes.input("[inputs.request_to_exit]", a, b, level: "active_low")
            }
            optional("[fire_alarm]", old.fireAlarm, new.fireAlarm) { changes, a, b in
                changes.input("[fire_alarm]", a.input, b.input, level: "alarm_level")
                changes.key("[fire_alarm] supervised", a.supervised != b.supervised)
            }
        }

        /// A section that may be absent: added or removed, it is named whole;
        /// there before and after, `keys` names its changed keys.
        mutating func optional<T>(_ table: String, _ a: T?, _ b: T?, keys: (inout Changes, T, T) -> Void) {
            switch (a, b) {
            case (nil, nil): break
            case (let a?, let b?): keys(&self, a, b)
            default: names.append(table)
            }
        }

        mutating func input(
            _ table: String, _ a: GatewayConfiguration.Input, _ b: GatewayConfiguration.Input, level: String
        ) {
            key("\(table) line", a.line != b.line)
            key("\(table) \(level)", a.activeLow != b.activeLow)
            key("\(table) bias", a.bias != b.bias)
            key("\(table) debounce_ms", a.debounceMilliseconds != b.debounceMilliseconds)
        }

        mutating func fleet(_ a: GatewayConfiguration.Fleet, _ b: GatewayConfiguration.Fleet) {
            key("[fleet] enabled", a.enabled != b.enabled)
            key("[fleet] site_id", a.siteID != b.siteID)
            key("[fleet] site_public_key", a.sitePublicKey != b.sitePublicKey)
            key("[fleet] subscribe", a.subscribe != b.subscribe)
            key("[fleet] box_key_file", a.boxKeyFile != b.boxKeyFile)
        }

        /// Each `[mqtt]` key but `[mqtt.commands]`' mapping and tolerance (live).
        mutating func mqtt(_ a: GatewayConfiguration.MQTT, _ b: GatewayConfiguration.MQTT) {
            key("[mqtt] home_assistant_open", a.homeAssistantOpen != b.homeAssistantOpen)
            key("[mqtt] home_assistant_admin", a.homeAssistantAdmin != b.homeAssistantAdmin)
            key("[mqtt.commands] compat_topics", a.compatCommandTopics != b.compatCommandTopics)
            key("[mqtt] enabled", a.enabled != b.enabled)
            key("[mqtt] host", a.host != b.host)
            key("[mqtt] port", a.port != b.port)
            key("[mqtt] client_id", a.clientID != b.clientID)
            key("[mqtt] protocol", a.protocolVersion != b.protocolVersion)
            key("[mqtt] keepalive_s", a.keepaliveSeconds != b.keepaliveSeconds)
            key("[mqtt] topic_prefix", a.topicPrefix != b.topicPrefix)
            key("[mqtt] uid_in_events", a.uidInEvents != b.uidInEvents)
            key("[mqtt] label_in_events", a.labelInEvents != b.labelInEvents)
            key("[mqtt] outbox_limit", a.outboxLimit != b.outboxLimit)
            key("[mqtt] telemetry_s", a.telemetrySeconds != b.telemetrySeconds)
            key("[mqtt] home_assistant_discovery", a.homeAssistantDiscovery != b.homeAssistantDiscovery)
            key("[mqtt] home_assistant_name", a.homeAssistantName != b.homeAssistantName)
            key("[mqtt] home_assistant_area", a.homeAssistantArea != b.homeAssistantArea)
            key("[mqtt] username", a.username != b.username)
            key("[mqtt] password_file", a.passwordFile != b.passwordFile)
            key(
                "[mqtt] allow_password_over_plain_mdns",
                a.allowPasswordOverPlainMulticastDNS != b.allowPasswordOverPlainMulticastDNS)
            key("[mqtt.tls] enabled", a.tls.enabled != b.tls.enabled)
            key("[mqtt.tls] ca_file", a.tls.caFile != b.tls.caFile)
            key("[mqtt.tls] ca_dir", a.tls.caDirectory != b.tls.caDirectory)
            key("[mqtt.tls] cert_file", a.tls.certFile != b.tls.certFile)
            key("[mqtt.tls] key_file", a.tls.keyFile != b.tls.keyFile)
            key("[mqtt.tls] insecure", a.tls.insecure != b.tls.insecure)
        }

        /// Each `[nats]` key: the link is made at start.
        mutating func nats(_ a: GatewayConfiguration.NATS, _ b: GatewayConfiguration.NATS) {
            key("[nats] account_keys", a.accountKeys != b.accountKeys)
            key("[nats] servers", a.servers != b.servers)
            key("[nats] prefix", a.prefix != b.prefix)
            key("[nats] creds_dir", a.credentialsDirectory != b.credentialsDirectory)
            key("[nats] jwt_file", a.jwtFile != b.jwtFile)
            key("[nats] seed_file", a.seedFile != b.seedFile)
            key("[nats] jetstream", a.jetStream != b.jetStream)
            key("[nats] reconnect_wait_ms", a.reconnectWaitMilliseconds != b.reconnectWaitMilliseconds)
            key("[nats] refresh_percent", a.refreshPercent != b.refreshPercent)
            key("[nats] fleet_bucket", a.fleetBucket != b.fleetBucket)
            key("[nats] user", a.user != b.user)
            key("[nats] password_file", a.passwordFile != b.passwordFile)
            key("[nats] token_file", a.tokenFile != b.tokenFile)
            key(
                "[nats] allow_password_over_plain_mdns",
                a.allowPasswordOverPlainMulticastDNS != b.allowPasswordOverPlainMulticastDNS)
            key("[nats.tls] enabled", a.tls.enabled != b.tls.enabled)
            key("[nats.tls] ca_file", a.tls.caFile != b.tls.caFile)
            key("[nats.tls] cert_file", a.tls.certFile != b.tls.certFile)
            key("[nats.tls] key_file", a.tls.keyFile != b.tls.keyFile)
        }
    }
}
