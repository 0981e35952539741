/// A signed sticker URL, docs/formats.md §1 (v1) and §4 (v2):
/// `smp://action?idx=<i>&ts=<t>&sig=<64 hex>[&u=<22 base64url>]`.
public struct StickerURL: Equatable, Sendable, Hashable {
    public static let prefix = "smp://action?"

    public var action: Int
    public var timestamp: Int64
    /// HMAC-SHA256(secret, `idx=<i>&ts=<t>`), 32 bytes.
    public var signature: [UInt8]
    /// v2 only: the first 16 bytes of HMAC-SHA256(secret, `v2|<UID>|idx=<i>&ts=<t>`).
    public var uidBinding: [UInt8]?

    public init(action: Int, timestamp: Int64, signature: [UInt8], uidBinding: [UInt8]? = nil) {
        self.action = action
        self.timestamp = timestamp
        self.signature = signature
        self.uidBinding = uidBinding
    }

    public var version: StickerVersion { uidBinding == nil ? .v1 : .v2 }

    /// The ASCII bytes the `sig` field signs.
    public var signedMessage: String { "idx=\(action)&ts=\(timestamp)" }

    /// The ASCII bytes the `u` field signs for a UID.
    public func uidMessage(_ uid: TagUID) -> String { "v2|\(uid.hex)|\(signedMessage)" }

    /// The canonical text (lowercase signature hex), as the gateway writes it.
    public var text: String {
        var s = "\(Self.prefix)idx=\(action)&ts=\(timestamp)&sig=\(Hex.encode(signature))"
        if let uidBinding { s += "&u=\(Base64URL.encode(uidBinding))" }
        return s
    }

    /// Parses the canonical form only; anything else is `.malformed` (or
    /// `.notOurs` when it is not an `smp://` URL at all).
    public static func parse(_ text: String) throws(StickerParseError) -> StickerURL {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 6, String(decoding: utf8.prefix(6), as: UTF8.self).lowercased() == "smp://" else {
            throw .notOurs
        }
        guard text.hasPrefix(prefix) else { throw .malformed("not an smp://action? URL") }
        guard utf8.count <= 256 else { throw .malformed("too long") }
        let query = utf8.dropFirst(prefix.utf8.count)
        let parts = query.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4 else {
            throw .malformed("expected parameters idx, ts, sig and optionally u, got \(parts.count)")
        }
        let names = ["idx", "ts", "sig", "u"]
        var values: [ArraySlice<UInt8>] = []
        for (i, part) in parts.enumerated() {
            guard let eq = part.firstIndex(of: UInt8(ascii: "=")) else {
                throw .malformed("parameter \(i + 1) has no '='")
            }
            let name = String(decoding: part[part.startIndex..<eq], as: UTF8.self)
            guard name == names[i] else {
                throw .malformed("parameter \(i + 1) must be \(names[i]), found \(name.prefix(16))")
            }
            values.append(part[(eq + 1)...])
        }
        guard let idx = canonicalDecimal(values[0], maxDigits: 6) else {
            throw .malformed("idx is not a plain decimal number")
        }
        guard let ts = canonicalDecimal(values[1], maxDigits: 12) else {
            throw .malformed("ts is not a plain decimal number")
        }
        guard values[2].count == 64, let sig = Hex.decode(String(decoding: values[2], as: UTF8.self)) else {
            throw .malformed("sig is not 64 hex digits")
        }
        var binding: [UInt8]?
        if parts.count == 4 {
            guard values[3].count == 22, let u = Base64URL.decode(String(decoding: values[3], as: UTF8.self)),
                u.count == 16
            else {
                throw .malformed("u is not 22 base64url characters")
            }
            binding = u
        }
        return StickerURL(action: Int(idx), timestamp: ts, signature: sig, uidBinding: binding)
    }

    /// Plain decimal: digits only, no sign, no leading zero (but "0"), bounded.
    static func canonicalDecimal(_ s: ArraySlice<UInt8>, maxDigits: Int) -> Int64? {
        guard !s.isEmpty, s.count <= maxDigits else { return nil }
        guard s.count == 1 || s.first != UInt8(ascii: "0") else { return nil }
        var v: Int64 = 0
        for c in s {
            guard c >= 0x30 && c <= 0x39 else { return nil }
            v = v * 10 + Int64(c - 0x30)
        }
        return v
    }
}

public enum StickerVersion: String, Sendable, Hashable {
    case v1, v2
}

public enum StickerParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not an `smp://` URL: a foreign tag (a web link, a bank card's data…).
    case notOurs
    /// Our scheme but not the canonical form.
    case malformed(String)

    public var description: String {
        switch self {
        case .notOurs: return "not a DoorGateway/phone sticker"
        case .malformed(let why): return "malformed sticker: \(why)"
        }
    }
}
