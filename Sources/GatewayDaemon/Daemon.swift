import DoorCore
import DoorIO
import GatewayControl
import Glibc
import Dispatch
import GatewayConfig
import GatewayMQTT
import GatewayNATS
import GatewayStore
import Logging
import Synchronization

/// The running daemon, the composition root: makes the adapters and the
/// services that own them (the door runtime, the reader, RemoteService,
/// ControlService) and runs them as one ordered list (DaemonServices.swift);
/// it handles the signals, the reload and the stop.
///
/// What `init` makes is a `let`. The timers made later, while starting, are
/// in `wiring`, a `Mutex` held only to read or replace those references, never
/// across a call to one of them.
final class Daemon: Sendable {
    let log: Logger
    let configPath: String
    let environment: [String: String]
    /// The configuration in effect (its one owner; a reload changes it on the door queue).
    let live: LiveConfiguration
    var configuration: GatewayConfiguration { live.current }
    let board: DoorBoard
    let simulatedBoard: SimulatedBoard?
    let store: GatewayStore
    let runtime: DoorRuntime
    let simulator: SimulatorChild?
    let readerLoop: ReaderLoop
    /// The OSDP readers of `[[readers]]` (OSDPReaders.swift, issue 35).
    let osdpReaders: OSDPReaders
    /// The outdoor readers' services (OSDPDoor.swift, OutdoorReaders.swift).
    let outdoor: OutdoorReaderService
    let simulatorControl: String?
    /// SIGTERM/SIGINT/SIGHUP are handled here, one at a time.
    private let signalQueue = DispatchQueue(label: "gatewayd.signals")
    /// Makes each event's outbox message once a transport is configured, so the
    /// audit row and the message commit in one transaction.
    let eventOutbox = EventOutbox()
    let auditWriter: AuditWriter
    /// The remote transport and what is made with it (RemoteService.swift).
    let remote: RemoteService
    /// The control socket and its methods (ControlService.swift).
    let control: ControlService
    /// The watchdog and the audit log's timers (TimerService.swift).
    let timers: TimerService
    let notify = SDNotify.fromEnvironment()
    /// The door's services in order (DaemonServices.swift): started by `run`,
    /// stopped in reverse by `stop` and `stopAfterFailure`.
    let services = ServiceList()

    /// The dispatch sources the daemon keeps running (each stops when cancelled or dropped).
    enum Source: Hashable {
        case signal(Int32)
    }
    private struct Wiring {
        var sources: [Source: any DispatchSourceProtocol] = [:]
    }
    private let wiring = Mutex(Wiring())

    /// Keeps the source `make` makes (set up and activated) running under
    /// `name`; one kept before under it is cancelled. `make` runs inside the
    /// lock (a Dispatch source is not Sendable: one made outside could not be
    /// handed in), so it only makes the source: it must not touch the wiring.
    func keep(_ name: Source, _ make: () -> any DispatchSourceProtocol) {
        wiring.withLock { $0.sources.updateValue(make(), forKey: name)?.cancel() }
    }

    /// Cancels the source kept under `name`, if any.
    func cancel(_ name: Source) {
        wiring.withLock { $0.sources.removeValue(forKey: name)?.cancel() }
    }
    let started: MonotonicInstant

    /// Gives the store the audit key (docs/security.md "L4"), once, and
    /// drops it. A missing or wrong key leaves the door running with the
    /// log chained unkeyed, and says so (a failed component is a status,
    /// not a door that stays shut).
    static func keyAuditLog(_ store: GatewayStore, environment: [String: String], log: Logger) {
        do {
            guard var key = try AuditKeyFile.forDaemon(environment: environment) else {
                log.warning(
                    "audit: no audit key (\(AuditKeyFile.variable) unset): the log is chained unkeyed, so whoever can write the database can rewrite it unseen"
                )
                return
            }
            defer { AuditKeyFile.wipe(&key) }
            switch try store.useAuditKey(key, now: Int64(time(nil))) {
            case .started(let first):
                log.notice(
                    "audit: keyed from row \(first) on (key fingerprint \(GatewayStore.auditKeyFingerprint(key)))")
            case .continued(let first):
                log.info(
                    "audit: keyed since row \(first) (key fingerprint \(GatewayStore.auditKeyFingerprint(key)))")
            }
        } catch {
            log.error("audit: \(error); new rows are chained unkeyed and fail gatewayctl log --verify as root")
        }
    }

    /// Telemetry's `audit_head` (docs/security.md "L4"): the newest audit
    /// row's id and chain hash, and whether it is keyed, so a log cut off or
    /// rewritten on the box no longer matches what the broker heard.
    static func auditHeadField(_ store: GatewayStore) -> (String, JSONValue) {
        guard let head = try? store.auditHead() else { return ("audit_head", .null) }
        return (
            "audit_head",
            .object([
                ("row", .int(Int(head.id))), ("hash", .string(Hex.encode(head.hash))), ("keyed", .bool(head.keyed)),
            ])
        )
    }

    init(configuration: GatewayConfiguration, configPath: String, environment: [String: String], log: Logger) throws {
        started = MonotonicClock.now()
        self.live = LiveConfiguration(configuration)
        self.configPath = configPath
        self.environment = environment
        self.log = log
        log.info("starting gatewayd \(GatewayVersion.string) with \(configPath)")
        for line in configuration.summary { log.info("config: \(line)") }

        // 1. The board first: every output is requested at its locked level.
        switch configuration.board {
        case .real:
            if let warning = RelaySafety.persistWarning() { log.warning("\(warning)") }
            board = try GPIOBoard(configuration.boardDescription, logger: log)
            simulatedBoard = nil
        case .sim:
            let sim = try SimulatedBoard(configuration.boardDescription, logger: log)
            board = sim
            simulatedBoard = sim
        }
        board.lockAll()

        // 2. The store, its keys and the configured actions.
        try Files.createDirectories(configuration.paths.runtimeDirectory)
        store = try GatewayStore(stateDirectory: configuration.paths.stateDirectory)
        try store.syncActions(configuration.door.actions)
        _ = try store.ensureDeviceKey(now: Int64(time(nil))) { try Crypto.randomBytes(32) }
        Self.keyAuditLog(store, environment: environment, log: log)

        // The door's zone (docs/policy.md): a zone that cannot be read stops
        // the start, as a bad configuration does, rather than judging
        // schedules in the wrong time.
        let zone = try Zones.load(configuration.timeZone)
        log.info("time zone \(zone.name)")
        auditWriter = AuditWriter(store: store, outbox: eventOutbox, log: log)

        // 3. The reader: a pn532-sim child on the simulated board unless one is named.
        var connstring = configuration.reader.connstring
        if configuration.board == .sim {
            if configuration.reader.simulator == "spawn" {
                let child = try SimulatorChild.start(runtimeDirectory: configuration.paths.runtimeDirectory)
                simulator = child
                simulatorControl = child.control
                connstring = child.connstring
                log.info("pn532-sim started: \(connstring), control \(child.control)")
            } else {
                simulator = nil
                simulatorControl = configuration.reader.simulator
                if connstring == GatewayConfiguration.Defaults.connstring {
                    throw DaemonError.startup(
                        "reader.connstring must name the pn532-sim pty when reader.simulator is a socket path")
                }
            }
        } else {
            simulator = nil
            simulatorControl = nil
        }
        let port = LibnfcReaderPort(
            connstring: connstring, authLimit: { [live] in live.current.door.provisioning.authLimit }, log: log,
            ev2Issue: { [store, live] in
                NTAG424Judge.ev2Issue(
                    uid: $0, registry: StoreRegistry(store: store), actions: live.current.door.actions)
            }
        ) { [store, log] in
            do { return try store.ntag424SiteKey()?.key } catch {
                log.error("NTAG 424 site key unreadable, 424 tags are denied: \(error)")
                return nil
            }
        }
        readerLoop = ReaderLoop(reader: port, log: log)
        runtime = DoorRuntime(
            live: live, board: board, store: store, registry: StoreRegistry(store: store), reader: readerLoop,
            audit: { [auditWriter] event, time, detail, lastSeen in
                auditWriter.write(event, at: time, detail: detail, lastSeen: lastSeen)
            },
            flushAudit: { [auditWriter] in auditWriter.flush() },
            log: log, zone: zone)
        board.setInputHandler { [runtime] in runtime.boardInput($0) }
        osdpReaders = OSDPReaders(readers: configuration.readers, keys: StoreOSDPKeys(store: store), log: log)
        let parts = ServiceParts(
            log: log, live: live, environment: environment, store: store, runtime: runtime,
            auditWriter: auditWriter, started: started)
        outdoor = OutdoorReaderService(parts: parts, osdpReaders: osdpReaders)
        remote = RemoteService(parts: parts, eventOutbox: eventOutbox)
        control = ControlService(
            parts: parts, readerLoop: readerLoop, simulator: simulator, simulatedBoard: simulatedBoard,
            simulatorControl: simulatorControl, remote: remote, osdpReaders: osdpReaders, notify: notify)
        timers = TimerService(parts: parts, notify: notify)
    }

    /// A few seconds after READY (the reader probed, the first connection
    /// made): the start-up pages of the binary go
    /// back (StartupPages). Logged with RSS before and after.
    private func giveBackStartupMemory(after delay: DispatchTimeInterval) {
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay) { [log] in
            let before = Self.residentKiB()
            let dropped = StartupPages.drop()
            let after = Self.residentKiB()
            let what = dropped.map { "\($0.regions) mappings, \($0.bytes >> 20) MiB mapped" } ?? "smaps unreadable"
            let rss = "\(before.map { "\($0 / 1024)" } ?? "?") → \(after.map { "\($0 / 1024)" } ?? "?") MiB"
            log.info("memory: gave back the binary's start-up pages (\(what)); RSS \(rss)")
        }
    }

    /// VmRSS in KiB (nil: /proc unreadable).
    static func residentKiB() -> Int? {
        guard let bytes = Files.contents("/proc/self/status") else { return nil }
        let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { $0.split(separator: " ").dropFirst().first.flatMap { Int($0) } }
    }

    func run() -> Never {
        installSignals()
        // Made (not connected) before the door's first event ("started"), so it is announced too.
        remote.prepare()
        services.set(makeServices())
        // A stop began during the start (a signal, a control socket it cannot own): it exits the process.
        guard services.start() else { while true { pause() } }
        let ms = MonotonicClock.now().since(started).millisecondsClamped
        log.info("ready in \(ms) ms")
        notify.send("READY=1\nSTATUS=door ready")
        giveBackStartupMemory(after: .seconds(3))
        // Not dispatchMain(): it ends the main thread with pthread_exit(), whose
        // forced unwind makes libgcc index every FDE of the static binary at
        // once (2.5 MB of .eh_frame read, the sorted index on the heap), for
        // a thread that has nothing left to do. Everything runs on the
        // daemon's own queues; the main thread only waits.
        while true { pause() }
    }

    private func installSignals() {
        for sig in [SIGTERM, SIGINT, SIGHUP] {
            signal(sig, SIG_IGN)
            keep(.signal(sig)) {
                let source = DispatchSource.makeSignalSource(signal: sig, queue: signalQueue)
                source.setEventHandler { [self] in
                    if sig == SIGHUP { reload() } else { stop(signal: sig) }
                }
                source.activate()
                return source
            }
        }
    }

    /// SIGTERM/SIGINT: outputs locked first, then the services stop (the
    /// door runtime first, then the rest in reverse, the outputs locked last).
    func stop(signal sig: Int32) -> Never {
        log.notice("signal \(sig): stopping")
        notify.send("STOPPING=1")
        // First, from this thread: a door queue that is stuck (a store write
        // that does not return) must not keep the strike from locking.
        board.lockAll()
        stopServices(exitStatus: 0)
    }

    /// A start that cannot go on (a control socket it cannot own): the
    /// services started so far stop as in `stop`, exit status 1.
    func stopAfterFailure() -> Never {
        board.lockAll()
        stopServices(exitStatus: 1)
    }

    /// The one stop, whoever asks: a second stopper (SIGTERM while a failed
    /// start stops) waits until it ended — the audit writer flushed, the
    /// outputs locked — and the process exits once, from the thread that ran it.
    private func stopServices(exitStatus: Int32) -> Never {
        let stopped = services.stopOnce()
        guard stopped.ranHere else {
            // The thread that ran the stop exits with its status; this one waits for that.
            while true { pause() }
        }
        // Stopped before any service started (a signal during the start's first steps): lock all the same.
        if stopped.order.last != "outputs" { board.lockAll() }
        log.info("services stopped: \(stopped.order.joined(separator: ", "))")
        log.notice("stopped; outputs locked")
        exit(exitStatus)
    }

    /// SIGHUP: a valid new configuration is applied (LiveConfiguration); one
    /// that changes a setting read at start only (lines, reader, transport,
    /// fleet, control socket, paths) is refused naming each
    /// (`LiveConfiguration.restartRequired`), and so is an invalid one: the
    /// running configuration is kept whole.
    func reload() {
        let new: GatewayConfiguration
        do {
            new = try GatewayConfiguration.load(file: configPath).applying(environment: environment)
        } catch {
            log.error("reload refused, keeping the running configuration: \(error)")
            return
        }
        let refused = LiveConfiguration.restartRequired(from: configuration, to: new)
        guard refused.isEmpty else {
            let what = refused.joined(separator: ", ")
            log.error(
                "reload refused, keeping the running configuration: \(what) changed; these are read at start only: restart gatewayd to apply them (systemctl restart gatewayd)"
            )
            notify.send("STATUS=reload refused: \(what) changed; restart gatewayd")
            return
        }
        if new.board == .real, let holds = try? new.firmwareHolds(),
            holds != (try? configuration.firmwareHolds())
        {
            // gatewayd cannot write the boot partition (root-only); root carries it there.
            log.warning(
                "reload: the relays' locked levels changed: restart gatewayd, and as root run `gatewayctl config firmware --write` so config.txt holds \(holds.map(\.line).joined(separator: " ")) from power-on (it applies at the next reboot)"
            )
        }
        let zone: TimeZoneRules
        do {
            zone = try Zones.load(new.timeZone)
            try store.syncActions(new.door.actions)
        } catch {
            log.error("reload refused: \(error)")
            return
        }
        services.reloaded(new, zone: zone)
        log.notice("configuration reloaded from \(configPath)")
        notify.send("STATUS=door ready")
    }
}
