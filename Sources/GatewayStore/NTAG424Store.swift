import DoorCore

/// Where the site's NTAG 424 master key came from (docs/ntag424-internals.md "Site master key and counters").
public enum SiteKeyOrigin: String, Sendable, CaseIterable {
    /// This door drew it from the CSPRNG the first time it needed one.
    case generated
    /// A fleet document carried it (the same key at every door of the site).
    case fleet
    /// An operator set it (`gatewayctl`, a restore).
    case imported
}

/// The site master key every door diversifies each tag's AES keys from
/// (AN10922, `NTAG424.DoorKeys`). Its description never shows the key.
public struct NTAG424SiteKey: Equatable, Sendable, CustomStringConvertible {
    /// 16 bytes (AES-128). Never log it.
    public let key: [UInt8]
    public let origin: SiteKeyOrigin
    /// Unix seconds it was stored.
    public let created: Int64
    /// 1 for the first key, one more each time a different key replaces it.
    public let generation: Int64

    public var description: String { "NTAG 424 site key (\(origin.rawValue), generation \(generation))" }
}

/// The SUN counter check's outcome (`acceptSUNCounter`).
public enum SUNCounterCheck: Equatable, Sendable {
    /// Strictly above the last one seen (or the first seen); now stored.
    case accepted(previous: UInt32?)
    /// Not above the last one seen: a replayed or rolled-back SUN. Nothing stored.
    case replayed(last: UInt32)
}

/// NTAG 424 DNA support (issue 26, migration `v11-ntag424`): the site master
/// key, the durable SUN read counters, and each issued tag's credential kind.
extension GatewayStore {
    // MARK: Site master key

    /// The site master key, or nil when none is stored yet.
    public func ntag424SiteKey() throws -> NTAG424SiteKey? {
        try pool.read { try Self.siteKey($0) }
    }

    /// The site master key, drawing a fresh one with `generate` (16 bytes,
    /// the CSPRNG by default) when none is stored. Generation and insertion
    /// are one transaction: two processes starting together agree on one key.
    public func ensureNTAG424SiteKey(
        now: Int64, generate: () throws -> [UInt8] = { try Crypto.randomBytes(16) }
    ) throws -> NTAG424SiteKey {
        try pool.write { db in
            if let held = try Self.siteKey(db) { return held }
            let fresh = try generate()
            guard fresh.count == 16 else {
                throw StoreError.invalidValue("the NTAG 424 site key is 16 bytes, got \(fresh.count)")
            }
            try db.execute(
                sql: """
                    INSERT INTO ntag424_site_key (one, key, origin, created, generation)
                    VALUES (1, ?, 'generated', ?, 1)
                    """, arguments: [fresh, now])
            return NTAG424SiteKey(key: fresh, origin: .generated, created: now, generation: 1)
        }
    }

    /// Sets the site master key from elsewhere (the fleet, an operator).
    /// The key already held is left as it is (origin, date and generation
    /// unchanged); a different key replaces it one generation up. Tags
    /// provisioned under the replaced key no longer authenticate here.
    @discardableResult
    public func setNTAG424SiteKey(_ key: [UInt8], origin: SiteKeyOrigin, now: Int64) throws -> NTAG424SiteKey {
        guard key.count == 16 else {
            throw StoreError.invalidValue("the NTAG 424 site key is 16 bytes, got \(key.count)")
        }
        return try pool.write { db in
            let held = try Self.siteKey(db)
            if let held, Crypto.constantTimeEqual(held.key, key) { return held }
            let generation = (held?.generation ?? 0) + 1
            try db.execute(
                sql: """
                    INSERT INTO ntag424_site_key (one, key, origin, created, generation) VALUES (1, ?, ?, ?, ?)
                    ON CONFLICT(one) DO UPDATE SET key = excluded.key, origin = excluded.origin,
                      created = excluded.created, generation = excluded.generation
                    """, arguments: [key, origin.rawValue, now, generation])
            return NTAG424SiteKey(key: key, origin: origin, created: now, generation: generation)
        }
    }

    static func siteKey(_ db: SQLiteConnection) throws -> NTAG424SiteKey? {
        guard let row = try db.fetchOne(sql: "SELECT * FROM ntag424_site_key WHERE one = 1") else { return nil }
        let raw: String = try row.get("origin")
        guard let origin = SiteKeyOrigin(rawValue: raw) else {
            throw StoreError.invalidValue("NTAG 424 site key origin \"\(raw.prefix(16))\"")
        }
        return NTAG424SiteKey(
            key: try row.get("key"), origin: origin, created: try row.get("created"),
            generation: try row.get("generation"))
    }

    // MARK: SUN read counters

    /// The door's SUN replay check: accepts `counter` only when it is
    /// strictly greater than the last one stored for `uid` (any counter
    /// when none is), and stores it, in one immediate transaction that is on
    /// disk (synchronous FULL) before this returns — call it before the
    /// relay moves, so a power cut cannot let the same counter open twice.
    public func acceptSUNCounter(uid: TagUID, counter: UInt32, now: Int64) throws -> SUNCounterCheck {
        try pool.write { db in
            let last = try db.scalar(
                Int64.self, sql: "SELECT counter FROM sun_counter WHERE uid = ?", arguments: [uid.hex])
            if let last, Int64(counter) <= last { return .replayed(last: UInt32(clamping: last)) }
            try db.execute(
                sql: """
                    INSERT INTO sun_counter (uid, counter, updated) VALUES (?, ?, ?)
                    ON CONFLICT(uid) DO UPDATE SET counter = excluded.counter, updated = excluded.updated
                    """, arguments: [uid.hex, Int64(counter), now])
            return .accepted(previous: last.map { UInt32(clamping: $0) })
        }
    }

    /// The last SUN read counter accepted for `uid`, or nil when none was.
    public func sunCounter(uid: TagUID) throws -> UInt32? {
        try pool.read {
            try $0.scalar(Int64.self, sql: "SELECT counter FROM sun_counter WHERE uid = ?", arguments: [uid.hex])
                .map { UInt32(clamping: $0) }
        }
    }

    /// Forgets the stored counter of `uid`, so the next SUN of that tag is
    /// accepted whatever its counter. Only for a tag whose counter was reset
    /// on purpose (re-provisioned with SDM re-enabled): it re-opens every
    /// URL that tag produced before (docs/ntag424-internals.md "Site master key and counters").
    public func forgetSUNCounter(uid: TagUID) throws {
        try pool.write { try $0.execute(sql: "DELETE FROM sun_counter WHERE uid = ?", arguments: [uid.hex]) }
    }

    // MARK: Credential kind per issued tag

    /// The credential kind of the issued tag `uid`: nil when no row, or a
    /// sticker row written before kinds were recorded.
    public func tagKind(_ uid: TagUID) throws -> CredentialKind? {
        try pool.read { db in
            guard
                let raw = try db.scalar(
                    String?.self, sql: "SELECT kind FROM issued_tag WHERE uid = ?", arguments: [uid.hex]),
                let raw
            else { return nil }
            guard let kind = CredentialKind(rawValue: raw) else {
                throw StoreError.invalidValue("issued_tag \(uid.hex) kind \"\(raw.prefix(16))\"")
            }
            return kind
        }
    }

    /// Records the credential kind of an issued tag's row (it must exist).
    public func setTagKind(uid: TagUID, _ kind: CredentialKind) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE issued_tag SET kind = ? WHERE uid = ?", arguments: [kind.rawValue, uid.hex])
            if db.changesCount == 0 { throw StoreError.notFound("issued tag \(uid.hex)") }
        }
    }

    /// Enrols a plain key fob or card by its UID (`kind` uid): an active row
    /// for `action` straight away, in one transaction; nothing is written to
    /// the fob. A revoked UID is refused; a UID issued before is re-issued.
    public func enrollUIDTag(
        uid: TagUID, action: ActionIndex, label: String, limits: TagLimits = TagLimits(), now: Int64
    )
        throws
    {
        try pool.write { db in
            try Self.issueTag(
                db, uid: uid, action: action, secretID: nil, label: label, limits: limits, kind: .uid, state: .active,
                now: now)
        }
    }
}
