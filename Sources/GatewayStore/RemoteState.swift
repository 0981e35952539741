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
            guard let data = try Data.fetchOne(db, sql: "SELECT replay FROM remote_state WHERE one = 1") else { return ReplayGuard() }
            return try JSONDecoder().decode(ReplayGuard.self, from: data)
        }
    }

    public func saveReplayGuard(_ guardState: ReplayGuard) throws {
        let data = try JSONEncoder().encode(guardState)
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO remote_state (one, replay) VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET replay = excluded.replay",
                arguments: [data])
        }
    }

    /// Commits a message to the outbox and returns its sequence number. The
    /// payload is built from the number (`make`) inside the same transaction.
    /// Bounded by `limit`: telemetry goes first, then the oldest non-access
    /// events; access events are never dropped (the bound can be exceeded by them).
    @discardableResult
    public func enqueue(
        topic: String, class messageClass: OutboxMessage.Class, retain: Bool = false, limit: Int, now: Int64,
        make: (Int64) -> [UInt8]
    ) throws -> Int64 {
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO outbox (topic, payload, retain, class, created) VALUES (?, x'', ?, ?, ?)",
                arguments: [topic, retain, messageClass.rawValue, now])
            let seq = db.lastInsertedRowID
            try db.execute(sql: "UPDATE outbox SET payload = ? WHERE seq = ?", arguments: [Data(make(seq)), seq])
            var over = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox")! - limit
            for cls in ["telemetry", "event"] where over > 0 {
                try db.execute(
                    sql: "DELETE FROM outbox WHERE seq IN (SELECT seq FROM outbox WHERE class = ? AND seq <> ? ORDER BY seq LIMIT ?)",
                    arguments: [cls, seq, over])
                over -= db.changesCount
            }
            return seq
        }
    }

    /// Waiting messages in order (oldest first).
    public func outbox(after seq: Int64 = 0, limit: Int = 500) throws -> [OutboxMessage] {
        try pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [seq, limit]).map {
                OutboxMessage(
                    seq: $0["seq"], topic: $0["topic"], payload: Array($0["payload"] as Data), retain: $0["retain"],
                    messageClass: OutboxMessage.Class(rawValue: $0["class"]) ?? .event)
            }
        }
    }

    /// The broker acknowledged it.
    public func acknowledge(_ seq: Int64) throws {
        try pool.write { try $0.execute(sql: "DELETE FROM outbox WHERE seq = ?", arguments: [seq]) }
    }

    public func outboxDepth() throws -> Int {
        try pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM outbox") ?? 0 }
    }
}
