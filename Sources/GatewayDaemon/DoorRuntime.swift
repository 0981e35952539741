import CClockSync
import DoorCore
import DoorIO
import GatewayControl
import Glibc
import Dispatch
import GatewayConfig
import GatewayStore
import Logging
import Synchronization

/// Runs the pure `DoorMachine` on one serial queue (docs/design.md "Shape of the
/// program"): inputs from the reader, the board, MQTT and the control socket
/// are queued here, and the effects it returns are executed here — outputs,
/// feedback, timers, events, provisioning writes.
///
/// `queue` orders the door: every input is decided and every effect executed
/// on it, one at a time. What it changes lives in `state`, a `Mutex` held only
/// around reads and writes of it — never across a call to the board, the
/// store, a hook or another object (the lock is not recursive) — so the reads
/// from other threads (status, telemetry) are checked, not a promise. The
/// watchdog's beats have their own lock.
final class DoorRuntime: Sendable {
    let queue = DispatchQueue(label: "gatewayd.door")
    /// Where keypad entries are hashed (scrypt, KeypadDesk.verify), off `queue`:
    /// a tap at another reader is decided while a PIN is checked; the result
    /// comes back to `queue` as an input (issue 35).
    let pinQueue = DispatchQueue(label: "gatewayd.pin")
    /// The configuration in effect; a reload changes it, on `queue`.
    let live: LiveConfiguration
    var configuration: GatewayConfiguration { live.current }
    let board: DoorBoard
    let store: GatewayStore
    let log: Logger
    private let patterns: PatternDriver
    let registry: any TagRegistryView & Sendable
    /// Who is in, as the state document shows it (Passage.swift, issue 36).
    let passages = PassageBook()
    /// The reader loop provisioning writes go to (nil: none, unit tests).
    let reader: ReaderLoop?
    /// Audit sink: the store's hash-chained log (event, time, detail, and the
    /// time to save as the event's tag's `last_seen` in the row's transaction).
    let audit: @Sendable (DoorEvent, Int64, String?, Int64?) -> Void
    /// Waits until every event given to `audit` is committed (AuditWriter's
    /// own queue): `shutdown` and `committed` call it, so a stop right after a
    /// tap keeps its row.
    let flushAudit: @Sendable () -> Void
    /// First person in: the window a grant opened (FirstPersonInKeeper.swift).
    let firstPersonIn: FirstPersonInKeeper
    /// Why the store could not say whether a fire alarm holds (ControlFire.swift):
    /// audited once the door starts, released.
    let fireUnknown: String?

    /// Where the door's news goes (the remote transport, Home Assistant's
    /// admin screen): set while wiring (`setHooks`), before `start()`, but for
    /// `publishLastAccess`, set on `queue` once the transport runs.
    private struct Hooks: Sendable {
        /// Every event, after it is handed to the audit writer (MQTT's outbox).
        var publish: (@Sendable (DoorEvent, Int64) -> Void)?
        /// The device report of compat command 5.
        var publishReport: (@Sendable () -> Void)?
        /// The door's state (lock, mode, reader, last access) when it changed.
        var publishState: (@Sendable (JSONValue) -> Void)?
        /// The newest open when it changed (MQTT `…/last_access`).
        var publishLastAccess: (@Sendable (JSONValue) -> Void)?
        /// Each feedback pattern the door plays, for the OSDP readers' LED and buzzer (issue 35).
        var showFeedback: (@Sendable (FeedbackPattern) -> Void)?
    }

    /// Everything the door queue changes. Written on `queue` only (so a
    /// read-modify-write there may span two holds of the lock); read from
    /// anywhere through the accessors below.
    private struct State {
        var machine: DoorMachine
        /// The credential of the last duress entry, until its grant is seen.
        var duressUID: TagUID?
        var hooks = Hooks()
        var timers: [TimerID: DispatchSourceTimer] = [:]
        var recentEvents: [JSONValue] = []
        var counters: [String: Int] = [:]
        var readerState = ReaderHealth.starting
        var lastTag: (uid: TagUID, content: String, verdict: String)?
        /// When an output was last driven unlocked (CLOCK_MONOTONIC, shared with
        /// other processes on the machine: the tap→output benchmark reads it).
        var lastUnlock: MonotonicInstant?
        /// The NTAG 424 DNA last seen arriving, and the provisioning job the reader runs for one (NTAG424Door.swift).
        var lastNTAG424: TagUID?
        var ntag424Job: ProvisioningJob?
        var lastPublishedState: JSONValue?
        /// The newest open of any kind (time, source), from the audit log at
        /// start so a restart does not forget it (Home Assistant's "last access").
        var lastAccess: (time: Int64, source: String)?
        /// Expiry is judged no earlier than the latest time seen with the clock
        /// synchronised (DoorCore `ClockFloor`), kept in the store across restarts.
        var clockFloor: ClockFloor
        /// The floor as last saved.
        var savedClockFloor: Int64
        var floorTimer: DispatchSourceTimer?
        /// The door's time zone (docs/policy.md): schedules read local wall-clock time in it.
        var zone: TimeZoneRules
        /// The passage schedule's state last applied (nil: apply at the next tick).
        var passageApplied: Bool?
        var scheduleTimer: DispatchSourceTimer?
        /// `{name, active, next_change}` of the schedule Home Assistant is shown, from the last tick.
        var scheduleInfo: JSONValue?
        /// The outdoor readers' keypads (issue 35, OutdoorReaders.swift).
        var keypad = KeypadDesk()
        /// When the earliest keypad tick scheduled fires (nil: none).
        var keypadTickAt: MonotonicInstant?
        /// The OSDP readers' link and tamper as last reported (the state document's `readers`).
        var outdoorReaders: [String: OutdoorReaderReport] = [:]
        /// The `last_seen` of the tap being decided: not written before the relay
        /// (it decides nothing), but with the tap's first event (`record`).
        var lastSeenToSave: (uid: TagUID, time: Int64)?
        /// Set by `shutdown` before it locks the outputs: from then on the
        /// door queue runs no effect and records no event (a reader report
        /// or a tap still in flight while the daemon stops).
        var stopped = false
    }
    private let state: Mutex<State>
    /// Heartbeat of the event loop, read by the watchdog thread.
    private let beats = Mutex((requested: 0, processed: 0))

    init(
        live: LiveConfiguration, board: DoorBoard, store: GatewayStore, registry: any TagRegistryView & Sendable,
        reader: ReaderLoop? = nil, audit: @escaping @Sendable (DoorEvent, Int64, String?, Int64?) -> Void,
        flushAudit: @escaping @Sendable () -> Void = {}, log: Logger, zone: TimeZoneRules = .utc
    ) {
        self.live = live
        let configuration = live.current
        self.board = board
        self.store = store
        self.registry = registry
        self.reader = reader
        self.audit = audit
        self.flushAudit = flushAudit
        self.log = log
        firstPersonIn = FirstPersonInKeeper(stateDirectory: configuration.paths.stateDirectory, log: log)
        patterns = PatternDriver(board: board, logger: log)
        var savedClockFloor: Int64 = 0
        do {
            savedClockFloor = try store.clockFloor() ?? 0
        } catch {
            log.error("clock floor not read; expiry is judged by the wall clock alone until it is saved: \(error)")
        }
        var lastAccess: (time: Int64, source: String)?
        do {
            let kinds = DoorEvent.accessKinds.map(\.rawValue)
            lastAccess = try store.newestAudit(kinds: kinds, limit: 64).lazy.compactMap { row in
                DoorEvent.accessSource(kind: row.kind, action: row.action, source: row.source).map { (row.time, $0) }
            }.first
        } catch {
            log.error("last access not read from the audit log: \(error)")
        }
        var door = Self.withPersistedLockdown(configuration.door, store: store, log: log)
        fireUnknown = Self.restoreFire(
            &door, store: store, canAlarm: configuration.fireAlarm != nil || configuration.fleet.enabled, log: log)
        state = Mutex(
            State(
                machine: DoorMachine(settings: door),
                lastAccess: lastAccess,
                clockFloor: ClockFloor(unix: savedClockFloor), savedClockFloor: savedClockFloor, zone: zone))
    }

    /// Where events, the state document and reports go (while wiring, before `start()`).
    func setHooks(
        publish: @escaping @Sendable (DoorEvent, Int64) -> Void, publishState: @escaping @Sendable (JSONValue) -> Void,
        publishReport: @escaping @Sendable () -> Void
    ) {
        state.withLock {
            $0.hooks.publish = publish
            $0.hooks.publishState = publishState
            $0.hooks.publishReport = publishReport
        }
    }

    /// Where the door's feedback patterns go besides its own lines (the OSDP readers).
    func setShowFeedback(_ hook: @escaping @Sendable (FeedbackPattern) -> Void) {
        state.withLock { $0.hooks.showFeedback = hook }
    }

    /// Where the newest open goes (on `queue`, once the transport runs).
    func setPublishLastAccess(_ hook: @escaping @Sendable (JSONValue) -> Void) {
        state.withLock { $0.hooks.publishLastAccess = hook }
    }

    // MARK: What the door queue keeps (each read under the lock)

    var machine: DoorMachine { state.withLock { $0.machine } }
    var recentEvents: [JSONValue] { state.withLock { $0.recentEvents } }
    var counters: [String: Int] { state.withLock { $0.counters } }
    /// The reader's health as status and telemetry print it.
    var readerHealth: String { state.withLock { $0.readerState.description } }
    var lastTag: (uid: TagUID, content: String, verdict: String)? { state.withLock { $0.lastTag } }
    var lastUnlock: MonotonicInstant? { state.withLock { $0.lastUnlock } }
    var lastAccess: (time: Int64, source: String)? { state.withLock { $0.lastAccess } }
    var clockFloor: ClockFloor { state.withLock { $0.clockFloor } }
    var zone: TimeZoneRules { state.withLock { $0.zone } }
    var scheduleInfo: JSONValue? { state.withLock { $0.scheduleInfo } }
    /// The NTAG 424 provisioning the reader runs (NTAG424Door.swift; set on `queue`).
    var ntag424Job: ProvisioningJob? {
        get { state.withLock { $0.ntag424Job } }
        set { state.withLock { $0.ntag424Job = newValue } }
    }

    // MARK: Clock

    func now() -> Now {
        Now(
            monotonic: MonotonicClock.now(),
            wall: WallClock(unixSeconds: Int64(time(nil)), synchronised: clockSynchronised()))
    }

    /// `adjtimex(2)`: synchronised unless STA_UNSYNC is set (or the
    /// configuration declares the clock synchronised).
    func clockSynchronised() -> Bool {
        if configuration.declareClockSynchronised { return true }
        return door_clock_synchronised() == 1
    }

    // MARK: Inputs

    func start() {
        queue.async {
            // A stop that came while the daemon started: nothing moves after it.
            guard !self.isStopped else { return }
            let now = self.now()
            self.execute(self.state.withLock { $0.machine.start(at: now) })
            if let why = self.fireUnknown { self.recordFireUnknown(why) }
            // The floor as the door starts, on the queue's first turn: a
            // timer firing "now" ran this store write whenever Dispatch got to
            // it — under load, between a tap's relay and its pulse's end.
            self.saveClockFloor()
        }
        // Each timer is made inside the lock: a Dispatch source is not
        // Sendable, so one made outside could not be handed to `state`.
        let queue = queue
        state.withLock {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + .seconds(60), repeating: .seconds(60))
            timer.setEventHandler { [weak self] in self?.saveClockFloor() }
            timer.activate()
            $0.floorTimer = timer
        }
        queue.async { self.scheduleTick() }
    }

    // MARK: Schedules (docs/policy.md)

    var accessPolicy: AccessPolicy { AccessPolicy(schedules: configuration.door.schedules, zone: zone) }

    /// The schedule the state document shows: the passage schedule, else
    /// the first action's that has one.
    var shownSchedule: String? {
        configuration.door.passageSchedule ?? configuration.door.actions.first { $0.schedule != nil }?.schedule
    }

    /// At each edge of the passage schedule, the mode follows it: passage
    /// inside its windows, normal outside. A mode set by hand meanwhile
    /// stays until the next edge; lockdown is never changed by a schedule;
    /// with the clock unsynchronised the schedule reads as outside (normal
    /// mode: fail closed). Re-runs at the next edge, and at least every minute.
    private func scheduleTick() {
        guard !isStopped else { return }
        state.withLock {
            $0.scheduleTimer?.cancel()
            $0.scheduleTimer = nil
        }
        guard let name = shownSchedule, let schedule = accessPolicy.schedule(named: name) else {
            state.withLock { $0.scheduleInfo = nil }
            stateChanged()
            return
        }
        let zone = self.zone
        let wall = now().wall
        let active = wall.synchronised && schedule.isActive(at: wall.unixSeconds, zone: zone)
        let next = wall.synchronised ? schedule.nextChange(after: wall.unixSeconds, zone: zone) : nil
        let info = JSONValue.object([
            ("name", .string(name)), ("active", .bool(active)),
            ("next_change", .optional(next.map(UTCTime.iso8601))),
            ("clock_synchronised", .bool(wall.synchronised)),
        ])
        let isPassage = name == configuration.door.passageSchedule
        // First person in: the window holds passage once a grant opened it.
        let passage = active && firstPersonIn.passage(schedule, active: active, windowEnd: next)
        let target: DoorMode = passage ? .passage : .normal
        let change = state.withLock { s -> Bool in
            s.scheduleInfo = info
            guard isPassage, s.passageApplied != passage else { return false }
            s.passageApplied = passage
            return s.machine.mode != .lockdown && s.machine.mode != target
        }
        if change { handle(.admin(.scheduledMode(target))) }
        stateChanged()
        let wait = max(1, min(60, (next ?? .max) - wall.unixSeconds))
        let queue = queue
        state.withLock {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + .seconds(Int(wait)), leeway: .milliseconds(50))
            timer.setEventHandler { [weak self] in self?.scheduleTick() }
            timer.activate()
            $0.scheduleTimer = timer
        }
    }

    /// A valid grant (on `queue`): with a first-person-in passage schedule,
    /// inside its window, the window opens and the tick applies passage. Not
    /// a grant in lockdown (an exempt action: the responder does not open the
    /// day) nor one under duress (the person forced in does not either).
    private func firstPersonInGrant(_ event: DoorEvent) {
        let (mode, duress) = state.withLock { s -> (DoorMode, Bool) in
            let forced = s.duressUID != nil && s.duressUID == event.uid
            if forced { s.duressUID = nil }
            return (s.machine.mode, forced)
        }
        guard mode != .lockdown, !duress else { return }
        guard let name = configuration.door.passageSchedule, let schedule = accessPolicy.schedule(named: name),
            schedule.firstPersonIn
        else { return }
        let wall = now().wall
        guard wall.synchronised, schedule.isActive(at: wall.unixSeconds, zone: zone) else { return }
        let end = schedule.nextChange(after: wall.unixSeconds, zone: zone)
        if firstPersonIn.granted(schedule, active: true, windowEnd: end) {
            log.info("first person in: schedule \(name) opened until its window ends")
            // After this batch of effects: the grant's own run first.
            queue.async { [self] in scheduleTick() }
        }
    }

    func submit(_ input: DoorInput) {
        queue.async { if !self.isStopped { self.handle(input) } }
    }

    /// Runs `body` on the door queue and returns its result (control requests).
    func sync<T>(_ body: () throws -> T) rethrows -> T { try queue.sync(execute: body) }

    /// On `queue`: the machine decides `input` (under the lock), then its
    /// effects run (outside it).
    func handle(_ input: DoorInput) {
        let effects = decide(input)
        // The door's lockout clear (gatewayctl, Home Assistant, a remote command) ends the keypads' too.
        let cleared = effects.contains {
            guard case .emit(let e) = $0 else { return false }
            return e.kind == .lockoutCleared
        }
        if cleared {
            state.withLock { $0.keypad.clearLockouts() }
        }
        execute(effects)
    }

    private func decide(_ input: DoorInput) -> [DoorEffect] {
        let now = now()
        return state.withLock { $0.machine.handle(input, at: now) }
    }

    func readerReport(_ report: ReaderLoop.Report) {
        queue.async { [self] in
            // Stopped: a tap still in flight takes no guest-pass use, no
            // counter, no last_seen, and the store is left alone while the
            // process exits.
            guard !isStopped else { return }
            switch report {
            case .arrived(let tag): tagArrived(named(tag))  // ReaderActions.swift
            case .departed(let uid): handle(.tagDeparted(uid))
            case .fault(let why):
                state.withLock { $0.readerState = .lost(why) }
                handle(.readerFault(why))
            case .recovered:
                state.withLock { $0.readerState = .ok }
                handle(.readerRecovered)
            case .opened:
                state.withLock { $0.readerState = .ok }
                stateChanged()
            case .written(let uid, let error): writeFinished(uid: uid, error: error)
            case .ntag424Provisioned(let uid, let result): ntag424Provisioned(uid: uid, result)
            case .keypad(let reader, let key): keypadKey(key, reader: reader)
            }
        }
    }

    func boardInput(_ event: InputEvent) {
        queue.async { [self] in
            guard !isStopped else { return }
            switch event.input {
            case .button: handle(.button(pressed: event.active))
            case .doorContact: handle(.doorContact(open: event.active))
            case .fireAlarm: handle(.fireAlarm(active: event.active))
            case .requestToExit: handle(.requestToExit(pressed: event.active))
            }
        }
    }

    /// A tap from the reader: decided by `TapDecision` (pure, over the
    /// registry, the secrets it needs, the clock floor and the policy), then
    /// handed to the machine, which asks for the store actions the verdict
    /// needs (`storeRequest`) where their place is.
    func tagArrived(_ facts: TapFacts) {
        let facts = withPassage(facts)  // Passage.swift: the reader's side, who is in
        let ntag424 = facts.ntag424 != nil ? facts.uid : nil
        // An outdoor reader's card or code says nothing about the NFC reader.
        if facts.card == nil && facts.pinCode == nil {
            state.withLock {
                if !$0.readerState.isOK { $0.readerState = .ok }
                $0.lastNTAG424 = ntag424
            }
        }
        let wall = now().wall
        let expiry = state.withLock {
            $0.clockFloor.observe(wall)
            return $0.clockFloor.expiryTime(wall)
        }
        let policy = TapPolicy(policy: accessPolicy, actions: configuration.door.actions, wall: wall)
        let presentation = heldToReader(
            TapDecision.decide(
                facts, secrets: tapSecrets(for: facts), actionCount: configuration.door.actions.count,
                registry: registry, now: expiry, policy: policy
            ).presentation)
        noteLastTag(facts.uid, content: presentation.content, presentation.verdict)
        supplyApprovalRandom()
        // A card that waits for its PIN stays at the keypad desk; any other goes on at once.
        keypadOutputs(state.withLock { $0.keypad.card(presentation, at: now().monotonic) })
        // No event took it (the machine ignored the tap: the same-tag quiet
        // time): saved on its own, still after the decision.
        let unsaved = state.withLock { s in
            defer { s.lastSeenToSave = nil }
            return s.lastSeenToSave
        }
        if let pending = unsaved {
            do { try store.touchLastSeen(uid: pending.uid, at: pending.time) } catch {
                log.warning("last_seen of \(pending.uid.hex) not saved: \(error)")
            }
        }
    }

    /// A key from an outdoor reader's keypad (issue 35): the keypad desk
    /// decides it — a card's PIN, a PIN-only code, a wrong entry — hashing
    /// outside the state lock (the door queue is the desk's only user).
    private func keypadKey(_ key: KeypadKey, reader: String) {
        let at = now().monotonic
        // The desk out of the lock and back (the door queue is its only writer): Swift 6.0.3
        // aborts lowering a Mutex closure that returns press's labeled tuple.
        var desk = state.withLock { $0.keypad }
        let (outputs, check) = desk.press(key, reader: reader, at: at)
        state.withLock { $0.keypad = desk }
        keypadOutputs(outputs)
        if let check { verify(check) }
    }

    /// An entry hashed on `pinQueue`; its answer back on `queue` as an input
    /// (the keys typed meanwhile follow it, and may end the next entry).
    private func verify(_ check: PINCheck) {
        let verifier = StorePINs(store: store)
        pinQueue.async { [self] in
            let result = KeypadDesk.verify(check, verifier: verifier)
            queue.async { [self] in
                guard !isStopped else { return }
                let at = now().monotonic
                var desk = state.withLock { $0.keypad }
                let (outputs, next) = desk.checked(check, result, at: at)
                state.withLock { $0.keypad = desk }
                keypadOutputs(outputs)
                if let next { verify(next) }
            }
        }
    }

    /// An OSDP reader's link or tamper switch changed (OSDPDoor.swift): the
    /// state document (Home Assistant's reader entities) follows, in order
    /// with the reader's events.
    func outdoorReaderStatus(_ name: String, online: Bool? = nil, tamper: Bool? = nil) {
        queue.async { [self] in
            guard !isStopped else { return }
            state.withLock {
                var r = $0.outdoorReaders[name] ?? OutdoorReaderReport()
                if let online { r.online = online }
                if let tamper { r.tamper = tamper }
                $0.outdoorReaders[name] = r
            }
            stateChanged()
        }
    }

    /// The readers whose keypads are locked out now, and until when (monotonic).
    var keypadLockouts: [String: MonotonicInstant] { state.withLock { $0.keypad.lockouts(at: MonotonicClock.now()) } }

    /// What the keypad desk decided, acted on; a card it holds is looked at
    /// again when its window ends.
    private func keypadOutputs(_ outputs: [KeypadOutput]) {
        for output in outputs {
            switch output {
            case .decided(let p): handle(.tagArrived(p))
            case .decide(let facts): tagArrived(facts)
            case .emit(let event):
                // The grant that follows a duress entry must not open the day (first person in).
                if event.kind == .duress { state.withLock { $0.duressUID = event.uid } }
                record(event)
            case .feedback(let kind): execute([.feedback(kind)])
            }
        }
        let deadline = state.withLock { s -> MonotonicInstant? in
            guard let d = s.keypad.nextDeadline, s.keypadTickAt.map({ d < $0 }) ?? true else { return nil }
            s.keypadTickAt = d
            return d
        }
        // A keypad lockout begun or ended: the state document's `readers` and `lockout`.
        stateChanged()
        if let deadline {
            let wait = deadline.since(now().monotonic)
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(wait.nanosecondsClamped) + 1_000_000)) { [self] in
                state.withLock { if $0.keypadTickAt == deadline { $0.keypadTickAt = nil } }
                guard !isStopped else { return }
                keypadOutputs(state.withLock { $0.keypad.tick(at: now().monotonic) })
            }
        }
    }

    /// The secrets this tap is decided with: an NTAG 424 DNA's site key, or
    /// the sticker secrets. A store that cannot be read fails closed: no
    /// sticker secret (no v2 grant), an unreadable site key (`registry_unavailable`).
    private func tapSecrets(for facts: TapFacts) -> TapSecrets {
        if facts.ntag424 != nil {
            do { return TapSecrets(siteKey: try store.ntag424SiteKey().map { .key($0.key) } ?? .none) } catch {
                log.error("NTAG 424 site key unreadable, 424 tags are denied: \(error)")
                return TapSecrets(siteKey: .unreadable)
            }
        }
        do { return TapSecrets(stickers: try store.secrets()) } catch {
            log.error("sticker secrets unreadable, v2 stickers are denied: \(error)")
            return TapSecrets()
        }
    }

    /// `gatewayctl status`'s last tag: the decision's verdict, or the store's refusal after it.
    private func noteLastTag(_ uid: TagUID, content: TagPresentation.Content, _ verdict: AccessVerdict) {
        let text: String
        switch verdict {
        case .grant(_, let reason): text = "granted (\(reason))"
        case .deny(let reason, _): text = "denied (\(reason))"
        }
        state.withLock { $0.lastTag = (uid, content.rawValue, text) }
    }

    /// On `queue`, as the machine asked: the store action a tap needs. The
    /// SUN counter and a guest pass's use are written (durably, in the
    /// store's transaction) before the relay moves — the only store writes a
    /// tap makes before it (issue 25 §5) — and answered to the machine at
    /// once; `last_seen` goes with the tap's audit row, after the relay.
    private func storeRequest(_ request: StoreRequest) {
        let wall = Int64(time(nil))
        switch request {
        case .touchLastSeen(let uid):
            state.withLock { $0.lastSeenToSave = (uid, wall) }
        case .acceptSUNCounter(let uid, let counter):
            let outcome: StoreAnswer.Outcome
            do {
                switch try store.acceptSUNCounter(uid: uid, counter: counter, now: wall) {
                case .accepted: outcome = .done
                case .replayed(let last):
                    log.warning(
                        "NTAG 424 \(uid.hex): SUN counter \(counter) not above \(last) (replayed or rolled back)")
                    outcome = .refused
                }
            } catch {
                log.error("NTAG 424 \(uid.hex): the SUN counter could not be saved, denied: \(error)")
                outcome = .failed
            }
            if outcome != .done {
                let why: Denial = outcome == .refused ? .counterReplay : .registryUnavailable
                noteLastTag(uid, content: .ours, why.verdict)
            }
            handle(.storeAnswered(.sunCounter(uid, outcome)))
        case .takeGuestUse(let uid):
            let outcome: StoreAnswer.Outcome
            do {
                if let left = try store.consumeUse(uid: uid, at: wall) {
                    log.info("guest pass \(uid.hex): a use taken, \(left) left")
                    outcome = .done
                } else {
                    outcome = .refused
                }
            } catch {
                log.error("guest pass \(uid.hex): the use could not be saved, denied: \(error)")
                outcome = .failed
            }
            if outcome != .done {
                let why: Denial = outcome == .refused ? .policy(.noUsesLeft) : .registryUnavailable
                noteLastTag(uid, content: .ours, why.verdict)
            }
            handle(.storeAnswered(.guestUse(uid, outcome)))
        }
    }

    /// An input decided now, on the door queue, with the events it
    /// produced (the control socket's approvals answer with them).
    func handleNow(_ input: DoorInput) -> [DoorEvent] {
        queue.sync {
            guard !isStopped else { return [] }
            let effects = decide(input)
            execute(effects)
            return effects.compactMap { if case .emit(let e) = $0 { return e } else { return nil } }
        }
    }

    /// 32 bytes from the CSPRNG for the approval code a tap may need
    /// (docs/policy.md "Approval"). Without them the machine denies a tap
    /// that needs approval (fail closed).
    private func supplyApprovalRandom() {
        guard configuration.door.actions.contains(where: { $0.approval != nil }) else { return }
        var bytes: [UInt8] = []
        do { bytes = try Crypto.randomBytes(32) } catch {
            log.error("approval: no random bytes for a code, a tap needing approval is denied: \(error)")
        }
        state.withLock { [bytes] in $0.machine.supplyRandom(bytes) }
    }

    // MARK: Effects

    /// Set by `shutdown`; every door-queue entry checks it first.
    private var isStopped: Bool { state.withLock { $0.stopped } }

    /// Runs the machine's effects in the order it lists them (`DoorMachine.ordered`:
    /// the outputs first, then feedback, events and timers as decided), nothing
    /// re-ordered here. The relay is off the store's path (issue 25 §5): an
    /// event's audit row is a commit (synchronous=FULL: on an SD card
    /// milliseconds to hundreds of them), made by the audit writer on its own
    /// queue, which the door queue does not wait for (a pulse's end, the next
    /// tap) and `shutdown` drains. What decides is written before the relay
    /// (a guest pass's use, a SUN counter: `storeRequest`, as the machine
    /// asks; a remote command's replay record). What a power cut keeps:
    /// docs/reliability.md.
    private func execute(_ effects: [DoorEffect]) {
        // Stopped: the outputs were locked for good; nothing may move them,
        // play a pattern or start a timer again (SIGTERM while the reader
        // still reported, a tap in flight: the relay unlocked after "outputs
        // locked", and a Pi keeps a released line at its last level).
        guard !isStopped else { return }
        defer {
            // What the door shows between patterns follows its state (a pattern
            // that interrupted it gives the lines back to it when it ends).
            let ambient = state.withLock { $0.machine.ambientFeedback }
            patterns.setBackground(configuration.door.patterns[ambient])
            stateChanged()
        }
        for effect in effects {
            switch effect {
            case .drive(let output, let state):
                do {
                    try board.drive(output, state)
                    if state == .unlocked {
                        let now = MonotonicClock.now()
                        self.state.withLock { $0.lastUnlock = now }
                    }
                } catch {
                    log.error("driving \(output) \(state) failed: \(error); locking every output")
                    board.lockAll()
                }
            case .feedback(let kind):
                if let pattern = configuration.door.patterns[kind] {
                    patterns.play(pattern)
                    state.withLock { $0.hooks.showFeedback }?(pattern)
                }
            case .stopFeedback:
                patterns.stopForeground()
            case .startTimer(let id, let after):
                startTimer(id, after: after)
            case .cancelTimer(let id):
                state.withLock { _ = $0.timers.removeValue(forKey: id)?.cancel() }
            case .emit(let event):
                record(event)
                if event.kind == .accessGranted { firstPersonInGrant(event) }
            case .writeTag(let job):
                beginWrite(job)
            case .publishReport:
                state.withLock { $0.hooks.publishReport }?()
            case .store(let request):
                storeRequest(request)
            case .fireHold(let released):
                board.fireHold(released)
            case .saveFire(let latch):
                saveFire(latch)
            }
        }
    }

    private func startTimer(_ id: TimerID, after: Duration) {
        let queue = queue
        state.withLock {
            $0.timers.removeValue(forKey: id)?.cancel()
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + .nanoseconds(Int(after.nanosecondsClamped)), leeway: .milliseconds(1))
            timer.setEventHandler { [weak self] in
                guard let self, self.state.withLock({ $0.timers.removeValue(forKey: id) != nil }) else { return }
                self.handle(.timerFired(id))
            }
            // Its handler runs on `queue` (this is), so after the timer is kept.
            timer.activate()
            $0.timers[id] = timer
        }
    }

    /// The retained state document (MQTT `…/state`, Home Assistant's lock),
    /// with who is in at a door with an entry and an exit reader (Passage.swift).
    func stateDocument() -> JSONValue { withOccupancy(doorStateDocument()) }

    private func doorStateDocument() -> JSONValue {
        let first = configuration.outputs.first?.name ?? ""
        let (machine, readerOK, lastAccess, scheduleInfo) = state.withLock {
            ($0.machine, $0.readerState.isOK, $0.lastAccess, $0.scheduleInfo)
        }
        let (outdoor, keypadLocked) = state.withLock {
            ($0.outdoorReaders, $0.keypad.lockouts(at: MonotonicClock.now()))
        }
        return .object([
            ("lock", .string(machine.outputState(first) == .unlocked ? "UNLOCKED" : "LOCKED")),
            ("mode", .string(machine.mode.rawValue)), ("state", .string(machine.state.rawValue)),
            ("door_open", .bool(machine.doorOpen)), ("reader", .string(readerOK ? "ok" : "fault")),
            ("last_access", .optional(lastAccess.map { UTCTime.iso8601($0.time) })),
            ("last_access_source", .optional(lastAccess?.source)),
            ("lockout", .bool(machine.lockoutStatus(at: MonotonicClock.now()).isActive || !keypadLocked.isEmpty)),
            ("schedule", scheduleInfo ?? .null), ("fire", .string(machine.fire.rawValue)),
            // docs/policy.md "Door contact": Home Assistant's door alarm.
            ("door_alarm", .string(machine.doorAlarm.rawValue)), ("held_open", .string(machine.heldOpenStage.rawValue)),
            ("lockdown", Self.lockdownStatus(machine)),
            ("readers", Self.outdoorReadersDocument(configuration.readers, outdoor, keypadLocked: keypadLocked)),
        ])
    }

    /// `{"time": ISO 8601, "source": …}` of the newest open; nil before any.
    func lastAccessDocument() -> JSONValue? { Self.lastAccessDocument(lastAccess) }

    private static func lastAccessDocument(_ lastAccess: (time: Int64, source: String)?) -> JSONValue? {
        lastAccess.map { .object([("time", .string(UTCTime.iso8601($0.time))), ("source", .string($0.source))]) }
    }

    /// On `queue`: the state document to the hook, when it changed.
    func stateChanged() {
        guard let publishState = state.withLock({ $0.hooks.publishState }) else { return }
        let doc = stateDocument()
        let changed = state.withLock {
            guard doc != $0.lastPublishedState else { return false }
            $0.lastPublishedState = doc
            return true
        }
        if changed { publishState(doc) }
    }

    /// An event decided outside the door machine (Home Assistant's admin
    /// screen: a selection, a revoked tag): audited and published as the
    /// machine's are, in order with them.
    func note(_ event: DoorEvent, detail: String? = nil) {
        queue.async { self.record(event, detail: detail) }
    }

    func record(_ event: DoorEvent, detail: String? = nil) {
        // After shutdown's last flush nothing more reaches the audit writer:
        // the process is exiting (an event of the stop itself, such as the
        // reader failing as it closes, is not the door's).
        guard !isStopped else { return }
        let wall = Int64(time(nil))
        notePassage(event, at: wall)  // Passage.swift: a granted tap's way in or out
        var fields: [(String, JSONValue)] = [
            ("time", .string(UTCTime.iso8601(wall))), ("kind", .string(event.kind.rawValue)),
        ]
        if let r = event.reason { fields.append(("reason", .string(r))) }
        if let a = event.action { fields.append(("action", .int(a))) }
        if let u = event.uid { fields.append(("uid", .string(u.hex))) }
        if let s = event.source { fields.append(("source", .string(s))) }
        let recent = JSONValue.object(fields)
        let (accessDoc, lastSeen, hooks) = state.withLock { s -> (JSONValue?, Int64?, Hooks) in
            var accessDoc: JSONValue?
            if let source = event.accessSource {
                s.lastAccess = (wall, source)
                accessDoc = Self.lastAccessDocument(s.lastAccess)
            }
            s.counters[event.kind.rawValue, default: 0] += 1
            s.recentEvents.append(recent)
            if s.recentEvents.count > 20 { s.recentEvents.removeFirst(s.recentEvents.count - 20) }
            var lastSeen: Int64?
            if let pending = s.lastSeenToSave, event.uid == pending.uid {
                lastSeen = pending.time
                s.lastSeenToSave = nil
            }
            return (accessDoc, lastSeen, s.hooks)
        }
        if let accessDoc { hooks.publishLastAccess?(accessDoc) }
        log.info(
            "event \(event.kind.rawValue)\(event.reason.map { " reason=\($0)" } ?? "")\(event.action.map { " action=\($0)" } ?? "")\(event.uid.map { " uid=\($0.hex)" } ?? "")\(event.source.map { " source=\($0)" } ?? "")"
        )
        audit(event, wall, detail ?? event.approvalDetail, lastSeen)
        hooks.publish?(event, wall)
    }

    // MARK: Provisioning

    /// docs/design.md: sign with the action's newest active generated secret
    /// (created on first use); the registry row is pending before the write.
    private func beginWrite(_ job: ProvisioningJob) {
        guard let uid = job.uid else { return }
        if uid == state.withLock({ $0.lastNTAG424 }) { return beginNTAG424(job, uid: uid) }
        let wall = Int64(time(nil))
        do {
            // A UID the registry holds as another kind (a 424, an enrolled fob) is
            // never turned into a sticker row (docs/security.md L-1), not even by
            // `--reissue` (which re-keys a 424): `tags forget` the row first.
            if let row = try store.issuedTag(uid), let kind = row.kind, kind == .ntag424 || kind == .uid {
                log.warning("provisioning \(uid.hex) refused: the registry holds it as \(kind.rawValue)")
                return handle(.writeResult(uid: uid, .failed("already_registered")))
            }
            let secret = try store.newestGeneratedSecretCreatingIfNeeded(action: job.action, now: wall)
            let url = StickerSigner.signV2(action: job.action, timestamp: wall, key: secret.key, uid: uid)
            try store.createPendingTag(
                uid: uid, action: job.action, secretID: secret.id, label: job.label,
                limits: TagLimits(
                    validFrom: job.validFrom, validUntil: job.validUntil, uses: job.uses, schedule: job.schedule),
                kind: .stickerV2, now: wall)
            guard let key = try store.key(.device) else { throw DaemonError.startup("no device key") }
            reader?.requestWrite(
                .init(
                    uid: uid, message: NDEFMessage(records: [.uri(url.text)]), overwrite: job.overwrite, deviceKey: key,
                    protect: job.protect || configuration.door.provisioning.protect))
        } catch {
            log.error("provisioning: \(error)")
            handle(.writeResult(uid: uid, .failed("\(error)")))
        }
    }

    private func writeFinished(uid: TagUID, error: String?) {
        do {
            // A verified write: the tag becomes active with its
            // `provisioning_written` audit row, in one transaction (AuditWriter).
            if error != nil { try store.failTag(uid: uid) }
        } catch {
            log.error("registry update for \(uid.hex): \(error)")
            do { try store.failTag(uid: uid) } catch {
                // It stays pending, which never opens; the next write of that tag replaces it.
                log.error("registry: \(uid.hex) could not be marked failed either: \(error)")
            }
            handle(.writeResult(uid: uid, .failed("registry: \(error)")))
            return
        }
        handle(.writeResult(uid: uid, error.map { .failed($0) } ?? .written))
    }

    /// SIGHUP with a valid file: the machine restarts on the new door settings
    /// in the mode it was in, or the file's `[door] mode` when that changed. Runs in progress end (outputs locked first, by
    /// the new machine's start); provisioning is disarmed.
    func reload(_ new: GatewayConfiguration, zone newZone: TimeZoneRules? = nil) {
        queue.async { [self] in
            guard !isStopped else { return }
            let waiting = state.withLock { s -> ApprovalRequest? in
                if let newZone { s.zone = newZone }
                for t in s.timers.values { t.cancel() }
                s.timers = [:]
                return s.machine.pendingApproval
            }
            patterns.stop()
            // A waiting approval request ends with the machine it lived in (audited).
            if let r = waiting {
                record(DoorEvent(.approvalCancelled, reason: "reload", action: r.action, uid: r.uid, code: r.code))
                record(
                    DoorEvent(
                        .accessDenied, reason: Denial.notApproved.reason, action: r.action, uid: r.uid, source: "tag"))
            }
            // `[door] mode` changed in the file: the door takes it; else it
            // stays in the mode it was in (`gatewayctl mode` may have set it).
            // A lockdown stays: only `gatewayctl mode` lifts it, never an edit.
            let fileMode = live.current.door.initialMode
            var settings = live.applyReload(new).door
            let running = state.withLock { $0.machine.mode }
            if settings.initialMode == fileMode || running == .lockdown { settings.initialMode = running }
            // A fire alarm nobody has reset outlives the machine it began in.
            (settings.initialFire, settings.initialFireSources) = state.withLock {
                ($0.machine.fire, $0.machine.fireSources)
            }
            // So does the site's lockdown (docs/policy.md "Lockdown").
            settings.initialLockdown = state.withLock { $0.machine.lockdown }
            // With a passage schedule the schedule says when the door stands
            // open: a reload never unlocks it outside the schedule's window (nor
            // with the clock unsynchronised); inside it the tick below opens it.
            if settings.initialMode == .passage, let name = settings.passageSchedule {
                let wall = now().wall
                let schedule = accessPolicy.schedule(named: name)
                let active = wall.synchronised && (schedule?.isActive(at: wall.unixSeconds, zone: zone) ?? false)
                let end = schedule?.nextChange(after: wall.unixSeconds, zone: zone)
                let open = active && schedule.map { firstPersonIn.passage($0, active: active, windowEnd: end) } == true
                if !open { settings.initialMode = .normal }
            }
            let now = now()
            let effects = state.withLock { [settings] in
                $0.machine = DoorMachine(settings: settings)
                return $0.machine.start(at: now)
            }
            execute(effects)
            record(DoorEvent(.configurationReloaded, reason: settings.initialMode.rawValue, source: "sighup"))
            // The schedules may have changed: the passage schedule applies again now.
            state.withLock { $0.passageApplied = nil }
            scheduleTick()
        }
    }

    // MARK: Health and shutdown

    /// The watchdog's probe: a beat queued on the door queue; `processedBeat`
    /// reaches the returned number once the loop has run it.
    func requestBeat() -> Int {
        let n = beats.withLock {
            $0.requested += 1
            return $0.requested
        }
        queue.async { self.beats.withLock { $0.processed = max($0.processed, n) } }
        return n
    }

    var processedBeat: Int { beats.withLock { $0.processed } }

    /// Saves the clock floor once it has moved 10 minutes past the saved one
    /// (the precision expiry needs; fewer writes on the SD card), and at
    /// shutdown whatever it is.
    func saveClockFloor(force: Bool = false) {
        let wall = now().wall
        let raise = state.withLock { s -> Int64? in
            s.clockFloor.observe(wall)
            guard s.clockFloor.unix > s.savedClockFloor, force || s.clockFloor.unix - s.savedClockFloor >= 600 else {
                return nil
            }
            return s.clockFloor.unix
        }
        guard let raise else { return }
        do {
            try store.raiseClockFloor(to: raise)
            state.withLock { $0.savedClockFloor = raise }
        } catch {
            log.warning("clock floor not saved: \(error)")
        }
    }

    /// `gatewayctl clock reset-floor`: lowers a floor a bad time source
    /// raised to the synchronised wall clock. The store (the floor with its
    /// audit row) is written off the door queue, so taps are not held up by
    /// the disk; the door takes the new floor once it is saved. Nothing can
    /// raise the floor meanwhile: the clock is below it.
    func resetClockFloor(by caller: String) throws -> ClockFloor.Reset {
        let wall = now().wall
        var floor = queue.sync { clockFloor }
        let outcome = floor.reset(to: wall)
        guard case .lowered(let from, let to) = outcome else { return outcome }
        try store.resetClockFloor(from: from, to: to, source: caller, now: wall.unixSeconds)
        queue.sync {
            state.withLock {
                $0.clockFloor = floor
                $0.savedClockFloor = to
            }
        }
        log.notice(
            "clock floor lowered from \(UTCTime.iso8601(from)) to \(UTCTime.iso8601(to)) by \(caller): expiry is judged by the wall clock again"
        )
        return outcome
    }

    /// Lock everything and stop patterns (SIGTERM, errors).
    func shutdown() {
        // A PIN being checked reads the store: it ends first (its answer, queued after, is dropped).
        defer { pinQueue.sync {} }
        queue.sync {
            state.withLock {
                $0.stopped = true
                for t in $0.timers.values { t.cancel() }
                $0.timers = [:]
                $0.scheduleTimer?.cancel()
            }
            patterns.stop()
            board.lockAll()
            // Only once the outputs are locked: a store write may wait on the writer.
            state.withLock { $0.floorTimer?.cancel() }
            saveClockFloor(force: true)
        }
        // Every event recorded so far (the last tap's, after its relay) is committed before the process goes.
        flushAudit()
    }

    /// Returns once every event the door queue has handed on so far is
    /// durable: the queue has run what was queued before the call (so its
    /// events went to the audit writer, after their relay moves) and the
    /// writer has committed them (or holds them while the store cannot take
    /// them: AuditWriter.flush). A control request that changed something
    /// answers after it, and Home Assistant's admin screen reads the tags
    /// after it. Never from the door queue (it waits for that queue).
    func committed() {
        queue.sync {}
        flushAudit()
    }
}
