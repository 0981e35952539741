import DoorCore

/// Each OSDP reader's Secure Channel base key (issue 35, migration `v15-osdp-reader-key`):
/// 16 bytes, drawn by the door during `gatewayctl reader osdp install NAME` and handed to
/// the reader in osdp_KEYSET inside a Secure Channel. Stored like the door's other keys:
/// in the store only, never in a log, an event, a fleet document or gateway.toml.
extension GatewayStore {
    /// The reader's SCBK, or nil before its install.
    public func osdpReaderKey(_ reader: String) throws -> [UInt8]? {
        try pool.read { db in
            try db.scalar([UInt8].self, sql: "SELECT key FROM osdp_reader_key WHERE reader = ?", arguments: [reader])
        }
    }

    /// Stores (or replaces) the reader's SCBK, one generation up; returns the generation.
    @discardableResult
    public func setOSDPReaderKey(_ reader: String, _ key: [UInt8], now: Int64) throws -> Int64 {
        guard key.count == 16 else {
            throw StoreError.invalidValue("an OSDP reader key is 16 bytes, got \(key.count)")
        }
        return try pool.write { db in try KeyTable.osdpReaders.replace(db, reader, key, now: now) }
    }

    /// The readers that have a key (names only: `gatewayctl reader osdp` lists them).
    public func osdpReadersWithKeys() throws -> [String] {
        try pool.read { db in
            try db.fetchAll(sql: "SELECT reader FROM osdp_reader_key ORDER BY reader").map {
                try $0.get(0, as: String.self)
            }
        }
    }
}
