import COpenSSL

/// Ed25519 (RFC 8032) through libcrypto's `EVP_PKEY_ED25519`: the site key
/// that signs fleet documents (docs/fleet.md). Keys are raw: a 32-byte seed
/// (private) and a 32-byte public key; signatures are 64 bytes. Every
/// failure is a `Crypto.Failure`, a bad signature is `false`, never a trap.
extension Crypto {
    public enum Ed25519 {
        public static let seedLength = 32
        public static let publicKeyLength = 32
        public static let signatureLength = 64

        /// A fresh seed from OpenSSL's CSPRNG.
        public static func generateSeed() throws -> [UInt8] { try randomBytes(seedLength) }

        /// The public key of a seed.
        public static func publicKey(seed: [UInt8]) throws -> [UInt8] {
            let key = try privateKey(seed)
            defer { EVP_PKEY_free(key) }
            var out = [UInt8](repeating: 0, count: publicKeyLength)
            var len = publicKeyLength
            guard EVP_PKEY_get_raw_public_key(key, &out, &len) == 1, len == publicKeyLength else {
                throw Failure.last("EVP_PKEY_get_raw_public_key")
            }
            return out
        }

        /// Signs `message` (one-shot `EVP_DigestSign`, no digest: pure Ed25519).
        public static func sign(seed: [UInt8], message: [UInt8]) throws -> [UInt8] {
            let key = try privateKey(seed)
            defer { EVP_PKEY_free(key) }
            guard let ctx = EVP_MD_CTX_new() else { throw Failure.last("EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(ctx) }
            guard EVP_DigestSignInit(ctx, nil, nil, nil, key) == 1 else { throw Failure.last("EVP_DigestSignInit") }
            var out = [UInt8](repeating: 0, count: signatureLength)
            var len = signatureLength
            let m = message.isEmpty ? [0] : message
            guard EVP_DigestSign(ctx, &out, &len, m, message.count) == 1, len == signatureLength else {
                throw Failure.last("EVP_DigestSign")
            }
            return out
        }

        /// Whether `signature` is a valid Ed25519 signature of `message` by
        /// `publicKey`. Wrong lengths and invalid keys are simply `false`.
        public static func verify(publicKey: [UInt8], signature: [UInt8], message: [UInt8]) -> Bool {
            guard publicKey.count == publicKeyLength, signature.count == signatureLength else { return false }
            guard let key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, publicKey, publicKeyLength) else {
                ERR_clear_error()
                return false
            }
            defer { EVP_PKEY_free(key) }
            guard let ctx = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(ctx) }
            guard EVP_DigestVerifyInit(ctx, nil, nil, nil, key) == 1 else {
                ERR_clear_error()
                return false
            }
            let m = message.isEmpty ? [0] : message
            let ok = EVP_DigestVerify(ctx, signature, signatureLength, m, message.count) == 1
            ERR_clear_error()
            return ok
        }

        private static func privateKey(_ seed: [UInt8]) throws -> OpaquePointer {
            guard seed.count == seedLength else {
                throw Failure(function: "Ed25519: the seed must be \(seedLength) bytes", code: 0)
            }
            guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, seed, seedLength) else {
                throw Failure.last("EVP_PKEY_new_raw_private_key")
            }
            return key
        }
    }
}
