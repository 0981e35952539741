import DoorCore

/// Drives a DoorMachine like the runtime does — executing timer effects on a
/// manual clock — and records every effect, without sleeping.
public struct MachineHarness {
    public var machine: DoorMachine
    public var clock = ManualClock()
    public private(set) var timers: [TimerID: MonotonicInstant] = [:]
    /// Every effect so far, in order.
    public private(set) var log: [DoorEffect] = []
    /// The last state each output was driven to.
    public private(set) var outputs: [String: OutputState] = [:]

    public init(settings: DoorSettings = DoorSettings()) {
        machine = DoorMachine(settings: settings)
    }

    @discardableResult
    public mutating func start() -> [DoorEffect] {
        let fx = machine.start(at: clock.now)
        apply(fx)
        return fx
    }

    @discardableResult
    public mutating func send(_ input: DoorInput) -> [DoorEffect] {
        let fx = machine.handle(input, at: clock.now)
        apply(fx)
        return fx
    }

    /// Moves time forward, firing due timers in deadline order; returns the effects.
    @discardableResult
    public mutating func advance(_ d: Duration) -> [DoorEffect] {
        let target = clock.monotonic + d
        var all: [DoorEffect] = []
        while let (id, at) = timers.filter({ $0.value <= target }).min(by: { $0.value < $1.value }) {
            timers[id] = nil
            let step = at.since(clock.monotonic)
            clock.advance(step)
            all += send(.timerFired(id))
        }
        clock.advance(target.since(clock.monotonic))
        return all
    }

    /// Fires every pending timer (until none is left or `limit` firings).
    @discardableResult
    public mutating func runAllTimers(limit: Int = 10_000) -> [DoorEffect] {
        var all: [DoorEffect] = []
        var n = 0
        while let next = timers.values.min(), n < limit {
            all += advance(next.since(clock.monotonic))
            n += 1
        }
        return all
    }

    mutating func apply(_ fx: [DoorEffect]) {
        log += fx
        for e in fx {
            switch e {
            case .startTimer(let id, let after): timers[id] = clock.monotonic + after
            case .cancelTimer(let id): timers[id] = nil
            case .drive(let o, let s): outputs[o] = s
            default: break
            }
        }
    }

    public static func tag(_ hex: String, _ verdict: AccessVerdict, content: TagPresentation.Content = .ours)
        -> DoorInput
    {
        .tagArrived(TagPresentation(uid: TagUID(hex: hex)!, content: content, verdict: verdict))
    }
}

extension Array where Element == DoorEffect {
    /// The events among the effects.
    public var events: [DoorEvent] { compactMap { if case .emit(let e) = $0 { return e } else { return nil } } }
    public var eventKinds: [DoorEvent.Kind] { events.map(\.kind) }
    public var drives: [DoorEffect] { filter { if case .drive = $0 { return true } else { return false } } }
}
