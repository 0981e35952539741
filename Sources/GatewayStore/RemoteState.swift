import DoorCore

extension GatewayStore {
    /// The replay record and highest accepted timestamps (docs/formats.md §3), as last saved.
    public func replayGuard() throws -> ReplayGuard { try replayRecord(in: .remote) }

    public func saveReplayGuard(_ guardState: ReplayGuard) throws { try saveReplayRecord(guardState, in: .remote) }

    /// The one-row tables that keep a replay record in their `replay` column:
    /// the native commands' and the site commands' (SiteState.swift).
    enum ReplayTable: String {
        case remote = "remote_state"
        case site = "site_state"
    }

    func replayRecord(in table: ReplayTable) throws -> ReplayGuard {
        try pool.read { db in
            guard let data = try db.scalar([UInt8].self, sql: "SELECT replay FROM \(table.rawValue) WHERE one = 1")
            else { return ReplayGuard() }
            return try ReplayRecord.decode(data)
        }
    }

    func saveReplayRecord(_ record: ReplayGuard, in table: ReplayTable) throws {
        let data = ReplayRecord.encode(record)
        try pool.write { db in
            try db.execute(
                sql:
                    "INSERT INTO \(table.rawValue) (one, replay) VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET replay = excluded.replay",
                arguments: [data])
        }
    }

    /// The latest wall time seen with the clock synchronised (nil: never saved).
    public func clockFloor() throws -> Int64? {
        try pool.read { db in try db.scalar(Int64.self, sql: "SELECT unix FROM clock_floor WHERE one = 1") }
    }

    /// Raises the clock floor to `unix`; it never goes down.
    public func raiseClockFloor(to unix: Int64) throws {
        try pool.write { db in
            try db.execute(
                sql:
                    "INSERT INTO clock_floor (one, unix) VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET unix = max(unix, excluded.unix)",
                arguments: [unix])
        }
    }

    /// The audit kind of an administrator's floor reset.
    public static let clockFloorResetKind = "clock_floor_reset"

    /// An administrator's reset after a bad time source: the floor set to
    /// `unix` (below where it was: `raiseClockFloor` cannot lower it) and the
    /// audit row that says so, from what to what and by whom, in one transaction.
    public func resetClockFloor(from previous: Int64, to unix: Int64, source: String, now: Int64) throws {
        try pool.write { db in
            try db.execute(
                sql:
                    "INSERT INTO clock_floor (one, unix) VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET unix = excluded.unix",
                arguments: [unix])
            _ = try insertAudit(
                db,
                AuditRow(
                    id: 0, time: now, kind: Self.clockFloorResetKind, reason: nil, action: nil, uid: nil,
                    source: source, detail: "from \(UTCTime.iso8601(previous)) to \(UTCTime.iso8601(unix))"))
        }
    }

    /// A message to commit; its payload is built from its sequence number.
    public typealias OutboxEntry = OutgoingMessage

    /// Commits messages to the outbox in one transaction (a group commit:
    /// one fsync for the batch) and returns their sequence numbers.
    /// Bounded by `limit`: telemetry goes first, then the oldest non-access
    /// events; access events are never dropped (the bound can be exceeded by them).
    @discardableResult
    public func enqueue(_ entries: [OutgoingMessage], limit: Int) throws -> [Int64] {
        try pool.write { db in try Self.insertOutbox(db, entries, limit: limit) }
    }

    /// The outbox rows of `enqueue`, inside the caller's transaction (also
    /// used by `appendAudit`, so an event and its message commit together).
    static func insertOutbox(_ db: SQLiteConnection, _ entries: [OutgoingMessage], limit: Int) throws -> [Int64] {
        // The next numbers AUTOINCREMENT would give (SQLite: one past the
        // larger of sqlite_sequence and the highest rowid), so each row is
        // written once with its payload.
        let used = try db.scalar(Int64.self, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'outbox'") ?? 0
        let highest = try db.scalar(Int64.self, sql: "SELECT MAX(seq) FROM outbox") ?? 0
        var next = max(used, highest) + 1
        var seqs: [Int64] = []
        for e in entries {
            try db.execute(
                sql: "INSERT INTO outbox (seq, topic, payload, retain, class, created) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [next, e.topic, e.make(next), e.retain, e.messageClass.rawValue, e.created])
            seqs.append(next)
            next += 1
        }
        var over = (try db.scalar(Int.self, sql: "SELECT COUNT(*) FROM outbox") ?? 0) - limit
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
    public func outbox(after seq: Int64 = 0, limit: Int = 500) throws -> [OutboxRow] {
        try pool.read { db in
            try db.fetchAll(sql: "SELECT * FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [seq, limit])
                .map {
                    OutboxRow(
                        seq: try $0.get("seq"), topic: try $0.get("topic"), payload: try $0.get("payload"),
                        retain: try $0.get("retain"), class: MessageClass(rawValue: try $0.get("class")) ?? .event)
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
                    arguments: chunk)
            }
        }
    }

    public func outboxDepth() throws -> Int {
        try pool.read { try $0.scalar(Int.self, sql: "SELECT COUNT(*) FROM outbox") ?? 0 }
    }
}

/// The durable outbox on the store (synchronous FULL, bounded by `[mqtt] outbox_limit`):
/// the core's `Outbox` port, for either transport.
public final class StoreOutbox: Outbox {
    let store: GatewayStore
    let limit: Int
    public init(store: GatewayStore, limit: Int) {
        self.store = store
        self.limit = limit
    }
    public func commit(_ messages: [OutgoingMessage]) throws { try store.enqueue(messages, limit: limit) }
    public func waiting(after seq: Int64, limit: Int) throws -> [OutboxRow] {
        try store.outbox(after: seq, limit: limit)
    }
    public func acknowledge(_ seqs: [Int64]) throws { try store.acknowledge(seqs) }
    public func depth() throws -> Int { try store.outboxDepth() }
}

/// The replay record's stored form: the JSON Foundation's `JSONEncoder` wrote
/// for `ReplayGuard` (`{"entries":[{"keyID","fingerprint","timestamp",
/// "acceptedAt"}],"highest":{key: timestamp},"capacity":n}`), read and written
/// without Foundation; records saved by earlier versions read back unchanged.
enum ReplayRecord {
    static func encode(_ g: ReplayGuard) -> [UInt8] {
        let entries = g.entries.map { e -> JSONValue in
            .object([
                ("keyID", .string(e.keyID)), ("fingerprint", .string(e.fingerprint)),
                ("timestamp", .int(e.timestamp)), ("acceptedAt", .int(e.acceptedAt)),
            ])
        }
        let highest = g.highest.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.int($0.value)) }
        let value = JSONValue.object([
            ("entries", .array(entries)), ("highest", .object(highest)), ("capacity", .int(g.capacity)),
        ])
        return Array(value.serialized.utf8)
    }

    static func decode(_ bytes: [UInt8]) throws -> ReplayGuard {
        func bad(_ why: String) -> StoreError { .invalidValue("the stored replay record: \(why)") }
        func int(_ v: JSONValue?, _ name: String) throws -> Int64 {
            guard case .int(let i)? = v else { throw bad("\(name) is not an integer") }
            return i
        }
        func string(_ v: JSONValue?, _ name: String) throws -> String {
            guard let s = v?.stringValue else { throw bad("\(name) is not a string") }
            return s
        }
        let value: JSONValue
        do {
            // Up to `capacity` (4096) entries of ~150 bytes: well past the 64 KiB default.
            value = try JSONValue.parse(bytes, maxDepth: 8, maxBytes: 64 << 20)
        } catch {
            throw bad("\(error)")
        }
        guard let list = value["entries"]?.arrayValue else { throw bad("no entries") }
        guard let top = value["highest"]?.objectValue else { throw bad("no highest") }
        let entries = try list.map { e in
            ReplayGuard.Entry(
                keyID: try string(e["keyID"], "keyID"), fingerprint: try string(e["fingerprint"], "fingerprint"),
                timestamp: try int(e["timestamp"], "timestamp"), acceptedAt: try int(e["acceptedAt"], "acceptedAt"))
        }
        var highest: [String: Int64] = [:]
        for (k, v) in top { highest[k] = try int(v, "highest[\(k)]") }
        let capacity = try int(value["capacity"], "capacity")
        guard let cap = Int(exactly: capacity), cap >= 0 else { throw bad("capacity \(capacity)") }
        return ReplayGuard(entries: entries, highest: highest, capacity: cap)
    }
}
