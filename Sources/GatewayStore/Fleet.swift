import DoorCore

/// The fleet document this door applied last (`fleet_state`, migration v4-fleet).
public struct FleetAppliedRecord: Equatable, Sendable {
    public var site: String
    public var version: Int64
    public var digest: [UInt8]
    public var origin: String
    public var applied: Int64
    /// The signed envelope applied (nil in a row written before migration v7-fleet-document).
    public var document: [UInt8]?
    public var rules: FleetRules.Applied { FleetRules.Applied(site: site, version: version, digest: digest) }
}

public enum FleetStoreError: Error, Equatable, CustomStringConvertible {
    /// Another document of this version or newer was applied meanwhile.
    case superseded(version: Int64, applied: Int64)
    public var description: String {
        switch self {
        case .superseded(let v, let a): return "version \(v) is not newer than the applied version \(a)"
        }
    }
}

/// Audit kinds of the fleet (docs/fleet.md "Persistence and audit").
public enum FleetAudit {
    public static let applied = "fleet_applied"
    public static let refused = "fleet_refused"
    /// A tag entry of a credential kind the fleet does not carry, skipped
    /// (docs/fleet.md "Entries a door cannot store"); reason `credential_not_carried`.
    public static let entrySkipped = "fleet_entry_skipped"
    public static let notCarried = "credential_not_carried"
    /// Skipped entries audited one row each per document; past that, one row counts the rest.
    public static let skippedRowsPerDocument = 32
}

extension GatewayStore {
    public func fleetApplied() throws -> FleetAppliedRecord? {
        try pool.read { try Self.fleetApplied($0) }
    }

    static func fleetApplied(_ db: SQLiteConnection) throws -> FleetAppliedRecord? {
        try db.fetchOne(sql: "SELECT * FROM fleet_state WHERE one = 1").map { row in
            FleetAppliedRecord(
                site: try row.get("site"), version: try row.get("version"), digest: try row.get("digest"),
                origin: try row.get("origin"), applied: try row.get("applied"), document: try row.get("document"))
        }
    }

    /// The revocations and issued tags, as the fleet rules see them.
    public func fleetLocal() throws -> FleetRules.Local {
        try pool.read { try Self.fleetLocal($0) }
    }

    static func fleetLocal(_ db: SQLiteConnection) throws -> FleetRules.Local {
        var local = FleetRules.Local()
        for row in try db.fetchAll(sql: "SELECT uid, signature FROM revocation") {
            // Card numbers and PIN-only codes stay at the door that has them
            // (issue 35), as guest passes do: a door of an older build refuses
            // a whole document that carries a key it cannot parse.
            if let hex: String = try row.get("uid"), let uid = TagUID(hex: hex), uid.isNFC {
                local.revokedUIDs.insert(uid)
            }
            if let hex: String = try row.get("signature"), let sig = Hex.decode(hex) {
                local.revokedSignatures.insert(sig)
            }
        }
        for row in try db.fetchAll(sql: "SELECT * FROM issued_tag") {
            let tag = try IssuedTag(row: row)
            // A guest pass or a scheduled tag (docs/policy.md) stays at the
            // door that issued it: the fleet's tags carry no uses, start or
            // schedule, so at another door it would open without them.
            if tag.uses != nil || tag.usesLeft != nil || tag.validFrom != nil || tag.schedule != nil { continue }
            // Card numbers and PIN-only codes stay here too (above).
            guard tag.uid.isNFC, tag.kind != .wiegand, tag.kind != .pin else { continue }
            local.tags[tag.uid] = (tag.state, tag.action, tag.label, tag.validUntil)
            // Kinds that are not stickers travel by name (issue 26): a 424 row
            // opens another door only as a 424 (EV2 with the site's key).
            if let kind = tag.kind, FleetDocument.Tag.carriedCredentials.contains(kind.rawValue) {
                local.tagCredentials[tag.uid] = kind.rawValue
            }
            if tag.kind == .ntag424, let issue = tag.keyIssue, issue.salt != nil { local.tagKeyIssues[tag.uid] = issue }
        }
        if let site = try siteKey(db) {
            local.ntag424MasterKey = site.key
            local.ntag424MasterKeyInUse =
                try db.scalar(
                    Bool.self,
                    sql: "SELECT 1 FROM issued_tag WHERE kind = 'ntag424' AND state IN ('active', 'pending') LIMIT 1")
                != nil
        }
        for row in try db.fetchAll(sql: "SELECT key, origin, active FROM secret") {
            guard let key: [UInt8] = try row.get("key") else { continue }
            local.secretKeys.insert(key)
            if try row.get("origin", as: String.self) == SecretOrigin.imported.rawValue {
                local.importedKeys.insert(key)
            }
            if try row.get("active", as: Bool.self) { local.activeKeys.insert(key) }
        }
        local.secretTombstones = try secretTombstones(db)
        for row in try db.fetchAll(sql: "SELECT name, value, generation FROM key") {
            switch KeyName(rawValue: try row.get("name")) {
            case .compatTimestamp?:
                local.compatTimestampKey = try row.get("value")
                local.compatTimestampGeneration = try row.get("generation")
            case .nativeCommand?:
                local.nativeCommandKey = try row.get("value")
                local.nativeCommandGeneration = try row.get("generation")
            default: continue
            }
        }
        return local
    }

    /// This door's active sticker secrets (never a removed one) and its
    /// remote keys with their generations: what a document pushed with
    /// `--secrets` carries, sealed to the site box.
    public func fleetSecrets() throws -> FleetSecrets {
        let local = try fleetLocal()
        return FleetSecrets(
            secrets: try secrets().filter {
                $0.active && !local.secretTombstones.contains(FleetDocument.tombstone(of: $0.key))
            }.map {
                FleetSecrets.Secret(action: $0.action, key: $0.key, label: $0.label, origin: $0.origin)
            },
            compatTimestampKey: local.compatTimestampKey, nativeCommandKey: local.nativeCommandKey,
            compatTimestampGeneration: local.compatTimestampKey == nil ? nil : local.compatTimestampGeneration,
            nativeCommandGeneration: local.nativeCommandKey == nil ? nil : local.nativeCommandGeneration,
            ntag424MasterKey: local.ntag424MasterKey)
    }

    /// Applies an accepted document in one transaction: the version is
    /// checked again against the stored one (a newer one applied meanwhile
    /// wins), the changes are computed on the rows as they are inside the
    /// transaction, written, the applied version recorded, and one
    /// `fleet_applied` audit row written. All of it or none.
    @discardableResult
    public func applyFleet(
        _ accepted: FleetRules.Accepted, actions: Set<ActionIndex>, secrets: FleetSecrets? = nil,
        secretsNote: String? = nil, now: Int64
    ) throws -> FleetRules.Changes {
        let doc = accepted.document
        return try pool.write { db in
            if let current = try Self.fleetApplied(db), current.site == doc.site, doc.version <= current.version {
                throw FleetStoreError.superseded(version: doc.version, applied: current.version)
            }
            var changes = FleetRules.changes(doc, to: try Self.fleetLocal(db), actions: actions, secrets: secrets)
            changes.secretsNote = secretsNote
            for secret in changes.addSecrets {
                // Only actions the store has (the configured ones; the FK holds it).
                guard
                    try db.scalar(Bool.self, sql: "SELECT 1 FROM action WHERE idx = ?", arguments: [secret.action])
                        != nil
                else { continue }
                try db.execute(
                    sql: """
                        INSERT INTO secret (action, label, key, created, origin, active) VALUES (?, ?, ?, ?, ?, 1)
                        """, arguments: [secret.action, secret.label, secret.key, now, secret.origin.rawValue])
            }
            for key in changes.restrictSecrets {
                try db.execute(
                    sql: "UPDATE secret SET origin = 'generated' WHERE key = ? AND origin = 'imported'",
                    arguments: [key])
            }
            for hash in changes.addTombstones {
                try db.execute(
                    sql:
                        "INSERT INTO secret_tombstone (hash, created, reason) VALUES (?, ?, ?) ON CONFLICT(hash) DO NOTHING",
                    arguments: [hash, now, "fleet v\(doc.version)"])
            }
            for key in changes.deactivateSecrets {
                try db.execute(sql: "UPDATE secret SET active = 0 WHERE key = ?", arguments: [key])
            }
            for (name, value) in [
                (KeyName.compatTimestamp, changes.setCompatTimestamp), (.nativeCommand, changes.setNativeCommand),
            ] {
                guard let value, value.key.count == name.length else { continue }
                try KeyTable.keys.write(db, name.rawValue, value.key, now: now, generation: value.generation)
            }
            if let key = changes.setNTAG424MasterKey, key.count == 16 {
                // One generation up, from the fleet (NTAG424Store's setNTAG424SiteKey, in this transaction).
                let generation = (try Self.siteKey(db)?.generation ?? 0) + 1
                try db.execute(
                    sql: """
                        INSERT INTO ntag424_site_key (one, key, origin, created, generation) VALUES (1, ?, 'fleet', ?, ?)
                        ON CONFLICT(one) DO UPDATE SET key = excluded.key, origin = excluded.origin,
                          created = excluded.created, generation = excluded.generation
                        """, arguments: [key, now, generation])
            }
            for uid in changes.revokeUIDs {
                try db.execute(
                    sql: "INSERT INTO revocation (uid, created, reason) VALUES (?, ?, ?) ON CONFLICT(uid) DO NOTHING",
                    arguments: [uid.hex, now, "fleet v\(doc.version)"])
                try db.execute(
                    sql: "UPDATE issued_tag SET state = 'revoked' WHERE uid = ? AND state = 'active'",
                    arguments: [uid.hex])
            }
            for sig in changes.revokeSignatures {
                try db.execute(
                    sql: """
                        INSERT INTO revocation (signature, created, reason) VALUES (?, ?, ?)
                        ON CONFLICT(signature) DO NOTHING
                        """, arguments: [Hex.encode(sig), now, "fleet v\(doc.version)"])
            }
            // Only kinds the fleet carries (`FleetRules.changes` puts no other
            // here): an entry is never stored as another kind.
            for tag in changes.upsertTags where tag.isCarried {
                // A 424 whose issue changes (re-issued at another door, SDM perhaps
                // restarted): its old SUN counter is forgotten — URLs of the old issue
                // fail the new key's MAC anyway — so the new issue's counter is not
                // `counter_replay` here until it passes the old one.
                if tag.credential == CredentialKind.ntag424.rawValue, let salt = tag.keyIssue?.salt,
                    let held = try db.fetchOne(
                        sql: "SELECT key_salt FROM issued_tag WHERE uid = ?", arguments: [tag.uid.hex]),
                    try held.get("key_salt", as: [UInt8]?.self) != salt
                {
                    try db.execute(sql: "DELETE FROM sun_counter WHERE uid = ?", arguments: [tag.uid.hex])
                }
                try db.execute(
                    sql: """
                        INSERT INTO issued_tag (uid, action, secret_id, label, issued, valid_until, state, kind,
                          key_salt, key_version)
                        VALUES (?, ?, NULL, ?, ?, ?, 'active', ?, ?, ?)
                        ON CONFLICT(uid) DO UPDATE SET action = excluded.action, label = excluded.label,
                          valid_until = excluded.valid_until, state = 'active',
                          kind = CASE WHEN excluded.kind IS NOT NULL THEN excluded.kind
                                      WHEN issued_tag.kind IN ('ntag424', 'uid') THEN NULL ELSE issued_tag.kind END,
                          key_salt = CASE WHEN excluded.key_version IS NOT NULL THEN excluded.key_salt
                                          ELSE issued_tag.key_salt END,
                          key_version = COALESCE(excluded.key_version, issued_tag.key_version)
                        WHERE issued_tag.state IN ('active', 'failed') AND issued_tag.uses IS NULL
                          AND issued_tag.uses_left IS NULL AND issued_tag.valid_from IS NULL
                          AND issued_tag.schedule IS NULL
                        """,
                    arguments: [
                        tag.uid.hex, tag.action, tag.label, now, tag.validUntil,
                        tag.credential.flatMap(CredentialKind.init(rawValue:)).map(\.rawValue),
                        // A 424's issue; a legacy 424 (version 1, no salt) and other kinds: NULL.
                        tag.credential == CredentialKind.ntag424.rawValue ? tag.keyIssue?.salt : nil,
                        tag.credential == CredentialKind.ntag424.rawValue && tag.keyIssue?.salt != nil
                            ? tag.keyIssue.map { Int64($0.version) } : nil,
                    ])
            }
            try db.execute(
                sql: """
                    INSERT INTO fleet_state (one, site, version, digest, origin, applied, document)
                    VALUES (1, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(one) DO UPDATE SET site = excluded.site, version = excluded.version,
                      digest = excluded.digest, origin = excluded.origin, applied = excluded.applied,
                      document = excluded.document
                    """, arguments: [doc.site, doc.version, accepted.digest, doc.origin, now, accepted.envelope])
            _ = try insertAudit(
                db,
                AuditRow(
                    id: 0, time: now, kind: FleetAudit.applied, reason: nil, action: nil, uid: nil,
                    source: doc.origin, detail: "site \(doc.site) version \(doc.version): \(changes.summary)"))
            let carried = FleetDocument.Tag.carriedCredentials.sorted().joined(separator: ", ")
            for tag in changes.notCarried.prefix(FleetAudit.skippedRowsPerDocument) {
                _ = try insertAudit(
                    db,
                    AuditRow(
                        id: 0, time: now, kind: FleetAudit.entrySkipped, reason: FleetAudit.notCarried,
                        action: tag.action, uid: tag.uid.hex, source: doc.origin,
                        detail: "site \(doc.site) version \(doc.version): credential \(tag.credential ?? "-") is not "
                            + "a kind the fleet carries (\(carried)): not stored"))
            }
            if changes.notCarried.count > FleetAudit.skippedRowsPerDocument {
                _ = try insertAudit(
                    db,
                    AuditRow(
                        id: 0, time: now, kind: FleetAudit.entrySkipped, reason: FleetAudit.notCarried, action: nil,
                        uid: nil, source: doc.origin,
                        detail: "site \(doc.site) version \(doc.version): and "
                            + "\(changes.notCarried.count - FleetAudit.skippedRowsPerDocument) more entries of a kind "
                            + "the fleet does not carry: not stored"))
            }
            return changes
        }
    }

    /// Audits a refused document (its reason, where it came from, why).
    public func recordFleetRefusal(_ error: FleetError, source: String, now: Int64) throws {
        try appendAudit(
            time: now, kind: FleetAudit.refused, reason: error.reason, source: source,
            detail: String(error.description.prefix(300)))
    }
}
