import Dispatch
import DoorCore
import DoorIO
import GatewayControl
import Glibc
import GatewayStore
import Logging
import Synchronization

/// Writes each door event to the audit log, with its outbox message in the
/// same transaction. When the store cannot be written (a full disk, a
/// read-only remount) the door keeps deciding from what it can read; the
/// events wait here, in order, and are written when the store takes writes
/// again (on the next event or the periodic retry), so none is lost while
/// the daemon runs. The wait is bounded: beyond `backlogLimit` the oldest
/// are dropped and counted. `health` is what status and telemetry show.
///
/// The relay off the store's path (issue 25 §5; docs/reliability.md, "What a
/// power cut keeps"): the door runtime calls `write` right after the outputs
/// of the decision that raised the event have moved (DoorRuntime.execute),
/// and the row, its outbox message and the tap's `last_seen` commit in one
/// transaction on this writer's own serial queue, in the order written: the
/// door queue never waits for a commit (a relay pulse's end, the next tap),
/// and `flush` (the runtime's shutdown) waits for every event written before.
///
/// The backlog is changed on `queue` only; it, the health and the last
/// durable time are in `state`, a `Mutex` held around their reads and writes,
/// never across a store commit or the outbox.
final class AuditWriter: Sendable {
    struct Health: Equatable {
        var writable = true
        var lastError: String?
        /// Events waiting for the store.
        var unsaved = 0
        /// Events dropped because the wait was full.
        var dropped = 0
    }

    private struct Pending: Sendable {
        let event: DoorEvent
        let time: Int64
        let detail: String?
        /// The event's tag's `last_seen`, saved with its row.
        let lastSeen: Int64?
    }

    private let store: GatewayStore
    private let outbox: EventOutbox
    private let log: Logger
    private let backlogLimit: Int
    /// Where every commit runs, one at a time, in the order of `write`.
    private let queue = DispatchQueue(label: "gatewayd.audit")
    private struct State {
        /// Changed on `queue` only (so a peek and the removal after its commit
        /// may be two holds of the lock).
        var backlog: [Pending] = []
        var health = Health()
        /// When the store last took the waiting events (CLOCK_MONOTONIC): status's
        /// `last_event_durable_monotonic_ns`, which make bench-storage reads.
        var lastDurable: MonotonicInstant?
    }
    private let state = Mutex(State())

    init(store: GatewayStore, outbox: EventOutbox, log: Logger, backlogLimit: Int = 10_000) {
        self.store = store
        self.outbox = outbox
        self.log = log
        self.backlogLimit = backlogLimit
    }

    var health: Health { state.withLock { $0.health } }

    var lastDurableAt: MonotonicInstant? { state.withLock { $0.lastDurable } }

    /// From the door queue (one writer keeps the events' order); returns at
    /// once, the commit follows on `queue`. `lastSeen`: the time to save as
    /// the event's tag's `last_seen`, in the same transaction as its row.
    ///
    /// One kind of event decides later taps: `provisioning_written` turns its
    /// sticker's row active in the same transaction. Its write waits for that
    /// commit, so the next tap the door queue judges (the new sticker taken
    /// away and presented again) finds the row active; with the commit left
    /// to follow, a loaded host's first tap found it still pending. The wait
    /// is bounded (`activationWait`): behind a long backlog (a store that
    /// takes writes again after a full disk) the door queue goes on after it,
    /// so a running pulse still ends on time; that tap may then find the row
    /// pending, as before.
    func write(_ event: DoorEvent, at time: Int64, detail: String?, lastSeen: Int64? = nil) {
        let pending = Pending(event: event, time: time, detail: detail, lastSeen: lastSeen)
        guard event.kind == .provisioningWritten else {
            queue.async { self.append(pending) }
            return
        }
        let committed = DispatchSemaphore(value: 0)
        queue.async {
            self.append(pending)
            committed.signal()
        }
        _ = committed.wait(timeout: .now() + activationWait)
    }

    /// How long the door queue waits for a `provisioning_written` commit.
    let activationWait: DispatchTimeInterval = .seconds(1)

    /// Returns once every event written before is committed (or waits in
    /// memory because the store cannot take it): shutdown, tests.
    func flush() { queue.sync {} }

    /// On `queue`.
    private func append(_ pending: Pending) {
        state.withLock { [backlogLimit] s in
            s.backlog.append(pending)
            if s.backlog.count > backlogLimit {
                let dropped = s.backlog.count - backlogLimit
                s.backlog.removeFirst(dropped)
                s.health.dropped += dropped
            }
        }
        drain()
    }

    /// Writes what waits, if the store takes it now (on `queue`).
    func retry() {
        queue.async { if !self.state.withLock({ $0.backlog.isEmpty }) { self.drain() } }
    }

    /// On `queue`: commits the waiting events in order, the lock held only
    /// to take the next and to drop it once committed.
    private func drain() {
        var written = 0
        while let next = state.withLock({ $0.backlog.first }) {
            let message = outbox.message(for: next.event, at: next.time)
            do {
                try store.appendAudit(
                    time: next.time, kind: next.event.kind.rawValue, reason: next.event.reason,
                    action: next.event.action, uid: next.event.uid?.hex, source: next.event.source,
                    detail: next.detail, outbox: message.map { [$0.entry] } ?? [], outboxLimit: message?.limit ?? .max,
                    activating: next.event.kind == .provisioningWritten ? next.event.uid?.hex : nil,
                    lastSeen: next.lastSeen.flatMap { t in next.event.uid.map { ($0.hex, t) } })
                state.withLock { _ = $0.backlog.removeFirst() }
                written += 1
            } catch {
                let text = "\(error)"
                let first = state.withLock { s -> Bool in
                    let wasWritable = s.health.writable
                    s.health.writable = false
                    s.health.lastError = text
                    s.health.unsaved = s.backlog.count
                    return wasWritable
                }
                // Once per outage in the journal, not once per event.
                if first { log.error("audit log: cannot write the store: \(text); events wait in memory") }
                break
            }
        }
        if written > 0 { outbox.committed() }
        let now = MonotonicClock.now()
        let recovered = state.withLock { [written] s -> Int? in
            guard s.backlog.isEmpty else { return nil }
            if written > 0 { s.lastDurable = now }
            defer {
                s.health.writable = true
                s.health.unsaved = 0
            }
            return s.health.writable ? nil : s.health.dropped
        }
        if let dropped = recovered {
            let lost = dropped > 0 ? ", \(dropped) dropped while it could not" : ""
            log.notice("audit log: the store takes writes again; \(written) waiting events written\(lost)")
        }
    }

    /// The `store` object of status.
    var statusDocument: JSONValue {
        let h = health
        return .object([
            ("writable", .bool(h.writable)), ("unsaved_events", .int(h.unsaved)),
            ("dropped_events", .int(h.dropped)), ("last_error", .optional(h.lastError)),
        ])
    }
}
