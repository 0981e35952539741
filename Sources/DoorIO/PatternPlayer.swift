import DoorCore

/// The timing of feedback patterns on the indicator lines, as a pure value
/// on the monotonic clock (DEVELOPERS.md "Conventions" §2: tests drive it with a manual clock).
///
/// Rules (FeedbackPattern's doc): a pattern of higher priority preempts the
/// playing one, an equal one replaces it, a lesser one is ignored; a
/// repeating pattern loops until stopped or replaced; when a pattern ends or
/// is preempted every line it turned on goes off — the returned changes
/// always take the lines from what was lit to exactly what should be lit.
///
/// The *background* is what the door shows when nothing else plays (its idle
/// heartbeat, a reader fault, provisioning armed): it plays whenever no other
/// pattern does, and comes back when one that interrupted it ends or is
/// stopped. It takes part in the priority rule while it plays.
public struct PatternPlayer: Sendable {
    /// The pattern playing, nil when idle.
    public private(set) var pattern: FeedbackPattern?
    /// What plays when nothing else does (`setBackground`).
    public private(set) var background: FeedbackPattern?
    /// Whether `pattern` is the background.
    public private(set) var playingBackground = false
    /// The lines this player has turned on and not yet off.
    public private(set) var lit: Set<String> = []
    private var stepIndex = 0
    private var stepStart = MonotonicInstant.zero

    public init() {}

    /// When the current step ends; nil when idle.
    public var nextDeadline: MonotonicInstant? {
        guard let p = pattern else { return nil }
        return stepStart + Self.length(of: p.steps[stepIndex])
    }

    /// Start `newPattern` at `now` unless a more important one is playing.
    /// Returns the line changes to apply now (empty when ignored).
    public mutating func start(_ newPattern: FeedbackPattern, at now: MonotonicInstant) -> [LineChange] {
        if let current = pattern, newPattern.priority < current.priority { return [] }
        if newPattern.steps.isEmpty { return stopForeground(at: now) }
        return begin(newPattern, background: false, at: now)
    }

    /// Sets what plays when nothing else does (nil: nothing). Shown at once
    /// when nothing else plays (or the old background did).
    public mutating func setBackground(_ new: FeedbackPattern?, at now: MonotonicInstant) -> [LineChange] {
        let usable = Self.playable(new)
        guard usable != background else { return [] }
        background = usable
        guard pattern == nil || playingBackground else { return [] }
        return resumeBackground(at: now)
    }

    /// `pattern` unless it has no steps (nothing to play).
    static func playable(_ pattern: FeedbackPattern?) -> FeedbackPattern? {
        pattern.flatMap { $0.steps.isEmpty ? nil : $0 }
    }

    /// Stops the pattern playing in front of the background; the background
    /// (if any) plays again.
    public mutating func stopForeground(at now: MonotonicInstant) -> [LineChange] {
        if playingBackground { return [] }
        return resumeBackground(at: now)
    }

    /// Stop whatever plays, the background too; every lit line goes off.
    public mutating func stop() -> [LineChange] {
        pattern = nil
        background = nil
        playingBackground = false
        return transition(to: [])
    }

    private mutating func begin(_ p: FeedbackPattern, background isBackground: Bool, at now: MonotonicInstant)
        -> [LineChange]
    {
        pattern = p
        playingBackground = isBackground
        stepIndex = 0
        stepStart = now
        return advance(to: now)
    }

    private mutating func resumeBackground(at now: MonotonicInstant) -> [LineChange] {
        guard let background else {
            pattern = nil
            playingBackground = false
            return transition(to: [])
        }
        return begin(background, background: true, at: now)
    }

    /// Move to the step playing at `now` (several steps or passes may have
    /// elapsed). Returns the net line changes.
    public mutating func advance(to now: MonotonicInstant) -> [LineChange] {
        guard let p = pattern else { return transition(to: []) }
        while true {
            let end = stepStart + Self.length(of: p.steps[stepIndex])
            if now < end { break }
            stepStart = end
            stepIndex += 1
            if stepIndex < p.steps.count { continue }
            stepIndex = 0
            // A repeating pattern with a zero-length pass would never end a
            // step; it plays once instead.
            let pass = p.steps.reduce(Duration.zero) { $0 + Self.length(of: $1) }.nanosecondsClamped
            guard p.repeats, pass > 0 else {
                // A pattern that ends gives the door back to its background.
                if !playingBackground, let background {
                    // From where the pattern ended (stepStart), up to now.
                    pattern = background
                    playingBackground = true
                    stepIndex = 0
                    return advance(to: now)
                }
                pattern = nil
                playingBackground = false
                return transition(to: [])
            }
            // Skip whole passes after a long gap instead of looping through them.
            let skipped = Int64(clamping: now.since(stepStart).nanosecondsClamped / pass)
            stepStart = stepStart + .nanoseconds(skipped * pass)
        }
        return transition(to: p.steps[stepIndex].on)
    }

    private static func length(of step: PatternStep) -> Duration { max(step.duration, .zero) }

    /// Offs first, then ons, each sorted by name, so the order is stable.
    private mutating func transition(to target: Set<String>) -> [LineChange] {
        let off = lit.subtracting(target).sorted().map { LineChange(line: $0, on: false) }
        let on = target.subtracting(lit).sorted().map { LineChange(line: $0, on: true) }
        lit = target
        return off + on
    }
}
