/// NTAG 424 DNA cryptography in AES mode (NT4H2421Gx data sheet rev. 3.0,
/// "DS"; NXP AN12196 rev. 1.8, "AN"; AN10922 for key diversification).
/// Pure functions over `Crypto`'s AES-128 and AES-CMAC; the door's reader
/// and the emulator's tag both use this core, so AN12196's published values
/// (DoorCoreTests/NTAG424CryptoTests) are what pin it — a bug shared by both
/// sides would otherwise go unseen. See docs/ntag424-internals.md "Crypto core".
public enum NTAG424 {
    public static let keyLength = 16
    public static let blockLength = 16

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// A field of the wrong size (what, expected, got).
        case length(String, expected: Int, got: Int)
        /// PICCData decrypted to something that is not AES-mode PICCData: a wrong
        /// SDMMetaRead key, or an LRP-mode tag (24-byte PICCData).
        case piccData(String)
        /// The tag's answer during authentication did not carry our RndA: the tag
        /// does not hold the key.
        case authenticationFailed
        /// A MAC did not verify.
        case integrity(String)
        /// Decrypted data without the ISO/IEC 9797-1 method 2 padding.
        case padding
        case crypto(String)

        public var description: String {
            switch self {
            case .length(let what, let e, let g): return "\(what) must be \(e) bytes, got \(g)"
            case .piccData(let why): return "PICCData: \(why)"
            case .authenticationFailed: return "authentication failed: the tag did not prove it holds the key"
            case .integrity(let what): return "\(what): MAC mismatch"
            case .padding: return "decrypted data is not padded 80 00…"
            case .crypto(let what): return what
            }
        }
    }

    // MARK: Primitives

    static func check(_ bytes: [UInt8], _ count: Int, _ what: String) throws {
        guard bytes.count == count else { throw Failure.length(what, expected: count, got: bytes.count) }
    }

    static func wrap<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let f as Crypto.Failure { throw Failure.crypto(f.description) }
    }

    public static func cmac(key: [UInt8], _ message: [UInt8]) throws -> [UInt8] {
        try check(key, keyLength, "key")
        return try wrap { try Crypto.aesCMAC(key: key, message: message) }
    }

    public static func ecbEncrypt(key: [UInt8], _ block: [UInt8]) throws -> [UInt8] {
        try check(key, keyLength, "key")
        try check(block, blockLength, "block")
        return try wrap { try Crypto.aes128ECB(.encrypt, key: key, block: block) }
    }

    public static func cbc(
        _ direction: Crypto.Direction, key: [UInt8], iv: [UInt8] = zeroBlock, _ data: [UInt8]
    ) throws -> [UInt8] {
        try check(key, keyLength, "key")
        return try wrap { try Crypto.aes128CBC(direction, key: key, iv: iv, data: data) }
    }

    public static let zeroBlock = [UInt8](repeating: 0, count: 16)

    /// MACt: the 8 odd-indexed bytes (1, 3, …, 15) of a 16-byte CMAC (DS §9.1.3).
    public static func truncated(_ mac: [UInt8]) -> [UInt8] {
        stride(from: 1, to: mac.count, by: 2).map { mac[$0] }
    }

    public static func macT(key: [UInt8], _ message: [UInt8]) throws -> [UInt8] {
        truncated(try cmac(key: key, message))
    }

    /// Padding of secure messaging and SDM: 80 then zeros to the next whole
    /// block, always added (ISO/IEC 9797-1 method 2).
    public static func pad(_ data: [UInt8]) -> [UInt8] {
        var out = data + [0x80]
        while out.count % blockLength != 0 { out.append(0) }
        return out
    }

    public static func unpad(_ data: [UInt8]) throws -> [UInt8] {
        guard let i = data.lastIndex(where: { $0 != 0 }), data[i] == 0x80, data.count - i <= blockLength else {
            throw Failure.padding
        }
        return Array(data[..<i])
    }

    /// Rotation left by one byte (RndA', RndB').
    public static func rotateLeft(_ b: [UInt8]) -> [UInt8] { b.isEmpty ? b : Array(b.dropFirst()) + [b[0]] }
    public static func rotateRight(_ b: [UInt8]) -> [UInt8] { b.isEmpty ? b : [b[b.count - 1]] + b.dropLast() }

    /// CRC32NK of ChangeKey (DS §10.6.1): the IEEE 802.3 CRC-32 (reflected,
    /// polynomial EDB88320, preset FFFFFFFF) without the final complement —
    /// "JAMCRC" — sent least significant byte first.
    public static func crc32NK(_ data: [UInt8]) -> [UInt8] {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24)]
    }

    /// A 24-bit counter as its 3 bytes, least significant first.
    public static func counterBytes(_ counter: UInt32) -> [UInt8] {
        [UInt8(counter & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter >> 16 & 0xFF)]
    }

    public static func counterValue(_ bytes: [UInt8]) -> UInt32 {
        bytes.prefix(3).enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * $1.offset) }
    }

    // MARK: AN10922 key diversification (AES-128)

    /// AN10922 §2.2: `D = 01 ‖ M ‖ padding` (always 32 bytes; padded with
    /// 80 00… when M is shorter than 31 bytes), its last block masked with
    /// CMAC subkey K2 when padded, K1 when not; the diversified key is the
    /// last block of AES-CBC(K, IV 0, D). M (the diversification input, e.g.
    /// UID ‖ AID ‖ system identifier) is 1…31 bytes.
    public static func diversifyAN10922(masterKey: [UInt8], input m: [UInt8]) throws -> [UInt8] {
        try check(masterKey, keyLength, "master key")
        guard (1...31).contains(m.count) else {
            throw Failure.length("diversification input", expected: 31, got: m.count)
        }
        let padded = m.count < 31
        var d = [0x01] + m
        if padded {
            d.append(0x80)
            while d.count < 32 { d.append(0) }
        }
        let (k1, k2) = try wrap { try Crypto.cmacSubkeys(key: masterKey) }
        let mask = padded ? k2 : k1
        for i in 0..<16 { d[16 + i] ^= mask[i] }
        return Array(try cbc(.encrypt, key: masterKey, d).suffix(16))
    }

    /// The door's per-tag keys: AN10922 diversification of the site master key
    /// with `M = UID(7) ‖ KeyNo ‖ "DoorGateway"` (19 bytes). Each key number gets
    /// its own key, so a tag's SDM file-read key does not open its key 0.
    public static let diversificationSystemID = Array("DoorGateway".utf8)

    public static func tagKey(masterKey: [UInt8], uid: [UInt8], keyNumber: UInt8) throws -> [UInt8] {
        try check(uid, 7, "UID")
        return try diversifyAN10922(masterKey: masterKey, input: uid + [keyNumber] + diversificationSystemID)
    }
}
