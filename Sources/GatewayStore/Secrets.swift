import DoorCore

extension StickerSecret {
    init(row: SQLiteRow) throws {
        self.init(id: 0, action: 0, key: [], origin: .imported)
        id = try row.get("id")
        action = try row.get("action")
        label = try row.get("label")
        key = try row.get("key", as: [UInt8]?.self) ?? []
        created = try row.get("created")
        guard let o = SecretOrigin(rawValue: try row.get("origin")) else {
            throw StoreError.invalidValue("secret \(id) has an unknown origin")
        }
        origin = o
        active = try row.get("active")
    }
}

extension GatewayStore {
    /// Makes the store's action table match the configuration's actions.
    /// Actions that still own secrets are never deleted (their secrets would
    /// be lost); they stay, and the configuration check reports them.
    public func syncActions(_ actions: [ActionDefinition]) throws {
        try pool.write { db in
            for a in actions {
                try db.execute(
                    sql: """
                        INSERT INTO action (idx, name) VALUES (?, ?)
                        ON CONFLICT(idx) DO UPDATE SET name = excluded.name
                        """, arguments: [a.index, a.name])
            }
            let keep = actions.map(\.index)
            try db.execute(
                sql: """
                    DELETE FROM action WHERE idx NOT IN (\(keep.map { _ in "?" }.joined(separator: ",").ifEmpty("NULL")))
                    AND idx NOT IN (SELECT action FROM secret)
                    """, arguments: keep)
        }
    }

    /// Stores a new secret (32 bytes) for an action that exists. A key
    /// already held (under any action, with either origin) is refused
    /// (`StoreError.alreadyHeld`): a second row could only change its origin,
    /// and a gateway-generated key turned imported would let the v2 stickers
    /// it signed pass as v1 with their `u` cut off (docs/formats.md §4).
    @discardableResult
    public func addSecret(
        action: ActionIndex, key: [UInt8], label: String, origin: SecretOrigin,
        now: Int64
    ) throws -> StickerSecret {
        guard key.count == 32 else { throw StoreError.invalidValue("a sticker secret is 32 bytes, got \(key.count)") }
        return try pool.write { db in
            guard try db.scalar(Bool.self, sql: "SELECT 1 FROM action WHERE idx = ?", arguments: [action]) != nil else {
                throw StoreError.notFound("action \(action)")
            }
            let row = try db.fetchOne(sql: "SELECT * FROM secret WHERE key = ? ORDER BY id LIMIT 1", arguments: [key])
            if let held = try row.map(StickerSecret.init(row:)) {
                throw StoreError.alreadyHeld(id: held.id, action: held.action, origin: held.origin)
            }
            // Removed here or anywhere in the fleet (M1): a leaked key stays out.
            if try Self.isTombstoned(db, key) { throw StoreError.removedKey }
            try db.execute(
                sql: """
                    INSERT INTO secret (action, label, key, created, origin, active) VALUES (?, ?, ?, ?, ?, 1)
                    """, arguments: [action, label, key, now, origin.rawValue])
            return StickerSecret(
                id: db.lastInsertedRowID, action: action, label: label, key: key,
                created: now, origin: origin, active: true)
        }
    }

    /// Secrets, optionally of one action, oldest first.
    public func secrets(action: ActionIndex? = nil) throws -> [StickerSecret] {
        try pool.read { db in
            if let action {
                return try db.fetchAll(sql: "SELECT * FROM secret WHERE action = ? ORDER BY id", arguments: [action])
                    .map(StickerSecret.init(row:))
            }
            return try db.fetchAll(sql: "SELECT * FROM secret ORDER BY id").map(StickerSecret.init(row:))
        }
    }

    /// The action's newest active generated secret: what provisioning signs with.
    public func newestGeneratedSecret(action: ActionIndex) throws -> StickerSecret? {
        try pool.read { db in
            try db.fetchOne(
                sql: """
                    SELECT * FROM secret WHERE action = ? AND origin = 'generated' AND active
                    ORDER BY created DESC, id DESC LIMIT 1
                    """, arguments: [action]
            ).map(StickerSecret.init(row:))
        }
    }

    public func setSecretActive(id: Int64, _ active: Bool) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE secret SET active = ? WHERE id = ?", arguments: [active, id])
            if db.changesCount == 0 { throw StoreError.notFound("secret \(id)") }
        }
    }

    /// Removes a secret: exactly the stickers signed with it stop validating
    /// (docs/formats.md §1). The row is deactivated, not deleted (its label, origin,
    /// dates and the issued tags pointing at it stay as history), and the
    /// key's tombstone is recorded in the same transaction: the next fleet
    /// push carries it, every door deactivates the key, and no document nor
    /// import brings it back (issue 24 M1). Removing it again is refused.
    public func removeSecret(id: Int64, now: Int64 = 0) throws {
        try pool.write { db in
            guard let row = try db.fetchOne(sql: "SELECT * FROM secret WHERE id = ?", arguments: [id]) else {
                throw StoreError.notFound("secret \(id)")
            }
            let secret = try StickerSecret(row: row)
            if try Self.isTombstoned(db, secret.key) { throw StoreError.alreadyRemoved(id: id) }
            // Every row of the key: before v6 one key could stand under two actions.
            try db.execute(sql: "UPDATE secret SET active = 0 WHERE key = ?", arguments: [secret.key])
            try db.execute(
                sql:
                    "INSERT INTO secret_tombstone (hash, created, reason) VALUES (?, ?, ?) ON CONFLICT(hash) DO NOTHING",
                arguments: [FleetDocument.tombstone(of: secret.key), now, "removed here (secret \(id))"])
        }
    }

    /// The tombstones of removed secrets (SHA-256 of each key), this door's and the fleet's.
    public func secretTombstones() throws -> Set<[UInt8]> {
        try pool.read { try Self.secretTombstones($0) }
    }

    static func secretTombstones(_ db: SQLiteConnection) throws -> Set<[UInt8]> {
        Set(try db.fetchAll(sql: "SELECT hash FROM secret_tombstone").map { try $0.get(0, as: [UInt8].self) })
    }

    static func isTombstoned(_ db: SQLiteConnection, _ key: [UInt8]) throws -> Bool {
        try db.scalar(
            Bool.self, sql: "SELECT 1 FROM secret_tombstone WHERE hash = ?",
            arguments: [FleetDocument.tombstone(of: key)])
            != nil
    }
}

private extension String {
    func ifEmpty(_ other: String) -> String { isEmpty ? other : self }
}
