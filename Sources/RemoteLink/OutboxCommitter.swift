import DoorCore

/// The committer both transports share (GatewayMQTT, GatewayNATS): messages
/// queued from any thread (telemetry, `record`) are committed to the
/// durable `Outbox` by one thread of the link's, everything queued at that
/// moment in one transaction (group commit), and only then published by the
/// link. A round runs when a message is queued, a flush is requested, the
/// link has other work for the thread (`wake`: MQTT's acknowledgements,
/// NATS' direct publishes), or `period` passes; the link does its own work
/// around `commit`.
public final class OutboxCommitter: Sendable {
    /// What one round took: the messages to commit, and whether a flush was asked for.
    public struct Round: Sendable {
        public let batch: [OutgoingMessage]
        public let flushRequested: Bool
    }

    private struct State {
        var pending: [OutgoingMessage] = []
        /// Messages taken by the running round and not yet committed.
        var committing = 0
        var flushRequested = false
        var woken = false
        var stopping = false
        var started = false
        var done = false
    }
    private let state = Condition(State())
    private let outbox: any Outbox

    public init(outbox: any Outbox) { self.outbox = outbox }

    /// Queues `message` for the next round.
    public func enqueue(_ message: OutgoingMessage) { state.update { $0.pending.append(message) } }

    /// Asks for a round that publishes (rows committed by someone else, a reconnect).
    public func requestFlush() { state.update { $0.flushRequested = true } }

    /// Asks for a round: the link has work of its own for the thread.
    public func wake() { state.update { $0.woken = true } }

    /// Messages queued or being committed.
    public var queuedCount: Int { state.read { $0.pending.count + $0.committing } }

    /// Starts the committer thread. Each round: wait for work (or `period`),
    /// take what is queued, and run `round`, which commits it (`commit`) and
    /// publishes. The thread ends once `requestStop` was called (before or
    /// after this), nothing is queued and `drained()` holds (the link's own
    /// work is done). A committer runs once: it is not started again.
    public func start(
        name: String, period: Duration? = nil, drained: @escaping @Sendable () -> Bool = { true },
        round: @escaping @Sendable (Round) -> Void
    ) throws(ThreadStartError) {
        try startThread(name: name) { [self] in
            while let next = take(period: period, drained: drained) { round(next) }
            state.update { $0.done = true }
        }
        state.update { $0.started = true }
    }

    /// The next round; nil once stopping and drained.
    private func take(period: Duration?, drained: () -> Bool) -> Round? {
        let ready: (State) -> Bool = { !$0.pending.isEmpty || $0.flushRequested || $0.woken || $0.stopping }
        if let period {
            _ = state.wait(for: period, until: ready)
        } else {
            state.wait(until: ready, then: { _ in })
        }
        let (round, stopping) = state.update { s -> (Round, Bool) in
            defer {
                s.committing = s.pending.count
                s.pending = []
                s.flushRequested = false
                s.woken = false
            }
            return (Round(batch: s.pending, flushRequested: s.flushRequested), s.stopping)
        }
        if stopping && round.batch.isEmpty && drained() {
            state.update { $0.committing = 0 }
            return nil
        }
        return round
    }

    /// Commits the round's messages in one transaction; what went wrong, if it failed.
    public func commit(_ round: Round) -> String? {
        defer { state.update { $0.committing = 0 } }
        guard !round.batch.isEmpty else { return nil }
        do {
            try outbox.commit(round.batch)
            return nil
        } catch {
            return "outbox commit of \(round.batch.count) messages failed: \(error)"
        }
    }

    /// Tells the thread to end once what is queued is committed.
    public func requestStop() { state.update { $0.stopping = true } }

    /// Waits up to `timeout` for the thread to end; true when it did (or never started).
    @discardableResult
    public func waitStopped(within timeout: Duration) -> Bool {
        state.wait(for: timeout) { !$0.started || $0.done }
    }
}
