/// A table of generation-counted keys, one row per name: `key` (the door's
/// keys, by `name`) and `osdp_reader_key` (each OSDP reader's SCBK, by
/// `reader`), both `(ID, VALUE, created, generation)`. A key replaced goes one
/// generation up, so a fleet document carrying the replaced one, of an older
/// generation, cannot bring it back (docs/security.md "M1").
struct KeyTable {
    let table: String
    let idColumn: String
    let valueColumn: String

    static let keys = KeyTable(table: "key", idColumn: "name", valueColumn: "value")
    static let osdpReaders = KeyTable(table: "osdp_reader_key", idColumn: "reader", valueColumn: "key")

    /// The row's generation: 0 for none (or a row stored before generations were kept).
    func generation(_ db: SQLiteConnection, _ id: String) throws -> Int64 {
        try db.scalar(Int64.self, sql: "SELECT generation FROM \(table) WHERE \(idColumn) = ?", arguments: [id]) ?? 0
    }

    /// Writes the row with the generation given (a fleet document's).
    func write(_ db: SQLiteConnection, _ id: String, _ value: [UInt8], now: Int64, generation: Int64) throws {
        try db.execute(
            sql: """
                INSERT INTO \(table) (\(idColumn), \(valueColumn), created, generation) VALUES (?, ?, ?, ?)
                ON CONFLICT(\(idColumn)) DO UPDATE SET \(valueColumn) = excluded.\(valueColumn),
                  created = excluded.created, generation = excluded.generation
                """, arguments: [id, value, now, generation])
    }

    /// Sets (or replaces) the row one generation above the one it replaces
    /// (the first is 1), in the caller's transaction; returns the new generation.
    func replace(_ db: SQLiteConnection, _ id: String, _ value: [UInt8], now: Int64) throws -> Int64 {
        let generation = try self.generation(db, id) + 1
        try write(db, id, value, now: now, generation: generation)
        return generation
    }
}
