import DoorCore
import DoorIO
import Foundation
import GatewayControl
import GatewayStore
import Logging
import TestSupport
import XCTest

@testable import GatewayConfig
@testable import GatewayDaemon

/// Issue 34 Move C: every configuration key is either applied by a reload
/// (live) or a reload that changes it is refused naming it — never
/// "configuration reloaded" while the old value still runs.
///
/// One row per key the loader knows (`knownKeys` over the whole example
/// uncommented): a new key without a row fails the test. Each row changes
/// its key in the shipped example, with its section in use (MQTT on, the
/// fleet on; NATS rows with `[remote] transport = "nats"`), loads both files
/// and checks what the daemon's reload does with the pair
/// (`LiveConfiguration.restartRequired`, then the reload): a live key is not
/// refused, and a running door reloaded with it behaves as a door started
/// with the new file, where a door started with the old one behaves
/// otherwise (`observe`: the door machine's answers to a script of inputs,
/// what the runtime plays, its schedules and zone, the remote command judge,
/// the reader's auth limit); a refused key is named, `[section] key`.
/// README's "Reloading" table is this one.
final class ReloadTableTests: TemporaryDirectoryTestCase {
    enum Reload: Equatable {
        case live
        case refused(String)
    }

    enum Base { case mqtt, nats, natsLogin }

    struct Row: Sendable {
        var reload: Reload
        var base: Base = .mqtt
        /// The file with the key changed.
        var edit: @Sendable (String) -> String
    }

    // MARK: The files

    /// The example with every commented key uncommented (as LoaderTests does;
    /// of a key shown twice in a table, the first), plus an action with a
    /// wait step and a second relay, so every key the loader reads is there.
    static let example: String = {
        var inBlock = false
        var taken: Set<String> = []
        let lines = ConfigExample.text(board: .pi).split(separator: "\n", omittingEmptySubsequences: false).map {
            line -> String in
            if line.hasPrefix("[") || line.hasPrefix("# [") { taken = [] }
            if line.hasPrefix("# [") {
                inBlock = true
                return String(line.dropFirst(2))
            }
            if line.isEmpty { inBlock = false }
            if inBlock && line.hasPrefix("# ") { return String(line.dropFirst(2)) }
            if line.hasPrefix("# ") {
                let key = line.dropFirst(2).prefix { $0 != " " }
                if !key.isEmpty, key.allSatisfy({ $0.isLowercase || $0 == "_" }),
                    line.dropFirst(2 + key.count).hasPrefix(" = ")
                {
                    guard taken.insert(String(key)).inserted else { return String(line) }
                    return String(line.dropFirst(2))
                }
            }
            return String(line)
        }
        return lines.joined(separator: "\n")
            + "\n[[actions]]\nindex = 4\nsteps = [{ wait_ms = 1 }, { pulse = \"strike\", ms = 50 }]\n"
            + "approval = { timeout_s = 120, by = [\"gatewayctl\"] }\nlockdown_exempt = false\nschedule = \"shop\"\n"
            + "[[outputs]]\nname = \"latch\"\nline = \"GPIO16\"\nactive_low = true\nlocked_level = \"deenergised\"\n"
    }()

    static func base(_ base: Base) -> String {
        var text = example
        switch base {
        case .mqtt:
            text = set(text, "mqtt.enabled", "true")
            // The door contact's alarms on, so their keys show at the door.
            text = set(text, "door_contact.enabled", "true")
            text = set(text, "fleet.enabled", "true")
        case .nats, .natsLogin:
            text = set(text, "remote.transport", "\"nats\"")
            text = set(text, "door_contact.enabled", "true")
            text = set(text, "fleet.enabled", "true")
            text = dropLine(text, "fleet.subscribe")
            if base == .natsLogin {
                for key in ["jwt_file", "seed_file", "creds_dir", "account_keys"] {
                    text = dropLine(text, "nats." + key)
                }
                text = replace(
                    text, section: "nats", "prefix = ",
                    "user = \"front-door\"\npassword_file = \"/etc/doorgateway/nats.password\"\nprefix = ")
            }
        }
        return text
    }

    /// The table header a key's line is under (`actions[].steps[].ms` → `actions`).
    static func section(of key: String) -> String {
        let parts = key.split(separator: ".").dropLast()
        var out: [Substring] = []
        for p in parts {
            if p.hasSuffix("[]") {
                out.append(p.dropLast(2))
                break
            }
            out.append(p)
        }
        return out.joined(separator: ".")
    }

    /// `text` with the first `old` after the key's section header replaced (fails the test when absent).
    static func replace(_ text: String, section: String, _ old: String, _ new: String) -> String {
        let headers = ["\n[\(section)]\n", "\n[[\(section)]]\n"]
        guard let header = headers.compactMap({ text.range(of: $0) }).min(by: { $0.lowerBound < $1.lowerBound }),
            let hit = text.range(of: old, range: text.index(before: header.upperBound)..<text.endIndex)
        else {
            XCTFail("no \(old) under [\(section)]")
            return text
        }
        return text.replacingCharacters(in: hit, with: new)
    }

    /// The key's first line set to `value` (the rest of the line, a comment, goes).
    static func set(_ text: String, _ key: String, _ value: String) -> String {
        let leaf = key.split(separator: ".").last.map { String($0.prefix { $0 != "[" }) } ?? key
        let marked = replace(text, section: section(of: key), "\n\(leaf) = ", "\n\(leaf) = \u{1}")
        guard let start = marked.range(of: "\u{1}") else { return text }
        let end = marked[start.upperBound...].firstIndex(of: "\n") ?? marked.endIndex
        return marked.replacingCharacters(in: start.lowerBound..<end, with: value)
    }

    /// The first list after `prefix` under the section replaced by `items`.
    static func list(_ text: String, section: String, _ prefix: String, _ items: String) -> String {
        let marked = replace(text, section: section, prefix, "\u{1}")
        guard let start = marked.range(of: "\u{1}"), let end = marked[start.upperBound...].firstIndex(of: "]") else {
            return text
        }
        return marked.replacingCharacters(in: start.lowerBound..<end, with: prefix + items)
    }

    static func dropLine(_ text: String, _ key: String) -> String {
        let leaf = key.split(separator: ".").last.map(String.init) ?? key
        let marked = replace(text, section: section(of: key), "\n\(leaf) = ", "\n\u{1}")
        guard let start = marked.range(of: "\u{1}") else { return text }
        let end = marked[start.upperBound...].firstIndex(of: "\n") ?? marked.endIndex
        return marked.replacingCharacters(in: start.lowerBound..<end, with: "#")
    }

    // MARK: The table

    static func live(_ value: String) -> (String) -> Row {
        { key in Row(reload: .live) { set($0, key, value) } }
    }

    static func refused(_ value: String, base: Base = .mqtt) -> (String) -> Row {
        { key in
            let leaf = key.split(separator: ".").last.map(String.init) ?? key
            return Row(reload: .refused("[\(section(of: key))] \(leaf)"), base: base) { set($0, key, value) }
        }
    }

    /// Every key the loader knows, and what a reload does with it.
    static let rows: [String: Row] = {
        var rows: [String: (String) -> Row] = [
            "device.id": refused("\"back-door\""),
            "board.kind": refused("\"sim\""),
            "board.chip": refused("\"gpiochip1\""),
            "reader.connstring": refused("\"pn532_spi:/dev/spidev0.0\""),
            "reader.simulator": refused("\"/run/pn532-sim.sock\""),
            "outputs[].name": { _ in
                Row(reload: .refused("[[outputs]] name")) {
                    $0.replacingOccurrences(of: "\"strike\"", with: "\"bolt\"")
                }
            },
            "outputs[].line": { key in Row(reload: .refused("[[outputs]] line")) { set($0, key, "\"GPIO12\"") } },
            "outputs[].active_low": { key in Row(reload: .refused("[[outputs]] active_low")) { set($0, key, "false") }
            },
            "outputs[].locked_level": { key in
                Row(reload: .refused("[[outputs]] locked_level")) { set($0, key, "\"energised\"") }
            },
            "inputs.button.line": refused("\"GPIO26\""),
            "inputs.button.active_low": refused("false"),
            "inputs.button.bias": refused("\"disable\""),
            "inputs.button.debounce_ms": refused("31"),
            "inputs.door_contact.line": refused("\"GPIO6\""),
            "inputs.door_contact.open_level": refused("\"low\""),
            "inputs.door_contact.bias": refused("\"pull-down\""),
            "inputs.door_contact.debounce_ms": refused("31"),
            "inputs.request_to_exit.line": refused("\"GPIO4\""),
            "inputs.request_to_exit.active_low": refused("false"),
            "inputs.request_to_exit.bias": refused("\"pull-down\""),
            "inputs.request_to_exit.debounce_ms": refused("31"),
            "outputs[].on_fire": { key in
                Row(reload: .refused("[[outputs]] on_fire")) { set($0, key, "\"keep\"") }
            },
            "fire_alarm.line": refused("\"GPIO25\""),
            // A supervised loop's level and pull change together (ConfigFire.swift).
            "fire_alarm.alarm_level": { key in
                Row(reload: .refused("[fire_alarm] alarm_level")) {
                    set(set($0, key, "\"low\""), "fire_alarm.bias", "\"pull-down\"")
                }
            },
            "fire_alarm.bias": { key in
                Row(reload: .refused("[fire_alarm] bias")) {
                    set(set($0, key, "\"pull-down\""), "fire_alarm.alarm_level", "\"low\"")
                }
            },
            "fire_alarm.debounce_ms": refused("25"),
            "fire_alarm.supervised": refused("false"),

            "door.pulse_min_ms": live("40"),
            "door.pulse_max_ms": live("9000"),
            "door.same_tag_quiet_ms": live("900"),
            "door.mode": live("\"lockdown\""),
            "door.passage_schedule": { key in Row(reload: .live) { dropLine($0, key) } },
            "schedules[].name": { _ in
                Row(reload: .live) { $0.replacingOccurrences(of: "\"shop\"", with: "\"store\"") }
            },
            "schedules[].windows[].days": { _ in
                Row(reload: .live) { replace($0, section: "schedules", "[\"sat\"]", "[\"sun\"]") }
            },
            "schedules[].windows[].from": { _ in
                Row(reload: .live) { replace($0, section: "schedules", "from = \"09:00\"", "from = \"08:00\"") }
            },
            "schedules[].windows[].to": { _ in
                Row(reload: .live) { replace($0, section: "schedules", "to = \"18:30\"", "to = \"19:00\"") }
            },
            "schedules[].holidays": live("[\"2026-12-31\"]"),
            "schedules[].first_person_in": live("true"),
            "actions[].index": { _ in
                Row(reload: .live) {
                    replace(
                        replace($0, section: "actions", "index = 1\n", "index = 9\n"), section: "actions",
                        "index = 0\n", "index = 1\n"
                    ).replacingOccurrences(of: "index = 9\n", with: "index = 0\n")
                }
            },
            "actions[].name": live("\"front\""),
            "actions[].steps[].pulse": { _ in
                Row(reload: .live) { replace($0, section: "actions", "pulse = \"strike\"", "pulse = \"latch\"") }
            },
            "actions[].steps[].ms": { _ in
                Row(reload: .live) { replace($0, section: "actions", "ms = 3000", "ms = 2500") }
            },
            "actions[].steps[].wait_ms": { _ in
                Row(reload: .live) { $0.replacingOccurrences(of: "wait_ms = 1 }", with: "wait_ms = 2 }") }
            },
            "actions[].credentials": live("[\"ntag424\"]"),
            "actions[].lockdown_exempt": live("true"),
            "actions[].schedule": { _ in
                Row(reload: .live) { $0.replacingOccurrences(of: "schedule = \"shop\"\n[[", with: "[[") }
            },
            "actions[].approval.timeout_s": { _ in
                Row(reload: .live) { $0.replacingOccurrences(of: "timeout_s = 120,", with: "timeout_s = 60,") }
            },
            "actions[].approval.by": { _ in
                Row(reload: .live) { $0.replacingOccurrences(of: "by = [\"gatewayctl\"]", with: "by = [\"phone\"]") }
            },

            "lockout.enabled": live("false"),
            "lockout.per_tag_threshold": live("4"),
            "lockout.global_threshold": live("11"),
            "lockout.window_s": live("61"),
            "lockout.duration_s": live("31"),
            "lockout.cap_s": live("301"),
            "button.exit_action": live("\"none\""),
            "button.min_press_ms": live("60"),
            "button.hold_ms": live("6000"),
            "provisioning.button_armed": live("false"),
            "provisioning.action": live("1"),
            "provisioning.timeout_s": live("61"),
            "provisioning.protect": live("true"),
            "provisioning.auth_limit": live("3"),
            "door_contact.enabled": live("false"),
            // The old name of alert_s (ConfigDoorContact.swift): given instead of it.
            "door_contact.held_open_s": { _ in
                Row(reload: .live) { replace($0, section: "door_contact", "\nalert_s = 30", "\nheld_open_s = 31") }
            },
            "door_contact.warn_s": live("16"),
            "door_contact.alert_s": live("31"),
            "door_contact.escalate_s": live("121"),
            "request_to_exit.grace_s": live("11"),
            "request_to_exit.action": live("1"),
            "door_contact.open_grace_s": live("11"),
            "clock.declare_synchronised": live("true"),
            "clock.time_zone": live("\"UTC\""),

            "mqtt.enabled": { key in
                Row(reload: .refused("[mqtt] enabled")) { set(set($0, key, "false"), "fleet.enabled", "false") }
            },
            "mqtt.host": refused("\"broker.lan\""),
            "mqtt.port": refused("8884"),
            "mqtt.client_id": refused("\"door-2\""),
            "mqtt.protocol": refused("\"5\""),
            "mqtt.keepalive_s": refused("61"),
            "mqtt.topic_prefix": refused("\"doors/front\""),
            "mqtt.uid_in_events": refused("\"full\""),
            "mqtt.home_assistant_discovery": refused("false"),
            "mqtt.home_assistant_name": refused("\"Back door\""),
            "mqtt.home_assistant_area": refused("\"Garden\""),
            "mqtt.home_assistant_open": refused("true"),
            "mqtt.home_assistant_admin": refused("true"),
            "mqtt.label_in_events": refused("true"),
            "mqtt.outbox_limit": refused("20000"),
            "mqtt.telemetry_s": refused("61"),
            "mqtt.username": refused("\"back-door\""),
            "mqtt.password_file": refused("\"/etc/doorgateway/other.password\""),
            "mqtt.allow_password_over_plain_mdns": refused("true"),
            "mqtt.tls.enabled": refused("false"),
            "mqtt.tls.ca_file": refused("\"/etc/doorgateway/other-ca.crt\""),
            "mqtt.tls.ca_dir": refused("\"/etc/ssl/other\""),
            "mqtt.tls.cert_file": refused("\"/etc/doorgateway/other.crt\""),
            "mqtt.tls.key_file": refused("\"/etc/doorgateway/other.key\""),
            "mqtt.tls.insecure": refused("true"),
            "mqtt.commands.compat_topics": refused("[\"phone/front-door\"]"),
            "mqtt.commands.tolerance_s": live("3"),

            "remote.transport": { key in
                Row(reload: .refused("[remote] transport")) { dropLine(set($0, key, "\"nats\""), "fleet.subscribe") }
            },
            "nats.servers": refused("[\"tls://other.example:4222\"]", base: .nats),
            "nats.prefix": refused("\"doors\"", base: .nats),
            "nats.creds_dir": refused("\"/var/lib/doorgateway/nats2\"", base: .nats),
            "nats.jwt_file": refused("\"/etc/doorgateway/nats/other.jwt\"", base: .nats),
            "nats.seed_file": refused("\"/etc/doorgateway/nats/other.nk\"", base: .nats),
            "nats.account_keys": refused("[]", base: .nats),
            "nats.jetstream": refused("true", base: .nats),
            "nats.reconnect_wait_ms": refused("600", base: .nats),
            "nats.refresh_percent": refused("80", base: .nats),
            "nats.fleet_bucket": refused("\"other-fleet\"", base: .nats),
            "nats.allow_password_over_plain_mdns": { _ in
                Row(reload: .refused("[nats] allow_password_over_plain_mdns"), base: .nats) {
                    replace($0, section: "nats", "prefix = ", "allow_password_over_plain_mdns = true\nprefix = ")
                }
            },
            "nats.user": refused("\"back-door\"", base: .natsLogin),
            "nats.password_file": refused("\"/etc/doorgateway/other.password\"", base: .natsLogin),
            "nats.token_file": { _ in
                Row(reload: .refused("[nats] token_file"), base: .natsLogin) {
                    replace(
                        $0, section: "nats",
                        "user = \"front-door\"\npassword_file = \"/etc/doorgateway/nats.password\"\n",
                        "token_file = \"nats.token\"\n")
                }
            },
            "nats.tls.enabled": refused("false", base: .nats),
            "nats.tls.ca_file": refused("\"/etc/doorgateway/other-ca.pem\"", base: .nats),
            "nats.tls.cert_file": refused("\"/etc/doorgateway/other.crt\"", base: .nats),
            "nats.tls.key_file": refused("\"/etc/doorgateway/other.key\"", base: .nats),

            "control.socket": refused("\"/run/doorgateway/other.sock\""),
            "control.admin_group": refused("\"ops\""),
            "paths.state_dir": refused("\"/srv/door\""),
            "paths.runtime_dir": refused("\"/run/dg\""),
            "fleet.enabled": refused("false"),
            "fleet.site_id": refused("\"other-site\""),
            "fleet.site_public_key": refused("\"\(String(repeating: "11", count: 32))\""),
            "fleet.subscribe": refused("\"doorgateway/+/fleet/other\""),
            "fleet.box_key_file": refused("\"/etc/doorgateway/other-box.key\""),
        ]
        for n in 1...5 {
            rows["mqtt.commands.mapping.\(n)"] = { key in
                Row(reload: .live) { set($0, key, n == 5 ? "1" : "\"report\"") }
            }
        }
        for name in ["buzzer", "green", "red"] {
            rows["indicators.\(name).line"] = refused("\"GPIO\(["buzzer": 13, "green": 19, "red": 20][name]!)\"")
            rows["indicators.\(name).active_low"] = refused("true")
        }
        for kind in FeedbackKind.allCases.map(\.rawValue) {
            let section = "feedback.\(kind)"
            rows["\(section).steps[].on"] = { _ in
                Row(reload: .live) { list($0, section: section, "{ on = [", "\"buzzer\", \"green\", \"red\"") }
            }
            rows["\(section).steps[].ms"] = { _ in
                Row(reload: .live) { replace($0, section: section, ", ms = ", ", ms = 1") }
            }
            rows["\(section).repeat"] = { key in
                Row(reload: .live) { text in
                    let marked = set(text, key, "\u{1}")
                    return set(text, key, marked.count == text.count - 4 ? "true" : "false")
                }
            }
            rows["\(section).priority"] = live("99")
        }
        return Dictionary(uniqueKeysWithValues: rows.map { ($0.key, $0.value($0.key)) })
    }()

    // MARK: Tests

    func testEveryKeyTheLoaderKnowsHasARow() {
        let asked = GatewayConfiguration.knownKeys(readingSource: Self.base(.mqtt))
            .union(GatewayConfiguration.knownKeys(readingSource: Self.base(.natsLogin)))
        // The keys, not the tables that hold them.
        let known = asked.filter { k in !asked.contains { $0.hasPrefix(k + ".") || $0.hasPrefix(k + "[].") } }
        XCTAssertGreaterThan(known.count, 100)
        for key in known.sorted() where Self.rows[key] == nil {
            XCTFail("\(key) has no row: say whether a reload applies it (live) or refuses it, naming it")
        }
        for key in Self.rows.keys.sorted() where !known.contains(key) {
            XCTFail("\(key) has a row but the loader does not know it")
        }
    }

    var dir: String!

    override func setUpWithError() throws { dir = try temporaryDirectory("reload-table").path }

    func testEveryKeyIsAppliedByAReloadOrRefusedByName() throws {
        for (key, row) in Self.rows.sorted(by: { $0.key < $1.key }) {
            let before = Self.base(row.base)
            let old = try GatewayConfiguration.load(toml: before)
            let after = row.edit(before)
            let new: GatewayConfiguration
            do { new = try GatewayConfiguration.load(toml: after) } catch {
                XCTFail("\(key): the changed file does not load: \(error)")
                continue
            }
            XCTAssertTrue(old != new, "\(key): the change made no difference")
            let refused = LiveConfiguration.restartRequired(from: old, to: new)
            switch row.reload {
            case .live:
                XCTAssertEqual(refused, [], "\(key) is live, yet refused")
                let running = try Door(old, in: dir)
                try running.reload(new)
                let reloaded = try running.observe()
                let started = try Door(new, in: dir).observe()
                let before = try Door(old, in: dir).observe()
                XCTAssertNotEqual(before, started, "\(key): the probe does not see this key; make it")
                let diff = zip(reloaded, started).first { $0 != $1 }
                XCTAssertTrue(
                    reloaded == started,
                    "\(key): reloaded, yet not in effect: \(diff.map { "\($0.0) ≠ \($0.1)" } ?? "lengths differ")")
            case .refused(let name):
                XCTAssertTrue(refused.contains(name), "\(key): expected \(name) refused, got \(refused)")
                XCTAssertFalse(refused.contains("a setting read at start only"), "\(key) not named: \(refused)")
            }
        }
    }

    /// With NATS the transport, `[mqtt]`'s event and outbox keys are NATS's
    /// (made into its link at start): refused, not applied in silence.
    func testUnderNATSTheMQTTEventKeysAreRefusedToo() throws {
        let old = try GatewayConfiguration.load(toml: Self.base(.nats))
        for (key, value) in [
            ("mqtt.uid_in_events", "\"full\""), ("mqtt.label_in_events", "true"), ("mqtt.outbox_limit", "20000"),
            ("mqtt.telemetry_s", "61"), ("mqtt.home_assistant_open", "true"),
        ] {
            let new = try GatewayConfiguration.load(toml: Self.set(Self.base(.nats), key, value))
            let leaf = key.split(separator: ".").last!
            XCTAssertEqual(LiveConfiguration.restartRequired(from: old, to: new), ["[mqtt] \(leaf)"], key)
        }
    }

    /// A section that is off before and after is inert: its keys block no reload.
    func testAnUnusedSectionIsInert() throws {
        let example = try GatewayConfiguration.load(toml: Self.example)
        XCTAssertFalse(example.mqtt.enabled)
        XCTAssertFalse(example.fleet.enabled)
        for (key, value) in [
            ("fleet.site_id", "\"other-site\""), ("mqtt.host", "\"broker.lan\""), ("nats.prefix", "\"doors\""),
            ("mqtt.commands.compat_topics", "[\"x/y\"]"),
        ] {
            let new = try GatewayConfiguration.load(toml: Self.set(Self.example, key, value))
            XCTAssertNotEqual(example, new, key)
            XCTAssertEqual(LiveConfiguration.restartRequired(from: example, to: new), [], key)
        }
    }

    // MARK: The running door

    /// A running door as gatewayd wires it, on a simulated board: the door
    /// runtime and the configuration it owns, the remote command judge
    /// reading it, the reader port's auth limit.
    final class Door {
        let runtime: DoorRuntime
        let live: LiveConfiguration
        let commands: StoreCommands
        let authLimit: @Sendable () -> Int

        init(_ configuration: GatewayConfiguration, in dir: String) throws {
            let state = dir + "/" + UUID().uuidString
            let log = Logger(label: "reload-table")
            let board = try SimulatedBoard(configuration.boardDescription, logger: log)
            let store = try GatewayStore(stateDirectory: state)
            try store.syncActions(configuration.door.actions)
            let writer = AuditWriter(store: store, outbox: EventOutbox(), log: log)
            let live = LiveConfiguration(configuration)
            self.live = live
            runtime = DoorRuntime(
                live: live, board: board, store: store, registry: StoreRegistry(store: store),
                audit: { event, time, detail, lastSeen in
                    writer.write(event, at: time, detail: detail, lastSeen: lastSeen)
                },
                flushAudit: { writer.flush() }, log: log, zone: try Zones.load(configuration.timeZone))
            let runtime = self.runtime
            let deviceID = configuration.deviceID
            commands = try StoreCommands(
                store: store,
                livePolicy: {
                    RemotePolicy(live.current.mqtt, deviceID: deviceID, actionCount: live.current.door.actions.count)
                },
                actionCount: { live.current.door.actions.count }, clockSynchronised: { true },
                submit: { runtime.submit(.remoteCommand($0)) }, log: log)
            authLimit = { live.current.door.provisioning.authLimit }
            runtime.start()
            runtime.sync {}
        }

        deinit { runtime.shutdown() }

        static func describe(_ pattern: FeedbackPattern?) -> String {
            guard let pattern else { return "none" }
            let steps = pattern.steps.map { "\($0.on.sorted())/\($0.duration)" }
            return "\(steps) repeats \(pattern.repeats) priority \(pattern.priority)"
        }

        /// What the daemon's reload does to the door runtime (its service's `reloaded`).
        func reload(_ new: GatewayConfiguration) throws {
            runtime.reload(new, zone: try Zones.load(new.timeZone))
            runtime.sync {}
            runtime.sync {}
        }

        /// How the running door behaves, as lines to compare: the door
        /// machine's effects for a script of inputs (every action run to its
        /// end, button presses and holds, provisioning writes, the door opened
        /// after the grace and held open, a reader fault, lockouts of a tag, in
        /// and out of the window and of the reader, a re-tap, an approval),
        /// each pattern as the runtime would play it, the ambient one too; the
        /// step clamp; the tap
        /// rules' schedule answers over a week around a holiday in the door's
        /// zone; the clock; the remote judge's policy; the reader's auth limit.
        func observe() throws -> [String] {
            let (machine, start, configuration) = runtime.sync {
                (runtime.machine, runtime.now(), runtime.configuration)
            }
            var lines = ["mode \(machine.mode) state \(machine.state)"]
            var m = machine
            // Approval codes from fixed bytes, so two doors' transcripts compare.
            m.supplyRandom([UInt8](repeating: 7, count: 64))
            var t = Now(monotonic: start.monotonic, wall: WallClock(unixSeconds: 1_798_000_000, synchronised: true))
            var timers: [(at: MonotonicInstant, id: TimerID)] = []
            var ambient: FeedbackKind?
            func take(_ label: String, _ input: DoorInput) {
                defer {
                    // What the runtime plays behind every pattern (DoorRuntime.execute).
                    if m.ambientFeedback != ambient {
                        ambient = m.ambientFeedback
                        lines.append(
                            "\(label): ambient \(m.ambientFeedback) \(Self.describe(configuration.door.patterns[m.ambientFeedback]))"
                        )
                    }
                }
                for effect in m.handle(input, at: t) {
                    switch effect {
                    case .startTimer(let id, let after):
                        timers.append((t.monotonic + after, id))
                        lines.append("\(label): timer \(id) after \(after)")
                    case .cancelTimer(let id):
                        timers.removeAll { $0.id == id }
                        lines.append("\(label): cancel \(id)")
                    case .feedback(let kind):
                        // As the runtime plays it (DoorRuntime.execute): the configured pattern.
                        lines.append("\(label): feedback \(kind) \(Self.describe(configuration.door.patterns[kind]))")
                    default: lines.append("\(label): \(effect)")
                    }
                }
            }
            func advance(_ d: Duration) {
                let end = t.monotonic + d
                while let next = timers.enumerated().filter({ $0.element.at <= end }).min(by: {
                    $0.element.at < $1.element.at
                }) {
                    timers.remove(at: next.offset)
                    let step = next.element.at.since(t.monotonic)
                    t = Now(
                        monotonic: next.element.at,
                        wall: WallClock(unixSeconds: t.wall.unixSeconds + step.components.seconds, synchronised: true))
                    take("timer", .timerFired(next.element.id))
                }
                let step = end.since(t.monotonic)
                t = Now(
                    monotonic: end,
                    wall: WallClock(unixSeconds: t.wall.unixSeconds + step.components.seconds, synchronised: true))
            }
            for action in 0...5 {
                take("open \(action)", .admin(.open(action)))
                advance(.seconds(15))
            }
            // The clamp the running machine puts on every step: the loader keeps a
            // valid file's steps inside it, so no configured action shows it otherwise.
            lines.append("pulse limits \(m.settings.pulseLimits)")
            for press in [Duration.milliseconds(30), .milliseconds(55), .milliseconds(100)] {
                take("press", .button(pressed: true))
                advance(press)
                take("release", .button(pressed: false))
                advance(.seconds(15))
            }
            // Held to arm provisioning; a blank tag written, then one whose write fails.
            let blank = TagUID(hex: "04D1D2D3D4D5D6")!
            for outcome in [WriteOutcome.written, .failed("torn")] {
                take("press", .button(pressed: true))
                advance(.milliseconds(5_500))
                take("release", .button(pressed: false))
                take(
                    "blank",
                    .tagArrived(
                        TagPresentation(
                            uid: blank, content: .blank,
                            verdict: .deny(reason: "unknown_tag", countsTowardLockout: false))))
                take("written", .writeResult(uid: blank, outcome))
                take("depart", .tagDeparted(blank))
                advance(.seconds(2))
            }
            take("press", .button(pressed: true))
            advance(.milliseconds(6_500))
            take("release", .button(pressed: false))
            advance(.seconds(100))
            // The door opened 10.5 s after an action's pulse ended, then held open.
            take("open 0", .admin(.open(0)))
            advance(.milliseconds(3_000 + 10_500))
            take("contact", .doorContact(open: true))
            // Past every held-open stage (warn_s, alert_s, escalate_s).
            advance(.seconds(130))
            take("contact", .doorContact(open: false))
            // A request to exit, the door opened 10.5 s after its release ([request_to_exit]).
            take("rex", .requestToExit(pressed: true))
            advance(.milliseconds(200))
            take("rex", .requestToExit(pressed: false))
            advance(.milliseconds(10_500))
            take("contact", .doorContact(open: true))
            take("contact", .doorContact(open: false))
            advance(.seconds(15))
            take("fault", .readerFault("gone"))
            take("recovered", .readerRecovered)
            let failedProof = Denial.failedProofReasons.sorted()[0]
            func deny(_ hex: String) {
                let uid = TagUID(hex: hex)!
                take(
                    "deny \(hex)",
                    .tagArrived(
                        TagPresentation(
                            uid: uid, content: .ours, verdict: .deny(reason: failedProof, countsTowardLockout: true))))
                take("depart", .tagDeparted(uid))
            }
            // One tag's lockouts, five in a row: each doubles up to the cap.
            for _ in 0..<5 {
                for _ in 0..<6 {
                    deny("04A1A2A3A4A5A6")
                    advance(.seconds(1))
                }
                advance(.seconds(310))
            }
            // Two denials, then a third 60 s after the first: within the window or not.
            for _ in 0..<2 {
                deny("04E1E2E3E4E5E6")
                advance(.seconds(1))
            }
            advance(.seconds(58))
            deny("04E1E2E3E4E5E6")
            advance(.seconds(400))
            // Twelve tags, one failed proof each: the global lockout.
            for n in 0..<12 {
                deny("04F1F2F3F4F5\(String(format: "%02X", n))")
                advance(.seconds(1))
            }
            advance(.seconds(700))
            let granted = TagPresentation(
                uid: TagUID(hex: "04B1B2B3B4B5B6")!, content: .ours, verdict: .grant(action: 0, reason: "valid_v2"))
            take("tap", .tagArrived(granted))
            take("depart", .tagDeparted(granted.uid))
            advance(.milliseconds(950))
            take("retap", .tagArrived(granted))
            take("depart", .tagDeparted(granted.uid))
            advance(.seconds(15))
            let waiting = TagPresentation(
                uid: TagUID(hex: "04C1C2C3C4C5C6")!, content: .ours, verdict: .grant(action: 4, reason: "valid_v2"))
            take("tap 4", .tagArrived(waiting))
            take("depart", .tagDeparted(waiting.uid))
            take("approve", .approval(ApprovalAnswer(code: nil, approve: true, by: .gatewayctl, who: "test")))
            advance(.seconds(200))

            // The tap rules (TapDecision's schedules) in the door's zone, every half hour over a week with 2026-12-31.
            let policy = runtime.sync { runtime.accessPolicy }
            lines.append("schedules \(policy.schedules.map { $0.name + ($0.firstPersonIn ? " first person in" : "") })")
            for hour in stride(from: Int64(1_798_675_200), to: 1_798_675_200 + 8 * 86_400, by: 1_800) {
                let wall = WallClock(unixSeconds: hour, synchronised: true)
                let answers = configuration.door.actions.map {
                    "\($0.index)=\(policy.denial(actionSchedule: $0.schedule, tag: nil, wall: wall).map(\.rawValue) ?? "ok")"
                }
                let passage = configuration.door.passageSchedule.map {
                    policy.schedule(named: $0)?.isActive(at: hour, zone: policy.zone) ?? false
                }
                lines.append("at \(hour): \(answers.joined(separator: " ")) passage \(String(describing: passage))")
            }
            lines.append("zone \(policy.zone.name)")
            lines.append("clock synchronised \(runtime.clockSynchronised())")
            for a in configuration.door.actions {
                lines.append(
                    "action \(a.index) \(a.name) credentials \(a.credentials.map(\.rawValue).sorted()) lockdown_exempt \(a.lockdownExempt)"
                )
            }
            let judge = commands.policy
            lines.append(
                "remote commands \(judge.commands.mapping.sorted { $0.key < $1.key }) tolerance \(judge.commands.tolerance) actions \(judge.commands.actionCount) ha \(judge.homeAssistantOpen) \(judge.homeAssistantAdmin)"
            )
            lines.append("auth limit \(authLimit())")
            return lines
        }
    }
}
