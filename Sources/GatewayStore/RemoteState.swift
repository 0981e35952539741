import DoorCore
import Foundation
import GRDB

/// One message waiting for the broker's PUBACK.
public struct OutboxMessage: Equatable, Sendable {
    public enum Class: String, Sendable { case access, event, telemetry }
    public var seq: Int64
    public var topic: String
    public var payload: [UInt8]
    public var retain: Bool
    public var messageClass: Class
}

extension GatewayStore {
    /// The replay record and highest accepted timestamps (COMPAT §3), as last saved.
    public func replayGuard() throws -> ReplayGuard {
        try pool.read { db in
            guard let data = try Data.fetchOne(db, sql: "SELECT replay FROM remote_state WHERE one = 1") else {
                return ReplayGuard()
            }
            return try JSONDecoder().decode(ReplayGuard.self, from: data)
        }
    }

    public func saveReplayGuard(_ guardState: ReplayGuard) throws {
        let data = try JSONEncoder().encode(guardState)
        try pool.write { db in
            try db.execute(
                sql:
                    "INSERT INTO remote_state (one, replay) VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET replay = excluded.replay",
                arguments: [data])
        }
    }

    /// A message to commit; its payload is built from its sequence number.
    public struct OutboxEntry {
        public var topic: String
        public var messageClass: OutboxMessage.Class
        public var retain: Bool
        public var created: Int64
        public var make: (Int64) -> [UInt8]
        public init(
            topic: String, class messageClass: OutboxMessage.Class, retain: Bool = false, created: Int64,
            make: @escaping (Int64) -> [UInt8]
        ) {
            self.topic = topic
            self.messageClass = messageClass
            self.retain = retain
            self.created = created
            self.make = make
        }
    }

    /// Commits messages to the outbox in one transaction (a group commit:
    /// one fsync for the batch) and returns their sequence numbers.
    /// Bounded by `limit`: telemetry goes first, then the oldest non-access
    /// events; access events are never dropped (the bound can be exceeded by them).
    @discardableResult
    public func enqueue(_ entries: [OutboxEntry], limit: Int) throws -> [Int64] {
        try pool.write { db in try Self.insertOutbox(db, entries, limit: limit) }
    }

    /// The outbox rows of `enqueue`, inside the caller's transaction (also
    /// used by `appendAudit`, so an event and its message commit together).
    static func insertOutbox(_ db: Database, _ entries: [OutboxEntry], limit: Int) throws -> [Int64] {
        // The next numbers AUTOINCREMENT would give (SQLite: one past the
        // larger of sqlite_sequence and the highest rowid), so each row is
        // written once with its payload.
        let used = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") ?? 0
        let highest = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM outbox") ?? 0
        var next = max(used, highest) + 1
        var seqs: [Int64] = []
        let insert = try db.cachedStatement(
            sql: "INSERT INTO outbox (seq, topic, payload, retain, class, created) VALUES (?, ?, ?, ?, ?, ?)")
        for e in entries {
            try insert.execute(arguments: [
                next, e.topic, Data(e.make(next)), e.retain, e.messageClass.rawValue, e.created,
            ])
            seqs.append(next)
            next += 1
        }
        var over = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox")! - limit
        for cls in ["telemetry", "event"] where over > 0 {
            try db.execute(
                sql:
                    "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE class = ? ORDER BY seq LIMIT ?)",
                arguments: [cls, over])
            over -= db.changesCount
        }
        return seqs
    }

    /// Waiting messages in order (oldest first).
    public func outbox(after seq: Int64 = 0, limit: Int = 500) throws -> [OutboxMessage] {
        try pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [seq, limit]
            ).map {
                OutboxMessage(
                    seq: $0["seq"], topic: $0["topic"], payload: Array($0["payload"] as Data), retain: $0["retain"],
                    messageClass: OutboxMessage.Class(rawValue: $0["class"]) ?? .event)
            }
        }
    }

    /// The broker acknowledged these (one transaction for the lot; losing it
    /// in a crash only sends them again, which `seq` lets consumers drop).
    public func acknowledge(_ seqs: [Int64]) throws {
        guard !seqs.isEmpty else { return }
        try pool.write { db in
            for chunk in stride(from: 0, to: seqs.count, by: 500).map({ Array(seqs[$0..<min($0 + 500, seqs.count)]) }) {
                try db.execute(
                    sql: "DELETE FROM outbox WHERE seq IN (\(chunk.map { _ in "?" }.joined(separator: ",")))",
                    arguments: StatementArguments(chunk))
            }
        }
    }

    public func outboxDepth() throws -> Int {
        try pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM outbox") ?? 0 }
    }
}
