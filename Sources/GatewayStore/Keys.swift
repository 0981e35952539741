/// The keys of docs/design.md "Keys" other than sticker secrets.
public enum KeyName: String, CaseIterable, Sendable {
    /// docs/formats.md §3: 16-byte AES-128 key of the phone app's `%T` OTP block.
    case compatTimestamp = "compat_timestamp"
    /// docs/formats.md §5: the per-door HMAC key of native commands (32 bytes).
    case nativeCommand = "native_command"
    /// Derives NTAG write passwords and the HMAC of UIDs in events (32 bytes).
    case device

    /// The length each key must have.
    public var length: Int { self == .compatTimestamp ? 16 : 32 }
}

extension GatewayStore {
    /// The stored key, or nil when none is set.
    public func key(_ name: KeyName) throws -> [UInt8]? {
        try pool.read { db in
            try db.scalar([UInt8].self, sql: "SELECT value FROM key WHERE name = ?", arguments: [name.rawValue])
        }
    }

    /// The key's generation (issue 24 M1): 0 for none, or one stored
    /// before generations were kept.
    public func keyGeneration(_ name: KeyName) throws -> Int64 {
        try pool.read { db in try KeyTable.keys.generation(db, name.rawValue) }
    }

    /// Sets (or replaces) a key, one generation above the one it replaces
    /// (the first is 1): a fleet document carrying the replaced key, of an
    /// older generation, cannot bring it back (docs/security.md "M1").
    /// The length must match `name.length`. Returns the new generation.
    @discardableResult
    public func setKey(_ name: KeyName, _ value: [UInt8], now: Int64) throws -> Int64 {
        guard value.count == name.length else {
            throw StoreError.invalidValue("\(name.rawValue) key must be \(name.length) bytes, got \(value.count)")
        }
        return try pool.write { db in try KeyTable.keys.replace(db, name.rawValue, value, now: now) }
    }

    /// Returns the device key, generating it with `generate` on first start.
    /// Generation and insertion happen in one transaction, so two processes
    /// starting together cannot end up with different keys.
    public func ensureDeviceKey(now: Int64, generate: () throws -> [UInt8]) throws -> [UInt8] {
        try pool.write { db in
            if let existing = try db.scalar([UInt8].self, sql: "SELECT value FROM key WHERE name = 'device'") {
                return existing
            }
            let fresh = try generate()
            guard fresh.count == KeyName.device.length else {
                throw StoreError.invalidValue("device key must be \(KeyName.device.length) bytes")
            }
            try db.execute(
                sql: "INSERT INTO key (name, value, created) VALUES ('device', ?, ?)",
                arguments: [fresh, now])
            return fresh
        }
    }
}
