import Dispatch
import DoorCore
import Logging
import Synchronization

/// Runs a `PatternPlayer` on the monotonic clock: one serial queue, one
/// DispatchSourceTimer set to the player's next deadline. Changes go to the
/// board's indicator lines; lines the board does not have are skipped (a
/// board with a single LED still plays the stock patterns).
///
/// Every step runs on `queue`, so the board sees the changes in the order
/// they were made; the player and the timer are in `state`, locked only to
/// step the player and set the timer, never while the board is written.
public final class PatternDriver: Sendable {
    private struct State {
        var player = PatternPlayer()
        /// Not Sendable (libdispatch's protocol): it lives here, used under the lock.
        let timer: DispatchSourceTimer
    }
    private let board: DoorBoard
    private let logger: Logger
    private let queue = DispatchQueue(label: "gatewayd.patterns")
    private let state: Mutex<State>

    public init(board: DoorBoard, logger: Logger) {
        self.board = board
        self.logger = logger
        state = Mutex(State(timer: DispatchSource.makeTimerSource(queue: queue)))
        state.withLock { s in
            // Weak: a tick racing with deinit finds nil instead of a dying object.
            s.timer.setEventHandler { [weak self] in self?.step { $0.advance(to: MonotonicClock.now()) } }
            s.timer.schedule(deadline: .distantFuture)
            s.timer.activate()
        }
    }

    deinit {
        // Never leave a line on. No queue.sync: deinit may run on `queue` (a
        // tick's strong upgrade of its weak self can be the last reference),
        // and no step can run once deinit has begun.
        let changes = state.withLock { s in
            s.timer.cancel()
            return s.player.stop()
        }
        apply(changes)
    }

    /// Play `pattern` unless a more important one is playing. Synchronous
    /// (microseconds), so no queued work outlives the driver.
    public func play(_ pattern: FeedbackPattern) {
        queue.sync { self.step { $0.start(pattern, at: MonotonicClock.now()) } }
    }

    /// Stop whatever plays, the background too; every line it lit goes off.
    public func stop() {
        queue.sync { self.step { $0.stop() } }
    }

    /// Stop the pattern playing in front of the background, which plays again.
    public func stopForeground() {
        queue.sync { self.step { $0.stopForeground(at: MonotonicClock.now()) } }
    }

    /// What plays when nothing else does (the door's idle heartbeat, a reader
    /// fault, provisioning armed); it comes back after any pattern ends.
    public func setBackground(_ pattern: FeedbackPattern?) {
        // Called after every batch of the door's effects: most leave it as it is,
        // and then no hop to the pattern queue is needed.
        if state.withLock({ $0.player.background == PatternPlayer.playable(pattern) }) { return }
        queue.sync { self.step { $0.setBackground(pattern, at: MonotonicClock.now()) } }
    }

    /// Whether a pattern is playing.
    public var isPlaying: Bool { state.withLock { $0.player.pattern != nil } }

    /// On `queue` only. The timer fires on `queue` too, so rescheduling it
    /// before the changes are applied cannot let a tick overtake them.
    private func step(_ body: (inout PatternPlayer) -> [LineChange]) {
        let changes = state.withLock { s in
            let changes = body(&s.player)
            if let deadline = s.player.nextDeadline {
                let delay = deadline.since(MonotonicClock.now()).nanosecondsClamped
                s.timer.schedule(deadline: .now() + .nanoseconds(Int(delay)))
            } else {
                s.timer.schedule(deadline: .distantFuture)
            }
            return changes
        }
        apply(changes)
    }

    private func apply(_ changes: [LineChange]) {
        let wired = changes.filter { board.indicatorNames.contains($0.line) }
        guard !wired.isEmpty else { return }
        do { try board.setIndicators(wired) } catch { logger.error("indicators: \(error)") }
    }
}
