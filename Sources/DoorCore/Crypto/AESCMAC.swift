import COpenSSL

/// AES-128 in CBC mode without padding and AES-CMAC (RFC 4493, NIST SP
/// 800-38B), through libcrypto's `EVP_aes_128_cbc` only — the same thin
/// wrapper rule as the rest of `Crypto`. CMAC is built here on CBC (a
/// CBC-MAC whose last block is masked with subkey K1 or K2) rather than
/// through `EVP_MAC`, so its steps — the subkeys included, which AN10922
/// needs on their own — are visible and tested against RFC 4493's vectors.
extension Crypto {
    /// AES-128-CBC over whole 16-byte blocks, no padding (NTAG 424 DNA's
    /// secure messaging pads itself). `iv` is 16 bytes.
    public static func aes128CBC(_ direction: Direction, key: [UInt8], iv: [UInt8], data: [UInt8]) throws -> [UInt8] {
        guard key.count == 16 else { throw Failure(function: "aes128CBC: key must be 16 bytes", code: 0) }
        guard iv.count == 16 else { throw Failure(function: "aes128CBC: IV must be 16 bytes", code: 0) }
        guard data.count % 16 == 0 else {
            throw Failure(function: "aes128CBC: data must be whole 16-byte blocks", code: 0)
        }
        if data.isEmpty { return [] }
        return try unpadded(EVP_aes_128_cbc(), direction, key: key, iv: iv, data: data)
    }

    /// The CMAC subkeys K1 and K2 of `key` (RFC 4493 §2.3).
    public static func cmacSubkeys(key: [UInt8]) throws -> (k1: [UInt8], k2: [UInt8]) {
        let l = try aes128ECB(.encrypt, key: key, block: [UInt8](repeating: 0, count: 16))
        let k1 = doubled(l)
        return (k1, doubled(k1))
    }

    /// AES-CMAC of `message` under a 16-byte key: the full 16-byte tag (RFC 4493 §2.4).
    public static func aesCMAC(key: [UInt8], message: [UInt8]) throws -> [UInt8] {
        let (k1, k2) = try cmacSubkeys(key: key)
        var m = message
        let complete = !m.isEmpty && m.count % 16 == 0
        if !complete {
            m.append(0x80)
            while m.count % 16 != 0 { m.append(0) }
        }
        let mask = complete ? k1 : k2
        let last = m.count - 16
        for i in 0..<16 { m[last + i] ^= mask[i] }
        let c = try aes128CBC(.encrypt, key: key, iv: [UInt8](repeating: 0, count: 16), data: m)
        return Array(c.suffix(16))
    }

    /// Multiplication by x in GF(2^128): shift left one bit, folding in
    /// 0x87 when the top bit falls off (RFC 4493 §2.3).
    static func doubled(_ b: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        for i in 0..<16 {
            out[i] = b[i] << 1 | (i < 15 ? b[i + 1] >> 7 : 0)
        }
        if b[0] & 0x80 != 0 { out[15] ^= 0x87 }
        return out
    }
}
