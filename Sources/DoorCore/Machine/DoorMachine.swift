/// The pure door logic: `handle(event, at: now) -> [effect]` (docs/design.md
/// "Shape of the program"). No I/O, no clock reads, no sleeping: timers are
/// effects and their firing is an input, and so are the store writes a tap
/// needs (`DoorEffect.store`, answered by `DoorInput.storeAnswered`).
///
/// Effects are listed in the order they must run, and the runtime runs them
/// in that order (`ordered`): the outputs first (`.drive`, in their own
/// order), then the rest as decided — feedback, events, timers. So the relay
/// moves before a pattern plays or an event is recorded (an audit row is a
/// commit: milliseconds to hundreds of them on an SD card).
///
/// Outputs are unlocked only while something holds them — an action step or
/// passage mode — and the effect that locks an output is produced the moment
/// its last holder lets go, so every path that unlocks also locks.
public struct DoorMachine: Sendable {
    public let settings: DoorSettings
    public private(set) var mode: DoorMode
    public private(set) var readerHealthy = true
    public private(set) var provisioning: Provisioning = .idle
    public private(set) var doorOpen = false
    /// The fire alarm (docs/policy.md "Fire alarm"): while not `.normal` the
    /// outputs whose `onFire` is `.release` are held unlocked, whatever a
    /// schedule, a lockdown, a lockout or a tap does.
    public private(set) var fire: FireState
    /// What holds the alarm now: `input` (the door's own), `site` (the site's signal).
    /// What holds the fire alarm now (the input, the site's signal): a reload's
    /// new machine takes them over (`settings.initialFireSources`).
    public private(set) var fireSources: Set<String> = []
    /// The site's lockdown in force, if any (Lockdown.swift, docs/policy.md "Lockdown").
    public internal(set) var lockdown: Lockdown?

    public enum Provisioning: Equatable, Sendable {
        case idle
        case armed(ProvisioningJob, source: String)
        case writing(ProvisioningJob)
    }

    /// What the door is doing, for `gatewayctl status`; lockout, mode and the
    /// door contact are reported beside it.
    public enum State: String, Equatable, Sendable {
        case idle
        case running
        case provisioningArmed = "provisioning_armed"
        case writing
        case readerFault = "reader_fault"
        /// A tap waits for an approver (docs/policy.md "Approval").
        case awaitingApproval = "awaiting_approval"
    }

    public var state: State {
        if !readerHealthy { return .readerFault }
        switch provisioning {
        case .writing: return .writing
        case .armed: return .provisioningArmed
        case .idle:
            if approvals.pending != nil { return .awaitingApproval }
            return runs.isEmpty ? .idle : .running
        }
    }

    /// What the door shows when no other pattern plays: a reader fault,
    /// provisioning armed (and writing), an approval waiting, else the idle
    /// heartbeat. The runtime plays it behind every other pattern, so it comes
    /// back when one ends.
    public var ambientFeedback: FeedbackKind {
        switch state {
        case .readerFault: return .readerFault
        case .provisioningArmed, .writing: return .provisioningArmed
        case .awaitingApproval: return .awaitingApproval
        case .idle, .running: return contact.warned ? .heldOpen : .heartbeat
        }
    }

    /// The approval request waiting for an answer, if any.
    public var pendingApproval: ApprovalRequest? { approvals.pending }

    /// Random bytes for the next approval code (the runtime gives 32 from
    /// the CSPRNG before each tap; the machine itself reads no randomness).
    public mutating func supplyRandom(_ bytes: [UInt8]) { random = bytes }

    /// An action in progress and who asked for it.
    public struct RunningAction: Equatable, Sendable {
        public var action: ActionIndex
        public var source: String
        public init(action: ActionIndex, source: String) {
            self.action = action
            self.source = source
        }
    }

    enum Holder: Hashable, Sendable { case run(Int), passage, fire }

    struct Run: Sendable {
        var action: ActionDefinition
        var step: Int
        var source: String
        /// Started by the exit button or an admin: it keeps running in lockdown.
        var survivesLockdown: Bool
    }

    private var holders: [String: Set<Holder>] = [:]
    private var runs: [Int: Run] = [:]
    private var nextRun = 0
    private var lastRunEnd: MonotonicInstant?
    // Tags in the field and when each left it (de-duplication).
    private var present: Set<TagUID> = []
    private var departed: [TagUID: MonotonicInstant] = [:]
    // Button.
    private var pressStart: MonotonicInstant?
    private var press = 0
    private var holdReached = false
    // Provisioning.
    private var arming = 0
    // Lockout.
    private var denials: [TagUID: [MonotonicInstant]] = [:]
    private var globalDenials: [MonotonicInstant] = []
    private var lockedTags: [TagUID: MonotonicInstant] = [:]
    private var globalLockUntil: MonotonicInstant?
    private var lastLockout: [TagUID?: (end: MonotonicInstant, length: Duration)] = [:]
    // Card reads denied per outdoor reader (`reader:NAME`), and the readers whose cards are locked out.
    private var readerDenials: [String: [MonotonicInstant]] = [:]
    private var lockedReaders: [String: MonotonicInstant] = [:]
    private var lastReaderLockout: [String: (end: MonotonicInstant, length: Duration)] = [:]
    private var lockoutGeneration = 0
    // Door contact: held open, forced open, request to exit (DoorContact.swift).
    private var contact = DoorContactWatch()
    // Approval.
    private var approvals = ApprovalDesk()
    private var random: [UInt8] = []
    // A tap waiting for the store's answer (its SUN counter, its guest use).
    private var waiting: WaitingTap?

    enum WaitingTap: Equatable, Sendable {
        case counter(TagPresentation)
        case guestUse(TagPresentation)
    }

    public init(settings: DoorSettings) {
        self.settings = settings
        mode = Self.startingMode(settings)
        fire = settings.initialFire
        fireSources = fire == .alarm ? settings.initialFireSources : []
        lockdown = settings.initialLockdown
    }

    // MARK: Status

    public func outputState(_ name: String) -> OutputState { (holders[name] ?? []).isEmpty ? .locked : .unlocked }
    /// Actions in progress, oldest first.
    public var running: [RunningAction] {
        runs.sorted { $0.key < $1.key }.map { RunningAction(action: $0.value.action.index, source: $0.value.source) }
    }

    public struct LockoutStatus: Equatable, Sendable {
        public var globalUntil: MonotonicInstant?
        public var tags: [TagUID: MonotonicInstant]
        /// Outdoor readers (their `reader:NAME` source) whose card reads are locked out.
        public var readers: [String: MonotonicInstant] = [:]
        /// Some lockout (global, of a tag or of a reader's cards) holds now.
        public var isActive: Bool { globalUntil != nil || !tags.isEmpty || !readers.isEmpty }
    }

    public func lockoutStatus(at now: MonotonicInstant) -> LockoutStatus {
        LockoutStatus(
            globalUntil: globalLockUntil.flatMap { $0 > now ? $0 : nil },
            tags: lockedTags.filter { $0.value > now }, readers: lockedReaders.filter { $0.value > now })
    }

    // MARK: Entry points

    /// Start: every output driven to its locked level before anything else.
    /// An alarm not yet reset (`settings.initialFire`, a reload's) holds its
    /// outputs released from the first effect on: they are never driven locked.
    public mutating func start(at now: Now) -> [DoorEffect] {
        var fx: [DoorEffect] = []
        if fire != .normal {
            fx.append(.fireHold(true))
            for o in fireOutputs { acquire(o.name, .fire, &fx) }
        }
        for o in settings.outputs where outputState(o.name) == .locked { fx.append(.drive(output: o.name, .locked)) }
        fx.append(.emit(DoorEvent(.started, reason: mode.rawValue)))
        fx.append(.feedback(.heartbeat))
        if mode == .passage {
            for o in settings.outputs { acquire(o.name, .passage, &fx) }
        }
        return Self.ordered(fx)
    }

    /// The order effects run in: every `.drive` (and the fire hold, which
    /// moves outputs too) first, in its own order, then everything else in
    /// the order it was decided. Nothing the machine decides needs a
    /// pattern, an event or a timer to have run before an output moves, so
    /// the relay never waits for them.
    public static func ordered(_ effects: [DoorEffect]) -> [DoorEffect] {
        var drives: [DoorEffect] = []
        var rest: [DoorEffect] = []
        for effect in effects {
            switch effect {
            case .drive, .fireHold: drives.append(effect)
            default: rest.append(effect)
            }
        }
        return drives + rest
    }

    public mutating func handle(_ input: DoorInput, at now: Now) -> [DoorEffect] {
        var fx: [DoorEffect] = []
        switch input {
        case .tagArrived(let p): tagDecided(p, now.monotonic, &fx)
        case .storeAnswered(let answer): storeAnswered(answer, now.monotonic, &fx)
        case .tagDeparted(let uid):
            present.remove(uid)
            departed[uid] = now.monotonic
        case .button(let pressed): pressed ? buttonPressed(now.monotonic, &fx) : buttonReleased(now.monotonic, &fx)
        case .doorContact(let open): doorContact(open, now.monotonic, &fx)
        case .timerFired(let id): timerFired(id, now.monotonic, &fx)
        case .remoteCommand(let outcome): remote(outcome, now.monotonic, &fx)
        case .admin(let request): admin(request, now.monotonic, &fx)
        case .approval(let answer): approvalAnswer(answer, now.monotonic, &fx)
        case .writeResult(let uid, let outcome): writeResult(uid, outcome, &fx)
        case .readerFault(let why):
            if readerHealthy {
                readerHealthy = false
                fx.append(.feedback(.readerFault))
            }
            fx.append(.emit(DoorEvent(.readerFault, reason: why)))
        case .fireAlarm(let active): fireInput(active, &fx)
        case .requestToExit(let pressed): requestToExit(pressed, now.monotonic, &fx)
        case .siteFire(let active, let by): fireInput(active, source: "site", who: by, &fx)
        case .lockdown(let request): lockdownRequest(request, now.monotonic, &fx)
        case .readerRecovered:
            guard !readerHealthy else { break }
            readerHealthy = true
            fx.append(.stopFeedback(.readerFault))
            fx.append(.feedback(.heartbeat))
            fx.append(.emit(DoorEvent(.readerRecovered)))
        }
        return Self.ordered(fx)
    }

    // MARK: Outputs and action runs

    private mutating func acquire(_ output: String, _ holder: Holder, _ fx: inout [DoorEffect]) {
        var set = holders[output] ?? []
        let wasEmpty = set.isEmpty
        set.insert(holder)
        holders[output] = set
        if wasEmpty { fx.append(.drive(output: output, .unlocked)) }
    }

    private mutating func release(_ output: String, _ holder: Holder, _ fx: inout [DoorEffect]) {
        guard var set = holders[output], set.remove(holder) != nil else { return }
        holders[output] = set
        if set.isEmpty { fx.append(.drive(output: output, .locked)) }
    }

    /// Runs an action's steps. A second request for an action already running
    /// does not restart it (the door is already open; restarting could hold a
    /// strike energised indefinitely under repeated taps).
    private mutating func runAction(
        _ index: ActionIndex, source: String, survivesLockdown: Bool = false,
        _ now: MonotonicInstant, _ fx: inout [DoorEffect]
    ) -> Bool {
        guard let action = settings.action(index) else { return false }
        if runs.values.contains(where: { $0.action.index == index }) { return true }
        nextRun += 1
        runs[nextRun] = Run(action: action, step: -1, source: source, survivesLockdown: survivesLockdown)
        advance(nextRun, now, &fx)
        return true
    }

    /// Stops a run where it is: its step timer is cancelled and the output it
    /// holds is released (locked, unless another holder keeps it).
    private mutating func abort(_ id: Int, reason: String, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        guard let run = runs.removeValue(forKey: id) else { return }
        if case .pulse(let output, _) = run.action.steps[run.step] { release(output, .run(id), &fx) }
        fx.append(.cancelTimer(.step(run: id, step: run.step)))
        lastRunEnd = now
        fx.append(.emit(DoorEvent(.actionCancelled, reason: reason, action: run.action.index, source: run.source)))
    }

    private mutating func advance(_ id: Int, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        while var run = runs[id] {
            if run.step >= 0, run.step < run.action.steps.count, case .pulse(let output, _) = run.action.steps[run.step]
            {
                release(output, .run(id), &fx)
            }
            run.step += 1
            runs[id] = run
            guard run.step < run.action.steps.count else {
                runs[id] = nil
                lastRunEnd = now
                fx.append(.emit(DoorEvent(.actionCompleted, action: run.action.index, source: run.source)))
                return
            }
            switch run.action.steps[run.step] {
            case .pulse(let output, let duration):
                guard settings.output(output) != nil else { continue }  // validated by the config; skip safely
                acquire(output, .run(id), &fx)
                fx.append(.startTimer(.step(run: id, step: run.step), after: settings.pulseLimits.clamp(duration)))
                return
            case .wait(let duration):
                fx.append(.startTimer(.step(run: id, step: run.step), after: max(.zero, duration)))
                return
            }
        }
    }

    // MARK: Tags

    /// A decided tap (`TapDecision`). A grant with a SUN counter waits for the
    /// store to accept it before the door does anything with the tap (a
    /// counter seen is spent whatever the door then does); a tap of ours
    /// granted without a guest pass has its `last_seen` touched (it was seen,
    /// whether or not the door then opens).
    private mutating func tagDecided(_ p: TagPresentation, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        waiting = nil
        if case .grant = p.verdict, let counter = p.needs.sunCounter {
            waiting = .counter(p)
            fx.append(.store(.acceptSUNCounter(p.uid, counter)))
            return
        }
        if case .grant = p.verdict, p.content == .ours, p.needs.touchLastSeen, !p.needs.guestPass {
            fx.append(.store(.touchLastSeen(p.uid)))
        }
        tagArrived(p, now, &fx)
    }

    /// The store's answer for the tap waiting on it (any other is stale: ignored).
    private mutating func storeAnswered(_ answer: StoreAnswer, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        switch (answer, waiting) {
        case (.sunCounter(let uid, let outcome), .counter(var p)?) where p.uid == uid:
            waiting = nil
            p.needs.sunCounter = nil
            switch outcome {
            case .done: tagDecided(p, now, &fx)
            case .refused: tagDecided(TapDecision.deny(uid, .counterReplay).from(p), now, &fx)
            case .failed: tagDecided(TapDecision.deny(uid, .registryUnavailable).from(p), now, &fx)
            }
        case (.guestUse(let uid, let outcome), .guestUse(let p)?) where p.uid == uid:
            waiting = nil
            switch outcome {
            case .done:
                // The runtime answers in the turn it was asked, but the machine
                // does not rely on it: a lockdown or lockout since then wins.
                if mode == .lockdown, case .grant(let action, _) = p.verdict, !lockdownExempt(action) {
                    fx.append(.feedback(.denied))
                    fx.append(
                        .emit(
                            DoorEvent(
                                .accessDenied, reason: Denial.lockdown.reason, action: action, uid: uid,
                                source: p.source)))
                } else if isLockedOut(uid, source: p.source, now) {
                    fx.append(.feedback(.lockedOut))
                    fx.append(
                        .emit(DoorEvent(.accessDenied, reason: Denial.lockedOut.reason, uid: uid, source: p.source)))
                } else {
                    opens(p, now, &fx)
                }
            case .refused: deny(uid, .policy(.noUsesLeft), source: p.source, now, &fx)
            case .failed: deny(uid, .registryUnavailable, source: p.source, now, &fx)
            }
        default:
            break
        }
    }

    private mutating func tagArrived(_ p: TagPresentation, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        // A tag left on the reader fires once; one that returns within the quiet time is the same tap.
        departed = departed.filter { now.since($0.value) < settings.sameTagQuiet }
        if p.cardRead {
            // An outdoor reader's card read is one event, never "present": the
            // same card read again within the quiet time (a reader repeating
            // while the card is held) is the same tap.
            guard departed.updateValue(now, forKey: p.uid) == nil else { return }
        } else {
            let returning = departed.removeValue(forKey: p.uid) != nil
            guard present.insert(p.uid).inserted, !returning else { return }
        }

        // Provisioning writes on the NFC reader's tags; a card number read
        // outdoors is decided as any tap.
        switch p.cardRead ? .idle : provisioning {
        case .writing:
            return  // the reader is busy writing; other tags wait
        case .armed(var job, let source):
            var refusal: String?
            if let named = job.reissue, named != p.uid {
                refusal = "not_reissue_tag"  // a reissue names its tag: any other stays untouched, the job armed
            } else if p.content == .foreign && !job.overwrite {
                refusal = "foreign_content"
            }
            if let refusal {
                fx.append(
                    .emit(
                        DoorEvent(
                            .provisioningRefused, reason: refusal, action: job.action, uid: p.uid, source: source)))
                fx.append(.feedback(.writeFailed))
                return
            }
            job.uid = p.uid
            provisioning = .writing(job)
            fx.append(.cancelTimer(.provisioningTimeout(arming: arming)))
            fx.append(.emit(DoorEvent(.provisioningWriting, action: job.action, uid: p.uid, source: source)))
            fx.append(.writeTag(job))
            return
        case .idle:
            break
        }

        if isLockedOut(p.uid, source: p.source, now) {
            fx.append(.feedback(.lockedOut))
            fx.append(.emit(DoorEvent(.accessDenied, reason: Denial.lockedOut.reason, uid: p.uid, source: p.source)))
            return
        }
        switch p.verdict {
        case .grant(let action, _):
            if mode == .lockdown && !lockdownExempt(action) {
                fx.append(.feedback(.denied))
                fx.append(
                    .emit(
                        DoorEvent(
                            .accessDenied, reason: Denial.lockdown.reason, action: action, uid: p.uid,
                            source: p.source)))
                return
            }
            guard settings.action(action) != nil else {
                fx.append(.feedback(.denied))
                fx.append(
                    .emit(
                        DoorEvent(
                            .accessDenied, reason: Denial.unknownAction.reason, action: action, uid: p.uid,
                            source: p.source))
                )
                return
            }
            // The door would open (or ask an approver): a guest pass's use is
            // taken first, durably, before the relay (a tap that asks for
            // approval takes its use at the request; a denied or unanswered
            // request does not give it back).
            if p.needs.guestPass {
                waiting = .guestUse(p)
                fx.append(.store(.takeGuestUse(p.uid)))
                return
            }
            opens(p, now, &fx)
        case .deny(let reason, let counts):
            deny(p.uid, reason: reason, counts: counts, source: p.source, now, &fx)
        }
    }

    /// A granted tap the door acts on: approval asked, or the action run.
    private mutating func opens(_ p: TagPresentation, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        guard case .grant(let action, let reason) = p.verdict else { return }
        if let policy = settings.action(action)?.approval {
            requestApproval(uid: p.uid, action: action, policy: policy, source: p.source, now, &fx)
            return
        }
        fx.append(.feedback(.granted))
        fx.append(.emit(DoorEvent(.accessGranted, reason: reason, action: action, uid: p.uid, source: p.source)))
        _ = runAction(action, source: p.source, now, &fx)
    }

    /// A tap the store refused at its last step (no use left, a store failure).
    private mutating func deny(
        _ uid: TagUID, _ why: Denial, source: String, _ now: MonotonicInstant, _ fx: inout [DoorEffect]
    ) {
        deny(uid, reason: why.reason, counts: why.countsTowardLockout, source: source, now, &fx)
    }

    private mutating func deny(
        _ uid: TagUID, reason: String, counts: Bool, source: String, _ now: MonotonicInstant,
        _ fx: inout [DoorEffect]
    ) {
        fx.append(.feedback(.denied))
        fx.append(.emit(DoorEvent(.accessDenied, reason: reason, uid: uid, source: source)))
        if counts {
            countDenial(uid, global: Self.isFailedProof(reason), now, &fx)
            if uid.card != nil { countReaderDenial(source, now, &fx) }
        }
    }

    // MARK: Lockout

    private func isLockedOut(_ uid: TagUID, source: String, _ now: MonotonicInstant) -> Bool {
        guard settings.lockout.enabled else { return false }
        if let g = globalLockUntil, now < g { return true }
        if let t = lockedTags[uid], now < t { return true }
        if uid.card != nil, let r = lockedReaders[source], now < r { return true }
        return false
    }

    /// A card read denied at an outdoor reader also counts toward that
    /// reader: a card number is the attacker's choice (an emulator walks a
    /// facility's 65 536 numbers), so counting per number alone never locks
    /// such a walk out. `globalThreshold` denied cards at one reader within
    /// the window lock that reader's cards out (doubling like the others);
    /// the door's other readers, its PN532 and every tag go on as before.
    private mutating func countReaderDenial(_ source: String, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        let policy = settings.lockout
        guard policy.enabled, source.hasPrefix("reader:") else { return }
        readerDenials = readerDenials.compactMapValues { times in
            let kept = times.filter { now.since($0) < policy.window }
            return kept.isEmpty ? nil : kept
        }
        readerDenials[source, default: []].append(now)
        guard readerDenials[source]!.count >= policy.globalThreshold else { return }
        readerDenials[source] = nil
        lastReaderLockout = lastReaderLockout.filter { now.since($0.value.end) < policy.cap }
        var length = policy.duration
        if let previous = lastReaderLockout[source] { length = min(policy.cap, previous.length * 2) }
        length = min(length, policy.cap)
        lastReaderLockout[source] = (now + length, length)
        lockedReaders[source] = now + length
        lockoutGeneration += 1
        fx.append(.feedback(.lockedOut))
        fx.append(.emit(DoorEvent(.lockout, reason: "reader", source: source)))
        fx.append(.startTimer(.lockoutEnd(generation: lockoutGeneration), after: length))
    }

    /// Denials that are a failed proof — a forged or copied sticker, a 424
    /// that did not prove its key, a SUN that does not verify or is replayed,
    /// a chip naming another UID than it answered anticollision with. Only
    /// these count toward the global lockout (docs/security.md "L8"): anyone
    /// can tap unknown, revoked or expired tags (a factory NTAG 424 is
    /// `unknown_tag`), and ten of them must not lock every holder out; they
    /// count toward their own UID's lockout only.
    public static let failedProofs: Set<String> = Denial.failedProofReasons

    static func isFailedProof(_ reason: String) -> Bool { failedProofs.contains(reason) }

    private mutating func countDenial(
        _ uid: TagUID, global: Bool, _ now: MonotonicInstant, _ fx: inout [DoorEffect]
    ) {
        let policy = settings.lockout
        guard policy.enabled else { return }
        let window = policy.window
        globalDenials = globalDenials.filter { now.since($0) < window } + (global ? [now] : [])
        denials = denials.compactMapValues { times in
            let kept = times.filter { now.since($0) < window }
            return kept.isEmpty ? nil : kept
        }
        denials[uid, default: []].append(now)
        if global && globalDenials.count >= policy.globalThreshold {
            globalDenials = []
            lockOut(nil, now, &fx)
        } else if denials[uid]!.count >= policy.perTagThreshold {
            denials[uid] = nil
            lockOut(uid, now, &fx)
        }
    }

    /// Locks out one tag (or all when `uid` is nil): the first lockout lasts
    /// `duration`; one following a lockout of the same scope within `cap`
    /// doubles, up to `cap`.
    private mutating func lockOut(_ uid: TagUID?, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        let policy = settings.lockout
        lastLockout = lastLockout.filter { now.since($0.value.end) < policy.cap }
        var length = policy.duration
        if let previous = lastLockout[uid] { length = min(policy.cap, previous.length * 2) }
        length = min(length, policy.cap)
        let until = now + length
        lastLockout[uid] = (until, length)
        if let uid { lockedTags[uid] = until } else { globalLockUntil = until }
        lockoutGeneration += 1
        fx.append(.feedback(.lockedOut))
        fx.append(.emit(DoorEvent(.lockout, reason: uid == nil ? "global" : "tag", uid: uid)))
        fx.append(.startTimer(.lockoutEnd(generation: lockoutGeneration), after: length))
    }

    private mutating func lockoutTimer(_ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        let expired = lockedTags.filter { $0.value <= now }.map(\.key)
        for uid in expired.sorted() {
            lockedTags[uid] = nil
            fx.append(.emit(DoorEvent(.lockoutEnded, reason: "tag", uid: uid)))
        }
        for source in lockedReaders.filter({ $0.value <= now }).map(\.key).sorted() {
            lockedReaders[source] = nil
            fx.append(.emit(DoorEvent(.lockoutEnded, reason: "reader", source: source)))
        }
        if let g = globalLockUntil, g <= now {
            globalLockUntil = nil
            fx.append(.emit(DoorEvent(.lockoutEnded, reason: "global")))
        }
    }

    // MARK: Button

    private mutating func buttonPressed(_ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        guard pressStart == nil else { return }
        pressStart = now
        press += 1
        holdReached = false
        fx.append(.startTimer(.buttonHold(press: press), after: settings.button.provisioningHold))
    }

    private mutating func buttonReleased(_ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        guard let start = pressStart else { return }
        pressStart = nil
        fx.append(.cancelTimer(.buttonHold(press: press)))
        let length = now.since(start)
        // A hold never also opens, even if its timer has not been delivered yet.
        guard !holdReached, length < settings.button.provisioningHold else { return }
        guard length >= settings.button.minimumPress, let exit = settings.button.exitAction else { return }
        // The exit request works in lockdown and during lockout.
        if runAction(exit, source: "button", survivesLockdown: true, now, &fx) {
            fx.append(.feedback(.granted))
            fx.append(.emit(DoorEvent(.exitRequest, action: exit, source: "button")))
        }
    }

    private mutating func holdTimer(_ id: Int, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        guard id == press, pressStart != nil else { return }
        holdReached = true
        let policy = settings.provisioning
        if !policy.buttonArmed {
            fx.append(.emit(DoorEvent(.provisioningRefused, reason: "button_arming_disabled", source: "button")))
        } else if mode == .lockdown {
            fx.append(.emit(DoorEvent(.provisioningRefused, reason: "lockdown", source: "button")))
        } else {
            arm(ProvisioningJob(action: policy.action, protect: policy.protect), source: "button", &fx)
        }
    }

    // MARK: Provisioning

    private mutating func arm(_ job: ProvisioningJob, source: String, _ fx: inout [DoorEffect]) {
        if case .writing = provisioning {
            fx.append(
                .emit(DoorEvent(.provisioningRefused, reason: "write_in_progress", action: job.action, source: source)))
            return
        }
        guard settings.action(job.action) != nil else {
            fx.append(
                .emit(DoorEvent(.provisioningRefused, reason: "unknown_action", action: job.action, source: source)))
            return
        }
        if case .armed = provisioning { fx.append(.cancelTimer(.provisioningTimeout(arming: arming))) }
        arming += 1
        provisioning = .armed(job, source: source)
        fx.append(.feedback(.provisioningArmed))
        fx.append(.emit(DoorEvent(.provisioningArmed, action: job.action, source: source)))
        fx.append(.startTimer(.provisioningTimeout(arming: arming), after: settings.provisioning.timeout))
    }

    /// `by`: who cancelled, when not who armed (the event's source).
    private mutating func disarm(reason: String, by canceller: String? = nil, _ fx: inout [DoorEffect]) {
        guard case .armed(let job, let source) = provisioning else { return }
        provisioning = .idle
        fx.append(.cancelTimer(.provisioningTimeout(arming: arming)))
        fx.append(.stopFeedback(.provisioningArmed))
        fx.append(
            .emit(DoorEvent(.provisioningCancelled, reason: reason, action: job.action, source: canceller ?? source)))
    }

    private mutating func writeResult(_ uid: TagUID, _ outcome: WriteOutcome, _ fx: inout [DoorEffect]) {
        guard case .writing(let job) = provisioning, job.uid == uid else { return }
        provisioning = .idle
        fx.append(.stopFeedback(.provisioningArmed))
        switch outcome {
        case .written:
            fx.append(.feedback(.tagWritten))
            fx.append(.emit(DoorEvent(.provisioningWritten, action: job.action, uid: uid)))
        case .failed(let why):
            fx.append(.feedback(.writeFailed))
            fx.append(.emit(DoorEvent(.provisioningFailed, reason: why, action: job.action, uid: uid)))
        }
    }

    // MARK: Remote and admin

    private mutating func remote(_ outcome: RemoteOutcome, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        switch outcome {
        case .accepted(.report, let from):
            fx.append(.publishReport)
            fx.append(.emit(DoorEvent(.remoteAccepted, reason: "report", source: from.rawValue)))
        case .accepted(.action(let a), let from):
            if mode == .lockdown {
                fx.append(.emit(DoorEvent(.remoteRejected, reason: "lockdown", action: a, source: from.rawValue)))
            } else if runAction(a, source: from.rawValue, now, &fx) {
                fx.append(.feedback(.granted))
                fx.append(.emit(DoorEvent(.remoteAccepted, action: a, source: from.rawValue)))
            } else {
                fx.append(.emit(DoorEvent(.remoteRejected, reason: "unknown_action", action: a, source: from.rawValue)))
            }
        case .accepted(.mode(let new), let from):
            // A remote mode change could undo a lockdown: only the exit
            // button and admins act in lockdown.
            if mode == .lockdown && new != .lockdown {
                fx.append(.emit(DoorEvent(.remoteRejected, reason: "lockdown", source: from.rawValue)))
            } else {
                setMode(new, source: from.rawValue, now, &fx)
            }
        case .accepted(.clearLockout, let from):
            clearLockout(source: from.rawValue, &fx)
        case .accepted(.provision(let job), let from):
            // As the button: no arming in lockdown (an admin at the socket may).
            if mode == .lockdown {
                fx.append(
                    .emit(
                        DoorEvent(.provisioningRefused, reason: "lockdown", action: job.action, source: from.rawValue)))
            } else {
                arm(job, source: from.rawValue, &fx)
            }
        case .accepted(.approval(let code, let approve), let from):
            // The phone answers with a native command; Home Assistant with its buttons.
            let by: Approver? = from == .native ? .phone : from == .homeAssistant ? .homeAssistant : nil
            guard let by else {
                fx.append(
                    .emit(DoorEvent(.approvalRefused, reason: "wrong_transport", source: from.rawValue, code: code)))
                return
            }
            approvalAnswer(ApprovalAnswer(code: code, approve: approve, by: by, who: from.rawValue), now, &fx)
        case .accepted(.cancelProvisioning, let from):
            if case .armed = provisioning {
                disarm(reason: "cancelled", by: from.rawValue, &fx)
            } else {
                fx.append(.emit(DoorEvent(.remoteRejected, reason: "not_armed", source: from.rawValue)))
            }
        case .rejected(let code, _, let from):
            fx.append(.emit(DoorEvent(.remoteRejected, reason: code, source: from.rawValue)))
        }
    }

    mutating func setMode(
        _ new: DoorMode, source: String, _ now: MonotonicInstant, _ fx: inout [DoorEffect]
    ) {
        guard new != mode, lockdownAllowsMode(new, source: source, &fx) else { return }
        let old = mode
        mode = new
        if new == .passage {
            for o in settings.outputs { acquire(o.name, .passage, &fx) }
        } else if old == .passage {
            for o in settings.outputs { release(o.name, .passage, &fx) }
        }
        if new == .lockdown {
            // Lockdown stops what stickers and remote commands started, so
            // in lockdown only the exit button and admin hold an output.
            for (id, run) in runs.sorted(by: { $0.key < $1.key }) where !run.survivesLockdown {
                abort(id, reason: "lockdown", now, &fx)
            }
            disarm(reason: "lockdown", &fx)
            cancelApproval(reason: "lockdown", &fx)
        }
        superviseHeldOpen(&fx)
        fx.append(.emit(DoorEvent(.modeChanged, reason: new.rawValue, source: source)))
    }

    private mutating func clearLockout(source: String, _ fx: inout [DoorEffect]) {
        denials = [:]
        globalDenials = []
        lockedTags = [:]
        globalLockUntil = nil
        lastLockout = [:]
        readerDenials = [:]
        lockedReaders = [:]
        lastReaderLockout = [:]
        lockoutGeneration += 1
        fx.append(.emit(DoorEvent(.lockoutCleared, source: source)))
    }

    private mutating func admin(_ request: AdminRequest, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        switch request {
        case .open(let a):
            if runAction(a, source: "admin", survivesLockdown: true, now, &fx) {
                fx.append(.feedback(.granted))
                fx.append(.emit(DoorEvent(.adminOpen, action: a, source: "admin")))
            }
        case .setMode(let new):
            setMode(new, source: "admin", now, &fx)
        case .scheduledMode(let new):
            setMode(new, source: "schedule", now, &fx)
        case .armProvisioning(let job):
            arm(job, source: "admin", &fx)
        case .cancelProvisioning:
            disarm(reason: "cancelled", &fx)
        case .clearLockout:
            clearLockout(source: "admin", &fx)
        case .playFeedback(let kind):
            fx.append(.feedback(kind))
        case .fireReset(let who):
            fireReset(who: who, &fx)
        }
    }

    // MARK: Fire alarm (docs/policy.md "Fire alarm")

    /// The outputs a fire alarm releases.
    public var fireOutputs: [OutputDefinition] { settings.outputs.filter { $0.onFire == .release } }

    /// The input's edge. Into alarm: the `release` outputs are held unlocked
    /// by a holder of their own, which no mode change, lockdown, lockout or
    /// tap takes away (they take only their own); the input clearing changes
    /// nothing at the outputs: only a reset after it does.
    private mutating func fireInput(
        _ active: Bool, source: String = "input", who: String? = nil, _ fx: inout [DoorEffect]
    ) {
        let before = fireLatch
        // The input and the site's signal each hold the alarm: it clears when both have.
        if active { fireSources.insert(source) } else { fireSources.remove(source) }
        switch (fire, active) {
        case (.normal, true), (.cleared, true):
            let wasNormal = fire == .normal
            if wasNormal {
                fx.append(.fireHold(true))
                for o in fireOutputs { acquire(o.name, .fire, &fx) }
            }
            fire = .alarm
            saveFire(before, &fx)
            // The reason names what was released ("none": nothing is `release`).
            let released = fireOutputs.map(\.name).joined(separator: ",")
            fx.append(
                .emit(DoorEvent(.fireAlarm, reason: released.isEmpty ? "none" : released, source: source, who: who)))
            // People leave, doors are propped: the held-open count stops.
            if wasNormal { superviseHeldOpen(&fx) }
        case (.alarm, false) where fireSources.isEmpty:
            fire = .cleared
            saveFire(before, &fx)
            fx.append(.emit(DoorEvent(.fireCleared, source: source, who: who)))
        default:
            // The site's signal joining or leaving an alarm the input holds too.
            saveFire(before, &fx)
        }
    }

    /// `.saveFire` (before the events) when what a restart must keep changed since `before`.
    private mutating func saveFire(_ before: FireLatch, _ fx: inout [DoorEffect]) {
        if fireLatch != before { fx.append(.saveFire(fireLatch)) }
    }

    /// `gatewayctl fire reset`: refused while the input is still in alarm
    /// (`input_active`) or when there is no alarm (`no_alarm`); after the
    /// input cleared, the outputs go back to what else holds them (locked
    /// when nothing does).
    private mutating func fireReset(who: String, _ fx: inout [DoorEffect]) {
        switch fire {
        case .normal:
            fx.append(.emit(DoorEvent(.fireResetRefused, reason: "no_alarm", source: "gatewayctl", who: who)))
        case .alarm:
            fx.append(.emit(DoorEvent(.fireResetRefused, reason: "input_active", source: "gatewayctl", who: who)))
        case .cleared:
            fire = .normal
            for o in fireOutputs { release(o.name, .fire, &fx) }
            fx.append(.fireHold(false))
            fx.append(.saveFire(.normal))
            fx.append(.emit(DoorEvent(.fireReset, source: "gatewayctl", who: who)))
            // Supervision again: a door still open counts afresh from the reset.
            superviseHeldOpen(&fx)
        }
    }

    // MARK: Door contact (DoorContact.swift, docs/policy.md "Door contact")

    /// Whether an open door is counted towards held open: not in passage
    /// mode, and not while a fire alarm holds the outputs released (until its
    /// reset): people leave and doors are propped for the evacuation, and its
    /// alarms would only hide real ones.
    var heldOpenTimed: Bool { mode != .passage && fire == .normal }

    /// After the mode or the fire state changed: the held-open count follows `heldOpenTimed`.
    private mutating func superviseHeldOpen(_ fx: inout [DoorEffect]) {
        if settings.doorContact.enabled { contact.modeChanged(timed: heldOpenTimed, settings.doorContact, &fx) }
    }

    /// The door contact's alarm now (the state document's `door_alarm`).
    public var doorAlarm: DoorAlarm { contact.alarm }
    /// How far the held-open count has gone.
    public var heldOpenStage: HeldOpenStage { contact.stage }

    private mutating func doorContact(_ open: Bool, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        let policy = settings.doorContact
        guard policy.enabled, open != doorOpen else { return }
        doorOpen = open
        if open {
            // In a fire alarm people leave: an open door is not forced.
            let expected =
                !runs.isEmpty || mode == .passage || fire != .normal || contact.exitRequested(now)
                || (lastRunEnd.map { now.since($0) < policy.openGrace } ?? false)
            contact.opened(expected: expected, timed: heldOpenTimed, policy, &fx)
        } else {
            contact.closed(&fx)
        }
    }

    /// A request-to-exit edge: the next opening is an exit (shunt); with an
    /// action, a press also runs it, in lockdown too (as the exit button).
    private mutating func requestToExit(_ pressed: Bool, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        let policy = settings.requestToExit
        contact.requestToExit(pressed: pressed, grace: policy.grace, now)
        guard pressed else { return }
        if let exit = policy.action, runAction(exit, source: "request_to_exit", survivesLockdown: true, now, &fx) {
            fx.append(.emit(DoorEvent(.exitRequest, action: exit, source: "request_to_exit")))
        } else {
            fx.append(.emit(DoorEvent(.requestToExit, reason: "shunt", source: "request_to_exit")))
        }
    }

    // MARK: Timers

    private mutating func timerFired(_ id: TimerID, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        switch id {
        case .step(let run, let step):
            guard runs[run]?.step == step else { return }
            advance(run, now, &fx)
        case .buttonHold(let p):
            holdTimer(p, now, &fx)
        case .provisioningTimeout(let a):
            guard a == arming else { return }
            disarm(reason: "timeout", &fx)
        case .lockoutEnd:
            // Whatever is due ends; after an admin clear nothing is, and the firing is a no-op.
            lockoutTimer(now, &fx)
        case .doorHeldOpen(let g):
            contact.timerFired(generation: g, settings.doorContact, &fx)
        case .approvalTimeout(let id):
            guard approvals.pending?.id == id, let request = approvals.expire(at: now) else { return }
            notApproved(request, .approvalTimedOut, by: nil, &fx)
        }
    }

    // MARK: Approval (docs/policy.md "Approval")

    /// A tap that would open an action needing approval: the door waits,
    /// plays the waiting pattern and publishes the request (its event
    /// carries the code). A request already waiting is replaced.
    private mutating func requestApproval(
        uid: TagUID, action: ActionIndex, policy: ApprovalPolicy, source: String, _ now: MonotonicInstant,
        _ fx: inout [DoorEffect]
    ) {
        let bytes = random
        random = []
        switch approvals.open(uid: uid, action: action, policy: policy, random: bytes, at: now, source: source) {
        case .noCode:
            // No randomness was supplied: fail closed.
            fx.append(.feedback(.denied))
            fx.append(
                .emit(
                    DoorEvent(.accessDenied, reason: Denial.notApproved.reason, action: action, uid: uid, source: "tag")
                ))
        case .waiting(let request, let replaced):
            if let replaced {
                fx.append(.cancelTimer(.approvalTimeout(id: replaced.id)))
                fx.append(
                    .emit(
                        DoorEvent(
                            .approvalCancelled, reason: "replaced", action: replaced.action, uid: replaced.uid,
                            source: "tag", code: replaced.code)))
            }
            fx.append(.feedback(.awaitingApproval))
            fx.append(
                .emit(
                    DoorEvent(
                        .approvalRequested, reason: policy.by.map(\.rawValue).sorted().joined(separator: ","),
                        action: action, uid: uid, source: "tag", code: request.code)))
            fx.append(.startTimer(.approvalTimeout(id: request.id), after: policy.timeout))
        }
    }

    private mutating func approvalAnswer(_ answer: ApprovalAnswer, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        let outcome =
            answer.code.map { approvals.answer(code: $0, approve: answer.approve, by: answer.by, at: now) }
            ?? approvals.answerPending(approve: answer.approve, by: answer.by, at: now)
        switch outcome {
        case .approved(let request, let by):
            fx.append(.cancelTimer(.approvalTimeout(id: request.id)))
            fx.append(.stopFeedback(.awaitingApproval))
            fx.append(
                .emit(
                    DoorEvent(
                        .approvalGranted, action: request.action, uid: request.uid, source: by.rawValue,
                        code: request.code, who: answer.who)))
            // Lockdown cancels a waiting request, so none is approved in it.
            fx.append(.feedback(.granted))
            fx.append(
                .emit(
                    DoorEvent(
                        .accessGranted, reason: "approved", action: request.action, uid: request.uid,
                        source: request.source)))
            _ = runAction(request.action, source: "tag", now, &fx)
        case .denied(let request, let by):
            fx.append(.cancelTimer(.approvalTimeout(id: request.id)))
            notApproved(request, .approvalDenied, by: (by, answer.who), &fx)
        case .refused(let reason, let expired):
            fx.append(
                .emit(
                    DoorEvent(
                        .approvalRefused, reason: reason, action: expired?.action, source: answer.by.rawValue,
                        code: answer.code ?? expired?.code, who: answer.who)))
            if let expired {
                fx.append(.cancelTimer(.approvalTimeout(id: expired.id)))
                notApproved(expired, .approvalTimedOut, by: nil, &fx)
            }
        }
    }

    /// Denied or timed out: the tap is denied `not_approved`, with its feedback.
    private mutating func notApproved(
        _ request: ApprovalRequest, _ kind: DoorEvent.Kind, by: (Approver, String)?, _ fx: inout [DoorEffect]
    ) {
        fx.append(.stopFeedback(.awaitingApproval))
        fx.append(
            .emit(
                DoorEvent(
                    kind, action: request.action, uid: request.uid, source: by?.0.rawValue, code: request.code,
                    who: by?.1)))
        fx.append(.feedback(.denied))
        fx.append(
            .emit(
                DoorEvent(
                    .accessDenied, reason: Denial.notApproved.reason, action: request.action, uid: request.uid,
                    source: "tag")))
    }

    private mutating func cancelApproval(reason: String, _ fx: inout [DoorEffect]) {
        guard let request = approvals.cancel() else { return }
        fx.append(.cancelTimer(.approvalTimeout(id: request.id)))
        fx.append(.stopFeedback(.awaitingApproval))
        fx.append(
            .emit(
                DoorEvent(
                    .approvalCancelled, reason: reason, action: request.action, uid: request.uid, source: "tag",
                    code: request.code)))
        fx.append(
            .emit(
                DoorEvent(
                    .accessDenied, reason: Denial.notApproved.reason, action: request.action, uid: request.uid,
                    source: "tag")))
    }
}
