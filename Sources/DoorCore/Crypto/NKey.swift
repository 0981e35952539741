/// NATS nkeys: base32 (RFC 4648, no padding) of a prefix byte, the 32-byte
/// ed25519 key and a CRC-16/XMODEM (little-endian). A seed has two prefix
/// bytes (`S` and the key's type); a user's public key starts with `U`, an
/// account's (its identity key or one of its signing keys) with `A`. Here,
/// not in GatewayNATS, so the configuration can check `[nats] account_keys`.
public enum NKey {
    static let prefixSeed: UInt8 = 18 << 3
    static let prefixUser: UInt8 = 20 << 3
    static let prefixAccount: UInt8 = 0

    /// The user public key (`U…`) of a user seed (`SU…`); nil for anything else.
    public static func userPublicKey(seed: String) -> String? {
        guard let raw = decode(seed), raw.count == 34 else { return nil }
        let b1 = raw[0] & 0xF8
        let type = ((raw[0] & 0x07) << 5) | ((raw[1] & 0xF8) >> 3)
        guard b1 == prefixSeed, type == prefixUser else { return nil }
        guard let pub = try? Crypto.Ed25519.publicKey(seed: Array(raw[2..<34])) else { return nil }
        return encode([prefixUser] + pub)
    }

    /// Whether `text` is a well-formed user public key (prefix and checksum).
    public static func isUserPublicKey(_ text: String) -> Bool {
        guard let raw = decode(text), raw.count == 33 else { return false }
        return raw[0] == prefixUser
    }

    /// The raw ed25519 public key of an account key (`A…`, prefix and
    /// checksum checked); nil for anything else.
    public static func accountKey(_ text: String) -> [UInt8]? {
        guard let raw = decode(text), raw.count == 33, raw[0] == prefixAccount else { return nil }
        return Array(raw[1...])
    }

    /// The text of an account's raw ed25519 public key (`A…`).
    public static func accountPublicKey(raw key: [UInt8]) -> String { encode([prefixAccount] + key) }

    /// The text of a user's raw ed25519 public key (`U…`).
    public static func userPublicKey(raw key: [UInt8]) -> String { encode([prefixUser] + key) }

    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    /// Payload plus checksum, in base32.
    static func encode(_ payload: [UInt8]) -> String {
        let crc = crc16(payload)
        let bytes = payload + [UInt8(crc & 0xFF), UInt8(crc >> 8)]
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for b in bytes {
            buffer = (buffer << 8) | Int(b)
            bits += 8
            while bits >= 5 {
                out.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { out.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The payload of a base32 nkey whose checksum holds; nil otherwise.
    static func decode(_ text: String) -> [UInt8]? {
        guard text.utf8.count <= 128 else { return nil }
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for c in text.utf8 {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            buffer = ((buffer << 5) | v) & 0xFFFF
            bits += 5
            if bits >= 8 {
                out.append(UInt8((buffer >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        guard out.count >= 3 else { return nil }
        let payload = Array(out.dropLast(2))
        let crc = UInt16(out[out.count - 2]) | UInt16(out[out.count - 1]) << 8
        return crc16(payload) == crc ? payload : nil
    }

    static func crc16(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0
        for b in bytes {
            crc ^= UInt16(b) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }
}
