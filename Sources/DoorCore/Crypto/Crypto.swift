import COpenSSL

/// The gateway's cryptography, through OpenSSL's libcrypto only (docs/design.md:
/// a thin wrapper). Every failure is a typed error naming the OpenSSL
/// function and its error code, never a trap.
public enum Crypto {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let function: String
        public let code: UInt
        public var description: String { "\(function) failed (OpenSSL error \(code))" }
        static func last(_ function: String) -> Failure { Failure(function: function, code: UInt(ERR_get_error())) }
    }

    /// HMAC-SHA256 (RFC 2104) through `HMAC(EVP_sha256(), …)`.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        // HMAC() with a valid digest and non-NULL buffers only fails on allocation failure.
        // OpenSSL wants non-NULL pointers even for empty inputs: pass a
        // one-byte buffer with a zero length then.
        let k = key.isEmpty ? [0] : key, m = message.isEmpty ? [0] : message
        let ok = HMAC(EVP_sha256(), k, Int32(key.count), m, message.count, &out, &len) != nil
        precondition(ok && len == 32, "HMAC-SHA256 failed: out of memory")
        return out
    }

    public static func hmacSHA256(key: [UInt8], message: String) -> [UInt8] {
        hmacSHA256(key: key, message: Array(message.utf8))
    }

    /// SHA-256 through `EVP_Digest`.
    public static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        let d = data.isEmpty ? [0] : data
        let ok = EVP_Digest(d, data.count, &out, &len, EVP_sha256(), nil) == 1
        precondition(ok && len == 32, "SHA-256 failed: out of memory")
        return out
    }

    /// SHA-256 over input given in pieces (a file read in chunks) through
    /// `EVP_DigestInit_ex`/`Update`/`Final_ex`; `finish()` once.
    public final class SHA256Stream {
        private let context: OpaquePointer

        public init() {
            guard let ctx = EVP_MD_CTX_new(), EVP_DigestInit_ex(ctx, EVP_sha256(), nil) == 1 else {
                preconditionFailure("SHA-256 context: out of memory")
            }
            context = ctx
        }

        deinit { EVP_MD_CTX_free(context) }

        public func update(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            // Update on an initialised SHA-256 context cannot fail.
            _ = EVP_DigestUpdate(context, base, bytes.count)
        }

        public func finish() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 32)
            var len: UInt32 = 0
            let ok = EVP_DigestFinal_ex(context, &out, &len) == 1
            precondition(ok && len == 32, "SHA-256 failed")
            return out
        }
    }

    public enum Direction { case encrypt, decrypt }

    /// One AES-128-ECB block, no padding (docs/formats.md §3 `otp-auth`): `EVP_aes_128_ecb`
    /// with `EVP_CIPHER_CTX_set_padding(ctx, 0)`.
    public static func aes128ECB(_ direction: Direction, key: [UInt8], block: [UInt8]) throws -> [UInt8] {
        guard key.count == 16 else { throw Failure(function: "aes128ECB: key must be 16 bytes", code: 0) }
        guard block.count == 16 else { throw Failure(function: "aes128ECB: block must be 16 bytes", code: 0) }
        return try unpadded(EVP_aes_128_ecb(), direction, key: key, iv: nil, data: block)
    }

    /// `data` (whole blocks, not empty) through `cipher` with padding off
    /// (`EVP_CIPHER_CTX_set_padding(ctx, 0)`): AES-128-ECB's block, AES-128-CBC's blocks.
    static func unpadded(
        _ cipher: OpaquePointer?, _ direction: Direction, key: [UInt8], iv: [UInt8]?, data: [UInt8]
    ) throws -> [UInt8] {
        guard let ctx = EVP_CIPHER_CTX_new() else { throw Failure.last("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let enc: Int32 = direction == .encrypt ? 1 : 0
        let initialised: Int32
        if let iv {
            initialised = EVP_CipherInit_ex(ctx, cipher, nil, key, iv, enc)
        } else {
            initialised = EVP_CipherInit_ex(ctx, cipher, nil, key, nil, enc)
        }
        guard initialised == 1 else { throw Failure.last("EVP_CipherInit_ex") }
        EVP_CIPHER_CTX_set_padding(ctx, 0)
        var out = [UInt8](repeating: 0, count: data.count + 16)
        var n1: Int32 = 0, n2: Int32 = 0
        guard EVP_CipherUpdate(ctx, &out, &n1, data, Int32(data.count)) == 1 else {
            throw Failure.last("EVP_CipherUpdate")
        }
        let final = out.withUnsafeMutableBufferPointer { EVP_CipherFinal_ex(ctx, $0.baseAddress! + Int(n1), &n2) }
        guard final == 1 else { throw Failure.last("EVP_CipherFinal_ex") }
        guard Int(n1 + n2) == data.count else { throw Failure(function: "EVP_CipherUpdate: short output", code: 0) }
        return Array(out.prefix(data.count))
    }

    /// Bytes from OpenSSL's CSPRNG (`RAND_bytes`).
    public static func randomBytes(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&out, Int32(count)) == 1 else { throw Failure.last("RAND_bytes") }
        return out
    }

    /// Constant-time equality (`CRYPTO_memcmp`); different lengths are unequal
    /// (the length itself is not secret here: MACs have fixed sizes).
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0 }
        }
    }
}
