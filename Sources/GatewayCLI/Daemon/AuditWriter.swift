import Dispatch
import DoorCore
import DoorIO
import Glibc
import GatewayStore
import Logging

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
// @unchecked: `backlog` is touched on the writer's own `queue` only; `current` and `lastDurable` under `lock`.
final class AuditWriter: @unchecked Sendable {
    struct Health: Equatable {
        var writable = true
        var lastError: String?
        /// Events waiting for the store.
        var unsaved = 0
        /// Events dropped because the wait was full.
        var dropped = 0
    }

    private struct Pending {
        let event: DoorEvent
        let time: Int64
        let detail: String?
        /// The event's tag's `last_seen`, saved with its row.
        let lastSeen: Int64?
    }

    private let store: GatewayStore
    private let outbox: Daemon.EventOutbox
    private let log: Logger
    private let backlogLimit: Int
    /// Where every commit runs, one at a time, in the order of `write`.
    private let queue = DispatchQueue(label: "gatewayd.audit")
    /// Touched on `queue` only.
    private var backlog: [Pending] = []
    private let lock = Lock()
    private var current = Health()
    /// When the store last took the waiting events (CLOCK_MONOTONIC): status's
    /// `last_event_durable_monotonic_ns`, which make bench-storage reads.
    private var lastDurable: MonotonicInstant?

    init(store: GatewayStore, outbox: Daemon.EventOutbox, log: Logger, backlogLimit: Int = 10_000) {
        self.store = store
        self.outbox = outbox
        self.log = log
        self.backlogLimit = backlogLimit
    }

    var health: Health { lock.withLock { current } }

    var lastDurableAt: MonotonicInstant? { lock.withLock { lastDurable } }

    /// From the door queue (one writer keeps the events' order); returns at
    /// once, the commit follows on `queue`. `lastSeen`: the time to save as
    /// the event's tag's `last_seen`, in the same transaction as its row.
    func write(_ event: DoorEvent, at time: Int64, detail: String?, lastSeen: Int64? = nil) {
        let pending = Pending(event: event, time: time, detail: detail, lastSeen: lastSeen)
        queue.async { self.append(pending) }
    }

    /// Returns once every event written before is committed (or waits in
    /// memory because the store cannot take it): shutdown, tests.
    func flush() { queue.sync {} }

    /// On `queue`.
    private func append(_ pending: Pending) {
        backlog.append(pending)
        var dropped = 0
        if backlog.count > backlogLimit {
            dropped = backlog.count - backlogLimit
            backlog.removeFirst(dropped)
        }
        if dropped > 0 { lock.withLock { current.dropped += dropped } }
        drain()
    }

    /// Writes what waits, if the store takes it now (on `queue`).
    func retry() {
        queue.async { if !self.backlog.isEmpty { self.drain() } }
    }

    private func drain() {
        var written = 0
        while let next = backlog.first {
            let message = outbox.message(for: next.event, at: next.time)
            do {
                try store.appendAudit(
                    time: next.time, kind: next.event.kind.rawValue, reason: next.event.reason,
                    action: next.event.action, uid: next.event.uid?.hex, source: next.event.source,
                    detail: next.detail, outbox: message.map { [$0.entry] } ?? [], outboxLimit: message?.limit ?? .max,
                    activating: next.event.kind == .provisioningWritten ? next.event.uid?.hex : nil,
                    lastSeen: next.lastSeen.flatMap { t in next.event.uid.map { ($0.hex, t) } })
                backlog.removeFirst()
                written += 1
            } catch {
                let text = "\(error)"
                let first = lock.withLock { () -> Bool in
                    let wasWritable = current.writable
                    current.writable = false
                    current.lastError = text
                    current.unsaved = backlog.count
                    return wasWritable
                }
                // Once per outage in the journal, not once per event.
                if first { log.error("audit log: cannot write the store: \(text); events wait in memory") }
                break
            }
        }
        if written > 0 { outbox.committed() }
        let recovered = lock.withLock { () -> Int? in
            guard backlog.isEmpty else { return nil }
            if written > 0 { lastDurable = MonotonicClock.now() }
            defer {
                current.writable = true
                current.unsaved = 0
            }
            return current.writable ? nil : current.dropped
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
