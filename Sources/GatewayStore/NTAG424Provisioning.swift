import DoorCore

/// Provisioning an NTAG 424 DNA at the door (docs/ntag424.md "Provisioning
/// at the door"): the registry row is written only after the reader has
/// verified the provisioned tag (a SUN read with its new keys and
/// AuthenticateEV2First with its new key 0), and reset marks it.
///
/// Each provisioning draws a key issue (a random salt and a key version,
/// `NTAG424.KeyIssue`) before any key leaves the door; it is kept in
/// `ntag424_attempt` until the row is written, so an attempt torn after some
/// ChangeKey resumes with the same keys, and then moves into the row.
extension GatewayStore {
    /// Records a tag the reader has just provisioned and verified: its row,
    /// pending with kind `ntag424` and its key issue (the `provisioning_written`
    /// audit row makes it active, in that row's transaction, as for stickers),
    /// and the SUN counter of the verifying read, in one transaction; the
    /// UID's attempt is done. The counter is set, not compared: enabling SDM
    /// resets the tag's counter, so a tag provisioned again after a reset
    /// starts low on purpose. Returns the counter held before.
    /// A revoked UID is refused (`RegistryError.revoked`).
    @discardableResult
    public func recordProvisionedNTAG424(
        uid: TagUID, action: ActionIndex, label: String, limits: TagLimits = TagLimits(), issue: NTAG424.KeyIssue,
        counter: UInt32, now: Int64
    ) throws -> UInt32? {
        guard issue.isWellFormed else { throw StoreError.invalidValue("NTAG 424 key issue (version \(issue.version))") }
        return try pool.write { db in
            let previous = try db.scalar(
                Int64.self, sql: "SELECT counter FROM sun_counter WHERE uid = ?", arguments: [uid.hex])
            try Self.issueTag(
                db, uid: uid, action: action, secretID: nil, label: label, limits: limits, kind: .ntag424,
                state: .pending, now: now)
            try db.execute(
                sql: "UPDATE issued_tag SET key_salt = ?, key_version = ? WHERE uid = ?",
                arguments: [issue.salt, Int64(issue.version), uid.hex])
            try db.execute(sql: "DELETE FROM ntag424_attempt WHERE uid = ?", arguments: [uid.hex])
            try db.execute(
                sql: """
                    INSERT INTO sun_counter (uid, counter, updated) VALUES (?, ?, ?)
                    ON CONFLICT(uid) DO UPDATE SET counter = excluded.counter, updated = excluded.updated
                    """, arguments: [uid.hex, Int64(counter), now])
            return previous.map { UInt32(clamping: $0) }
        }
    }

    /// The key issue an earlier, unfinished provisioning of `uid` drew, if any.
    public func ntag424Attempt(uid: TagUID) throws -> NTAG424.KeyIssue? {
        try pool.read { db in
            guard
                let row = try db.fetchOne(
                    sql: "SELECT key_salt, key_version FROM ntag424_attempt WHERE uid = ?", arguments: [uid.hex])
            else { return nil }
            let issue = NTAG424.KeyIssue(
                salt: try row.get("key_salt"), version: UInt8(clamping: try row.get("key_version", as: Int64.self)))
            return issue.isWellFormed ? issue : nil
        }
    }

    /// A fresh key issue for a provisioning of `uid` — a new random salt, the
    /// version after `following`'s (the issue of the row a reissue replaces;
    /// nil: a first issue) — stored durably (replacing an earlier attempt's)
    /// before this returns, so it is on disk before any key is sent.
    public func newNTAG424Attempt(
        uid: TagUID, following: NTAG424.KeyIssue?, now: Int64,
        salt: () throws -> [UInt8] = { try Crypto.randomBytes(NTAG424.KeyIssue.saltLength) }
    ) throws -> NTAG424.KeyIssue {
        let fresh = NTAG424.KeyIssue.next(after: following, salt: try salt())
        guard fresh.isWellFormed else { throw StoreError.invalidValue("NTAG 424 key salt") }
        try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO ntag424_attempt (uid, key_salt, key_version, created) VALUES (?, ?, ?, ?)
                    ON CONFLICT(uid) DO UPDATE SET key_salt = excluded.key_salt,
                      key_version = excluded.key_version, created = excluded.created
                    """, arguments: [uid.hex, fresh.salt, Int64(fresh.version), now])
        }
        return fresh
    }

    /// A tag `provision reset` returned to factory keys: its 424 row (active
    /// or pending) becomes `failed` — kept as history, never honoured; its key
    /// issue stays, so a fleet document carrying the same issue does not make
    /// it active again (only a reissue does). The SUN counter is kept (only a
    /// new provisioning sets it). Returns whether a row changed.
    @discardableResult
    public func markNTAG424Reset(uid: TagUID) throws -> Bool {
        try pool.write { db in
            try db.execute(
                sql: """
                    UPDATE issued_tag SET state = 'failed'
                    WHERE uid = ? AND kind = 'ntag424' AND state IN ('active', 'pending')
                    """, arguments: [uid.hex])
            return db.changesCount > 0
        }
    }
}
