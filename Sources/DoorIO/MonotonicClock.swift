#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import DoorCore

/// CLOCK_MONOTONIC, the clock the kernel stamps GPIO edge events with
/// (uAPI v1 since Linux 5.7) and the one patterns and debounce run on.
public enum MonotonicClock {
    public static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(timespec: ts)
    }

    /// Sleep until `deadline` (clock_nanosleep TIMER_ABSTIME; EINTR resumes).
    public static func sleep(until deadline: MonotonicInstant) {
        var ts = timespec(
            tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
            tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    public static func sleep(for duration: Duration) {
        sleep(until: now() + duration)
    }
}

extension MonotonicInstant {
    init(timespec ts: timespec) {
        self.init(nanoseconds: UInt64(max(ts.tv_sec, 0)) * 1_000_000_000 + UInt64(max(ts.tv_nsec, 0)))
    }

    /// Whole milliseconds, as the CLI prints them.
    public var milliseconds: UInt64 { nanoseconds / 1_000_000 }
}
