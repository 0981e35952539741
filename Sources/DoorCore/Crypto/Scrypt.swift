import COpenSSL

extension Crypto {
    /// scrypt's cost (RFC 7914): N = 2^logN, block size r, parallelism p.
    public struct ScryptCost: Equatable, Hashable, Sendable {
        public var logN: UInt8
        public var r: UInt32
        public var p: UInt32
        public init(logN: UInt8, r: UInt32, p: UInt32) {
            self.logN = logN
            self.r = r
            self.p = p
        }
        /// A keypad PIN's (issue 35): N = 16384, r = 8, p = 1 — 16 MiB and
        /// about a tenth of a second on a Raspberry Pi 3 per try, so a stolen
        /// store costs a guesser that per PIN tried. A 4–12 digit PIN has few
        /// guesses; the door's per-reader lockout is what holds it at the door.
        public static let pin = ScryptCost(logN: 14, r: 8, p: 1)
        /// The memory one derivation takes (128 · r · N · p bytes, and a margin).
        var memory: UInt64 { 128 * UInt64(r) * (UInt64(1) << UInt64(logN)) * UInt64(p) + 1 << 20 }
    }

    /// An OSSL_PARAM key: the parameter keeps the pointer, so it must be a
    /// static string's (a Swift string literal passed as `char *` lives only
    /// for the call).
    static func key(_ name: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// scrypt (RFC 7914) through OpenSSL 3's `EVP_KDF` "SCRYPT".
    public static func scrypt(password: [UInt8], salt: [UInt8], cost: ScryptCost, length: Int) throws -> [UInt8] {
        guard (1...20).contains(cost.logN), cost.r > 0, cost.p > 0, (1...64).contains(length) else {
            throw Failure(function: "scrypt: cost or length out of range", code: 0)
        }
        guard let kdf = EVP_KDF_fetch(nil, "SCRYPT", nil) else { throw Failure.last("EVP_KDF_fetch(SCRYPT)") }
        defer { EVP_KDF_free(kdf) }
        guard let ctx = EVP_KDF_CTX_new(kdf) else { throw Failure.last("EVP_KDF_CTX_new") }
        defer { EVP_KDF_CTX_free(ctx) }
        // OSSL_PARAM holds pointers until the derivation: every value lives
        // in memory allocated here, freed (the password wiped) after it.
        let pass = UnsafeMutableRawPointer.allocate(byteCount: max(1, password.count), alignment: 8)
        let salted = UnsafeMutableRawPointer.allocate(byteCount: max(1, salt.count), alignment: 8)
        let n = UnsafeMutablePointer<UInt64>.allocate(capacity: 2)
        let rp = UnsafeMutablePointer<UInt32>.allocate(capacity: 2)
        defer {
            OPENSSL_cleanse(pass, max(1, password.count))
            pass.deallocate()
            salted.deallocate()
            n.deallocate()
            rp.deallocate()
        }
        password.withUnsafeBytes { if let b = $0.baseAddress { pass.copyMemory(from: b, byteCount: $0.count) } }
        salt.withUnsafeBytes { if let b = $0.baseAddress { salted.copyMemory(from: b, byteCount: $0.count) } }
        n.initialize(to: UInt64(1) << UInt64(cost.logN))
        (n + 1).initialize(to: cost.memory)
        rp.initialize(to: cost.r)
        (rp + 1).initialize(to: cost.p)
        let params: [OSSL_PARAM] = [
            OSSL_PARAM_construct_octet_string(Self.key("pass"), pass, password.count),
            OSSL_PARAM_construct_octet_string(Self.key("salt"), salted, salt.count),
            OSSL_PARAM_construct_uint64(Self.key("n"), n),
            OSSL_PARAM_construct_uint32(Self.key("r"), rp),
            OSSL_PARAM_construct_uint32(Self.key("p"), rp + 1),
            OSSL_PARAM_construct_uint64(Self.key("maxmem_bytes"), n + 1),
            OSSL_PARAM_construct_end(),
        ]
        var out = [UInt8](repeating: 0, count: length)
        let ok = params.withUnsafeBufferPointer { EVP_KDF_derive(ctx, &out, out.count, $0.baseAddress) }
        guard ok == 1 else { throw Failure.last("EVP_KDF_derive(SCRYPT)") }
        return out
    }
}
