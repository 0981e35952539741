/// The door contact's watch (docs/policy.md "Door contact"): the held-open
/// escalation, the forced-open alarm and the request-to-exit shunt. Pure, like
/// the machine that holds it: `DoorMachine` hands it the contact's edges, the
/// request-to-exit input and its one timer (`TimerID.doorHeldOpen`), and it
/// appends the effects.
///
/// Held open (the door stays open outside passage mode and outside a fire
/// alarm not yet reset), in stages, each off when its time is zero:
/// - T1 `warn`: the `held_open` pattern at the door (buzzer and red LED), repeating
///   until the door closes; event `door_held_open_warning`.
/// - T2 `alert`: event `door_held_open` (as before the stages), and the state's
///   `door_alarm` becomes `held_open` (Home Assistant's "Door alarm").
/// - T3 `escalate`: event `door_held_open_escalated`, for the site.
///
/// Forced open (the contact opens without a grant, passage mode, a fire alarm
/// or a request to exit): event `door_forced_open` and `door_alarm`
/// `forced_open` at once. Closing the door ends both: the pattern stops and
/// `door_alarm_cleared` names what ended (`forced_open`, `held_open`).
public enum HeldOpenStage: String, Sendable, Equatable, Comparable, CaseIterable {
    case none, warning, alert, escalated

    public static func < (a: Self, b: Self) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// What the door contact's alarm is now (the state document's `door_alarm`).
public enum DoorAlarm: String, Sendable, Equatable {
    case none
    case forcedOpen = "forced_open"
    case heldOpen = "held_open"
}

/// `[request_to_exit]`: a request-to-exit input (a button or a PIR on the
/// inside) marks the next opening as an exit, not forced, for `grace`; with an
/// `action` it also runs it (pulses the strike). Default: shunt only — a maglock
/// door has its own hardware REX in series with the lock's supply
/// (board/wiring.md), which must not depend on the Pi.
public struct RequestToExitPolicy: Equatable, Sendable, Hashable {
    public var grace: Duration
    public var action: ActionIndex?
    public init(grace: Duration = .seconds(10), action: ActionIndex? = nil) {
        self.grace = grace
        self.action = action
    }
}

extension DoorContactPolicy {
    /// The held-open stages that are on, earliest first, with their times
    /// from the opening.
    public var heldOpenStages: [(stage: HeldOpenStage, after: Duration)] {
        [(HeldOpenStage.warning, warnAfter), (.alert, heldOpenAfter), (.escalated, escalateAfter)]
            .filter { $0.after > .zero }
            .sorted { $0.after < $1.after || ($0.after == $1.after && $0.stage < $1.stage) }
    }
}

struct DoorContactWatch: Equatable, Sendable {
    private(set) var open = false
    private(set) var stage: HeldOpenStage = .none
    private(set) var forced = false
    /// The held-open count runs (the door is open outside passage mode).
    private var timing = false
    /// How many of the policy's stages the count has passed, and whether the warning pattern plays.
    private var passed = 0
    private(set) var warned = false
    private var generation = 0
    private var rexPressed = false
    private var rexUntil: MonotonicInstant?

    var alarm: DoorAlarm {
        if forced { return .forcedOpen }
        return stage >= .alert ? .heldOpen : .none
    }

    /// A request-to-exit edge: while pressed and for `grace` after either
    /// edge, an opening is an exit.
    mutating func requestToExit(pressed: Bool, grace: Duration, _ now: MonotonicInstant) {
        rexPressed = pressed
        rexUntil = now + grace
    }

    func exitRequested(_ now: MonotonicInstant) -> Bool {
        rexPressed || (rexUntil.map { now < $0 } ?? false)
    }

    /// The contact opened. `expected`: a grant, passage, a fire alarm or an
    /// exit request explains it; `timed`: the held-open count starts (not in passage).
    mutating func opened(
        expected: Bool, timed: Bool, _ policy: DoorContactPolicy, _ fx: inout [DoorEffect]
    ) {
        open = true
        generation += 1
        stage = .none
        fx.append(.emit(DoorEvent(.doorOpened)))
        if !expected {
            forced = true
            fx.append(.emit(DoorEvent(.doorForcedOpen)))
        }
        // The exit request is spent by the opening it explained.
        rexUntil = nil
        timing = false
        if timed { startCount(policy, &fx) }
    }

    mutating func closed(_ fx: inout [DoorEffect]) {
        open = false
        fx.append(.cancelTimer(.doorHeldOpen(generation: generation)))
        generation += 1
        timing = false
        fx.append(.emit(DoorEvent(.doorClosed)))
        endAlarms(forcedToo: true, &fx)
    }

    /// After a mode change (or a fire alarm's start or reset) with the door
    /// open: passage and a fire alarm expect it open (the count stops, a
    /// held-open stage reached is cleared); leaving them starts the count
    /// afresh. Other changes leave a running count alone.
    mutating func modeChanged(timed: Bool, _ policy: DoorContactPolicy, _ fx: inout [DoorEffect]) {
        guard open, timed != timing else { return }
        fx.append(.cancelTimer(.doorHeldOpen(generation: generation)))
        generation += 1
        timing = false
        endAlarms(forcedToo: false, &fx)
        if timed { startCount(policy, &fx) }
    }

    /// The count's timer: the next stage due, and the timer for the one after.
    mutating func timerFired(generation g: Int, _ policy: DoorContactPolicy, _ fx: inout [DoorEffect]) {
        guard g == generation, open, timing else { return }
        let stages = policy.heldOpenStages
        guard passed < stages.count else { return }
        let index = passed
        let (next, at) = stages[index]
        passed += 1
        stage = max(stage, next)
        switch next {
        case .none: break
        case .warning:
            warned = true
            fx.append(.feedback(.heldOpen))
            fx.append(.emit(DoorEvent(.doorHeldOpenWarning)))
        case .alert:
            fx.append(.emit(DoorEvent(.doorHeldOpen)))
        case .escalated:
            fx.append(.emit(DoorEvent(.doorHeldOpenEscalated)))
        }
        if index + 1 < stages.count {
            fx.append(.startTimer(.doorHeldOpen(generation: generation), after: stages[index + 1].after - at))
        }
    }

    private mutating func startCount(_ policy: DoorContactPolicy, _ fx: inout [DoorEffect]) {
        timing = true
        stage = .none
        passed = 0
        if let first = policy.heldOpenStages.first {
            fx.append(.startTimer(.doorHeldOpen(generation: generation), after: first.after))
        }
    }

    /// Stops the warning pattern and publishes what ended.
    private mutating func endAlarms(forcedToo: Bool, _ fx: inout [DoorEffect]) {
        if warned {
            warned = false
            fx.append(.stopFeedback(.heldOpen))
        }
        var ended: [String] = []
        if forcedToo && forced {
            forced = false
            ended.append(DoorAlarm.forcedOpen.rawValue)
        }
        if stage != .none { ended.append(DoorAlarm.heldOpen.rawValue) }
        stage = .none
        passed = 0
        if !ended.isEmpty {
            fx.append(.emit(DoorEvent(.doorAlarmCleared, reason: ended.joined(separator: ","))))
        }
    }
}
