import Dispatch
import DoorCore
import GatewayControl
import GatewayStore
import Glibc
import Logging
import Synchronization

/// The daemon's timers as one service (the last in the list, the first
/// stopped): the watchdog, fed while the door queue answers; the audit log's
/// retention; the retry of events that waited for a full store.
final class TimerService: Sendable, MadeWithParts {
    let parts: ServiceParts
    let notify: SDNotify

    /// The timers kept running (each stops when cancelled or dropped).
    enum Name: Hashable { case retention, auditRetry }
    /// A Dispatch source is not Sendable: each is made inside the lock (`keep`).
    private let sources = Mutex<[Name: any DispatchSourceProtocol]>([:])

    init(parts: ServiceParts, notify: SDNotify) {
        self.parts = parts
        self.notify = notify
    }

    /// Its place in the daemon's service list.
    var service: DoorService {
        DoorService(
            name: "timers",
            start: { [self] in
                startWatchdog()
                startAuditRetention()
                startAuditRetry()
            },
            stop: { [self] in
                cancel(.retention)
                cancel(.auditRetry)
            })
    }

    /// Keeps the source `make` makes (set up and activated) running under
    /// `name`; one kept before under it is cancelled. `make` runs inside the
    /// lock, so it only makes the source.
    private func keep(_ name: Name, _ make: () -> any DispatchSourceProtocol) {
        sources.withLock { $0.updateValue(make(), forKey: name)?.cancel() }
    }

    private func cancel(_ name: Name) {
        sources.withLock { $0.removeValue(forKey: name)?.cancel() }
    }

    /// Events that waited for a full store are written once it takes writes again.
    func startAuditRetry() {
        keep(.auditRetry) {
            let timer = DispatchSource.makeTimerSource(queue: runtime.queue)
            timer.schedule(deadline: .now() + .seconds(5), repeating: .seconds(5))
            timer.setEventHandler { [auditWriter] in auditWriter.retry() }
            timer.activate()
            return timer
        }
    }

    /// Audit retention: rows older than 400 days, and beyond the newest
    /// 500 000, are trimmed at start and every 6 hours; the chain stays
    /// verifiable from the anchor the trim records.
    func startAuditRetention() {
        keep(.retention) {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "gatewayd.retention"))
            timer.schedule(deadline: .now(), repeating: .seconds(6 * 3600))
            timer.setEventHandler { [store, log] in
                do {
                    let trimmed = try store.trimAudit(before: Int64(time(nil)) - 400 * 86_400, keep: 500_000)
                    if trimmed > 0 {
                        log.info("audit log: \(trimmed) old rows trimmed; the chain continues from its anchor")
                    }
                } catch {
                    log.error("audit retention: \(error)")
                }
            }
            timer.activate()
            return timer
        }
    }

    /// WATCHDOG=1 at half of WATCHDOG_USEC, only while the door queue
    /// answers: each cycle queues a beat, and the next feeds the watchdog
    /// only if the loop ran it in between.
    func startWatchdog() {
        guard let interval = notify.watchdogInterval else { return }
        let beat: @Sendable () -> Void = { [self] in
            var asked = runtime.requestBeat()
            while true {
                usleep(UInt32(clamping: interval.millisecondsClamped * 1000))
                if runtime.processedBeat >= asked {
                    notify.send("WATCHDOG=1")
                } else {
                    log.error("event loop stalled; watchdog not fed")
                }
                asked = runtime.requestBeat()
            }
        }
        do {
            try Threads.detach(name: "gatewayd.watchdog", beat)
        } catch {
            log.error("watchdog: \(error); systemd will restart gatewayd when WatchdogSec passes")
        }
    }
}
