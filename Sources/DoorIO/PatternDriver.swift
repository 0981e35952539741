import Dispatch
import DoorCore
import Logging

/// Runs a `PatternPlayer` on the monotonic clock: one serial queue, one
/// DispatchSourceTimer set to the player's next deadline. Changes go to the
/// board's indicator lines; lines the board does not have are skipped (a
/// board with a single LED still plays the stock patterns).
// @unchecked: `player` is touched only on `queue` (and in deinit, when nothing else can).
public final class PatternDriver: @unchecked Sendable {
    private let board: DoorBoard
    private let logger: Logger
    private let queue = DispatchQueue(label: "gatewayd.patterns")
    private let timer: DispatchSourceTimer
    private var player = PatternPlayer()  // only touched on `queue`

    public init(board: DoorBoard, logger: Logger) {
        self.board = board
        self.logger = logger
        timer = DispatchSource.makeTimerSource(queue: queue)
        // Weak: a tick racing with deinit finds nil instead of a dying object.
        timer.setEventHandler { [weak self] in self?.step { $0.advance(to: MonotonicClock.now()) } }
        timer.schedule(deadline: .distantFuture)
        timer.activate()
    }

    deinit {
        timer.cancel()
        // Never leave a line on. No queue.sync: deinit may run on `queue` (a
        // tick's strong upgrade of its weak self can be the last reference),
        // and nothing else can touch `player` once deinit has begun.
        apply(player.stop())
    }

    /// Play `pattern` unless a more important one is playing. Synchronous
    /// (microseconds), so no queued work outlives the driver.
    public func play(_ pattern: FeedbackPattern) {
        queue.sync { self.step { $0.start(pattern, at: MonotonicClock.now()) } }
    }

    /// Stop whatever plays; every line it lit goes off.
    public func stop() {
        queue.sync { self.step { $0.stop() } }
    }

    /// Whether a pattern is playing.
    public var isPlaying: Bool { queue.sync { player.pattern != nil } }

    private func step(_ body: (inout PatternPlayer) -> [LineChange]) {
        apply(body(&player))
        if let deadline = player.nextDeadline {
            let delay = deadline.since(MonotonicClock.now()).nanosecondsClamped
            timer.schedule(deadline: .now() + .nanoseconds(Int(delay)))
        } else {
            timer.schedule(deadline: .distantFuture)
        }
    }

    private func apply(_ changes: [LineChange]) {
        let wired = changes.filter { board.indicatorNames.contains($0.line) }
        guard !wired.isEmpty else { return }
        do { try board.setIndicators(wired) } catch { logger.error("indicators: \(error)") }
    }
}
