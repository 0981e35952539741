import DoorCore

/// A manual clock: time moves only when a test says so (DEVELOPERS.md "Conventions" §2). The
/// wall clock follows the monotonic one from where it was set, like a
/// synchronised system clock, until a test sets it again (a clock jump).
public struct ManualClock: Sendable {
    public private(set) var monotonic: MonotonicInstant
    public var synchronised: Bool
    /// Unix seconds at `wallSetAt`.
    private var wallBase: Int64
    private var wallSetAt: MonotonicInstant

    public init(
        monotonic: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000),
        unixSeconds: Int64 = 1_760_000_000, synchronised: Bool = true
    ) {
        self.monotonic = monotonic
        self.synchronised = synchronised
        wallBase = unixSeconds
        wallSetAt = monotonic
    }

    public var unixSeconds: Int64 { wallBase + monotonic.since(wallSetAt).components.seconds }
    public var now: Now {
        Now(monotonic: monotonic, wall: WallClock(unixSeconds: unixSeconds, synchronised: synchronised))
    }

    /// Moves time forward; the monotonic clock never goes back, so a negative
    /// duration leaves it where it is.
    public mutating func advance(_ d: Duration) {
        if d > .zero { monotonic = monotonic + d }
    }

    /// Sets the wall clock (as NTP or an operator would); monotonic time is unaffected.
    public mutating func setWall(unixSeconds: Int64) {
        wallBase = unixSeconds
        wallSetAt = monotonic
    }
}
