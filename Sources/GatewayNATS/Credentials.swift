import DoorCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The claims of a user JWT the door cares about. `check` is what every JWT
/// must pass: it is this door's (`sub`) and still valid (`exp`).
/// `checkTrusted` is what a JWT pushed over NATS must pass as well (issue 24
/// M2): its issuer (`iss`) is one of the configured account keys, its
/// ed25519 signature over `header.claims` verifies with that key, and it is
/// not issued ahead of the door's clock. A JWT imported by hand
/// (`gatewayctl creds import`) is left to the server to verify.
public struct UserJWT: Equatable, Sendable {
    public var text: String
    public var subject: String
    /// `iss`: the key that signed it (an account's, or one of its signing keys).
    public var issuer: String?
    public var issuedAt: Int64?
    public var expires: Int64?
    public var name: String?
    /// What the signature covers: the first two parts, as sent.
    var signedPart: [UInt8]
    var signature: [UInt8]

    /// How far ahead of the door's clock a pushed JWT's `iat` may be: a
    /// credential service's clock a little ahead, not a JWT dated years on
    /// that makes every real refresh look older.
    public static let maximumIssueSkew: Int64 = 300

    public enum Problem: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case notForThisDoor(subject: String, expected: String)
        case expired(Int64)
        case noAccountKeys
        case untrustedIssuer(String)
        case badSignature(issuer: String)
        case issuedAhead(Int64)
        public var description: String {
            switch self {
            case .malformed(let why): return "not a NATS user JWT: \(why)"
            case .notForThisDoor(let s, let e): return "the JWT is for \(s), not this door's nkey \(e)"
            case .expired(let exp): return "the JWT expired at \(UTCTime.iso8601(exp))"
            case .noAccountKeys:
                return
                    "no [nats] account_keys are configured, so a pushed JWT cannot be verified; set them, or install the JWT with `gatewayctl creds import`"
            case .untrustedIssuer(let iss):
                return "the JWT is signed by \(iss.isEmpty ? "no issuer" : iss), not one of [nats] account_keys"
            case .badSignature(let iss): return "the JWT's signature does not verify with its issuer's key \(iss)"
            case .issuedAhead(let iat):
                return
                    "the JWT is issued at \(UTCTime.iso8601(iat)), more than \(UserJWT.maximumIssueSkew) s ahead of this door's clock"
            }
        }
    }

    /// Parses `header.claims.signature` (base64url); checks the header and that
    /// `sub` is a user public key. Never includes the text in an error.
    public init(_ raw: String) throws(Problem) {
        let text = NATSCredentialFiles.trimmed(raw)
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, text.utf8.count <= 16_384 else {
            throw .malformed("expected three dot-separated parts")
        }
        guard let headerBytes = Base64URL.decode(String(parts[0])),
            let header = try? JSONValue.parse(headerBytes),
            case .string(let alg)? = header["alg"], alg.lowercased().hasPrefix("ed25519")
        else { throw .malformed("the header is not an ed25519-nkey JWT header") }
        guard let claimBytes = Base64URL.decode(String(parts[1])), let claims = try? JSONValue.parse(claimBytes)
        else { throw .malformed("the claims are not base64url JSON") }
        guard let sig = Base64URL.decode(String(parts[2])), sig.count == 64 else {
            throw .malformed("the signature is not 64 bytes")
        }
        guard case .string(let sub)? = claims["sub"], NKey.isUserPublicKey(sub) else {
            throw .malformed("`sub` is not a user nkey")
        }
        if case .object(let nats)? = claims["nats"], let type = nats.first(where: { $0.0 == "type" })?.1,
            type != .string("user")
        {
            throw .malformed("`nats.type` is not \"user\"")
        }
        self.text = text
        subject = sub
        if case .string(let iss)? = claims["iss"] { issuer = iss }
        signedPart = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        signature = sig
        issuedAt = try Self.time(claims["iat"], "iat")
        expires = try Self.time(claims["exp"], "exp")
        if let iat = issuedAt, let exp = expires, exp < iat { throw .malformed("`exp` is before `iat`") }
        if case .string(let n)? = claims["name"] { name = n }
    }

    /// A NumericDate claim: absent, or whole seconds from 1970 to the year
    /// 9999. Anything else is refused, never converted: `1e19` would trap
    /// `Int64(_:)`, and a negative `iat` would overflow `exp - iat`.
    static func time(_ v: JSONValue?, _ name: String) throws(Problem) -> Int64? {
        let value: Int64?
        switch v {
        case nil, .null?: return nil
        case .int(let i)?: value = i
        case .double(let d)?: value = Int64(exactly: d)
        default: value = nil
        }
        guard let value, value >= 0, value <= 253_402_300_799 else {
            throw .malformed("`\(name)` is not a time in whole seconds")
        }
        return value
    }

    /// This JWT for the door whose public key is `publicKey`, unexpired at `now`.
    public func check(publicKey: String, now: Int64) throws(Problem) {
        guard subject == publicKey else { throw .notForThisDoor(subject: subject, expected: publicKey) }
        if let exp = expires, exp <= now { throw .expired(exp) }
    }

    /// Signed by one of `accountKeys` (`A…`: an account's key or its signing
    /// keys): `iss` is one of them and the ed25519 signature over
    /// `header.claims` verifies with it; and `iat` at most
    /// `maximumIssueSkew` after `now`. No keys: nothing can be trusted.
    public func checkTrusted(accountKeys: [String], now: Int64) throws(Problem) {
        guard !accountKeys.isEmpty else { throw .noAccountKeys }
        guard let iss = issuer, accountKeys.contains(iss), let key = NKey.accountKey(iss) else {
            throw .untrustedIssuer(issuer ?? "")
        }
        guard Crypto.Ed25519.verify(publicKey: key, signature: signature, message: signedPart) else {
            throw .badSignature(issuer: iss)
        }
        if !issuedInTime(now: now), let iat = issuedAt { throw .issuedAhead(iat) }
    }

    /// Whether `iat` (if any) is at most `maximumIssueSkew` after `now`.
    public func issuedInTime(now: Int64) -> Bool {
        guard let iat = issuedAt else { return true }
        let (latest, overflow) = now.addingReportingOverflow(Self.maximumIssueSkew)
        return overflow || iat <= latest
    }
}

/// What status and telemetry say about the credentials.
public struct CredentialState: Equatable, Sendable {
    public enum Kind: String, Sendable { case ok, expired, missing, invalid }
    public var kind: Kind
    public var subject: String?
    public var expires: Int64?
    public var expiresIn: Int64?
    public var problem: String?

    public var json: JSONValue {
        .object([
            ("state", .string(kind.rawValue)), ("subject", .optional(subject)),
            ("expires", expires.map { .string(UTCTime.iso8601($0)) } ?? .null),
            ("expires_in", expiresIn.map { .int($0) } ?? .null), ("problem", .optional(problem)),
        ])
    }
}

/// The credential files in the state directory: `user.jwt` (the user JWT,
/// replaced atomically on refresh) and `user.nk` (the nkey seed, 0600). The
/// seed is read here and handed to `nats_Sign` only; it is never logged or
/// printed.
public struct NATSCredentialFiles: Sendable {
    public var jwtPath: String
    public var seedPath: String

    public init(jwtPath: String, seedPath: String) {
        self.jwtPath = jwtPath
        self.seedPath = seedPath
    }

    /// `DIR/user.jwt` and `DIR/user.nk`.
    public init(directory: String) {
        self.init(jwtPath: directory + "/user.jwt", seedPath: directory + "/user.nk")
    }

    public enum Failure: Error, CustomStringConvertible {
        case io(String)
        case invalid(String)
        public var description: String {
            switch self {
            case .io(let m): return m
            case .invalid(let m): return m
            }
        }
    }

    /// The seed (`SU…`), from `user.nk` or a `.creds` file's seed block.
    public func readSeed() throws(Failure) -> String {
        let text = try Self.read(seedPath)
        let seed = Self.block(text, "NKEY SEED") ?? Self.trimmed(text)
        guard NKey.userPublicKey(seed: seed) != nil else {
            throw .invalid("\(seedPath) does not hold a user nkey seed")
        }
        return seed
    }

    /// The JWT text as it is on disk now (a `.creds` file's JWT block, or the JWT alone).
    public func readJWT() throws(Failure) -> String {
        let text = try Self.read(jwtPath)
        return Self.block(text, "JWT") ?? Self.trimmed(text)
    }

    /// The door's public key (from its seed).
    public func publicKey() throws(Failure) -> String {
        guard let key = NKey.userPublicKey(seed: try readSeed()) else { throw .invalid("bad seed") }
        return key
    }

    /// Ok / expired / missing / invalid at `now`.
    public func state(now: Int64) -> CredentialState {
        let text: String
        do { text = try readJWT() } catch {
            return CredentialState(kind: .missing, problem: "\(error)")
        }
        let jwt: UserJWT
        do { jwt = try UserJWT(text) } catch {
            return CredentialState(kind: .invalid, problem: "\(error)")
        }
        var s = CredentialState(
            kind: .ok, subject: jwt.subject, expires: jwt.expires, expiresIn: jwt.expires.map { $0 - now })
        do {
            try jwt.check(publicKey: try publicKey(), now: now)
        } catch let p as UserJWT.Problem {
            if case .expired = p { s.kind = .expired } else { s.kind = .invalid }
            s.problem = "\(p)"
        } catch {
            s.kind = .missing
            s.problem = "\(error)"
        }
        return s
    }

    /// Validates `text` (a `.creds` file, or a bare JWT for the seed already
    /// installed) and installs it: the seed (if the text has one) and the JWT,
    /// each written to a temporary file (0600), fsynced and renamed over.
    @discardableResult
    public func install(_ text: String, now: Int64) throws -> UserJWT {
        let jwtText = Self.block(text, "JWT") ?? Self.trimmed(text)
        let seed = Self.block(text, "NKEY SEED")
        let jwt = try UserJWT(jwtText)
        let publicKey: String
        if let seed {
            guard let key = NKey.userPublicKey(seed: seed) else {
                throw Failure.invalid("the seed is not a user nkey seed")
            }
            publicKey = key
        } else {
            publicKey = try self.publicKey()
        }
        try jwt.check(publicKey: publicKey, now: now)
        if let seed { try Self.writeAtomically(seedPath, seed + "\n") }
        try Self.writeAtomically(jwtPath, jwt.text + "\n")
        return jwt
    }

    // MARK: Files

    static func read(_ path: String) throws(Failure) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io("\(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= 65_536 {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0 { throw .io("\(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= 65_536 else { throw .invalid("\(path) is over 64 KiB") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Run as root (`sudo gatewayctl creds import`), the files and the
    /// directories made for them get the owner of the nearest existing
    /// directory above them (the state directory, gatewayd's user): a
    /// root-owned 0600 seed would be unreadable by the daemon.
    static func writeAtomically(_ path: String, _ text: String) throws(Failure) {
        let dir = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        var owner: (uid: uid_t, gid: gid_t)?
        if !dir.isEmpty {
            // Missing directories on the way (the state directory itself
            // normally exists) are made 0700.
            var prefix = ""
            for part in dir.split(separator: "/") {
                prefix += "/" + part
                let d = dir.hasPrefix("/") ? prefix : String(prefix.dropFirst())
                if mkdir(d, 0o700) == 0 {
                    if geteuid() == 0, let owner { _ = chown(d, owner.uid, owner.gid) }
                } else {
                    var st = stat()
                    if stat(d, &st) == 0 { owner = (st.st_uid, st.st_gid) }
                }
            }
        }
        let tmp = path + ".tmp.\(getpid())"
        // A leftover of a crashed run is replaced; never followed if a link.
        unlink(tmp)
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io("\(tmp): \(String(cString: strerror(errno)))") }
        if geteuid() == 0, let owner { _ = fchown(fd, owner.uid, owner.gid) }
        let bytes = Array(text.utf8)
        let ok = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
        let synced = fchmod(fd, 0o600) == 0 && fsync(fd) == 0
        close(fd)
        guard ok && synced, rename(tmp, path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(tmp)
            throw .io("\(path): \(why)")
        }
        if !dir.isEmpty {
            let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dfd >= 0 {
                fsync(dfd)
                close(dfd)
            }
        }
    }

    /// The body of a `-----BEGIN … <what>-----` block of a `.creds` file.
    static func block(_ text: String, _ what: String) -> String? {
        var inside = false
        for line in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let l = trimmed(String(line))
            if l.hasPrefix("-----BEGIN") && l.includes(what) {
                inside = true
                continue
            }
            if inside {
                if l.hasPrefix("---") { return nil }
                if !l.isEmpty { return l }
            }
        }
        return nil
    }

    static func trimmed(_ s: String) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let f = s.firstIndex(where: { !blank($0) }), let l = s.lastIndex(where: { !blank($0) }) else {
            return ""
        }
        return String(s[f...l])
    }
}
