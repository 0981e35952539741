import DoorCore

/// Software debounce for a mechanical contact, as a pure value fed with raw
/// (level, time) samples — edge events from the kernel, or polls in tests.
///
/// A new level counts only once it has been stable for `interval` (default
/// 30 ms): a bounce that returns to the old level sooner is ignored. The
/// reported edge carries the time the new level began, so a press-to-release
/// duration is not skewed by the debounce.
public struct Debouncer: Sendable {
    public let interval: Duration
    /// The debounced level (true = active).
    public private(set) var level: Bool
    /// The differing raw level being timed, and when it began.
    private var candidate: (level: Bool, since: MonotonicInstant)?

    public init(interval: Duration = .milliseconds(30), initial: Bool) {
        self.interval = interval
        self.level = initial
    }

    /// When a pending level becomes stable if no other sample arrives;
    /// nil when nothing is pending. The input thread sleeps until then.
    public var deadline: MonotonicInstant? { candidate.map { $0.since + interval } }

    /// Feed a raw level seen at `time` (samples in time order).
    /// Returns the debounced edges completed by `time`, oldest first.
    public mutating func sample(_ raw: Bool, at time: MonotonicInstant) -> [Edge] {
        var edges: [Edge] = []
        if let e = advance(to: time) { edges.append(e) }
        if raw == level {
            candidate = nil
        } else if candidate?.level != raw {
            candidate = (raw, time)
        }
        if let e = advance(to: time) { edges.append(e) }
        return edges
    }

    /// Report the pending level if it has now been stable for `interval`.
    public mutating func advance(to now: MonotonicInstant) -> Edge? {
        guard let c = candidate, now >= c.since + interval else { return nil }
        candidate = nil
        level = c.level
        return Edge(active: c.level, at: c.since)
    }

    /// A debounced change: the new level and when it began.
    public struct Edge: Equatable, Sendable {
        public var active: Bool
        public var at: MonotonicInstant
        public init(active: Bool, at: MonotonicInstant) {
            self.active = active
            self.at = at
        }
    }
}
