import DoorCore
import Synchronization

/// An in-memory outbox with the store's bound and order (telemetry dropped
/// first, then the oldest events; access never), for the transports' tests.
/// The one copy: the MQTT and NATS tests had one each, and the NATS one had
/// no bound. The store's own (SQLite) outbox is tested by the links' tests
/// that run on it and by GatewayStoreTests.
public final class MemoryOutbox: Outbox, Sendable {
    private struct Rows {
        var next: Int64 = 1
        var rows: [(seq: Int64, cls: MessageClass, row: OutboxRow)] = []
    }
    private let rows = Mutex(Rows())
    public let limit: Int
    public init(limit: Int = 10_000) { self.limit = limit }

    public func commit(_ messages: [OutgoingMessage]) throws {
        rows.withLock { r in
            for m in messages {
                let seq = r.next
                r.next += 1
                r.rows.append(
                    (seq, m.messageClass, OutboxRow(seq: seq, topic: m.topic, payload: m.make(seq), retain: m.retain)))
            }
            for cls in [MessageClass.telemetry, .event] {
                while r.rows.count > limit, let i = r.rows.firstIndex(where: { $0.cls == cls }) { r.rows.remove(at: i) }
            }
        }
    }
    public func waiting(after seq: Int64, limit: Int) throws -> [OutboxRow] {
        rows.withLock { Array($0.rows.lazy.filter { $0.seq > seq }.prefix(limit).map(\.row)) }
    }
    public func acknowledge(_ seqs: [Int64]) throws {
        let done = Set(seqs)
        rows.withLock { $0.rows.removeAll { done.contains($0.seq) } }
    }
    public func depth() throws -> Int { rows.withLock { $0.rows.count } }
}
