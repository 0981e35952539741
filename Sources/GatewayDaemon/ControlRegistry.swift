import DoorCore
import GatewayControl
import Glibc
import GatewayStore

extension IssuedTag {
    var json: JSONValue {
        .object([
            ("uid", .string(uid.hex)), ("action", .int(action)), ("label", .string(label)),
            ("state", .string(state.rawValue)),
            ("issued", .string(UTCTime.iso8601(issued))), ("valid_until", .optional(validUntil.map(UTCTime.iso8601))),
            ("last_seen", .optional(lastSeen.map(UTCTime.iso8601))),
            ("secret_id", secretID.map { .int(Int($0)) } ?? .null),
            ("valid_from", .optional(validFrom.map(UTCTime.iso8601))),
            ("uses", uses.map { .int($0) } ?? .null), ("uses_left", usesLeft.map { .int($0) } ?? .null),
            ("schedule", .optional(schedule)), ("kind", .optional(kind?.rawValue)),
            // A card number's form (issue 35): 26:FACILITY:NUMBER or raw:BITS:HEX.
            ("card", .optional(uid.card?.description)),
            // An NTAG 424's key version (its salt is not shown: it names the issue, the site key opens it).
            ("key_version", kind == .ntag424 ? .int(Int((keyIssue ?? .legacy).version)) : .null),
        ])
    }
}

extension ControlService {
    /// Issued tags, revocations, the audit log and backups.
    func registryMethod(_ method: ControlMethod, _ p: [String: JSONValue], peer: Peer) throws -> JSONValue {
        let now = Int64(time(nil))
        func uid() throws -> TagUID {
            let text = try p.string("uid")
            guard let u = TagUID(hex: text) ?? CardNumber(text: text)?.registryKey else {
                throw DaemonError.request("uid must be 4, 7 or 10 bytes of hex, or a card number (26:FACILITY:NUMBER)")
            }
            return u
        }
        switch method {
        case .tagsRevoke, .tagsExpire, .tagsForget, .tagsEnrollUID, .tagsEnrollCard:
            defer { remote.homeAssistantAdmin?.registryChanged() }
            return try registryChange(method, p, now: now, source: "control:uid=\(peer.uid)", uid: uid)
        case .tagsList:
            let revoked: [JSONValue] = try store.revocations().map {
                .object([
                    ("uid", .optional($0.uid)), ("signature", .optional($0.signature)),
                    ("created", .string(UTCTime.iso8601($0.created))),
                ])
            }
            return .object([("tags", .array(try store.issuedTags().map(\.json))), ("revocations", .array(revoked))])
        default:
            return try registryRead(method, p)
        }
    }

    /// `tags revoke|expire|forget`, each audited with the caller (`source`,
    /// `control:uid=N`) once the store has it; Home Assistant's tag list follows.
    private func registryChange(
        _ method: ControlMethod, _ p: [String: JSONValue], now: Int64, source: String, uid: () throws -> TagUID
    ) throws -> JSONValue {
        switch method {
        case .tagsRevoke:
            let reason = try p.string("reason", default: "")
            let why = reason.isEmpty ? "" : " (\(reason.prefix(200)))"
            if let sig = p["signature"]?.stringValue {
                guard let bytes = Hex.decode(sig), bytes.count == 32 else {
                    throw DaemonError.request("a v1 signature is 64 hex digits")
                }
                try store.revoke(signature: bytes, reason: reason, now: now)
                runtime.note(
                    DoorEvent(.tagRevoked, source: source),
                    detail: "v1 signature \(Hex.encode(bytes)) revoked\(why)")
                return .object([("revoked_signature", .string(Hex.encode(bytes)))])
            }
            let u = try uid()
            try store.revoke(uid: u, reason: reason, now: now)
            runtime.note(DoorEvent(.tagRevoked, uid: u, source: source), detail: "revoked with gatewayctl\(why)")
            return .object([("revoked", .string(u.hex))])
        case .tagsExpire:
            let u = try uid()
            let at = try p.int("at")
            try store.expire(uid: u, at: Int64(at))
            runtime.note(
                DoorEvent(.tagExpirySet, uid: u, source: source), detail: "valid until \(UTCTime.iso8601(Int64(at)))")
            return .object([("uid", .string(u.hex)), ("valid_until", .string(UTCTime.iso8601(Int64(at))))])
        case .tagsForget:
            let u = try uid()
            try store.forget(uid: u)
            runtime.note(DoorEvent(.tagForgotten, uid: u, source: source), detail: "registry row deleted")
            return .object([("forgotten", .string(u.hex))])
        case .tagsEnrollUID:
            return try enrollUID(p, now: now, source: source, uid: uid)
        case .tagsEnrollCard:
            return try enrollCard(p, now: now, source: source)
        default:
            throw DaemonError.request("unknown method \(method.rawValue)")
        }
    }

    /// The audit log and backups.
    private func registryRead(_ method: ControlMethod, _ p: [String: JSONValue]) throws -> JSONValue {
        switch method {
        case .log:
            return .array(try store.auditTail(max(1, min(try p.int("limit", default: 20), 100_000))).map(\.json))
        case .logVerify:
            // The daemon no longer holds the audit key: links only (AuditReport says so).
            return AuditReport.json(try store.checkAudit(key: nil), keyFile: nil)
        default:
            throw DaemonError.request("unknown method \(method.rawValue)")
        }
    }

    /// `backup`: a snapshot of the store, streamed to gatewayctl as events
    /// `{"data": base64url}` of at most 48 KiB each, then `{"end": true,
    /// "bytes": N}`. gatewayctl writes the file, as the admin who asked and
    /// where they asked: the daemon never writes outside its state directory
    /// (the unit's ProtectHome= and PrivateTmp= would hide or refuse the file).
    /// Memory stays one chunk, whatever the size of the store (MemoryMax=).
    /// A request that names a `path` (gatewayctl before 0.3.0) is refused.
    func backupStream(_ p: [String: JSONValue]) throws -> () throws -> JSONValue? {
        if p["path"] != nil {
            throw DaemonError.request(
                "this gatewayd streams backups to gatewayctl and writes no file itself: use the gatewayctl of the same version"
            )
        }
        let snapshot = BackupSnapshot(fd: try store.snapshot())
        return { try snapshot.next() }
    }

    /// `log --follow`: the last `limit` rows first, then each new row.
    func followAudit(after p: [String: JSONValue]) throws -> () throws -> [JSONValue] {
        let tail = try store.auditTail(max(0, min(try p.int("limit", default: 10), 1000)))
        var last = try store.auditTail(1).last?.id ?? 0
        var pending = tail.map(\.json)
        return { [store] in
            defer { pending = [] }
            let rows = try store.auditRows(after: last)
            if let l = rows.last?.id { last = l }
            return pending + rows.map(\.json)
        }
    }

}

/// The open, unlinked snapshot a backup streams; closed at its end or when
/// the stream is dropped (the client went away).
final class BackupSnapshot {
    private var fd: Int32
    private var total = 0
    private var ended = false
    static let chunk = 48 * 1024  // a multiple of 3: base64 without padding between chunks

    init(fd: Int32) { self.fd = fd }
    deinit { if fd >= 0 { close(fd) } }

    func next() throws -> JSONValue? {
        guard !ended else { return nil }
        var buffer = [UInt8](repeating: 0, count: Self.chunk)
        var filled = 0
        while filled < buffer.count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw DaemonError.request("backup: reading the snapshot: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            filled += n
        }
        if filled == 0 {
            ended = true
            close(fd)
            fd = -1
            return .object([("end", .bool(true)), ("bytes", .int(Int64(total)))])
        }
        total += filled
        return .object([("data", .string(Base64URL.encode(Array(buffer[..<filled]))))])
    }
}
