/// A point on the monotonic clock (CLOCK_MONOTONIC / CLOCK_BOOTTIME in the
/// runtime, a manual clock in tests). Timers and debounce use it; it never jumps.
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    public static let zero = MonotonicInstant(nanoseconds: 0)

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    /// `self + d`; negative durations saturate at zero.
    public static func + (a: Self, d: Duration) -> Self {
        let delta = d.nanosecondsClamped
        if delta >= 0 { return Self(nanoseconds: a.nanoseconds &+ UInt64(delta)) }
        let back = UInt64(-delta)
        return Self(nanoseconds: a.nanoseconds > back ? a.nanoseconds - back : 0)
    }

    /// The duration from `earlier` to `self` (zero when `earlier` is later).
    public func since(_ earlier: Self) -> Duration {
        nanoseconds >= earlier.nanoseconds ? .nanoseconds(Int64(clamping: nanoseconds - earlier.nanoseconds)) : .zero
    }

    public var description: String { "mono+\(nanoseconds / 1_000_000)ms" }
}

/// Wall-clock time for timestamps and freshness checks, with whether the
/// kernel says the clock is synchronised (`adjtimex`, STA_UNSYNC clear) or the
/// configuration declares it so (simulations and tests).
public struct WallClock: Equatable, Hashable, Sendable {
    /// Unix time, seconds.
    public var unixSeconds: Int64
    public var synchronised: Bool
    public init(unixSeconds: Int64, synchronised: Bool) {
        self.unixSeconds = unixSeconds
        self.synchronised = synchronised
    }
}

/// The time expiry is judged at: the wall clock, never earlier than the
/// latest time seen with the clock synchronised (the floor). A clock set back
/// by hours, or a Pi that booted without NTP and a real-time clock, then
/// cannot make an expired sticker valid again; a clock ahead only makes
/// expiry come sooner (fail-secure).
public struct ClockFloor: Equatable, Sendable {
    public private(set) var unix: Int64
    public init(unix: Int64 = 0) { self.unix = unix }

    /// The floor after seeing `wall`: raised by a synchronised reading only.
    public mutating func observe(_ wall: WallClock) {
        if wall.synchronised, wall.unixSeconds > unix { unix = wall.unixSeconds }
    }

    /// The time to judge expiry at, for a reading of `wall`.
    public func expiryTime(_ wall: WallClock) -> Int64 { max(wall.unixSeconds, unix) }

    /// What an administrator's reset does to a floor a bad time source
    /// raised (a far-future NTP answer, a real-time clock set years ahead):
    /// lowered to a synchronised reading, never to an unsynchronised one
    /// (that would hand expiry back to the wrong clock the floor is there
    /// for), and never raised.
    public enum Reset: Equatable, Sendable {
        case lowered(from: Int64, to: Int64)
        /// The floor is not ahead of the clock: nothing to reset.
        case notAhead(floor: Int64)
        case clockUnsynchronised
    }

    /// The reset's outcome for a reading of `wall`; `lowered` is applied.
    public mutating func reset(to wall: WallClock) -> Reset {
        guard wall.synchronised else { return .clockUnsynchronised }
        guard unix > wall.unixSeconds else { return .notAhead(floor: unix) }
        defer { unix = wall.unixSeconds }
        return .lowered(from: unix, to: wall.unixSeconds)
    }
}

/// What `DoorMachine.handle(_:at:)` is told about "now" (DEVELOPERS.md "Conventions" §1).
public struct Now: Equatable, Hashable, Sendable {
    public var monotonic: MonotonicInstant
    public var wall: WallClock
    public init(monotonic: MonotonicInstant, wall: WallClock) {
        self.monotonic = monotonic
        self.wall = wall
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to Int64.
    public var nanosecondsClamped: Int64 {
        let (s, atto) = components
        let (ns, o1) = s.multipliedReportingOverflow(by: 1_000_000_000)
        if o1 { return s < 0 ? .min : .max }
        let (sum, o2) = ns.addingReportingOverflow(atto / 1_000_000_000)
        return o2 ? (s < 0 ? .min : .max) : sum
    }
    /// Whole milliseconds, clamped to Int64.
    public var millisecondsClamped: Int64 { nanosecondsClamped / 1_000_000 }
}
