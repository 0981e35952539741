import DoorCore
import Synchronization

/// What `checkAudit` found and how it checked it (`gatewayctl log --verify`
/// prints each part).
public struct AuditCheck: Equatable, Sendable {
    /// Intact from the anchor (or row 1), or the first row that fails.
    public var verification: AuditVerification
    /// The first row of the keyed chain (rows before it are the unkeyed
    /// SHA-256 chain of an older database); nil: never keyed.
    public var keyedFrom: Int64?
    /// The fingerprint of the key the log was keyed with (never the key).
    public var keyFingerprint: String?
    /// Whether the keyed rows' MACs were checked (a key was given), or only
    /// their links.
    public var macsChecked: Bool
    /// The newest row's id and hash (the head telemetry publishes).
    public var headID: Int64?
    public var headHash: [UInt8]?
}

/// What `useAuditKey` did.
public enum AuditKeyUse: Equatable, Sendable {
    /// The log was not keyed: from `firstRow` on it is.
    case started(firstRow: Int64)
    /// The log was already keyed with this key from `firstRow`.
    case continued(firstRow: Int64)
}

/// The keyed audit chain (security review L4, docs/security.md).
///
/// Rows from `audit_key.first_row` on are linked with
/// `hash = HMAC-SHA256(m_i, prev ‖ canonical)`, where the row key `k_i`
/// ratchets forward one step per row — `k_first = K`,
/// `k_{i+1} = HMAC(k_i, "next")`, `m_i = HMAC(k_i, "mac")` — so the daemon,
/// which holds only the key of its newest row, cannot recompute an older
/// row's MAC, and a verifier with the audit key `K` (root's file) can check
/// every row. Rows before `first_row` (a database from before the key) keep
/// their unkeyed SHA-256 links and verify as before.
extension GatewayStore {
    public static let auditKeyLength = 32
    /// The first row of a keyed log, which also records the key's fingerprint.
    public static let auditKeyStartedKind = "audit_key_started"

    struct AuditRatchet: Sendable {
        /// The row `key` is the key of.
        var row: Int64
        var key: [UInt8]
    }

    static func ratchetNext(_ key: [UInt8]) -> [UInt8] { Crypto.hmacSHA256(key: key, message: "next") }
    static func rowMACKey(_ key: [UInt8]) -> [UInt8] { Crypto.hmacSHA256(key: key, message: "mac") }
    /// A public name for the key: the first 8 bytes of HMAC(K, "fingerprint"), hex.
    public static func auditKeyFingerprint(_ key: [UInt8]) -> String {
        Hex.encode(Crypto.hmacSHA256(key: key, message: "doorgateway audit key fingerprint").prefix(8))
    }

    static func nextAuditID(_ db: SQLiteConnection) throws -> Int64 {
        if let last = try db.scalar(Int64.self, sql: "SELECT MAX(id) FROM audit") { return last + 1 }
        if let anchor = try db.scalar(Int64.self, sql: "SELECT row_id FROM audit_anchor WHERE one = 1") {
            return anchor + 1
        }
        return 1
    }

    /// Keys the chain with `key` (gatewayd, once at start): records where
    /// the keyed chain begins and the key's fingerprint, with a first keyed
    /// row that says so, or checks that the log was keyed with this very key.
    /// Keeps only the key of the next row (ratcheted forward); the caller
    /// drops `key`.
    @discardableResult
    public func useAuditKey(_ key: [UInt8], now: Int64) throws -> AuditKeyUse {
        guard key.count >= Self.auditKeyLength else {
            throw StoreError.invalidValue(
                "the audit key is \(key.count) bytes; it must be at least \(Self.auditKeyLength)")
        }
        let fingerprint = Self.auditKeyFingerprint(key)
        return try pool.write { db in
            let record = try db.fetchOne(sql: "SELECT first_row, fingerprint FROM audit_key WHERE one = 1")
            let next = try Self.nextAuditID(db)
            let first: Int64
            let use: AuditKeyUse
            if let record {
                first = try record.get("first_row")
                let recorded: String = try record.get("fingerprint")
                guard recorded == fingerprint else {
                    throw StoreError.invalidValue(
                        "the audit key (fingerprint \(fingerprint)) is not the key this log was keyed with "
                            + "(fingerprint \(recorded), from row \(first))")
                }
                use = .continued(firstRow: first)
            } else {
                first = next
                try db.execute(
                    sql: "INSERT INTO audit_key (one, first_row, fingerprint, created) VALUES (1, ?, ?, ?)",
                    arguments: [first, fingerprint, now])
                use = .started(firstRow: first)
            }
            var k = key
            var at = first
            while at < next {
                k = Self.ratchetNext(k)
                at += 1
            }
            auditRatchet.withLock { $0 = AuditRatchet(row: next, key: k) }
            if case .started = use {
                _ = try insertAudit(
                    db,
                    AuditRow(
                        id: 0, time: now, kind: Self.auditKeyStartedKind, reason: nil, action: nil, uid: nil,
                        source: nil, detail: "rows from \(first) are keyed (audit key \(fingerprint))"))
            }
            return use
        }
    }

    /// The link of `row` (its id assigned): the keyed MAC from the keyed
    /// chain's first row on when this process holds the key, else SHA-256.
    /// A keyed row written without the key fails verification, as it should.
    func chainHash(_ db: SQLiteConnection, row: AuditRow, prev: [UInt8]) throws -> [UInt8] {
        let message = prev + row.canonical
        guard let first = try db.scalar(Int64.self, sql: "SELECT first_row FROM audit_key WHERE one = 1"),
            row.id >= first
        else { return Crypto.sha256(message) }
        // The ratchet only moves forward: the key of this row stays until the
        // next row (a transaction that rolls back leaves it usable again).
        let macKey: [UInt8]? = auditRatchet.withLock { state in
            guard var s = state else { return nil }
            while s.row < row.id {
                s.key = Self.ratchetNext(s.key)
                s.row += 1
            }
            state = s
            return Self.rowMACKey(s.key)
        }
        guard let macKey else { return Crypto.sha256(message) }
        return Crypto.hmacSHA256(key: macKey, message: message)
    }

    /// The newest row's id and hash (or the anchor's), for telemetry.
    public func auditHead() throws -> (id: Int64, hash: [UInt8], keyed: Bool)? {
        try pool.read { db in
            let keyedFrom = try db.scalar(Int64.self, sql: "SELECT first_row FROM audit_key WHERE one = 1")
            let row =
                try db.fetchOne(sql: "SELECT id, hash FROM audit ORDER BY id DESC LIMIT 1")
                ?? db.fetchOne(sql: "SELECT row_id AS id, hash FROM audit_anchor WHERE one = 1")
            guard let row else { return nil }
            let id: Int64 = try row.get("id")
            return (id, try row.get("hash"), keyedFrom.map { id >= $0 } ?? false)
        }
    }

    /// Checks the whole chain: unkeyed rows by SHA-256, keyed rows by their
    /// links and, given the audit key, by their MACs. With a key, a log that
    /// was never keyed, or keyed with another key, or whose first keyed row
    /// is neither present nor trimmed away, is broken.
    public func checkAudit(key: [UInt8]?) throws -> AuditCheck {
        try pool.read { db in
            let anchor = try db.fetchOne(sql: "SELECT row_id, hash FROM audit_anchor WHERE one = 1")
            let record = try db.fetchOne(sql: "SELECT first_row, fingerprint FROM audit_key WHERE one = 1")
            let keyedFrom: Int64? = try record?.get("first_row")
            let fingerprint: String? = try record?.get("fingerprint")
            var check = AuditCheck(
                verification: .intact(rows: 0, from: nil), keyedFrom: keyedFrom, keyFingerprint: fingerprint,
                macsChecked: key != nil, headID: nil, headHash: nil)
            let anchorID: Int64? = try anchor?.get("row_id")
            let firstPresent = try db.scalar(Int64.self, sql: "SELECT MIN(id) FROM audit")
            if let key {
                guard let keyedFrom, let fingerprint else {
                    check.verification = .broken(
                        rowID: firstPresent ?? 0,
                        why: "the log was never keyed, yet an audit key exists: gatewayd has not run with it, "
                            + "or the database was rewritten without it")
                    return check
                }
                guard Self.auditKeyFingerprint(key) == fingerprint else {
                    check.verification = .broken(
                        rowID: keyedFrom,
                        why: "the audit key given (fingerprint \(Self.auditKeyFingerprint(key))) is not the one "
                            + "the log was keyed with (\(fingerprint))")
                    return check
                }
                // The row that started the keyed log is there, or trimmed away.
                let trimmedPast = (anchorID ?? 0) >= keyedFrom
                let startRow = try db.scalar(
                    String.self, sql: "SELECT kind FROM audit WHERE id = ?", arguments: [keyedFrom])
                guard trimmedPast || startRow == Self.auditKeyStartedKind else {
                    check.verification = .broken(
                        rowID: keyedFrom, why: "row \(keyedFrom), which started the keyed log, is missing")
                    return check
                }
            }
            var expected: [UInt8] = try anchor?.get("hash") ?? Self.genesis
            var expectedID: Int64? = anchorID.map { $0 + 1 }
            check.headID = anchorID
            check.headHash = try anchor?.get("hash")
            var ratchet: AuditRatchet? = keyedFrom.flatMap { f in key.map { AuditRatchet(row: f, key: $0) } }
            var count = 0
            var first: Int64?
            var broken: AuditVerification?
            try db.forEach(sql: "SELECT * FROM audit ORDER BY id") { r in
                let row = try AuditRow(row: r)
                first = first ?? row.id
                if let e = expectedID, row.id != e {
                    broken = .broken(rowID: row.id, why: "row \(e) is missing")
                    return false
                }
                let prev: [UInt8] = try r.get("prev")
                guard prev == expected else {
                    broken = .broken(rowID: row.id, why: "link to the previous row does not match")
                    return false
                }
                let hash: [UInt8] = try r.get("hash")
                if let keyedFrom, row.id >= keyedFrom {
                    if var s = ratchet {
                        while s.row < row.id {
                            s.key = Self.ratchetNext(s.key)
                            s.row += 1
                        }
                        ratchet = s
                        let mac = Crypto.hmacSHA256(key: Self.rowMACKey(s.key), message: prev + row.canonical)
                        guard Crypto.constantTimeEqual(mac, hash) else {
                            broken = .broken(rowID: row.id, why: "content does not match its MAC (audit key)")
                            return false
                        }
                    }
                } else if hash != Crypto.sha256(prev + row.canonical) {
                    broken = .broken(rowID: row.id, why: "content does not match its hash")
                    return false
                }
                expected = hash
                expectedID = row.id + 1
                check.headID = row.id
                check.headHash = hash
                count += 1
                return true
            }
            if let broken {
                check.verification = broken
            } else if anchor == nil, let first, first != 1 {
                check.verification = .broken(rowID: first, why: "rows before it are missing and there is no anchor")
            } else {
                check.verification = .intact(rows: count, from: first)
            }
            return check
        }
    }
}
