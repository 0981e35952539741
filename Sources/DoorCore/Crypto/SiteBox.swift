import COpenSSL

/// The fleet's "site box" (docs/fleet.md "Secrets"): secrets sealed to the
/// site's X25519 public key, whose private part each door receives at
/// enrollment. Sealing: an ephemeral X25519 key, HKDF-SHA256 of the shared
/// secret (salt = ephemeral public key ‖ box public key, info = the
/// caller's context), AES-256-GCM with a random 96-bit nonce and the context
/// as additional data. All through libcrypto (`EVP_PKEY_X25519`,
/// HMAC-SHA256 for HKDF, `EVP_aes_256_gcm`); every failure a `Crypto.Failure`.
extension Crypto {
    public enum SiteBox {
        public static let keyLength = 32
        public static let nonceLength = 12
        public static let tagLength = 16

        public struct Sealed: Equatable, Sendable {
            public var ephemeralPublicKey: [UInt8]
            public var nonce: [UInt8]
            /// Ciphertext followed by the 16-byte GCM tag.
            public var ciphertext: [UInt8]
            public init(ephemeralPublicKey: [UInt8], nonce: [UInt8], ciphertext: [UInt8]) {
                self.ephemeralPublicKey = ephemeralPublicKey
                self.nonce = nonce
                self.ciphertext = ciphertext
            }
        }

        public static func generatePrivateKey() throws -> [UInt8] { try randomBytes(keyLength) }

        /// The X25519 public key of a private key.
        public static func publicKey(privateKey: [UInt8]) throws -> [UInt8] {
            let key = try x25519Private(privateKey)
            defer { EVP_PKEY_free(key) }
            return try rawPublic(key)
        }

        public static func seal(_ plaintext: [UInt8], to boxPublicKey: [UInt8], context: [UInt8]) throws -> Sealed {
            let ephemeral = try generatePrivateKey()
            let epk = try publicKey(privateKey: ephemeral)
            let shared = try x25519(privateKey: ephemeral, peerPublicKey: boxPublicKey)
            let key = try hkdfSHA256(ikm: shared, salt: epk + boxPublicKey, info: context, length: 32)
            let nonce = try randomBytes(nonceLength)
            let ct = try aes256GCM(.encrypt, key: key, nonce: nonce, aad: context, input: plaintext)
            return Sealed(ephemeralPublicKey: epk, nonce: nonce, ciphertext: ct)
        }

        /// Opens a sealed box; a wrong key, context or any altered byte is a `Failure`.
        public static func open(_ sealed: Sealed, boxPrivateKey: [UInt8], context: [UInt8]) throws -> [UInt8] {
            guard sealed.ephemeralPublicKey.count == keyLength, sealed.nonce.count == nonceLength,
                sealed.ciphertext.count >= tagLength
            else { throw Failure(function: "SiteBox.open: malformed box", code: 0) }
            let boxPublic = try publicKey(privateKey: boxPrivateKey)
            let shared = try x25519(privateKey: boxPrivateKey, peerPublicKey: sealed.ephemeralPublicKey)
            let key = try hkdfSHA256(
                ikm: shared, salt: sealed.ephemeralPublicKey + boxPublic, info: context, length: 32)
            return try aes256GCM(.decrypt, key: key, nonce: sealed.nonce, aad: context, input: sealed.ciphertext)
        }

        // MARK: Primitives

        static func x25519(privateKey: [UInt8], peerPublicKey: [UInt8]) throws -> [UInt8] {
            guard peerPublicKey.count == keyLength else {
                throw Failure(function: "X25519: the public key must be 32 bytes", code: 0)
            }
            let mine = try x25519Private(privateKey)
            defer { EVP_PKEY_free(mine) }
            guard let peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nil, peerPublicKey, keyLength) else {
                throw Failure.last("EVP_PKEY_new_raw_public_key")
            }
            defer { EVP_PKEY_free(peer) }
            guard let ctx = EVP_PKEY_CTX_new(mine, nil) else { throw Failure.last("EVP_PKEY_CTX_new") }
            defer { EVP_PKEY_CTX_free(ctx) }
            guard EVP_PKEY_derive_init(ctx) == 1, EVP_PKEY_derive_set_peer(ctx, peer) == 1 else {
                throw Failure.last("EVP_PKEY_derive_set_peer")
            }
            var out = [UInt8](repeating: 0, count: keyLength)
            var len = keyLength
            guard EVP_PKEY_derive(ctx, &out, &len) == 1, len == keyLength else {
                throw Failure.last("EVP_PKEY_derive")
            }
            // An all-zero shared secret: a low-order peer key.
            guard out.contains(where: { $0 != 0 }) else { throw Failure(function: "X25519: low-order key", code: 0) }
            return out
        }

        /// HKDF-SHA256 (RFC 5869), extract then expand, on libcrypto's HMAC
        /// (`Crypto.hmacSHA256`; the shim does not include `openssl/kdf.h`).
        public static func hkdfSHA256(ikm: [UInt8], salt: [UInt8], info: [UInt8], length: Int) throws -> [UInt8] {
            guard length > 0, length <= 255 * 32 else { throw Failure(function: "HKDF: length 1…8160", code: 0) }
            let prk = hmacSHA256(key: salt.isEmpty ? [UInt8](repeating: 0, count: 32) : salt, message: ikm)
            var okm: [UInt8] = []
            var t: [UInt8] = []
            var counter: UInt8 = 1
            while okm.count < length {
                t = hmacSHA256(key: prk, message: t + info + [counter])
                okm += t
                counter &+= 1
            }
            return Array(okm.prefix(length))
        }

        /// AES-256-GCM; encrypt appends the 16-byte tag, decrypt checks it.
        public static func aes256GCM(
            _ direction: Direction, key: [UInt8], nonce: [UInt8], aad: [UInt8], input: [UInt8]
        ) throws -> [UInt8] {
            guard key.count == 32, nonce.count == nonceLength else {
                throw Failure(function: "AES-256-GCM: 32-byte key and 12-byte nonce expected", code: 0)
            }
            let body: [UInt8], tag: [UInt8]
            if direction == .decrypt {
                guard input.count >= tagLength else { throw Failure(function: "AES-256-GCM: no tag", code: 0) }
                body = Array(input.dropLast(tagLength))
                tag = Array(input.suffix(tagLength))
            } else {
                body = input
                tag = []
            }
            guard let ctx = EVP_CIPHER_CTX_new() else { throw Failure.last("EVP_CIPHER_CTX_new") }
            defer { EVP_CIPHER_CTX_free(ctx) }
            let enc: Int32 = direction == .encrypt ? 1 : 0
            guard EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce, enc) == 1 else {
                throw Failure.last("EVP_CipherInit_ex")
            }
            var n: Int32 = 0
            if !aad.isEmpty {
                guard EVP_CipherUpdate(ctx, nil, &n, aad, Int32(aad.count)) == 1 else {
                    throw Failure.last("EVP_CipherUpdate(aad)")
                }
            }
            var out = [UInt8](repeating: 0, count: body.count + 16)
            var written: Int32 = 0
            if !body.isEmpty {
                guard EVP_CipherUpdate(ctx, &out, &written, body, Int32(body.count)) == 1 else {
                    throw Failure.last("EVP_CipherUpdate")
                }
            }
            if direction == .decrypt {
                var t = tag
                guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &t) == 1 else {
                    throw Failure.last("EVP_CTRL_GCM_SET_TAG")
                }
            }
            var final: Int32 = 0
            let ok = out.withUnsafeMutableBufferPointer {
                EVP_CipherFinal_ex(ctx, $0.baseAddress! + Int(written), &final)
            }
            guard ok == 1 else {
                ERR_clear_error()
                throw Failure(function: "AES-256-GCM: authentication failed", code: 0)
            }
            var result = Array(out.prefix(Int(written + final)))
            if direction == .encrypt {
                var t = [UInt8](repeating: 0, count: tagLength)
                guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), &t) == 1 else {
                    throw Failure.last("EVP_CTRL_GCM_GET_TAG")
                }
                result += t
            }
            return result
        }

        private static func x25519Private(_ raw: [UInt8]) throws -> OpaquePointer {
            guard raw.count == keyLength else {
                throw Failure(function: "X25519: the private key must be 32 bytes", code: 0)
            }
            guard let key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nil, raw, keyLength) else {
                throw Failure.last("EVP_PKEY_new_raw_private_key")
            }
            return key
        }

        private static func rawPublic(_ key: OpaquePointer) throws -> [UInt8] {
            var out = [UInt8](repeating: 0, count: keyLength)
            var len = keyLength
            guard EVP_PKEY_get_raw_public_key(key, &out, &len) == 1, len == keyLength else {
                throw Failure.last("EVP_PKEY_get_raw_public_key")
            }
            return out
        }
    }
}
