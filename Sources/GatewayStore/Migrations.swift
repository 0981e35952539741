/// The one ordered list of migrations. Each part of the gateway appends its
/// own at the end; never edit or reorder a migration that has shipped.
///
/// Applied migrations are recorded by name in `grdb_migrations`, the table
/// GRDB's migrator kept before the store moved to SQLite's C API: doors in
/// the field hold it, so their databases open as fully migrated. The SQL is
/// the text GRDB generated, so a new database has the same schema as one
/// GRDB created (GatewayStoreTests compares them).
public enum StoreMigrations {
    public struct Migration: Sendable {
        public let name: String
        public let statements: [String]
    }

    public static let all: [Migration] = [
        // Foundation: actions, sticker secrets, keys.
        Migration(
            name: "v1-foundation",
            statements: [
                #"CREATE TABLE "action" ("idx" INTEGER PRIMARY KEY, "name" TEXT NOT NULL)"#,
                #"CREATE TABLE "secret" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "action" INTEGER NOT NULL REFERENCES "action"("idx") ON DELETE RESTRICT, "label" TEXT NOT NULL DEFAULT '', "key" BLOB NOT NULL, "created" INTEGER NOT NULL, "origin" TEXT NOT NULL CHECK (origin IN ('generated', 'imported')), "active" BOOLEAN NOT NULL DEFAULT 1)"#,
                #"CREATE INDEX "secret_on_action" ON "secret"("action")"#,
                #"CREATE TABLE "key" ("name" TEXT PRIMARY KEY NOT NULL CHECK (name IN ('compat_timestamp', 'native_command', 'device')), "value" BLOB NOT NULL, "created" INTEGER NOT NULL)"#,
            ]),
        // Daemon: the issued-tag registry, revocations and the hash-chained
        // audit log; `audit_anchor` holds, after retention trims old rows, the
        // last trimmed row's id and hash, from which the remaining chain verifies.
        Migration(
            name: "v2-registry",
            statements: [
                #"CREATE TABLE "issued_tag" ("uid" TEXT PRIMARY KEY NOT NULL, "action" INTEGER NOT NULL, "secret_id" INTEGER, "label" TEXT NOT NULL DEFAULT '', "issued" INTEGER NOT NULL, "valid_until" INTEGER, "state" TEXT NOT NULL CHECK (state IN ('pending', 'active', 'revoked', 'failed')), "last_seen" INTEGER)"#,
                #"CREATE TABLE "revocation" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "uid" TEXT UNIQUE, "signature" TEXT UNIQUE, "created" INTEGER NOT NULL, "reason" TEXT NOT NULL DEFAULT '', CHECK ((uid IS NULL) <> (signature IS NULL)))"#,
                #"CREATE TABLE "audit" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "time" INTEGER NOT NULL, "kind" TEXT NOT NULL, "reason" TEXT, "action" INTEGER, "uid" TEXT, "source" TEXT, "detail" TEXT, "prev" BLOB NOT NULL, "hash" BLOB NOT NULL)"#,
                #"CREATE TABLE "audit_anchor" ("one" INTEGER PRIMARY KEY CHECK (one = 1), "row_id" INTEGER NOT NULL, "hash" BLOB NOT NULL)"#,
            ]),
        // MQTT: remote-command replay state and the durable outbox (its ids
        // are the event sequence numbers: AUTOINCREMENT never reuses one,
        // so they survive restarts and deletions).
        Migration(
            name: "v3-remote",
            statements: [
                #"CREATE TABLE "remote_state" ("one" INTEGER PRIMARY KEY CHECK (one = 1), "replay" BLOB NOT NULL)"#,
                #"CREATE TABLE "outbox" ("seq" INTEGER PRIMARY KEY AUTOINCREMENT, "topic" TEXT NOT NULL, "payload" BLOB NOT NULL, "retain" BOOLEAN NOT NULL DEFAULT 0, "class" TEXT NOT NULL CHECK (class IN ('access', 'event', 'telemetry')), "created" INTEGER NOT NULL)"#,
            ]),
        // Fleet (docs/fleet.md): the site document this door applied last —
        // its site, version, body digest and origin — so a restart neither
        // loses nor re-applies one, and an older one is refused.
        Migration(
            name: "v4-fleet",
            statements: [
                #"CREATE TABLE "fleet_state" ("one" INTEGER PRIMARY KEY CHECK (one = 1), "site" TEXT NOT NULL, "version" INTEGER NOT NULL, "digest" BLOB NOT NULL, "origin" TEXT NOT NULL, "applied" INTEGER NOT NULL)"#
            ]),
        // Clock floor: the latest wall time the door saw with its clock
        // synchronised, so a clock set back (by hand, a bad NTP answer, a Pi
        // booted without one) cannot make an expired sticker valid again.
        Migration(
            name: "v5-clock-floor",
            statements: [
                #"CREATE TABLE "clock_floor" ("one" INTEGER PRIMARY KEY CHECK (one = 1), "unix" INTEGER NOT NULL)"#
            ]),
        // A sticker key is held once per action (security review H1,
        // docs/security.md): the same key imported back beside the generated
        // row let v2 stickers with their `u` cut off pass as v1. Rows of one
        // action and key that a database already holds become one — the
        // lowest id, so issued tags keep pointing at it — without losing a
        // key: generated if any copy was (v2-only, the stricter origin;
        // v2 stickers verify as before), active if any copy was (every
        // sticker that verified still does), its label or the first
        // non-empty one. The same key under two actions stays (each row is
        // the only one of its action); `addSecret` refuses new ones.
        Migration(
            name: "v6-secret-key-once",
            statements: [
                #"UPDATE "secret" SET "origin" = 'generated' WHERE "origin" = 'imported' AND EXISTS (SELECT 1 FROM "secret" AS "o" WHERE "o"."action" = "secret"."action" AND "o"."key" = "secret"."key" AND "o"."origin" = 'generated')"#,
                #"UPDATE "secret" SET "active" = 1 WHERE NOT "active" AND EXISTS (SELECT 1 FROM "secret" AS "o" WHERE "o"."action" = "secret"."action" AND "o"."key" = "secret"."key" AND "o"."active")"#,
                #"UPDATE "secret" SET "label" = (SELECT "o"."label" FROM "secret" AS "o" WHERE "o"."action" = "secret"."action" AND "o"."key" = "secret"."key" AND "o"."label" <> '' ORDER BY "o"."id" LIMIT 1) WHERE "label" = '' AND EXISTS (SELECT 1 FROM "secret" AS "o" WHERE "o"."action" = "secret"."action" AND "o"."key" = "secret"."key" AND "o"."label" <> '')"#,
                #"UPDATE "issued_tag" SET "secret_id" = (SELECT MIN("o"."id") FROM "secret" AS "s" JOIN "secret" AS "o" ON "o"."action" = "s"."action" AND "o"."key" = "s"."key" WHERE "s"."id" = "issued_tag"."secret_id") WHERE "secret_id" IN (SELECT "s"."id" FROM "secret" AS "s" WHERE EXISTS (SELECT 1 FROM "secret" AS "o" WHERE "o"."action" = "s"."action" AND "o"."key" = "s"."key" AND "o"."id" < "s"."id"))"#,
                #"DELETE FROM "secret" WHERE EXISTS (SELECT 1 FROM "secret" AS "o" WHERE "o"."action" = "secret"."action" AND "o"."key" = "secret"."key" AND "o"."id" < "secret"."id")"#,
                #"CREATE UNIQUE INDEX "secret_on_action_key" ON "secret"("action", "key")"#,
            ]),
        // Fleet push (docs/security.md "H2"): the signed document this door
        // applied last, as heard, so `gatewayctl fleet push` checks it with
        // the site key and shows the operator what the next one changes.
        // NULL in a row written before it (the next applied document fills it).
        Migration(
            name: "v7-fleet-document",
            statements: [
                #"ALTER TABLE "fleet_state" ADD COLUMN "document" BLOB"#
            ]),
        // Removals travel (issue 24 M1, docs/security.md "M1"): the
        // tombstones of removed sticker secrets (SHA-256 of the key; this
        // door's own removals and every fleet document's), which a later
        // document can never bring back, and a generation per remote key,
        // one more at each local rotation, so a push of the key a rotation
        // replaced does not roll it back. Keys stored before it are
        // generation 0 (a document's generation 1 or more replaces them).
        Migration(
            name: "v8-fleet-removals",
            statements: [
                #"CREATE TABLE "secret_tombstone" ("hash" BLOB PRIMARY KEY NOT NULL, "created" INTEGER NOT NULL, "reason" TEXT NOT NULL DEFAULT '')"#,
                #"ALTER TABLE "key" ADD COLUMN "generation" INTEGER NOT NULL DEFAULT 0"#,
            ]),
        // Keyed audit chain (docs/security.md "L4"): from `first_row` on, rows
        // are linked by HMAC under the audit key (root's file, given to
        // gatewayd at start), not plain SHA-256; `fingerprint` names that key
        // (never the key). Rows before `first_row` keep their unkeyed links.
        // No row until gatewayd first runs with a key.
        Migration(
            name: "v9-audit-key",
            statements: [
                #"CREATE TABLE "audit_key" ("one" INTEGER PRIMARY KEY CHECK (one = 1), "first_row" INTEGER NOT NULL, "fingerprint" TEXT NOT NULL, "created" INTEGER NOT NULL)"#
            ]),
        // Guest passes and scheduled tags (docs/policy.md): a tag may start
        // later (`valid_from`), open at most `uses` times (`uses_left` counts
        // down in the transaction that grants; NULL: unlimited) and be held
        // to a `[[schedules]]` name.
        Migration(
            name: "v10-guest-uses",
            statements: [
                #"ALTER TABLE "issued_tag" ADD COLUMN "valid_from" INTEGER"#,
                #"ALTER TABLE "issued_tag" ADD COLUMN "uses" INTEGER CHECK (uses IS NULL OR uses >= 0)"#,
                #"ALTER TABLE "issued_tag" ADD COLUMN "uses_left" INTEGER CHECK (uses_left IS NULL OR uses_left >= 0)"#,
                #"ALTER TABLE "issued_tag" ADD COLUMN "schedule" TEXT"#,
            ]),
        // NTAG 424 DNA (issue 26, docs/ntag424.md): the site master key the
        // door diversifies each tag's AES keys from (one row; its origin says
        // whether this door generated it or it came from the fleet or an
        // operator), the highest SUN read counter seen per UID (a SUN URL is
        // accepted only above it), and each issued tag's credential kind
        // (NULL: a sticker issued before kinds were recorded).
        Migration(
            name: "v11-ntag424",
            statements: [
                #"CREATE TABLE "ntag424_site_key" ("one" INTEGER PRIMARY KEY CHECK (one = 1), "key" BLOB NOT NULL CHECK (length(key) = 16), "origin" TEXT NOT NULL CHECK (origin IN ('generated', 'fleet', 'imported')), "created" INTEGER NOT NULL, "generation" INTEGER NOT NULL)"#,
                #"CREATE TABLE "sun_counter" ("uid" TEXT PRIMARY KEY NOT NULL, "counter" INTEGER NOT NULL CHECK (counter >= 0), "updated" INTEGER NOT NULL)"#,
                #"ALTER TABLE "issued_tag" ADD COLUMN "kind" TEXT CHECK (kind IS NULL OR kind IN ('ntag424', 'sticker-v2', 'sticker-v1', 'uid'))"#,
            ]),
        // NTAG 424 key issues (docs/ntag424.md "Re-issuing a tag"): each 424
        // row's random salt and key version (NULL: provisioned before salts,
        // the legacy derivation at version 1), and the issue a provisioning
        // in progress drew for a UID the registry does not hold yet — kept
        // until its row is written, so an attempt torn after some ChangeKey
        // resumes with the same keys.
        Migration(
            name: "v12-ntag424-key-issue",
            statements: [
                #"ALTER TABLE "issued_tag" ADD COLUMN "key_salt" BLOB CHECK (key_salt IS NULL OR length(key_salt) = 16)"#,
                #"ALTER TABLE "issued_tag" ADD COLUMN "key_version" INTEGER CHECK (key_version IS NULL OR key_version BETWEEN 1 AND 255)"#,
                #"CREATE TABLE "ntag424_attempt" ("uid" TEXT PRIMARY KEY NOT NULL, "key_salt" BLOB NOT NULL CHECK (length(key_salt) = 16), "key_version" INTEGER NOT NULL CHECK (key_version BETWEEN 2 AND 255), "created" INTEGER NOT NULL)"#,
            ]),
        // Outdoor readers (issue 35): a card number enrolled with `gatewayctl
        // tags enroll-card` is an issued tag of kind 'wiegand', keyed by its
        // registry key (`CardNumber.registryKey`, never an NFC UID's length);
        // a PIN-only code one of kind 'pin' (`PINCode`), with a guest pass's
        // window, uses and schedule.
        // SQLite cannot widen a CHECK, so the table is rebuilt, every row and
        // column copied as it was (UpgradeTests opens a v12 database with rows).
        Migration(
            name: "v13-card-numbers",
            statements: [
                #"CREATE TABLE "issued_tag_v13" ("uid" TEXT PRIMARY KEY NOT NULL, "action" INTEGER NOT NULL, "secret_id" INTEGER, "label" TEXT NOT NULL DEFAULT '', "issued" INTEGER NOT NULL, "valid_until" INTEGER, "state" TEXT NOT NULL CHECK (state IN ('pending', 'active', 'revoked', 'failed')), "last_seen" INTEGER, "valid_from" INTEGER, "uses" INTEGER CHECK (uses IS NULL OR uses >= 0), "uses_left" INTEGER CHECK (uses_left IS NULL OR uses_left >= 0), "schedule" TEXT, "kind" TEXT CHECK (kind IS NULL OR kind IN ('ntag424', 'sticker-v2', 'sticker-v1', 'uid', 'wiegand', 'pin')), "key_salt" BLOB CHECK (key_salt IS NULL OR length(key_salt) = 16), "key_version" INTEGER CHECK (key_version IS NULL OR key_version BETWEEN 1 AND 255))"#,
                #"INSERT INTO "issued_tag_v13" ("uid", "action", "secret_id", "label", "issued", "valid_until", "state", "last_seen", "valid_from", "uses", "uses_left", "schedule", "kind", "key_salt", "key_version") SELECT "uid", "action", "secret_id", "label", "issued", "valid_until", "state", "last_seen", "valid_from", "uses", "uses_left", "schedule", "kind", "key_salt", "key_version" FROM "issued_tag""#,
                #"DROP TABLE "issued_tag""#,
                #"ALTER TABLE "issued_tag_v13" RENAME TO "issued_tag""#,
            ]),
        // Keypad PINs (issue 35): a card's PIN (`uid` its registry key) or a
        // PIN-only code's (`uid` its `PINCode` key, beside its issued_tag
        // row), only as scrypt(PIN, salt) with its cost; `duress` opens and
        // raises the silent alarm. No PIN is stored in any other form.
        Migration(
            name: "v14-pins",
            statements: [
                #"CREATE TABLE "pin" ("uid" TEXT PRIMARY KEY NOT NULL, "salt" BLOB NOT NULL CHECK (length(salt) = 16), "hash" BLOB NOT NULL CHECK (length(hash) = 32), "log_n" INTEGER NOT NULL CHECK (log_n BETWEEN 10 AND 20), "r" INTEGER NOT NULL CHECK (r BETWEEN 1 AND 32), "p" INTEGER NOT NULL CHECK (p BETWEEN 1 AND 16), "duress" BOOLEAN NOT NULL DEFAULT 0, "created" INTEGER NOT NULL)"#
            ]),
        // Issue 35: each OSDP reader's Secure Channel base key (SCBK), set by
        // `gatewayctl reader osdp install NAME`, keyed by the reader's name in
        // [[readers]]. Never in the `key` table: the fleet carries that one.
        Migration(
            name: "v15-osdp-reader-key",
            statements: [
                #"CREATE TABLE "osdp_reader_key" ("reader" TEXT PRIMARY KEY NOT NULL, "key" BLOB NOT NULL CHECK (length(key) = 16), "created" INTEGER NOT NULL, "generation" INTEGER NOT NULL)"#
            ]),
        // Issue 36: the site's lockdown in force (it survives a restart) and
        // the replay record of the site's signed commands (SiteCommand.swift).
        Migration(
            name: "v16-site-state",
            statements: [
                #"CREATE TABLE "site_state" ("one" INTEGER PRIMARY KEY CHECK (one = 1), "lockdown_by" TEXT, "lockdown_source" TEXT, "lockdown_since" INTEGER, "lockdown_mode_before" TEXT, "replay" BLOB)"#
            ]),
        // Issue 36: each credential's last granted passage at a door with an
        // entry and an exit reader (Passage.swift): who is in, for
        // anti-passback and `gatewayctl occupancy`. Per door, never fleet-wide.
        Migration(
            name: "v17-passage",
            statements: [
                #"CREATE TABLE "passage" ("uid" TEXT PRIMARY KEY NOT NULL, "inside" BOOLEAN NOT NULL, "since" INTEGER NOT NULL, "reader" TEXT NOT NULL)"#
            ]),
        // Issue 36's follow-up: a fire alarm not yet reset (`alarm`, `cleared`;
        // NULL: none) and whether the site's signal holds it (FireLatch.swift),
        // so a restart during the site's alarm keeps the door released.
        Migration(
            name: "v18-site-fire",
            statements: [
                #"ALTER TABLE "site_state" ADD COLUMN "fire_state" TEXT CHECK (fire_state IS NULL OR fire_state IN ('alarm', 'cleared'))"#,
                #"ALTER TABLE "site_state" ADD COLUMN "fire_site" BOOLEAN NOT NULL DEFAULT 0"#,
            ]),
    ]

    /// The migration names, in order.
    public static var names: [String] { all.map(\.name) }

    static let table = "CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)"

    /// The names recorded as applied, in list order (names this build does
    /// not know, from a newer one, come last).
    static func applied(_ db: SQLiteConnection) throws -> [String] {
        let exists = try db.scalar(
            Int.self, sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'grdb_migrations'")
        guard exists != nil else { return [] }
        let recorded = try db.fetchAll(sql: "SELECT identifier FROM grdb_migrations").map {
            try $0.get(0, as: String.self)
        }
        let known = names.filter(recorded.contains)
        return known + recorded.filter { !names.contains($0) }.sorted()
    }

    /// Runs each pending migration in its own immediate transaction, which
    /// also records it: a crash leaves it wholly applied or not at all.
    static func migrate(_ pool: DatabasePool) throws {
        let done = try pool.read { try applied($0) }
        for migration in all where !done.contains(migration.name) {
            try pool.write { db in
                try db.execute(sql: table)
                guard
                    try db.scalar(
                        Int.self, sql: "SELECT 1 FROM grdb_migrations WHERE identifier = ?",
                        arguments: [migration.name]) == nil
                else { return }
                for sql in migration.statements { try db.execute(sql: sql) }
                try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [migration.name])
            }
        }
    }
}
