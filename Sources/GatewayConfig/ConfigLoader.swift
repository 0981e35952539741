import DoorCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension GatewayConfiguration {
    /// The stock wiring of the reference board (a Pi, lines by name so they
    /// hold on a Pi 3, 4 and 5): relay on GPIO17, green LED GPIO22, red LED
    /// GPIO23, buzzer GPIO24, button to ground on GPIO27. I2C (GPIO2/3) and SPI0
    /// (GPIO7–11) stay free for the PN532.
    public enum Defaults {
        public static let chip = "gpiochip0"
        public static let connstring = "pn532_i2c:/dev/i2c-1"
        /// The simulated board's relay when the file names none. A real
        /// board has no default relay: its polarity and locked level are
        /// always stated (`readOutputs`).
        public static let outputs = [
            Output(name: "strike", line: .name("GPIO17"), activeLow: false, lockedLevel: .deenergised)
        ]
        public static let indicators = [
            IndicatorLine(name: Indicator.buzzer, line: .name("GPIO24"), activeLow: false),
            IndicatorLine(name: Indicator.green, line: .name("GPIO22"), activeLow: false),
            IndicatorLine(name: Indicator.red, line: .name("GPIO23"), activeLow: false),
        ]
        public static let button = Input(
            line: .name("GPIO27"), activeLow: true, bias: .pullUp, debounceMilliseconds: 30)
        public static let stateDirectory = "/var/lib/doorgateway"
        public static let runtimeDirectory = "/run/doorgateway"
        public static let adminGroup = "doorgateway"
    }

    /// Reads a configuration file strictly: unknown keys and bad values are
    /// errors, each naming its full dotted key and line; every problem in the
    /// file is reported, not just the first.
    public static func load(toml source: String) throws(ConfigError) -> GatewayConfiguration {
        let members: [(String, TOMLNode)]
        switch TOMLNode.parse(source) {
        case .success(let m): members = m
        case .failure(let error): throw error
        }
        let sink = IssueSink(source: source)
        let config = readSections(TableReader(path: "", members: members, sink: sink))
        guard sink.issues.isEmpty else {
            // In file order; issues without a line (none so far) last.
            throw ConfigError(
                issues: sink.issues.enumerated().sorted {
                    ($0.element.line ?? .max, $0.offset) < ($1.element.line ?? .max, $1.offset)
                }.map(\.element))
        }
        return config
    }

    /// Reads and loads a file; an unreadable file is one issue without a key.
    public static func load(file path: String) throws(ConfigError) -> GatewayConfiguration {
        let bytes: [UInt8]
        do {
            bytes = try readFile(path)
        } catch {
            throw ConfigError(issues: [
                ConfigIssue(key: "", line: nil, message: "cannot read the file: \(error.message)")
            ])
        }
        if let issue = invalidUTF8(bytes) { throw ConfigError(issues: [issue]) }
        return try load(toml: String(decoding: bytes, as: UTF8.self))
    }

    /// A TOML file is valid UTF-8: the first byte that is not, as a syntax
    /// error with its place (decoding would turn it into U+FFFD silently).
    static func invalidUTF8(_ bytes: [UInt8]) -> ConfigIssue? {
        var parser = Unicode.UTF8.ForwardParser()
        var it = bytes.makeIterator()
        var offset = 0, line = 1, column = 1
        while true {
            switch parser.parseScalar(from: &it) {
            case .emptyInput:
                return nil
            case .valid(let scalar):
                offset += scalar.count
                if scalar.count == 1 && scalar.first == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else if !(offset == 3 && line == 1 && bytes.starts(with: [0xEF, 0xBB, 0xBF])) {
                    column += 1
                }
            case .error:
                let byte = offset < bytes.count ? bytes[offset] : 0
                return ConfigIssue(
                    key: "", line: line,
                    message: "TOML syntax error at column \(column): not UTF-8 (byte 0x\(hex(UInt32(byte), 2)))")
            }
        }
    }

    struct ReadError: Error { var message: String }

    /// The whole file with open(2)/read(2), retrying EINTR; a configuration
    /// file is small, so more than 1 MiB is refused.
    static func readFile(_ path: String) throws(ReadError) -> [UInt8] {
        func failure(_ function: String) -> ReadError {
            ReadError(message: "\(function): \(String(cString: strerror(errno)))")
        }
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw failure("open") }
        defer { close(fd) }
        let limit = 1 << 20
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw failure("read") }
            if n == 0 { return bytes }
            bytes += chunk[0..<n]
            guard bytes.count <= limit else { throw ReadError(message: "larger than 1 MiB") }
        }
    }

    /// The keys the loader knows (array indexes written `[]`), with what it
    /// asked while reading `source`; `ConfigExample` must document them all.
    static func knownKeys(readingSource source: String) -> Set<String> {
        guard case .success(let members) = TOMLNode.parse(source) else { return [] }
        let sink = IssueSink(source: source)
        _ = readSections(TableReader(path: "", members: members, sink: sink))
        return Set(
            sink.askedKeys.map { path in
                var generic = ""
                var inIndex = false
                for c in path {
                    if c == "[" {
                        inIndex = true; generic += "[]"
                    } else if c == "]" {
                        inIndex = false
                    } else if !inIndex {
                        generic.append(c)
                    }
                }
                return generic
            })
    }

    // MARK: - Sections

    static func readSections(_ root: TableReader) -> GatewayConfiguration {
        let device = root.table("device")
        let deviceID = device.flatMap { $0.optionalString("id", Check.identifier(max: 64)) }
        if deviceID == nil && !(device?.has("id") ?? false) {
            root.sink.add("device.id", "is required: the door's name, letters, digits, '-' and '_' (1…64)")
        }
        device?.finish()

        let boardTable = root.table("board")
        let kind: BoardKind? = boardTable?.optionalChoice("kind")
        if kind == nil && !(boardTable?.has("kind") ?? false) {
            root.sink.add("board.kind", "is required: \"real\" (GPIO and a PN532) or \"sim\" (simulated board)")
        }
        let chip = boardTable?.string("chip", Defaults.chip, Check.text(max: 4096)) ?? Defaults.chip
        boardTable?.finish()

        let readerTable = root.table("reader")
        let reader = Reader(
            connstring: readerTable?.string("connstring", Defaults.connstring, Check.connstring) ?? Defaults.connstring,
            simulator: readerTable?.string("simulator", "spawn", Check.simulator) ?? "spawn")
        readerTable?.finish()

        var lines = LineRegistry(sink: root.sink)
        let outputs = readOutputs(root, &lines, real: kind == .real)
        let indicators = readIndicators(root, &lines)
        let inputs = root.table("inputs")
        let button =
            inputs?.table("button").map { readInput($0, defaults: Defaults.button, &lines, contact: false) }
            ?? Defaults.button
        let doorContact = inputs?.table("door_contact").map { readInput($0, defaults: nil, &lines, contact: true) }
        let requestToExit = inputs?.table("request_to_exit").map {
            readInput($0, defaults: nil, &lines, contact: false)
        }
        inputs?.finish()
        let fireAlarm = readFireAlarm(root, &lines)

        var door = readDoor(root, outputs: outputs, indicators: indicators, hasDoorContact: doorContact != nil)
        let actionIndexes = Set(door.actions.map(\.index))
        door.requestToExit = readRequestToExit(root, actionExists: { actionIndexes.contains($0) })
        let readers = readReaders(root, actions: door.actions, boardChip: chip, &lines)
        checkPassback(root, actions: door.actions, readers: readers)

        let clock = root.table("clock")
        let synchronised = clock?.bool("declare_synchronised", false) ?? false
        let timeZone = clock?.optionalString("time_zone", timeZoneName)
        clock?.finish()

        let id = deviceID ?? "device"
        let mqtt = readMQTT(root, deviceID: id, actions: door.actions)

        let controlTable = root.table("control")
        let control = Control(
            socket: controlTable?.optionalString("socket", Check.socketPath),
            adminGroup: controlTable?.string("admin_group", Defaults.adminGroup, Check.groupName) ?? Defaults.adminGroup
        )
        controlTable?.finish()

        let pathsTable = root.table("paths")
        let paths = Paths(
            stateDirectory: pathsTable?.string("state_dir", Defaults.stateDirectory, Check.absolutePath)
                ?? Defaults.stateDirectory,
            runtimeDirectory: pathsTable?.string("runtime_dir", Defaults.runtimeDirectory, Check.absolutePath)
                ?? Defaults.runtimeDirectory)
        pathsTable?.finish()
        if control.socket == nil, let why = Check.socketPath(paths.runtimeDirectory + "/control.sock") {
            root.sink.add("paths.runtime_dir", "the control socket under it: " + why)
        }

        // [remote] and [nats] (ConfigNATS.swift).
        let remote = readRemote(root)
        let nats = readNATS(root, required: remote.transport == .nats)
        let fleet = readFleet(root, mqtt: mqtt, transport: remote.transport)

        root.finish()
        var configuration = GatewayConfiguration(
            deviceID: id, board: kind ?? .sim, chip: chip, reader: reader, outputs: outputs,
            indicators: indicators, button: button, doorContact: doorContact, door: door,
            declareClockSynchronised: synchronised, mqtt: mqtt, control: control, paths: paths,
            remote: remote, nats: nats)
        configuration.fleet = fleet
        configuration.timeZone = timeZone
        configuration.fireAlarm = fireAlarm
        configuration.readers = readers
        configuration.requestToExit = requestToExit
        return configuration
    }

    // MARK: [fleet] (docs/fleet.md)

    /// `[fleet]`: off by default; on, it needs its transport (MQTT enabled, or
    /// NATS), a site ID and the site public key.
    static func readFleet(_ root: TableReader, mqtt: MQTT, transport: RemoteTransportKind) -> Fleet {
        guard let f = root.table("fleet") else { return .off }
        let enabled = f.bool("enabled", false)
        let site = f.optionalString("site_id", Check.identifier(max: 64))
        let key = f.optionalString("site_public_key") { s in
            Hex.decode(s)?.count == 32 ? nil : "expected the site's Ed25519 public key: 64 hex digits"
        }
        let subscribe = f.optionalString("subscribe", Check.topicFilter)
        let boxKeyFile = f.optionalString("box_key_file", Check.absolutePath)
        if enabled {
            if site == nil && !f.has("site_id") {
                f.fail("site_id", "is required with the fleet on: the site's name (letters, digits, '-', '_')")
            }
            if key == nil && !f.has("site_public_key") {
                f.fail("site_public_key", "is required with the fleet on: `gatewayctl fleet keygen` prints it")
            }
            if transport == .mqtt && !mqtt.enabled {
                f.fail(
                    "enabled",
                    "the fleet travels over the remote transport: set mqtt.enabled = true (or remote.transport = \"nats\")"
                )
            }
            if transport == .nats && f.has("subscribe") {
                f.fail(
                    "subscribe",
                    "is an MQTT topic filter; with NATS every door of the site is read from nats.fleet_bucket")
            }
        }
        f.finish()
        return Fleet(
            enabled: enabled && site != nil && key != nil, siteID: site ?? "",
            sitePublicKey: key.flatMap(Hex.decode) ?? [], subscribe: subscribe, boxKeyFile: boxKeyFile)
    }

    /// What a real board's relay needs said, never assumed: how its input
    /// switches it and what locks the door (issue 23). The common opto relay
    /// modules switch on while their input is low; assuming active-high there
    /// energises a strike's relay whenever the door is idle.
    static let activeLowChoices =
        "true for an opto-isolated relay module (the common 1/2/4-channel boards: on while the input is low), "
        + "false for a transistor/MOSFET stage or a relay HAT (on while the line is high); "
        + "check which before a lock is wired (board/wiring.md)"
    static let lockedLevelChoices =
        "\"deenergised\" for a fail-secure strike (locked without power), \"energised\" for a maglock (locked while powered)"

    /// `[[outputs]]`: one or more relays; names unique. On a real board each
    /// must state `active_low` and `locked_level` (no default, the file is
    /// refused without them); the simulated board defaults to active-high and
    /// de-energised.
    static func readOutputs(_ root: TableReader, _ lines: inout LineRegistry, real: Bool) -> [Output] {
        guard let tables = root.tables("outputs") else {
            if real {
                root.fail(
                    "outputs",
                    "is required on a real board: each relay as [[outputs]] with name, line, active_low and "
                        + "locked_level, none of them assumed (`gatewayctl config example --board pi`)")
            }
            Defaults.outputs.forEach { lines.claim($0.line, by: "outputs") }
            return Defaults.outputs
        }
        if tables.isEmpty { root.fail("outputs", "at least one output is needed") }
        var outputs: [Output] = []
        for t in tables {
            let name = t.optionalString("name", Check.identifier(max: 32))
            if !t.has("name") { t.fail("name", "is required") }
            let line = readLine(t, &lines)
            let output = Output(
                name: name ?? "", line: line ?? .offset(0), activeLow: t.bool("active_low", false),
                lockedLevel: t.choice("locked_level", CoilLevel.deenergised), onFire: t.optionalChoice("on_fire"))
            if real {
                let which = name.map { "output \"\($0)\": " } ?? ""
                if !t.has("active_low") {
                    t.fail(
                        "active_low", which + "is required on a real board, there is no default: " + activeLowChoices)
                }
                if !t.has("locked_level") {
                    t.fail(
                        "locked_level",
                        which + "is required on a real board, there is no default: " + lockedLevelChoices)
                }
            }
            t.finish()
            // An output with a bad line stays, so that actions naming it are not also reported.
            guard let name else { continue }
            if outputs.contains(where: { $0.name == name }) {
                t.fail("name", "another output is already named \"\(name)\"")
                continue
            }
            outputs.append(output)
        }
        // Nothing usable: the errors are reported; keep going with the default.
        return outputs.isEmpty ? Defaults.outputs : outputs
    }

    /// `[indicators.<name>]`: LED and buzzer lines, named as patterns name them.
    static func readIndicators(_ root: TableReader, _ lines: inout LineRegistry) -> [IndicatorLine] {
        guard let table = root.table("indicators") else {
            Defaults.indicators.forEach { lines.claim($0.line, by: "indicators.\($0.name)") }
            return Defaults.indicators
        }
        var indicators: [IndicatorLine] = []
        for name in table.keys {
            guard let t = table.table(name) else { continue }
            if let why = Check.identifier(max: 32)(name) { table.fail(name, "bad indicator name: " + why) }
            let line = readLine(t, &lines)
            let activeLow = t.bool("active_low", false)
            t.finish()
            if let line { indicators.append(IndicatorLine(name: name, line: line, activeLow: activeLow)) }
        }
        table.finish()
        return indicators
    }

    static func readInput(_ t: TableReader, defaults: Input?, _ lines: inout LineRegistry, contact: Bool) -> Input {
        let line: LineRef?
        if let defaults, !t.has("line") {
            _ = t.node("line")
            lines.claim(defaults.line, by: t.keyPath("line"))
            line = defaults.line
        } else {
            line = readLine(t, &lines)
        }
        let activeLow: Bool
        if contact {
            // A reed contact to ground with a pull-up reads high while the door is open.
            activeLow = t.choice("open_level", LineLevel.high) == .low
        } else {
            activeLow = t.bool("active_low", defaults?.activeLow ?? true)
        }
        let input = Input(
            line: line ?? .offset(0), activeLow: activeLow, bias: t.choice("bias", LineBias.pullUp),
            debounceMilliseconds: t.int("debounce_ms", 30, 0...1000))
        t.finish()
        return input
    }

    /// `line`: an offset (`17`, or `"17"`) or a line name (`"GPIO17"`). Required.
    static func readLine(_ t: TableReader, _ lines: inout LineRegistry, key: String = "line") -> LineRef? {
        guard let n = t.node(key) else {
            t.fail(key, "is required: an offset on the chip (17) or a line name (\"GPIO17\")")
            return nil
        }
        let ref: LineRef
        switch n {
        case .int(let v):
            guard (0...Check.maxLineOffset).contains(v) else {
                t.fail(key, "offset \(v) is out of range 0…\(Check.maxLineOffset)")
                return nil
            }
            ref = .offset(UInt32(v))
        case .string(let s):
            if let why = Check.lineName(s) { t.fail(key, why); return nil }
            if let v = UInt32(s), s.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                guard v <= Check.maxLineOffset else {
                    t.fail(key, "offset \(v) is out of range 0…\(Check.maxLineOffset)"); return nil
                }
                ref = .offset(v)
            } else {
                ref = .name(s)
            }
        default:
            t.fail(key, "expected an offset or a line name, found \(n.typeName)")
            return nil
        }
        lines.claim(ref, by: t.keyPath(key))
        return ref
    }

    // MARK: Door

    static func readDoor(_ root: TableReader, outputs: [Output], indicators: [IndicatorLine], hasDoorContact: Bool)
        -> DoorSettings
    {
        let absoluteMs = Int(PulseLimits.absoluteMaximum.millisecondsClamped)
        let schedules = readSchedules(root)
        let d = root.table("door")
        let passageSchedule = scheduleName(d, "passage_schedule", schedules: schedules)
        var pulseMin = d?.int("pulse_min_ms", 50, 1...absoluteMs) ?? 50
        var pulseMax = d?.int("pulse_max_ms", 10_000, 1...absoluteMs) ?? 10_000
        if pulseMin > pulseMax {
            d?.fail("pulse_min_ms", "\(pulseMin) is above door.pulse_max_ms (\(pulseMax))")
            (pulseMin, pulseMax) = (50, 10_000)
        }
        let limits = PulseLimits(minimum: .milliseconds(pulseMin), maximum: .milliseconds(pulseMax))
        let quiet = d?.int("same_tag_quiet_ms", 1000, 0...60_000) ?? 1000
        let mode = d?.choice("mode", DoorMode.normal) ?? .normal
        d?.finish()

        let actions = readActions(root, outputs: outputs, limits: limits, schedules: schedules)
        let patterns = readFeedback(root, indicators: indicators)
        let lockout = readLockout(root)
        let actionExists = { (i: Int) in actions.contains { $0.index == i } }

        let b = root.table("button")
        var exitAction: ActionIndex? = 0
        if let n = b?.node("exit_action") {
            switch n {
            case .string("none"): exitAction = nil
            case .int(let i) where actionExists(i): exitAction = i
            case .int(let i): b?.fail("exit_action", "there is no action \(i)")
            default: b?.fail("exit_action", "expected an action index or \"none\", found \(n.typeName)")
            }
        }
        let minPress = b?.int("min_press_ms", 50, 0...5000) ?? 50
        var hold = b?.int("hold_ms", 5000, 500...60_000) ?? 5000
        if hold <= minPress {
            b?.fail("hold_ms", "\(hold) must be longer than button.min_press_ms (\(minPress))")
            hold = 5000
        }
        b?.finish()

        let p = root.table("provisioning")
        var provisioningAction = p?.int("action", 0, 0...255) ?? 0
        if !actionExists(provisioningAction) {
            p?.fail("action", "there is no action \(provisioningAction)")
            provisioningAction = 0
        }
        let provisioning = ProvisioningPolicy(
            buttonArmed: p?.bool("button_armed", true) ?? true, action: provisioningAction,
            timeout: .seconds(p?.int("timeout_s", 60, 5...3600) ?? 60), protect: p?.bool("protect", false) ?? false,
            authLimit: p?.int("auth_limit", 0, 0...7) ?? 0)
        p?.finish()

        // Held-open stages, forced open (ConfigDoorContact.swift).
        let doorContact = readDoorContact(root, hasDoorContact: hasDoorContact)

        var settings = DoorSettings(
            outputs: outputs.map(\.definition), actions: actions, pulseLimits: limits, patterns: patterns,
            lockout: lockout,
            button: ButtonPolicy(
                exitAction: exitAction, minimumPress: .milliseconds(minPress), provisioningHold: .milliseconds(hold)),
            provisioning: provisioning, doorContact: doorContact, sameTagQuiet: .milliseconds(quiet), initialMode: mode)
        settings.schedules = schedules
        settings.passageSchedule = passageSchedule
        return settings
    }

    /// `[[actions]]`: indexes 0…N-1, each a list of steps
    /// `{ pulse = "strike", ms = 3000 }` or `{ wait_ms = 10000 }`.
    static func readActions(
        _ root: TableReader, outputs: [Output], limits: PulseLimits, schedules: [WeeklySchedule] = []
    ) -> [ActionDefinition] {
        guard let tables = root.tables("actions") else {
            return DoorSettings.defaultActions(output: outputs[0].name).map { action in
                var a = action
                a.steps = a.steps.map { step in
                    guard case .pulse(let o, let d) = step else { return step }
                    return .pulse(output: o, duration: limits.clamp(d))
                }
                return a
            }
        }
        if tables.isEmpty { root.fail("actions", "at least one action is needed") }
        let minMs = Int(limits.minimum.millisecondsClamped), maxMs = Int(limits.maximum.millisecondsClamped)
        var actions: [(ActionDefinition, TableReader)] = []
        for t in tables {
            let index = t.optionalInt("index", 0...255)
            if !t.has("index") { t.fail("index", "is required (0…N-1)") }
            let name = t.string("name", "action \(index ?? 0)", Check.text(max: 64))
            let schedule = scheduleName(t, "schedule", schedules: schedules)
            let credentials = readCredentials(t)
            let approval = readApproval(t)
            let lockdownExempt = t.bool("lockdown_exempt", false)
            let passback = readPassback(t, fileHasReaders: root.has("readers"))
            var steps: [OutputStep] = []
            if let stepTables = t.tables("steps") {
                if stepTables.isEmpty { t.fail("steps", "at least one step is needed") }
                if stepTables.count > 32 { t.fail("steps", "at most 32 steps") }
                for s in stepTables {
                    if s.has("pulse") && s.has("wait_ms") {
                        _ = s.node("wait_ms")
                        s.fail("wait_ms", "a step either pulses an output or waits, not both")
                    }
                    if s.has("pulse") {
                        let output = s.optionalString("pulse") { n in
                            outputs.contains { $0.name == n }
                                ? nil
                                : "there is no output named \"\(n)\" (outputs: \(outputs.map(\.name).joined(separator: ", ")))"
                        }
                        let ms = s.optionalInt("ms", minMs...maxMs)
                        if !s.has("ms") {
                            s.fail(
                                "ms",
                                "is required: the pulse length (\(minMs)…\(maxMs), door.pulse_min_ms…door.pulse_max_ms)"
                            )
                        }
                        if let output, let ms { steps.append(.pulse(output: output, duration: .milliseconds(ms))) }
                    } else if s.has("wait_ms") {
                        if let ms = s.optionalInt("wait_ms", 1...3_600_000) { steps.append(.wait(.milliseconds(ms))) }
                    } else {
                        _ = s.node("ms")
                        s.sink.add(s.path, "a step is { pulse = \"OUTPUT\", ms = N } or { wait_ms = N }")
                    }
                    s.finish()
                }
            } else {
                t.fail("steps", "is required: [{ pulse = \"\(outputs[0].name)\", ms = 3000 }]")
            }
            t.finish()
            guard let index else { continue }
            if let other = actions.first(where: { $0.0.index == index }) {
                t.fail("index", "\(index) is also \(other.1.keyPath("index"))")
                continue
            }
            var action = ActionDefinition(
                index: index, name: name, steps: steps, schedule: schedule, approval: approval)
            action.credentials = credentials
            action.lockdownExempt = lockdownExempt
            action.passback = passback
            actions.append((action, t))
        }
        for (a, t) in actions where a.index >= actions.count {
            t.fail(
                "index",
                "\(a.index) leaves a gap: \(actions.count) action\(actions.count == 1 ? "" : "s") take\(actions.count == 1 ? "s" : "") indexes 0…\(actions.count - 1)"
            )
        }
        return actions.map(\.0).sorted { $0.index < $1.index }
    }

    /// `[feedback.<pattern>]` overrides the stock pattern's steps, repeat or
    /// priority. Stock patterns keep only the lines that are configured, so a
    /// board without a buzzer still blinks.
    static func readFeedback(_ root: TableReader, indicators: [IndicatorLine]) -> [FeedbackKind: FeedbackPattern] {
        let names = Set(indicators.map(\.name))
        var patterns = FeedbackPattern.defaultPatterns
        if !names.isSuperset(of: [Indicator.green, Indicator.red, Indicator.buzzer]) {
            patterns = patterns.mapValues { p in
                FeedbackPattern(
                    steps: p.steps.map { PatternStep(on: $0.on.intersection(names), duration: $0.duration) },
                    repeats: p.repeats, priority: p.priority)
            }
        }
        guard let f = root.table("feedback") else { return patterns }
        for key in f.keys {
            guard let kind = FeedbackKind(rawValue: key) else { continue }
            guard let t = f.table(key), var pattern = patterns[kind] else { continue }
            if let steps = t.tables("steps") {
                if steps.isEmpty { t.fail("steps", "at least one step is needed") }
                if steps.count > 64 { t.fail("steps", "at most 64 steps") }
                pattern.steps = steps.map { s in
                    let on = s.stringList("on", []) { n in
                        names.contains(n)
                            ? nil
                            : "there is no indicator named \"\(n)\" (indicators: \(indicators.map(\.name).joined(separator: ", ")))"
                    }
                    let ms = s.int("ms", 100, 1...60_000)
                    if !s.has("ms") { s.fail("ms", "is required (1…60000)") }
                    s.finish()
                    return PatternStep(on: Set(on), duration: .milliseconds(ms))
                }
            }
            pattern.repeats = t.bool("repeat", pattern.repeats)
            pattern.priority = t.int("priority", pattern.priority, 0...100)
            t.finish()
            patterns[kind] = pattern
        }
        for key in f.keys where FeedbackKind(rawValue: key) == nil {
            _ = f.node(key)
            f.fail(key, "unknown pattern (patterns: \(FeedbackKind.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        f.finish()
        return patterns
    }

    static func readLockout(_ root: TableReader) -> LockoutPolicy {
        let t = root.table("lockout")
        let duration = t?.int("duration_s", 30, 1...86_400) ?? 30
        var cap = t?.int("cap_s", 300, 1...86_400) ?? 300
        if cap < duration {
            t?.fail("cap_s", "\(cap) is below lockout.duration_s (\(duration))")
            cap = duration
        }
        let policy = LockoutPolicy(
            enabled: t?.bool("enabled", true) ?? true, perTagThreshold: t?.int("per_tag_threshold", 3, 1...100) ?? 3,
            globalThreshold: t?.int("global_threshold", 10, 1...1000) ?? 10,
            window: .seconds(t?.int("window_s", 60, 1...86_400) ?? 60), duration: .seconds(duration), cap: .seconds(cap)
        )
        t?.finish()
        return policy
    }

    // MARK: MQTT

    static func readMQTT(_ root: TableReader, deviceID: String, actions: [ActionDefinition]) -> MQTT {
        let m = root.table("mqtt")
        let enabled = m?.bool("enabled", false) ?? false
        let t = m?.table("tls")
        let tls = MQTT.TLS(
            enabled: t?.bool("enabled", true) ?? true,
            caFile: t?.optionalString("ca_file", Check.absolutePath),
            caDirectory: t?.optionalString("ca_dir", Check.absolutePath),
            certFile: t?.optionalString("cert_file", Check.absolutePath),
            keyFile: t?.optionalString("key_file", Check.absolutePath),
            insecure: t?.bool("insecure", false) ?? false)
        if let t, t.has("cert_file") != t.has("key_file") {
            t.fail(
                t.has("cert_file") ? "key_file" : "cert_file",
                "is required with the other: the client certificate and its key go together")
        }
        if enabled && tls.enabled && !(t?.has("ca_file") ?? false) && !(t?.has("ca_dir") ?? false) {
            root.sink.add(
                "mqtt.tls.ca_file",
                "is required with TLS on: set ca_file or ca_dir (or mqtt.tls.enabled = false for a plain-TCP broker)")
        }
        t?.finish()

        let c = m?.table("commands")
        let compatTopics = c?.stringList("compat_topics", [], Check.topic) ?? []
        let tolerance = c?.int("tolerance_s", 5, 1...Int(CommandJudge.maximumTolerance)) ?? 5
        var mapping = CommandJudge.defaultMapping.filter { _, target in
            guard case .action(let a) = target else { return true }
            return actions.contains { $0.index == a }
        }
        if let table = c?.table("mapping") {
            mapping = [:]
            for key in table.keys {
                guard let n = table.node(key) else { continue }
                guard let number = Int(key), (0...9999).contains(number),
                    key.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
                else {
                    table.fail(key, "a command number 0…9999 is expected as the key")
                    continue
                }
                switch n {
                case .string("report"): mapping[number] = .report
                case .int(let a) where actions.contains(where: { $0.index == a }): mapping[number] = .action(a)
                case .int(let a): table.fail(key, "there is no action \(a)")
                default: table.fail(key, "expected an action index or \"report\", found \(n.typeName)")
                }
            }
            table.finish()
        }
        c?.finish()

        var mqtt = MQTT(
            enabled: enabled,
            host: m?.string("host", "localhost", Check.hostName) ?? "localhost",
            port: m?.int("port", tls.enabled ? 8883 : 1883, 1...65_535) ?? (tls.enabled ? 8883 : 1883),
            clientID: m?.string("client_id", deviceID, Check.text(max: 128)) ?? deviceID,
            protocolVersion: m?.choice("protocol", MQTTProtocol.v311) ?? .v311,
            tls: tls,
            keepaliveSeconds: m?.int("keepalive_s", 60, 5...3600) ?? 60,
            topicPrefix: m?.string("topic_prefix", "doorgateway/\(deviceID)", Check.topic) ?? "doorgateway/\(deviceID)",
            compatCommandTopics: compatTopics, commandMapping: mapping, toleranceSeconds: tolerance,
            uidInEvents: m?.choice("uid_in_events", UIDInEvents.hmac) ?? .hmac,
            homeAssistantDiscovery: m?.bool("home_assistant_discovery", true) ?? true,
            homeAssistantOpen: m?.bool("home_assistant_open", false) ?? false,
            outboxLimit: m?.int("outbox_limit", 10_000, 100...1_000_000) ?? 10_000,
            telemetrySeconds: m?.int("telemetry_s", 60, 10...86_400) ?? 60,
            homeAssistantName: m?.optionalString("home_assistant_name", Check.text(max: 64)),
            homeAssistantArea: m?.optionalString("home_assistant_area", Check.text(max: 64)),
            labelInEvents: m?.bool("label_in_events", false) ?? false,
            username: m?.optionalString("username", Check.text(max: 256)),
            passwordFile: m?.optionalString("password_file", Check.secretFile))
        mqtt.homeAssistantAdmin = MQTT.readHomeAssistantAdmin(m)
        if let m, m.has("password_file"), !m.has("username") {
            m.fail("username", "is required with password_file: the broker matches the password to a user")
        }
        mqtt.allowPasswordOverPlainMulticastDNS = m?.bool("allow_password_over_plain_mdns", false) ?? false
        if let m, mqtt.sendsPasswordOverPlainMulticastDNS, !mqtt.allowPasswordOverPlainMulticastDNS {
            // Issue 32 L-6: the CONNECT carrying it goes to whatever address
            // the first multicast DNS answer names.
            m.fail(
                "password_file",
                "would be sent over plain TCP to \(mqtt.host), a name found by multicast DNS: whoever on the "
                    + "network answers the query for it first receives the password. Use TLS ([mqtt.tls], the "
                    + "broker's certificate checked by name), or a DNS name or address; to send it all the same, "
                    + "set [mqtt] allow_password_over_plain_mdns = true")
        }
        m?.finish()
        return mqtt
    }
}

/// Every configured line once: two users of one line would fail at request
/// time (EBUSY); here the second is named.
struct LineRegistry {
    let sink: IssueSink
    private var owners: [LineRef: String] = [:]
    init(sink: IssueSink) { self.sink = sink }

    mutating func claim(_ line: LineRef, by key: String) {
        if let owner = owners[line] {
            sink.add(key, "line \(line) is already used by \(owner)")
        } else {
            owners[line] = key
        }
    }
}

/// Value checks: nil when fine, else why not.
enum Check {
    /// GPIO line offsets are `unsigned int`; no chip has anywhere near this many.
    static let maxLineOffset = 4095

    /// TOML's bare-key characters, also the rule for names here.
    static func isBare(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
    }

    static func identifier(max: Int) -> (String) -> String? {
        { s in
            guard !s.isEmpty, s.count <= max else { return "must be 1…\(max) characters" }
            guard s.utf8.allSatisfy({ Check.isBare($0) }) else {
                return "\"\(s)\" may hold only letters, digits, '-' and '_'"
            }
            return nil
        }
    }

    static func text(max: Int) -> (String) -> String? {
        { s in
            guard !s.isEmpty, s.count <= max else { return "must be 1…\(max) characters" }
            guard !s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                return "must not hold control characters"
            }
            return nil
        }
    }

    static func absolutePath(_ s: String) -> String? {
        if let why = text(max: 4096)(s) { return why }
        return s.hasPrefix("/") ? nil : "\"\(s)\" must be an absolute path"
    }

    /// A file holding a secret: an absolute path, or the bare name of a
    /// systemd credential (`LoadCredential=NAME:…`, read from `$CREDENTIALS_DIRECTORY/NAME`).
    static func secretFile(_ s: String) -> String? {
        if s.hasPrefix("/") { return absolutePath(s) }
        guard !s.isEmpty, s.utf8.count <= 64, s.first != ".",
            s.utf8.allSatisfy({ isBare($0) || $0 == UInt8(ascii: ".") })
        else {
            return "\"\(s)\": an absolute path, or the name of a systemd credential (letters, digits, '.', '-', '_')"
        }
        return nil
    }

    /// `sun_path` holds 108 bytes with the terminating NUL.
    static func socketPath(_ s: String) -> String? {
        if let why = absolutePath(s) { return why }
        return s.utf8.count <= 107 ? nil : "a socket path is at most 107 bytes"
    }

    static func simulator(_ s: String) -> String? {
        s == "spawn" ? nil : socketPath(s).map { "\"spawn\" or a pn532-sim control socket: " + $0 }
    }

    /// libnfc connstrings for the PN532 drivers: `pn532_i2c:DEVICE`,
    /// `pn532_spi:DEVICE[:SPEED]`, `pn532_uart:DEVICE[:BAUD]`.
    static func connstring(_ s: String) -> String? {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        let usage = "expected pn532_i2c:/dev/i2c-1, pn532_spi:/dev/spidev0.0[:500000] or pn532_uart:/dev/ttyS1[:115200]"
        guard parts.count >= 2, ["pn532_i2c", "pn532_spi", "pn532_uart"].contains(parts[0]), parts[1].hasPrefix("/"),
            text(max: 1023)(s) == nil
        else { return "\"\(s)\": \(usage)" }
        if parts.count == 3, parts[0] != "pn532_i2c", let n = Int(parts[2]), n > 0 { return nil }
        return parts.count == 2 ? nil : "\"\(s)\": \(usage)"
    }

    /// Kernel GPIO line names are at most 31 characters (`GPIO_MAX_NAME_SIZE` 32).
    static func lineName(_ s: String) -> String? {
        guard !s.isEmpty, s.utf8.count <= 31 else { return "a line name is 1…31 characters" }
        guard !s.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            return "a line name has no spaces or control characters"
        }
        return nil
    }

    static func hostName(_ s: String) -> String? {
        guard !s.isEmpty, s.utf8.count <= 253 else { return "must be 1…253 characters" }
        return s.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
            ? "a host has no spaces or control characters" : nil
    }

    /// An MQTT topic to publish or subscribe to exactly: no wildcards, no empty levels at the ends.
    static func topic(_ s: String) -> String? {
        if let why = text(max: 256)(s) { return why }
        if s.contains("+") || s.contains("#") { return "\"\(s)\": no MQTT wildcards (+, #) here" }
        if s.hasPrefix("/") || s.hasSuffix("/") { return "\"\(s)\" must not start or end with '/'" }
        return nil
    }

    /// An MQTT topic filter: `+` and `#` only as whole levels, `#` last.
    static func topicFilter(_ s: String) -> String? {
        let levels = s.split(separator: "/", omittingEmptySubsequences: false)
        guard !s.isEmpty, s.utf8.count <= 256, !s.contains("\u{0}") else { return "expected a topic filter" }
        for (i, level) in levels.enumerated() {
            if level.contains("#") && (level != "#" || i != levels.count - 1) { return "'#' must be the last level" }
            if level.contains("+") && level != "+" { return "'+' must be a whole level" }
        }
        return nil
    }

    /// useradd's rule for group names.
    static func groupName(_ s: String) -> String? {
        guard let first = s.utf8.first, s.utf8.count <= 32,
            (first >= UInt8(ascii: "a") && first <= UInt8(ascii: "z")) || first == UInt8(ascii: "_"),
            s.utf8.allSatisfy({
                ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z"))
                    || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "_")
                    || $0 == UInt8(ascii: "-")
            })
        else { return "\"\(s)\" is not a group name (lower-case letters, digits, '-' and '_', 1…32)" }
        return nil
    }
}
