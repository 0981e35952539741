import CSQLite
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The small part of SQLite's C API the store uses (it replaced GRDB, whose
/// Foundation import carried ICU into the static binary). Values always go
/// through bound parameters, never into the SQL text.

/// An error from SQLite: its (extended) result code, its message and the
/// statement. Bound values are never part of it (they can be secrets).
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The extended result code (`SQLITE_FULL` is 13, `SQLITE_CONSTRAINT_CHECK` 275, …).
    public var extendedCode: Int32
    public var message: String
    public var sql: String?

    /// The primary result code (`extendedCode & 0xFF`): `SQLITE_FULL`, `SQLITE_BUSY`, …
    public var code: Int32 { extendedCode & 0xFF }

    public init(code: Int32, message: String, sql: String? = nil) {
        extendedCode = code
        self.message = message
        self.sql = sql
    }

    /// As GRDB worded it, which logs and `status.last_error` show
    /// ("SQLite error 13: database or disk is full - while executing `…`").
    public var description: String {
        var text = "SQLite error \(code): \(message)"
        if let sql { text += " - while executing `\(sql)`" }
        return text
    }
}

/// One SQLite value.
public enum SQLValue: Equatable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// A Swift value that can be bound to a statement parameter.
public protocol SQLBindable {
    var sqlValue: SQLValue { get }
}

/// A Swift value that can be read from a result column.
public protocol SQLColumnDecodable {
    init(sqlValue: SQLValue) throws(SQLiteError)
}

extension SQLValue: SQLBindable, SQLColumnDecodable {
    public var sqlValue: SQLValue { self }
    public init(sqlValue: SQLValue) { self = sqlValue }
}

private func mismatch(_ value: SQLValue, _ type: String) -> SQLiteError {
    let kind: String
    switch value {
    case .null: kind = "NULL"
    case .integer: kind = "an integer"
    case .real: kind = "a real"
    case .text: kind = "text"
    case .blob: kind = "a blob"
    }
    return SQLiteError(code: SQLITE_MISMATCH, message: "expected \(type), the column holds \(kind)")
}

extension Int64: SQLBindable, SQLColumnDecodable {
    public var sqlValue: SQLValue { .integer(self) }
    public init(sqlValue: SQLValue) throws(SQLiteError) {
        guard case .integer(let v) = sqlValue else { throw mismatch(sqlValue, "an integer") }
        self = v
    }
}

extension Int: SQLBindable, SQLColumnDecodable {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
    public init(sqlValue: SQLValue) throws(SQLiteError) {
        guard case .integer(let v) = sqlValue, let i = Int(exactly: v) else { throw mismatch(sqlValue, "an Int") }
        self = i
    }
}

extension Bool: SQLBindable, SQLColumnDecodable {
    public var sqlValue: SQLValue { .integer(self ? 1 : 0) }
    public init(sqlValue: SQLValue) throws(SQLiteError) {
        guard case .integer(let v) = sqlValue else { throw mismatch(sqlValue, "a boolean") }
        self = v != 0
    }
}

extension String: SQLBindable, SQLColumnDecodable {
    public var sqlValue: SQLValue { .text(self) }
    public init(sqlValue: SQLValue) throws(SQLiteError) {
        guard case .text(let s) = sqlValue else { throw mismatch(sqlValue, "text") }
        self = s
    }
}

extension Array: SQLBindable, SQLColumnDecodable where Element == UInt8 {
    public var sqlValue: SQLValue { .blob(self) }
    /// A blob (text is taken as its UTF-8 bytes, as GRDB's `Data` did).
    public init(sqlValue: SQLValue) throws(SQLiteError) {
        switch sqlValue {
        case .blob(let b): self = b
        case .text(let s): self = Array(s.utf8)
        default: throw mismatch(sqlValue, "a blob")
        }
    }
}

extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

extension Optional: SQLColumnDecodable where Wrapped: SQLColumnDecodable {
    public init(sqlValue: SQLValue) throws(SQLiteError) {
        if case .null = sqlValue { self = nil } else { self = try Wrapped(sqlValue: sqlValue) }
    }
}

/// One result row: the columns by name, in order.
public struct SQLiteRow: Sendable {
    public let columns: [String]
    public let values: [SQLValue]

    /// The value of column `name`; a missing column or a value of another
    /// type is an error, never a trap.
    public func get<T: SQLColumnDecodable>(_ name: String, as: T.Type = T.self) throws(SQLiteError) -> T {
        guard let i = columns.firstIndex(of: name) else {
            throw SQLiteError(code: SQLITE_ERROR, message: "no column \(name) in the result")
        }
        do {
            return try T(sqlValue: values[i])
        } catch {
            throw SQLiteError(code: error.extendedCode, message: "column \(name): \(error.message)")
        }
    }

    public func get<T: SQLColumnDecodable>(_ index: Int, as: T.Type = T.self) throws(SQLiteError) -> T {
        guard values.indices.contains(index) else {
            throw SQLiteError(code: SQLITE_RANGE, message: "no column \(index) in the result")
        }
        return try T(sqlValue: values[index])
    }
}

/// A prepared statement of one connection. Not thread-safe: it lives in its
/// `SQLiteConnection`, which one thread uses at a time.
final class Statement {
    let handle: OpaquePointer
    let sql: String
    unowned let connection: SQLiteConnection

    init(_ connection: SQLiteConnection, sql: String) throws(SQLiteError) {
        var stmt: OpaquePointer?
        // `tail` points into the C string, so it is read inside `withCString`:
        // the buffer Swift bridges for a plain `String` argument is freed when
        // the call returns, and reading the tail after it read freed memory
        // (seen as a spurious "more than one statement").
        let (rc, trailing) = sql.withCString { cSQL -> (Int32, Bool) in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v2(connection.handle, cSQL, -1, &stmt, &tail)
            guard rc == SQLITE_OK, let tail else { return (rc, false) }
            return (rc, !String(cString: tail).allSatisfy { $0.isWhitespace || $0 == ";" })
        }
        guard rc == SQLITE_OK, let stmt else {
            throw connection.error(rc, sql: sql)
        }
        // One statement per call: trailing SQL would silently not run.
        if trailing {
            sqlite3_finalize(stmt)
            throw SQLiteError(code: SQLITE_MISUSE, message: "more than one statement in one call", sql: sql)
        }
        handle = stmt
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and binds `arguments` (their count must match).
    func bind(_ arguments: [any SQLBindable]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.count == expected else {
            throw SQLiteError(
                code: SQLITE_RANGE, message: "\(arguments.count) arguments for \(expected) parameters", sql: sql)
        }
        for (offset, argument) in arguments.enumerated() {
            let i = Int32(offset + 1)
            let rc: Int32
            switch argument.sqlValue {
            case .null: rc = sqlite3_bind_null(handle, i)
            case .integer(let v): rc = sqlite3_bind_int64(handle, i, v)
            case .real(let v): rc = sqlite3_bind_double(handle, i, v)
            case .text(let s):
                var s = s
                rc = s.withUTF8 { u in
                    csqlite_bind_text(
                        handle, i,
                        UnsafeRawPointer(u.baseAddress ?? UnsafePointer(bitPattern: 1)!)
                            .assumingMemoryBound(to: CChar.self), Int32(u.count))
                }
            case .blob(let b): rc = b.withUnsafeBytes { csqlite_bind_blob(handle, i, $0.baseAddress, Int32($0.count)) }
            }
            guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
        }
    }

    /// The next row, or nil when done.
    func step() throws(SQLiteError) -> SQLiteRow? {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return currentRow()
        case SQLITE_DONE:
            sqlite3_reset(handle)
            return nil
        default:
            let e = connection.error(rc, sql: sql)
            sqlite3_reset(handle)
            throw e
        }
    }

    private func currentRow() -> SQLiteRow {
        let n = sqlite3_column_count(handle)
        var names: [String] = []
        var values: [SQLValue] = []
        names.reserveCapacity(Int(n))
        values.reserveCapacity(Int(n))
        for c in 0..<n {
            names.append(sqlite3_column_name(handle, c).map { String(cString: $0) } ?? "")
            switch sqlite3_column_type(handle, c) {
            case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(handle, c)))
            case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(handle, c)))
            case SQLITE_TEXT:
                let p = sqlite3_column_text(handle, c)
                let count = Int(sqlite3_column_bytes(handle, c))
                values.append(
                    .text(p.map { String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self) } ?? "")
                )
            case SQLITE_BLOB:
                let p = sqlite3_column_blob(handle, c)
                let count = Int(sqlite3_column_bytes(handle, c))
                values.append(.blob(p.map { Array(UnsafeRawBufferPointer(start: $0, count: count)) } ?? []))
            default: values.append(.null)
            }
        }
        return SQLiteRow(columns: names, values: values)
    }
}

/// One SQLite connection. Not thread-safe by itself: `DatabasePool` hands
/// it to one thread at a time (the library runs in multi-thread mode).
// @unchecked: a sqlite3 handle opened SQLITE_OPEN_NOMUTEX, and its `cache`: one thread at a time (the writer inside DatabasePool's `writer` Mutex, a reader while one `read` has it out of `readers`).
public final class SQLiteConnection: @unchecked Sendable {
    let handle: OpaquePointer
    public let path: String
    private var cache: [String: Statement] = [:]

    /// Opens `path` (read-write and created when missing, or read-only),
    /// with a busy timeout and foreign keys on. `noFollow`: a path through a
    /// symbolic link is refused (`SQLITE_OPEN_NOFOLLOW`; root tools, Store.swift).
    init(path: String, readOnly: Bool, noFollow: Bool = false, busyTimeoutMilliseconds: Int32 = 5000)
        throws(SQLiteError)
    {
        var db: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
            | (noFollow ? SQLITE_OPEN_NOFOLLOW : 0)
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw SQLiteError(code: rc, message: message)
        }
        handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        try execute(sql: "PRAGMA foreign_keys = ON")
    }

    deinit {
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, sql: String?) -> SQLiteError {
        // The connection's message belongs to this failure only when its code is the same.
        let current = sqlite3_extended_errcode(handle)
        let message =
            (current == rc || current & 0xFF == rc & 0xFF)
            ? String(cString: sqlite3_errmsg(handle)) : String(cString: sqlite3_errstr(rc))
        return SQLiteError(code: current & 0xFF == rc & 0xFF ? current : rc, message: message, sql: sql)
    }

    /// The statement for `sql`, prepared once per connection.
    func statement(_ sql: String) throws(SQLiteError) -> Statement {
        if let s = cache[sql] { return s }
        let s = try Statement(self, sql: sql)
        if cache.count >= 64 { cache.removeAll() }  // `IN (?, ?, …)` lists make many texts
        cache[sql] = s
        return s
    }

    /// Runs one statement, its rows discarded.
    public func execute(sql: String, arguments: [any SQLBindable] = []) throws(SQLiteError) {
        let s = try statement(sql)
        try s.bind(arguments)
        while try s.step() != nil {}
    }

    /// Every row of one query.
    public func fetchAll(sql: String, arguments: [any SQLBindable] = []) throws(SQLiteError) -> [SQLiteRow] {
        let s = try statement(sql)
        try s.bind(arguments)
        var rows: [SQLiteRow] = []
        while let r = try s.step() { rows.append(r) }
        return rows
    }

    /// The first row of one query, or nil.
    public func fetchOne(sql: String, arguments: [any SQLBindable] = []) throws(SQLiteError) -> SQLiteRow? {
        let s = try statement(sql)
        try s.bind(arguments)
        defer { sqlite3_reset(s.handle) }
        return try s.step()
    }

    /// The first column of the first row; nil when there is no row (or it is NULL).
    public func scalar<T: SQLColumnDecodable>(
        _ type: T.Type = T.self, sql: String, arguments: [any SQLBindable] = []
    ) throws(SQLiteError) -> T? {
        guard let row = try fetchOne(sql: sql, arguments: arguments) else { return nil }
        if case .null = row.values.first ?? .null { return nil }
        return try row.get(0, as: T.self)
    }

    /// Calls `body` for each row, in order, without collecting them.
    public func forEach(
        sql: String, arguments: [any SQLBindable] = [], _ body: (SQLiteRow) throws -> Bool
    ) throws {
        let s = try statement(sql)
        try s.bind(arguments)
        defer { sqlite3_reset(s.handle) }
        while let r = try s.step() { guard try body(r) else { return } }
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changesCount: Int { Int(sqlite3_changes(handle)) }
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    /// Whether a transaction is open (SQLite rolls back by itself on some errors, SQLITE_FULL among them).
    public var isInsideTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    public enum TransactionKind: String, Sendable {
        case deferred = "DEFERRED", immediate = "IMMEDIATE", exclusive = "EXCLUSIVE"
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    public func inTransaction<T>(_ kind: TransactionKind, _ body: (SQLiteConnection) throws -> T) throws -> T {
        try execute(sql: "BEGIN \(kind.rawValue) TRANSACTION")
        let result: T
        do {
            result = try body(self)
            try execute(sql: "COMMIT TRANSACTION")
        } catch {
            rollback()
            throw error
        }
        return result
    }

    /// Rolls back when a transaction is still open; the error that got here is the one reported.
    func rollback() {
        if isInsideTransaction { try? execute(sql: "ROLLBACK TRANSACTION") }
    }
}

/// The store's connections (what GRDB's `DatabasePool` was): one writer,
/// serialised by a mutex, and readers that run beside it (WAL), each read
/// in its own transaction so it sees one snapshot.
public final class DatabasePool: Sendable {
    public let path: String
    private let writer: Mutex<SQLiteConnection>
    private let readers: Mutex<[SQLiteConnection]>
    private let prepare: @Sendable (SQLiteConnection) throws -> Void
    /// Every connection read-only and refusing symbolic links (a root tool's view, Store.swift).
    private let readOnly: Bool

    /// `prepare` runs on each new connection (pragmas). `readOnly`: every
    /// connection, the writer too, is opened `SQLITE_OPEN_READONLY |
    /// SQLITE_OPEN_NOFOLLOW`, and the journal mode is left as the file has it.
    init(path: String, readOnly: Bool = false, prepare: @escaping @Sendable (SQLiteConnection) throws -> Void) throws {
        self.path = path
        self.prepare = prepare
        self.readOnly = readOnly
        let connection = try SQLiteConnection(path: path, readOnly: readOnly, noFollow: readOnly)
        try prepare(connection)
        if !readOnly {
            // WAL: gatewayctl reads while the daemon writes. The mode is kept in the file.
            let mode = try connection.scalar(String.self, sql: "PRAGMA journal_mode = WAL")
            guard mode?.lowercased() == "wal" else {
                throw SQLiteError(code: SQLITE_ERROR, message: "could not switch to WAL (journal mode \(mode ?? "?"))")
            }
        }
        writer = Mutex(connection)
        readers = Mutex([])
    }

    /// A write transaction (BEGIN IMMEDIATE, as GRDB's pool): committed when
    /// `body` returns, rolled back when it throws.
    public func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try writer.withLock { connection in try connection.inTransaction(.immediate, body) }
    }

    /// The writer outside any transaction (`VACUUM INTO` cannot run in one).
    public func writeWithoutTransaction<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try writer.withLock { connection in
            defer { connection.rollback() }
            return try body(connection)
        }
    }

    /// A read in a deferred transaction on a reader connection.
    public func read<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let connection = try readers.withLock { $0.popLast() } ?? openReader()
        defer { readers.withLock { if $0.count < 4 { $0.append(connection) } } }
        return try connection.inTransaction(.deferred, body)
    }

    private func openReader() throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, readOnly: true, noFollow: readOnly)
        try prepare(connection)
        return connection
    }
}
