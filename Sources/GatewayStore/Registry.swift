import DoorCore

/// A sticker the gateway wrote (docs/design.md "Issued-tag registry").
public struct IssuedTag: Equatable, Sendable {
    /// The core's registry state (DoorCore `RegistryState`), stored as its raw value.
    public typealias State = RegistryState
    public var uid: TagUID
    public var action: ActionIndex
    public var secretID: Int64?
    public var label: String
    public var issued: Int64
    public var validUntil: Int64?
    public var state: State
    public var lastSeen: Int64?
    /// A guest pass (docs/policy.md): opens from this time on.
    public var validFrom: Int64? = nil
    /// Uses issued and left (nil: unlimited).
    public var uses: Int? = nil
    public var usesLeft: Int? = nil
    /// A `[[schedules]]` name the tag is held to.
    public var schedule: String? = nil
    /// The credential kind (`v11-ntag424`); nil: a sticker issued before kinds were recorded.
    public var kind: CredentialKind? = nil
    /// An NTAG 424's key issue (`v12-ntag424-key-issue`); nil for other kinds
    /// and for a 424 provisioned before salts (legacy keys).
    public var keyIssue: NTAG424.KeyIssue? = nil
}

/// What provisioning gives a tag besides its action and label (docs/policy.md).
public struct TagLimits: Equatable, Sendable {
    public var validFrom: Int64?
    public var validUntil: Int64?
    public var uses: Int?
    public var schedule: String?
    public init(validFrom: Int64? = nil, validUntil: Int64? = nil, uses: Int? = nil, schedule: String? = nil) {
        self.validFrom = validFrom
        self.validUntil = validUntil
        self.uses = uses
        self.schedule = schedule
    }
}

extension IssuedTag {
    init(row: SQLiteRow) throws {
        let hex: String = try row.get("uid")
        guard let uid = TagUID(hex: hex), let state = State(rawValue: try row.get("state")) else {
            throw StoreError.invalidValue("issued_tag row \(hex)")
        }
        self.init(
            uid: uid, action: try row.get("action"), secretID: try row.get("secret_id"), label: try row.get("label"),
            issued: try row.get("issued"), validUntil: try row.get("valid_until"), state: state,
            lastSeen: try row.get("last_seen"), validFrom: try row.get("valid_from"), uses: try row.get("uses"),
            usesLeft: try row.get("uses_left"), schedule: try row.get("schedule"),
            kind: try (row.get("kind", as: String?.self)).flatMap(CredentialKind.init(rawValue:)),
            keyIssue: try Self.keyIssue(salt: row.get("key_salt"), version: row.get("key_version")))
    }

    /// The issue a row's columns hold: nil when neither is set; a salt needs a
    /// version of 2…255, a version alone is the legacy one (1).
    static func keyIssue(salt: [UInt8]?, version: Int64?) throws -> NTAG424.KeyIssue? {
        guard let version else {
            if salt != nil { throw StoreError.invalidValue("issued_tag key_salt without key_version") }
            return nil
        }
        let issue = NTAG424.KeyIssue(salt: salt, version: UInt8(clamping: version))
        guard (1...255).contains(version), issue.isWellFormed else {
            throw StoreError.invalidValue("issued_tag key issue (version \(version))")
        }
        return issue
    }
}

extension IssuedTag {
    /// The row as the tap judgement reads it (DoorCore `IssuedTagView`).
    public var view: IssuedTagView {
        IssuedTagView(
            state: state, validUntil: validUntil, validFrom: validFrom, usesLeft: usesLeft, schedule: schedule,
            kind: kind, action: action, keyIssue: keyIssue)
    }
}

/// The store as the core's registry port (`TapJudge`, `PolicyExplain`):
/// issued-tag rows and revocations read from SQLite. A row whose state the
/// core does not know cannot be read (`StoreError.invalidValue`), so the tap
/// is denied (`registry_unavailable`).
public struct StoreRegistry: TagRegistryView, Sendable {
    public let store: GatewayStore
    public init(store: GatewayStore) { self.store = store }
    public func issuedTag(_ uid: TagUID) throws -> IssuedTagView? { try store.issuedTag(uid)?.view }
    public func isRevoked(uid: TagUID, signature: [UInt8]?) throws -> Bool {
        try store.isRevoked(uid: uid, signature: signature)
    }
}

/// A revocation: by UID, or (v1 stickers, which carry no UID) by signature.
public struct Revocation: Equatable, Sendable {
    public var id: Int64
    public var uid: String?
    public var signature: String?
    public var created: Int64
    public var reason: String
    init(row: SQLiteRow) throws {
        id = try row.get("id")
        uid = try row.get("uid")
        signature = try row.get("signature")
        created = try row.get("created")
        reason = try row.get("reason")
    }
}

public enum RegistryError: Error, Equatable, CustomStringConvertible {
    case illegalTransition(uid: String, from: IssuedTag.State?, to: IssuedTag.State)
    case revoked(String)
    public var description: String {
        switch self {
        case .illegalTransition(let uid, let from, let to):
            return "tag \(uid) cannot go from \(from?.rawValue ?? "unknown") to \(to.rawValue)"
        case .revoked(let uid): return "tag \(uid) is revoked; `gatewayctl tags forget \(uid)` first"
        }
    }
}

extension GatewayStore {
    /// Records a tag about to be written (pending). A UID issued before is
    /// re-issued (its row starts again); a revoked UID is refused.
    public func createPendingTag(
        uid: TagUID, action: ActionIndex, secretID: Int64?, label: String, validUntil: Int64? = nil, now: Int64
    ) throws {
        try createPendingTag(
            uid: uid, action: action, secretID: secretID, label: label, limits: TagLimits(validUntil: validUntil),
            now: now)
    }

    /// Records a tag about to be written, with a guest pass's or a schedule's limits.
    public func createPendingTag(
        uid: TagUID, action: ActionIndex, secretID: Int64?, label: String, limits: TagLimits,
        kind: CredentialKind? = nil, now: Int64
    ) throws {
        try pool.write { db in
            try Self.issueTag(
                db, uid: uid, action: action, secretID: secretID, label: label, limits: limits, kind: kind,
                state: .pending, now: now)
        }
    }

    /// The one place an issued tag's row is written (a pending sticker or 424,
    /// an enrolled UID fob): a revoked UID is refused; a UID issued before is
    /// re-issued (its row starts again: last seen cleared, limits and kind
    /// replaced). Runs in the caller's transaction.
    static func issueTag(
        _ db: SQLiteConnection, uid: TagUID, action: ActionIndex, secretID: Int64?, label: String, limits: TagLimits,
        kind: CredentialKind?, state: IssuedTag.State, now: Int64
    ) throws {
        if try db.scalar(Bool.self, sql: "SELECT 1 FROM revocation WHERE uid = ?", arguments: [uid.hex]) != nil {
            throw RegistryError.revoked(uid.hex)
        }
        try db.execute(
            sql: """
                INSERT INTO issued_tag (uid, action, secret_id, label, issued, valid_until, state,
                  valid_from, uses, uses_left, schedule, kind)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(uid) DO UPDATE SET action = excluded.action, secret_id = excluded.secret_id,
                  label = excluded.label, issued = excluded.issued, valid_until = excluded.valid_until,
                  state = excluded.state, last_seen = NULL, valid_from = excluded.valid_from, uses = excluded.uses,
                  uses_left = excluded.uses_left, schedule = excluded.schedule, kind = excluded.kind,
                  key_salt = NULL, key_version = NULL
                """,
            arguments: [
                uid.hex, action, secretID, label, now, limits.validUntil, state.rawValue, limits.validFrom,
                limits.uses, limits.uses, limits.schedule, kind?.rawValue,
            ])
    }

    /// pending → active (written and verified).
    public func activateTag(uid: TagUID) throws { try transition(uid, from: [.pending], to: .active) }

    /// pending → failed (the write failed: visible, never honoured).
    public func failTag(uid: TagUID) throws { try transition(uid, from: [.pending], to: .failed) }

    private func transition(_ uid: TagUID, from: Set<IssuedTag.State>, to: IssuedTag.State) throws {
        try pool.write { db in
            let current = try db.scalar(
                String.self, sql: "SELECT state FROM issued_tag WHERE uid = ?", arguments: [uid.hex]
            )
            .flatMap(IssuedTag.State.init(rawValue:))
            guard let current, from.contains(current) else {
                throw RegistryError.illegalTransition(uid: uid.hex, from: current, to: to)
            }
            try db.execute(sql: "UPDATE issued_tag SET state = ? WHERE uid = ?", arguments: [to.rawValue, uid.hex])
        }
    }

    public func issuedTag(_ uid: TagUID) throws -> IssuedTag? {
        try pool.read {
            try $0.fetchOne(sql: "SELECT * FROM issued_tag WHERE uid = ?", arguments: [uid.hex]).map(
                IssuedTag.init(row:))
        }
    }

    public func issuedTags() throws -> [IssuedTag] {
        try pool.read {
            try $0.fetchAll(sql: "SELECT * FROM issued_tag ORDER BY issued, uid").map(IssuedTag.init(row:))
        }
    }

    /// A guest pass's use, taken in the one transaction that decides: the
    /// count goes down only while it is above zero, and is on disk before
    /// the caller moves the relay (a power cut never gives a use back).
    /// Returns the uses left after this one, or nil when none was left (or
    /// the tag is not an active guest pass any more). `last_seen` is set too.
    public func consumeUse(uid: TagUID, at time: Int64) throws -> Int? {
        try pool.write { db in
            try db.execute(
                sql: """
                    UPDATE issued_tag SET uses_left = uses_left - 1, last_seen = ?
                    WHERE uid = ? AND state = 'active' AND uses_left > 0
                    """, arguments: [time, uid.hex])
            guard db.changesCount == 1 else { return nil }
            return try db.scalar(Int.self, sql: "SELECT uses_left FROM issued_tag WHERE uid = ?", arguments: [uid.hex])
        }
    }

    public func touchLastSeen(uid: TagUID, at time: Int64) throws {
        try pool.write {
            try $0.execute(sql: "UPDATE issued_tag SET last_seen = ? WHERE uid = ?", arguments: [time, uid.hex])
        }
    }

    /// Revokes by UID: an issued tag becomes revoked, and the UID is denied
    /// whatever it carries (also stickers never issued here).
    public func revoke(uid: TagUID, reason: String = "", now: Int64) throws {
        try pool.write { db in
            try db.execute(
                sql: "INSERT INTO revocation (uid, created, reason) VALUES (?, ?, ?) ON CONFLICT(uid) DO NOTHING",
                arguments: [uid.hex, now, reason])
            try db.execute(
                sql: "UPDATE issued_tag SET state = 'revoked' WHERE uid = ? AND state = 'active'", arguments: [uid.hex])
        }
    }

    /// Revokes a v1 sticker by its signature (hex, either case).
    public func revoke(signature: [UInt8], reason: String = "", now: Int64) throws {
        try pool.write { db in
            try db.execute(
                sql:
                    "INSERT INTO revocation (signature, created, reason) VALUES (?, ?, ?) ON CONFLICT(signature) DO NOTHING",
                arguments: [Hex.encode(signature), now, reason])
        }
    }

    public func isRevoked(uid: TagUID, signature: [UInt8]?) throws -> Bool {
        try pool.read { db in
            try db.scalar(
                Bool.self, sql: "SELECT 1 FROM revocation WHERE uid = ? OR signature = ?",
                arguments: [uid.hex, signature.map { Hex.encode($0) }]) != nil
        }
    }

    public func revocations() throws -> [Revocation] {
        try pool.read { try $0.fetchAll(sql: "SELECT * FROM revocation ORDER BY id").map(Revocation.init(row:)) }
    }

    /// Sets (or with nil clears) an issued tag's expiry.
    public func expire(uid: TagUID, at time: Int64?) throws {
        try pool.write { db in
            try db.execute(sql: "UPDATE issued_tag SET valid_until = ? WHERE uid = ?", arguments: [time, uid.hex])
            if db.changesCount == 0 { throw StoreError.notFound("issued tag \(uid.hex)") }
        }
    }

    /// Forgets a UID: its registry row, its PIN and its UID revocation.
    public func forget(uid: TagUID) throws {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM issued_tag WHERE uid = ?", arguments: [uid.hex])
            let rows = db.changesCount
            // Its PIN goes with it (issue 35): a card enrolled again starts without one.
            try db.execute(sql: "DELETE FROM pin WHERE uid = ?", arguments: [uid.hex])
            try db.execute(sql: "DELETE FROM revocation WHERE uid = ?", arguments: [uid.hex])
            if rows + db.changesCount == 0 { throw StoreError.notFound("tag \(uid.hex)") }
        }
    }
}
