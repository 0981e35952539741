import DoorCore

public enum PINError: Error, Equatable, CustomStringConvertible {
    /// A card's PIN needs the card enrolled first.
    case noCredential(String)
    /// Another code has this PIN already (an entry must name one code).
    case codeTaken
    public var description: String {
        switch self {
        case .noCredential(let uid):
            return "\(uid) is not enrolled here (`gatewayctl tags enroll-card` first)"
        case .codeTaken: return "another PIN-only code has this PIN; choose another"
        }
    }
}

extension GatewayStore {
    /// Sets (or replaces) the PIN of an enrolled credential (a card): only its hash is stored.
    public func setPIN(_ hash: PINHash, for uid: TagUID, now: Int64) throws {
        try pool.write { db in
            guard try db.scalar(Bool.self, sql: "SELECT 1 FROM issued_tag WHERE uid = ?", arguments: [uid.hex]) != nil
            else { throw PINError.noCredential(uid.hex) }
            try Self.writePIN(db, hash, uid: uid, now: now)
        }
    }

    /// A PIN-only code (issue 35): its issued-tag row (kind `pin`, active, a
    /// guest pass's limits) and its hash, in one transaction. `hash` must use
    /// the codes' salt (`pinCodeSalt`) so an entry costs one derivation; a PIN
    /// another code has is refused.
    public func addPINCode(
        key: TagUID, hash: PINHash, action: ActionIndex, label: String, limits: TagLimits, now: Int64
    ) throws {
        try pool.write { db in
            for (_, other) in try Self.codes(db) where other.salt == hash.salt && other.cost == hash.cost {
                if Crypto.constantTimeEqual(other.hash, hash.hash) { throw PINError.codeTaken }
            }
            try Self.issueTag(
                db, uid: key, action: action, secretID: nil, label: label, limits: limits, kind: .pin, state: .active,
                now: now)
            try Self.writePIN(db, hash, uid: key, now: now)
        }
    }

    /// The salt every PIN-only code shares (nil before the first code): an
    /// entry is then hashed once, whatever the number of codes.
    public func pinCodeSalt() throws -> [UInt8]? {
        try pool.read { db in try Self.codes(db).first?.hash.salt }
    }

    /// Removes a credential's PIN; false when it had none.
    @discardableResult
    public func removePIN(uid: TagUID) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM pin WHERE uid = ?", arguments: [uid.hex])
            return db.changesCount == 1
        }
    }

    public func pinHash(for uid: TagUID) throws -> PINHash? {
        try pool.read { db in
            try db.fetchOne(sql: "SELECT * FROM pin WHERE uid = ?", arguments: [uid.hex]).map(Self.hash(row:))
        }
    }

    /// Every PIN-only code with its hash (rows whose key is a `PINCode`'s).
    public func pinCodes() throws -> [(key: TagUID, hash: PINHash)] { try pool.read { try Self.codes($0) } }

    static func codes(_ db: SQLiteConnection) throws -> [(key: TagUID, hash: PINHash)] {
        try db.fetchAll(sql: "SELECT * FROM pin WHERE uid LIKE 'C0DE%' ORDER BY uid").compactMap { row in
            guard let key = TagUID(hex: try row.get("uid")), PINCode.isKey(key) else { return nil }
            return (key, try hash(row: row))
        }
    }

    static func hash(row: SQLiteRow) throws -> PINHash {
        let logN: Int64 = try row.get("log_n")
        let r: Int64 = try row.get("r")
        let p: Int64 = try row.get("p")
        return PINHash(
            salt: try row.get("salt"), hash: try row.get("hash"),
            cost: Crypto.ScryptCost(logN: UInt8(clamping: logN), r: UInt32(clamping: r), p: UInt32(clamping: p)),
            duress: try row.get("duress"))
    }

    static func writePIN(_ db: SQLiteConnection, _ hash: PINHash, uid: TagUID, now: Int64) throws {
        try db.execute(
            sql: """
                INSERT INTO pin (uid, salt, hash, log_n, r, p, duress, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(uid) DO UPDATE SET salt = excluded.salt, hash = excluded.hash, log_n = excluded.log_n,
                  r = excluded.r, p = excluded.p, duress = excluded.duress, created = excluded.created
                """,
            arguments: [
                uid.hex, hash.salt, hash.hash, Int64(hash.cost.logN), Int64(hash.cost.r), Int64(hash.cost.p),
                hash.duress, now,
            ])
    }
}

/// The store as the keypad's port (`KeypadDesk`): PINs read from SQLite.
public struct StorePINs: PINVerifier, Sendable {
    public let store: GatewayStore
    public init(store: GatewayStore) { self.store = store }
    public func pin(for uid: TagUID) throws -> PINHash? { try store.pinHash(for: uid) }
    public func codes() throws -> [(key: TagUID, hash: PINHash)] { try store.pinCodes() }
}
