import DoorCore

/// The JSON both transports publish alike (documented with examples in
/// docs/mqtt.md and docs/nats.md): events, approval events, telemetry and
/// tag scans, and how a UID is named in them. Home Assistant's own
/// documents (discovery, the admin screen's) are GatewayMQTT's `Payloads`.
public enum LinkPayloads {
    /// `…/event`: one object per event. `event_type` repeats `kind` for Home
    /// Assistant's event entity.
    public static func event(
        _ e: DoorEvent, seq: Int64, time: Int64, device: String, uidText: String?, label: String? = nil
    ) -> [UInt8] {
        var f: [(String, JSONValue)] = [
            ("seq", .int(Int(seq))), ("time", .string(UTCTime.iso8601(time))), ("device", .string(device)),
            ("kind", .string(e.kind.rawValue)), ("event_type", .string(e.kind.rawValue)),
        ]
        if let r = e.reason { f.append(("reason", .string(r))) }
        if let a = e.action { f.append(("action", .int(a))) }
        if let u = uidText { f.append(("uid", .string(u))) }
        if let l = label, !l.isEmpty { f.append(("label", .string(l))) }
        if let s = e.source { f.append(("source", .string(s))) }
        if let c = e.code { f.append(("code", .string(c))) }
        if let w = e.who { f.append(("by", .string(w))) }
        return Array(JSONValue.object(f).serialized.utf8)
    }

    /// The approval event kinds (Home Assistant's approval entity shows them).
    public static let approvalEventTypes: [DoorEvent.Kind] = [
        .approvalRequested, .approvalGranted, .approvalDenied, .approvalTimedOut, .approvalCancelled,
    ]

    /// An approval event for `…/approval` (HA's event entity), or nil for
    /// any other event: the event's fields without a sequence number.
    public static func approvalEvent(
        _ e: DoorEvent, time: Int64, device: String, uidText: String?, label: String?
    ) -> [UInt8]? {
        guard approvalEventTypes.contains(e.kind) else { return nil }
        var f: [(String, JSONValue)] = [
            ("event_type", .string(e.kind.rawValue)), ("time", .string(UTCTime.iso8601(time))),
            ("device", .string(device)),
        ]
        if let c = e.code { f.append(("code", .string(c))) }
        if let a = e.action { f.append(("action", .int(a))) }
        if let u = uidText { f.append(("uid", .string(u))) }
        if let l = label, !l.isEmpty { f.append(("label", .string(l))) }
        if let r = e.reason { f.append(("reason", .string(r))) }
        if let s = e.source { f.append(("source", .string(s))) }
        if let w = e.who { f.append(("by", .string(w))) }
        return Array(JSONValue.object(f).serialized.utf8)
    }

    /// `…/telemetry`: `seq`, `time`, then `fields` (what the daemon and the transport add).
    public static func telemetry(seq: Int64, time: Int64, _ fields: [(String, JSONValue)]) -> [UInt8] {
        Array(
            JSONValue.object([("seq", .int(Int(seq))), ("time", .string(UTCTime.iso8601(time)))] + fields).serialized
                .utf8)
    }

    /// `…/tag`: a sticker was presented, `{"uid": …}`.
    public static func tagScan(uidText: String) -> [UInt8] {
        Array(JSONValue.object([("uid", .string(uidText))]).serialized.utf8)
    }

    /// How a UID appears in events: in full, or as the first 8 bytes of
    /// HMAC-SHA256(device key, "uid|" ‖ UID) in hex (stable per door, not
    /// reversible). Nil, the UID withheld, when hashing is asked for without
    /// a device key (fewer than `minimumDeviceKeyLength` bytes): an HMAC
    /// under an empty key is a public function of the UID, and a 7-byte UID
    /// space is small enough to reverse it (issue 24 L3). Fail closed.
    public static func uidText(_ uid: TagUID, hashed: Bool, deviceKey: [UInt8]) -> String? {
        guard hashed else { return uid.hex }
        guard deviceKey.count >= minimumDeviceKeyLength else { return nil }
        return Hex.encode(Array(Crypto.hmacSHA256(key: deviceKey, message: Array("uid|".utf8) + uid.bytes).prefix(8)))
    }

    /// The shortest device key UIDs are hashed with (the store's is 32 bytes).
    public static let minimumDeviceKeyLength = 16
}
