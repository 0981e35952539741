import GRDB

/// The one ordered list of migrations. Each part of the gateway appends its
/// own at the end; never edit or reorder a migration that has shipped.
public enum StoreMigrations {
    public static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        // Foundation: actions, sticker secrets, keys.
        m.registerMigration("v1-foundation") { db in
            try db.create(table: "action") { t in
                t.primaryKey("idx", .integer)
                t.column("name", .text).notNull()
            }
            try db.create(table: "secret") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("action", .integer).notNull().indexed()
                    .references("action", column: "idx", onDelete: .restrict)
                t.column("label", .text).notNull().defaults(to: "")
                t.column("key", .blob).notNull()
                t.column("created", .integer).notNull()
                t.column("origin", .text).notNull()
                    .check(sql: "origin IN ('generated', 'imported')")
                t.column("active", .boolean).notNull().defaults(to: true)
            }
            try db.create(table: "key") { t in
                t.primaryKey("name", .text)
                    .check(sql: "name IN ('compat_timestamp', 'native_command', 'device')")
                t.column("value", .blob).notNull()
                t.column("created", .integer).notNull()
            }
        }
        // Daemon: the issued-tag registry, revocations and the hash-chained audit log.
        m.registerMigration("v2-registry") { db in
            try db.create(table: "issued_tag") { t in
                t.primaryKey("uid", .text)
                t.column("action", .integer).notNull()
                t.column("secret_id", .integer)
                t.column("label", .text).notNull().defaults(to: "")
                t.column("issued", .integer).notNull()
                t.column("valid_until", .integer)
                t.column("state", .text).notNull()
                    .check(sql: "state IN ('pending', 'active', 'revoked', 'failed')")
                t.column("last_seen", .integer)
            }
            try db.create(table: "revocation") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("uid", .text).unique()
                t.column("signature", .text).unique()
                t.column("created", .integer).notNull()
                t.column("reason", .text).notNull().defaults(to: "")
                t.check(sql: "(uid IS NULL) <> (signature IS NULL)")
            }
            try db.create(table: "audit") { t in
                t.autoIncrementedPrimaryKey("id")
                t.column("time", .integer).notNull()
                t.column("kind", .text).notNull()
                t.column("reason", .text)
                t.column("action", .integer)
                t.column("uid", .text)
                t.column("source", .text)
                t.column("detail", .text)
                t.column("prev", .blob).notNull()
                t.column("hash", .blob).notNull()
            }
            // After retention trims old rows: the last trimmed row's id and hash,
            // from which the remaining chain verifies.
            try db.create(table: "audit_anchor") { t in
                t.primaryKey("one", .integer).check(sql: "one = 1")
                t.column("row_id", .integer).notNull()
                t.column("hash", .blob).notNull()
            }
        }
        // MQTT: remote-command replay state and the durable outbox (its ids
        // are the event sequence numbers: AUTOINCREMENT never reuses one,
        // so they survive restarts and deletions).
        m.registerMigration("v3-remote") { db in
            try db.create(table: "remote_state") { t in
                t.primaryKey("one", .integer).check(sql: "one = 1")
                t.column("replay", .blob).notNull()
            }
            try db.create(table: "outbox") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("topic", .text).notNull()
                t.column("payload", .blob).notNull()
                t.column("retain", .boolean).notNull().defaults(to: false)
                t.column("class", .text).notNull().check(sql: "class IN ('access', 'event', 'telemetry')")
                t.column("created", .integer).notNull()
            }
        }
        return m
    }
}
