import DoorCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One decision in the audit log.
public struct AuditRow: Equatable, Sendable {
    public var id: Int64
    public var time: Int64
    public var kind: String
    public var reason: String?
    public var action: Int?
    public var uid: String?
    public var source: String?
    public var detail: String?

    /// The canonical content the chain hashes: a JSON array in a fixed order.
    var canonical: [UInt8] {
        let fields: [JSONValue] = [
            JSONValue.int(Int(id)), JSONValue.int(Int(time)), .string(kind), .optional(reason),
            action.map { JSONValue.int($0) } ?? .null,
            .optional(uid), .optional(source), .optional(detail),
        ]
        return Array(JSONValue.array(fields).serialized.utf8)
    }

    public var json: JSONValue {
        var f: [(String, JSONValue)] = [
            ("id", .int(Int(id))), ("time", .string(UTCTime.iso8601(time))), ("kind", .string(kind)),
        ]
        if let reason { f.append(("reason", .string(reason))) }
        if let action { f.append(("action", .int(action))) }
        if let uid { f.append(("uid", .string(uid))) }
        if let source { f.append(("source", .string(source))) }
        if let detail { f.append(("detail", .string(detail))) }
        return .object(f)
    }

    init(
        id: Int64, time: Int64, kind: String, reason: String?, action: Int?, uid: String?, source: String?,
        detail: String?
    ) {
        self.id = id
        self.time = time
        self.kind = kind
        self.reason = reason
        self.action = action
        self.uid = uid
        self.source = source
        self.detail = detail
    }

    init(row: SQLiteRow) throws {
        id = try row.get("id")
        time = try row.get("time")
        kind = try row.get("kind")
        reason = try row.get("reason")
        action = try row.get("action")
        uid = try row.get("uid")
        source = try row.get("source")
        detail = try row.get("detail")
    }
}

/// The result of checking the chain.
public enum AuditVerification: Equatable, Sendable {
    /// Every row from the anchor (or the first row) on links up.
    case intact(rows: Int, from: Int64?)
    /// The first row whose link or content does not match.
    case broken(rowID: Int64, why: String)
}

/// The audit log (issue "daemon": every decision with its reason,
/// hash-chained). Each row stores `prev` (the previous row's hash, or the
/// anchor's, or 32 zero bytes for the very first row) and
/// `hash = SHA-256(prev ‖ canonical content)`, so altering, deleting or
/// reordering a row breaks verification at that row. Retention deletes the
/// oldest rows and records the last deleted row's hash as the anchor.
extension GatewayStore {
    static let genesis = [UInt8](repeating: 0, count: 32)

    @discardableResult
    /// `outbox`: the messages that announce this event, committed in the
    /// same transaction as the row (bounded by `outboxLimit` as `enqueue`
    /// is), so a power cut keeps both or neither: an audited event is never
    /// missing from the broker.
    /// `activating`: a pending issued tag made active in the same
    /// transaction (a provisioning write's `provisioning_written` row), so a
    /// power cut never leaves an active sticker without the row that says it
    /// was written and verified.
    /// `lastSeen`: an issued tag's `last_seen` (UID hex, Unix seconds), saved
    /// with the row of the tap that presented it.
    public func appendAudit(
        time: Int64, kind: String, reason: String? = nil, action: Int? = nil, uid: String? = nil, source: String? = nil,
        detail: String? = nil, outbox: [OutboxEntry] = [], outboxLimit: Int = .max, activating: String? = nil,
        lastSeen: (uid: String, time: Int64)? = nil
    ) throws -> Int64 {
        try pool.write { db in
            if let activating {
                try db.execute(
                    sql: "UPDATE issued_tag SET state = 'active' WHERE uid = ? AND state = 'pending'",
                    arguments: [activating])
            }
            // A tap's last_seen rides on its audit row's commit, after the relay
            // (issue 25 §5): it decides nothing, so it has no commit of its own.
            if let lastSeen {
                try db.execute(
                    sql: "UPDATE issued_tag SET last_seen = ? WHERE uid = ?", arguments: [lastSeen.time, lastSeen.uid])
            }
            let id = try insertAudit(
                db,
                AuditRow(
                    id: 0, time: time, kind: kind, reason: reason, action: action, uid: uid, source: source,
                    detail: detail))
            if !outbox.isEmpty { _ = try Self.insertOutbox(db, outbox, limit: outboxLimit) }
            return id
        }
    }

    /// Links `row` (its `id` is assigned here) onto the chain inside a
    /// transaction the caller holds, so a change and the row that records it
    /// commit together. Returns the row's id.
    func insertAudit(_ db: SQLiteConnection, _ row: AuditRow) throws -> Int64 {
        let last = try db.fetchOne(sql: "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1")
        let anchor = try db.fetchOne(sql: "SELECT row_id, hash FROM audit_anchor WHERE one = 1")
        let prev: [UInt8]
        var row = row
        if let last {
            prev = try last.get("hash")
            row.id = try last.get("id", as: Int64.self) + 1
        } else if let anchor {
            prev = try anchor.get("hash")
            row.id = try anchor.get("row_id", as: Int64.self) + 1
        } else {
            prev = Self.genesis
            row.id = 1
        }
        let hash = try chainHash(db, row: row, prev: prev)
        try db.execute(
            sql: """
                INSERT INTO audit (id, time, kind, reason, action, uid, source, detail, prev, hash)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                row.id, row.time, row.kind, row.reason, row.action, row.uid, row.source, row.detail, prev, hash,
            ])
        return row.id
    }

    /// The newest `limit` rows, oldest first.
    public func auditTail(_ limit: Int) throws -> [AuditRow] {
        try pool.read { db in
            try db.fetchAll(
                sql: "SELECT * FROM (SELECT * FROM audit ORDER BY id DESC LIMIT ?) ORDER BY id", arguments: [limit]
            )
            .map(AuditRow.init(row:))
        }
    }

    /// The newest `limit` rows of these kinds, newest first (the audit log
    /// has no index on kind: this walks back from the newest row and stops
    /// after `limit` hits).
    public func newestAudit(kinds: [String], limit: Int) throws -> [AuditRow] {
        guard !kinds.isEmpty else { return [] }
        let marks = Array(repeating: "?", count: kinds.count).joined(separator: ", ")
        return try pool.read { db in
            try db.fetchAll(
                sql: "SELECT * FROM audit WHERE kind IN (\(marks)) ORDER BY id DESC LIMIT ?",
                arguments: kinds + [limit]
            )
            .map(AuditRow.init(row:))
        }
    }

    /// Rows after `id`, oldest first (`log --follow`).
    public func auditRows(after id: Int64, limit: Int = 1000) throws -> [AuditRow] {
        try pool.read { db in
            try db.fetchAll(sql: "SELECT * FROM audit WHERE id > ? ORDER BY id LIMIT ?", arguments: [id, limit])
                .map(AuditRow.init(row:))
        }
    }

    public func verifyAudit() throws -> AuditVerification { try checkAudit(key: nil).verification }

    /// Retention: deletes rows older than `before` (Unix s) and beyond the
    /// newest `keep`, recording the last deleted row as the anchor.
    /// Returns how many rows went.
    @discardableResult
    public func trimAudit(before: Int64? = nil, keep: Int? = nil) throws -> Int {
        try pool.write { db in
            var cut: Int64 = 0
            if let before {
                cut = max(
                    cut,
                    try db.scalar(Int64.self, sql: "SELECT MAX(id) FROM audit WHERE time < ?", arguments: [before]) ?? 0
                )
            }
            if let keep {
                cut = max(
                    cut,
                    try db.scalar(
                        Int64.self, sql: "SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET ?",
                        arguments: [max(0, keep)])
                        ?? 0)
            }
            guard cut > 0,
                let hash = try db.scalar([UInt8].self, sql: "SELECT hash FROM audit WHERE id = ?", arguments: [cut])
            else {
                return 0
            }
            try db.execute(
                sql:
                    "INSERT INTO audit_anchor (one, row_id, hash) VALUES (1, ?, ?) ON CONFLICT(one) DO UPDATE SET row_id = excluded.row_id, hash = excluded.hash",
                arguments: [cut, hash])
            try db.execute(sql: "DELETE FROM audit WHERE id <= ?", arguments: [cut])
            return db.changesCount
        }
    }

    /// A consistent snapshot of the whole store (keys and secrets included)
    /// into `file`, mode 0600 (SQLite `VACUUM INTO`).
    public func backup(to file: String) throws {
        guard access(file, F_OK) != 0 else {
            throw StoreError.invalidValue("\(file) exists; not overwriting it")
        }
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.cannotCreate(path: file, String(cString: strerror(errno))) }
        close(fd)
        unlink(file)  // VACUUM INTO wants to create it; the umask-proof mode is set below
        try pool.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [file]) }
        guard chmod(file, 0o600) == 0 else {
            throw StoreError.cannotCreate(path: file, String(cString: strerror(errno)))
        }
    }

    /// A consistent snapshot of the whole store (`VACUUM INTO`) in a new file
    /// beside the store, opened and unlinked at once: the returned descriptor
    /// (read-only, the caller closes it) is the only way to it. The daemon
    /// streams a backup from it over the control socket, so it never writes
    /// the admin's file itself (under the unit it could not: ProtectHome=,
    /// PrivateTmp=).
    public func snapshot() throws -> Int32 {
        let directory = path.hasSuffix("/" + Self.fileName) ? String(path.dropLast(Self.fileName.count)) : "./"
        let token = try Hex.encode(Crypto.randomBytes(6))
        let file = directory + ".backup-\(token).tmp"
        unlink(file)
        defer { unlink(file) }
        try pool.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [file]) }
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw StoreError.cannotCreate(path: file, Self.errnoText()) }
        return fd
    }

    /// Throws unless `file` is a DoorGateway store (a backup): SQLite opens
    /// it read-only and it has the key and secret tables.
    public static func checkBackup(_ file: String) throws {
        do {
            let db = try SQLiteConnection(path: file, readOnly: true)
            let tables = try db.fetchAll(
                sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('key', 'secret')")
            guard tables.count == 2 else { throw StoreError.invalidValue("\(file) is not a DoorGateway backup") }
        } catch let e as StoreError {
            throw e
        } catch {
            throw StoreError.invalidValue("\(file) is not a DoorGateway backup: \(error)")
        }
    }

    /// Restores a backup into an empty state directory (refuses to replace
    /// an existing store), then opens it (running newer migrations).
    public static func restore(backup file: String, into stateDirectory: String) throws -> GatewayStore {
        let target = join(stateDirectory, fileName)
        guard access(target, F_OK) != 0 else {
            throw StoreError.invalidValue("\(target) exists; restore only into a fresh state directory")
        }
        // Check it is a store before copying.
        try checkBackup(file)
        try ensurePrivateDirectory(stateDirectory)
        try ensurePrivateFile(target)
        try copyFile(file, to: target)
        return try GatewayStore(stateDirectory: stateDirectory)
    }

    /// Gives the store files in `stateDirectory` (gateway.db and SQLite's
    /// -wal/-shm beside it) and the directory itself to `uid`:`gid`, modes
    /// 0600 and 0700: a restore run as root leaves a store the daemon's own
    /// user (the unit's User=) can open. Call it after the restored store is
    /// closed.
    public static func handOver(stateDirectory: String, uid: UInt32, gid: UInt32) throws {
        for name in [fileName, fileName + "-wal", fileName + "-shm"] {
            let file = join(stateDirectory, name)
            guard access(file, F_OK) == 0 else { continue }
            guard chown(file, uid, gid) == 0, chmod(file, 0o600) == 0 else {
                throw StoreError.cannotCreate(path: file, "chown \(uid):\(gid): \(errnoText())")
            }
        }
        guard chown(stateDirectory, uid, gid) == 0, chmod(stateDirectory, 0o700) == 0 else {
            throw StoreError.cannotCreate(path: stateDirectory, "chown \(uid):\(gid): \(errnoText())")
        }
    }

    /// Copies `source` over the (existing, private) `target`, then fsyncs it.
    static func copyFile(_ source: String, to target: String) throws {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw StoreError.cannotCreate(path: source, "unreadable: \(errnoText())") }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard output >= 0 else { throw StoreError.cannotCreate(path: target, errnoText()) }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw StoreError.cannotCreate(path: source, "unreadable: \(errnoText())") }
            if n == 0 { break }
            var done = 0
            while done < n {
                let w = buffer.withUnsafeBytes { write(output, $0.baseAddress! + done, n - done) }
                if w < 0 && errno == EINTR { continue }
                guard w > 0 else { throw StoreError.cannotCreate(path: target, "short write: \(errnoText())") }
                done += w
            }
        }
        guard fsync(output) == 0 else { throw StoreError.cannotCreate(path: target, errnoText()) }
    }
}
