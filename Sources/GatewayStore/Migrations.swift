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
        return m
    }
}
