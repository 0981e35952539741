/// A key an outdoor reader's keypad sent (issue 35).
public enum KeypadKey: Equatable, Hashable, Sendable {
    case digit(UInt8)
    /// `#`: the entry is complete.
    case enter
    /// `*`: the entry so far is dropped.
    case clear

    /// A Wiegand keypad's key value, as ESPHome's `wiegand` component maps
    /// it ("0123456789*#"): 0–9 a digit, 10 `*`, 11 `#`; nil for 12–15.
    public init?(wiegand value: UInt8) {
        switch value {
        case 0...9: self = .digit(value)
        case 10: self = .clear
        case 11: self = .enter
        default: return nil
        }
    }
}

/// The PINs the keypad checks entries against: the store implements it
/// (GatewayStore `StorePINs`), tests fake it. Reads fail by throwing (the
/// entry is then denied `registry_unavailable`, nothing counted).
public protocol PINVerifier {
    /// The PIN of a credential (a card's registry key), nil when it has none.
    func pin(for uid: TagUID) throws -> PINHash?
    /// Every PIN-only code: its key (`PINCode`) and hash.
    func codes() throws -> [(key: TagUID, hash: PINHash)]
}

/// How the keypad desk times entries and locks a reader's keypad out.
public struct KeypadSettings: Equatable, Sendable {
    /// A gap this long between two keys drops the entry typed so far.
    public var keyGap: Duration = .seconds(5)
    /// A card whose action lists "card+pin" waits this long for its PIN.
    public var cardWindow: Duration = .seconds(10)
    /// Wrong PINs on one reader within `lockoutWindow` that lock its keypad.
    public var lockoutThreshold = 5
    public var lockoutWindow: Duration = .seconds(300)
    /// The first keypad lockout; each following one within `lockoutCap` doubles, up to it.
    public var lockoutDuration: Duration = .seconds(60)
    public var lockoutCap: Duration = .seconds(900)
    public init() {}
}

/// What the keypad desk asks the door to do.
public enum KeypadOutput: Equatable, Sendable {
    /// A decided tap for the door machine (`DoorInput.tagArrived`): a card
    /// released by its PIN, or denied.
    case decided(TagPresentation)
    /// A PIN-only code to decide (`TapDecision.decide`), then hand to the machine.
    case decide(TapFacts)
    /// An event for the audit log and the transports: a wrong PIN, a
    /// keypad lockout and its end, a duress PIN's silent alarm.
    case emit(DoorEvent)
    case feedback(FeedbackKind)
}

/// An entry typed on a reader's keypad, to check against the PINs
/// (`KeypadDesk.press` → `verify` → `checked`). Never printed: it holds a PIN.
public struct PINCheck: Sendable {
    public let reader: String
    /// nil: no PIN (too short, or more keys than a PIN has) — wrong, unhashed.
    let pin: PIN?
    /// The card waiting on that reader for its PIN, if any.
    public let held: TagPresentation?

    public enum Result: Equatable, Sendable {
        /// The waiting card's own PIN (a duress one raises the silent alarm).
        case cardPIN(duress: Bool)
        /// A PIN-only code; for a waiting card only a duress code counts.
        case code(PINCodeMatch)
        case wrong
        /// The PINs could not be read (`registry_unavailable`, nothing counted).
        case unavailable
    }
}

/// The keypads of the door's outdoor readers (issue 35), pure: keys in,
/// decisions out, one state per reader. An entry is digits then `#`; `*`
/// or a pause of `keyGap` drops it. With a card waiting on that reader for
/// its PIN (`TagPresentation.pinRequired`) the entry is that card's PIN — or
/// a duress code, which raises `duress` and is decided as the code it is
/// (the card stays held until its window ends) — else a PIN-only code. Wrong PINs count per reader: `lockoutThreshold` of
/// them lock that reader's keypad (its keys ignored, no PIN hashed) while the
/// door's other readers, and every card alone, go on as before.
public struct KeypadDesk: Sendable {
    public let settings: KeypadSettings

    struct Held: Sendable {
        var presentation: TagPresentation
        var until: MonotonicInstant
    }

    struct Reader: Sendable {
        var keys: [UInt8] = []
        var overflow = false
        var lastKey: MonotonicInstant?
        var held: Held?
        var failures: [MonotonicInstant] = []
        var lockedUntil: MonotonicInstant?
        var lastLockout: (end: MonotonicInstant, length: Duration)?
        /// An entry of this reader is being checked (`press` → `checked`).
        var checking = false
        /// Keys typed meanwhile, pressed in order once the check is answered.
        var pending: [(key: KeypadKey, at: MonotonicInstant)] = []
    }

    var readers: [String: Reader] = [:]

    public init(settings: KeypadSettings = KeypadSettings()) { self.settings = settings }

    /// Whether `reader`'s keypad is locked out at `now`.
    public func isLockedOut(_ reader: String, at now: MonotonicInstant) -> Bool {
        readers[reader]?.lockedUntil.map { now < $0 } ?? false
    }

    /// The readers whose keypads are locked out at `now`, and until when
    /// (`gatewayctl lockout status`, the state document, Home Assistant).
    public func lockouts(at now: MonotonicInstant) -> [String: MonotonicInstant] {
        readers.compactMapValues { r in r.lockedUntil.flatMap { now < $0 ? $0 : nil } }
    }

    /// Ends every keypad lockout and forgets the wrong PINs counted toward
    /// the next one (`gatewayctl lockout clear`, Home Assistant's button: the
    /// door's lockout clear, whoever sends it). A card waiting for its PIN
    /// and the keys typed so far stay.
    public mutating func clearLockouts() {
        for name in readers.keys {
            readers[name]?.lockedUntil = nil
            readers[name]?.failures = []
            readers[name]?.lastLockout = nil
        }
    }

    /// The next time `tick` has something to do (a card's window, a lockout's end).
    public var nextDeadline: MonotonicInstant? {
        readers.values.flatMap { [$0.held?.until, $0.lockedUntil].compactMap { $0 } }.min()
    }

    /// A decided card read: handed on, unless it waits for its PIN here.
    public mutating func card(_ p: TagPresentation, at now: MonotonicInstant) -> [KeypadOutput] {
        var out = tick(at: now)
        guard p.pinRequired else { return out + [.decided(p)] }
        guard let name = p.reader else { return out + [.decided(TapDecision.deny(p.uid, .pinTimeout).from(p))] }
        if isLockedOut(name, at: now) {
            return out + [.decided(TapDecision.deny(p.uid, .lockedOut).from(p))]
        }
        var r = readers[name] ?? Reader()
        if let previous = r.held, previous.presentation.uid != p.uid {
            out.append(.decided(TapDecision.deny(previous.presentation.uid, .pinTimeout).from(previous.presentation)))
        }
        r.held = Held(presentation: p, until: now + settings.cardWindow)
        r.keys = []
        r.overflow = false
        readers[name] = r
        return out
    }

    /// A key from `reader`'s keypad, decided at once: `press`, `verify` and
    /// `checked` in one call (the desk's tests, one thread). The daemon runs
    /// `verify` — the KDF — off its door queue (DoorRuntime).
    public mutating func key(
        _ key: KeypadKey, reader name: String, at now: MonotonicInstant, verifier: some PINVerifier
    ) -> [KeypadOutput] {
        var (out, check) = press(key, reader: name, at: now)
        while let c = check {
            let answer = checked(c, Self.verify(c, verifier: verifier), at: now)
            out += answer.outputs
            check = answer.check
        }
        return out
    }

    /// At most this many keys wait for a reader's check (a PIN and a half);
    /// more are dropped: a flood queues no work.
    public static let pendingKeys = 20

    /// A key from `reader`'s keypad, without hashing: a digit, `*` or a
    /// gap change the entry; `#` ends it and returns the entry to check
    /// (`verify`, anywhere, then `checked`, back where the desk lives), with
    /// the card waiting on that reader. One entry per reader is checked at a
    /// time: keys typed meanwhile wait (up to `pendingKeys`) and are pressed,
    /// with their own times, once it is answered — after a lockout it set, they
    /// are dropped as a locked keypad's are.
    public mutating func press(_ key: KeypadKey, reader name: String, at now: MonotonicInstant)
        -> (outputs: [KeypadOutput], check: PINCheck?)
    {
        let out = tick(at: now)
        // A locked keypad's keys are dropped unread: a flood costs no hashing.
        if isLockedOut(name, at: now) { return (out, nil) }
        if readers[name]?.checking == true {
            if readers[name]!.pending.count < Self.pendingKeys { readers[name]!.pending.append((key, now)) }
            return (out, nil)
        }
        var r = readers[name] ?? Reader()
        defer { readers[name] = r }
        if let last = r.lastKey, now.since(last) >= settings.keyGap {
            r.keys = []
            r.overflow = false
        }
        r.lastKey = now
        switch key {
        case .clear:
            r.keys = []
            r.overflow = false
            return (out, nil)
        case .digit(let d):
            if r.keys.count < PIN.lengths.upperBound { r.keys.append(d) } else { r.overflow = true }
            return (out, nil)
        case .enter:
            let pin = r.overflow ? nil : PIN(keys: r.keys)
            r.keys = []
            r.overflow = false
            let held = r.held
            r.held = nil
            r.checking = true
            return (out, PINCheck(reader: name, pin: pin, held: held?.presentation))
        }
    }

    /// The KDF's part of an entry (scrypt per PIN compared, ≈0.1–0.2 s):
    /// pure, no desk state, run wherever hashing blocks nobody.
    public static func verify(_ check: PINCheck, verifier: some PINVerifier) -> PINCheck.Result {
        guard let pin = check.pin else { return .wrong }
        do {
            if let p = check.held {
                if let own = try verifier.pin(for: p.uid), try own.matches(pin) { return .cardPIN(duress: own.duress) }
                // A duress code typed for a waiting card raises the alarm and
                // is decided as the code it is — its revocation, window,
                // schedule and uses, its own action — never as the card's
                // PIN: a revoked or expired duress code (or one leaked)
                // must not turn card + PIN into card alone.
                if let code = try code(pin, verifier: verifier), code.duress { return .code(code) }
                return .wrong
            }
            return try code(pin, verifier: verifier).map(PINCheck.Result.code) ?? .wrong
        } catch {
            return .unavailable
        }
    }

    /// An entry's check answered (`verify`'s result for `check`): the card
    /// released or denied, the code to decide, a wrong PIN counted toward
    /// the reader's lockout; then the keys typed meanwhile, in order — which
    /// may end the next entry to check.
    public mutating func checked(_ check: PINCheck, _ result: PINCheck.Result, at now: MonotonicInstant)
        -> (outputs: [KeypadOutput], check: PINCheck?)
    {
        var out = answered(check, result, at: now)
        let name = check.reader
        let pending = readers[name]?.pending ?? []
        readers[name]?.pending = []
        var next: PINCheck?
        for p in pending {
            let (o, c) = press(p.key, reader: name, at: p.at)
            out += o
            next = next ?? c
        }
        return (out, next)
    }

    private mutating func answered(_ check: PINCheck, _ result: PINCheck.Result, at now: MonotonicInstant)
        -> [KeypadOutput]
    {
        var out = tick(at: now)
        let name = check.reader
        var r = readers[name] ?? Reader()
        r.checking = false
        defer { readers[name] = r }
        switch (result, check.held) {
        case (.cardPIN(let duress), let p?):
            var released = p
            released.pinRequired = false
            if duress { out.append(.emit(Self.duress(uid: p.uid, reader: name))) }
            return out + [.decided(released)]
        case (.code(let code), let p?):
            return out + [.emit(Self.duress(uid: p.uid, reader: name)), .decide(TapFacts(code: code, reader: name))]
        case (.code(let code), nil):
            if code.duress { out.append(.emit(Self.duress(uid: code.key, reader: name))) }
            return out + [.decide(TapFacts(code: code, reader: name))]
        case (.unavailable, let p?):
            return out + [.decided(TapDecision.deny(p.uid, .registryUnavailable).from(p))]
        case (.unavailable, nil):
            return out + [
                .feedback(.denied),
                .emit(DoorEvent(.accessDenied, reason: Denial.registryUnavailable.reason, source: Self.source(name))),
            ]
        case (.wrong, let p?):
            out.append(.decided(TapDecision.deny(p.uid, .wrongPIN).from(p)))
        case (.wrong, nil), (.cardPIN, nil):
            out.append(.feedback(.denied))
            out.append(.emit(DoorEvent(.accessDenied, reason: Denial.wrongPIN.reason, source: Self.source(name))))
        }
        out += countFailure(&r, reader: name, now)
        return out
    }

    /// Cards whose window passed are denied `pin_timeout`; keypad lockouts that ended say so.
    public mutating func tick(at now: MonotonicInstant) -> [KeypadOutput] {
        var out: [KeypadOutput] = []
        for name in readers.keys.sorted() {
            guard var r = readers[name] else { continue }
            if let held = r.held, held.until <= now {
                r.held = nil
                out.append(.decided(TapDecision.deny(held.presentation.uid, .pinTimeout).from(held.presentation)))
            }
            if let until = r.lockedUntil, until <= now {
                r.lockedUntil = nil
                out.append(.emit(DoorEvent(.lockoutEnded, reason: "keypad", source: Self.source(name))))
            }
            readers[name] = r
        }
        return out
    }

    // MARK: Helpers

    static func source(_ reader: String) -> String { "reader:\(reader)" }

    static func duress(uid: TagUID, reader: String) -> DoorEvent {
        DoorEvent(.duress, reason: "duress_pin", uid: uid, source: source(reader))
    }

    /// The PIN-only code `pin` is: one derivation per distinct salt and cost,
    /// each row's hash compared in constant time.
    static func code(_ pin: PIN, verifier: some PINVerifier) throws -> PINCodeMatch? {
        var derived: [PINHash: [UInt8]] = [:]
        for (key, hash) in try verifier.codes() {
            var probe = hash
            probe.hash = []
            probe.duress = false
            let mine: [UInt8]
            if let known = derived[probe] {
                mine = known
            } else {
                mine = try hash.derive(pin)
                derived[probe] = mine
            }
            if Crypto.constantTimeEqual(mine, hash.hash) { return PINCodeMatch(key: key, duress: hash.duress) }
        }
        return nil
    }

    private mutating func countFailure(_ r: inout Reader, reader name: String, _ now: MonotonicInstant)
        -> [KeypadOutput]
    {
        r.failures = r.failures.filter { now.since($0) < settings.lockoutWindow } + [now]
        guard r.failures.count >= settings.lockoutThreshold else { return [] }
        r.failures = []
        var length = settings.lockoutDuration
        if let last = r.lastLockout, now.since(last.end) < settings.lockoutCap {
            length = min(settings.lockoutCap, last.length * 2)
        }
        length = min(length, settings.lockoutCap)
        r.lockedUntil = now + length
        r.lastLockout = (now + length, length)
        return [
            .feedback(.lockedOut),
            .emit(DoorEvent(.lockout, reason: "keypad", source: Self.source(name))),
        ]
    }
}
