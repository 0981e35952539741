import DoorCore

/// Provisioning an NTAG 424 DNA at the door (issue 26, docs/ntag424.md
/// "Provisioning at the door"): the registry row is written only after the
/// reader has verified the provisioned tag (a SUN read with its new keys and
/// AuthenticateEV2First with its new key 0), and reset marks it.
extension GatewayStore {
    /// Records a tag the reader has just provisioned and verified: its row,
    /// pending with kind `ntag424` (the `provisioning_written` audit row makes
    /// it active, in that row's transaction, as for stickers), and the SUN
    /// counter of the verifying read, in one transaction. The counter is set,
    /// not compared: enabling SDM resets the tag's counter, so a tag provisioned
    /// again after a reset starts low on purpose. Returns the counter held before.
    /// A revoked UID is refused (`RegistryError.revoked`).
    @discardableResult
    public func recordProvisionedNTAG424(
        uid: TagUID, action: ActionIndex, label: String, limits: TagLimits = TagLimits(), counter: UInt32, now: Int64
    ) throws -> UInt32? {
        try pool.write { db in
            let previous = try db.scalar(
                Int64.self, sql: "SELECT counter FROM sun_counter WHERE uid = ?", arguments: [uid.hex])
            try Self.issueTag(
                db, uid: uid, action: action, secretID: nil, label: label, limits: limits, kind: .ntag424,
                state: .pending, now: now)
            try db.execute(
                sql: """
                    INSERT INTO sun_counter (uid, counter, updated) VALUES (?, ?, ?)
                    ON CONFLICT(uid) DO UPDATE SET counter = excluded.counter, updated = excluded.updated
                    """, arguments: [uid.hex, Int64(counter), now])
            return previous.map { UInt32(clamping: $0) }
        }
    }

    /// A tag `provision reset` returned to factory keys: its 424 row (active
    /// or pending) becomes `failed` — kept as history, never honoured. The SUN
    /// counter is kept (only a new provisioning sets it). Returns whether a row changed.
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
