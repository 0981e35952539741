/// A fleet document (docs/fleet.md): the site's shared state — revocations
/// and issued v2 tags — as one signed, versioned snapshot. Each document
/// carries the whole state, so a door that missed ten documents catches up
/// with the newest one alone; versions only go forward.
///
/// On the wire it is an envelope, `{"fleet":1,"body":"<base64url>","sig":"<base64url>"}`:
/// the signature is over the exact body bytes (prefixed with
/// `FleetDocument.signingContext`), so no canonical JSON is needed and a
/// body is parsed only after its signature checked.
public struct FleetDocument: Equatable, Sendable {
    /// A shared issued tag: a v2 sticker written at one door, honoured at the
    /// others that define its action.
    public struct Tag: Equatable, Sendable {
        public var uid: TagUID
        public var action: ActionIndex
        public var label: String
        public var validUntil: Int64?
        /// The credential kind when it is not a sticker (issue 26): `ntag424`
        /// for an NTAG 424 DNA the site's master key provisioned. Nil in the
        /// body of a sticker and in an older build's document (a sticker).
        public var credential: String?
        /// An NTAG 424's key issue (salt and key version, docs/ntag424.md
        /// "Re-issuing a tag"): a door derives the tag's keys from it, so a
        /// reissue at one door retires the old keys at every door that applies
        /// the document. Nil for other kinds and for a 424 provisioned before salts.
        public var keyIssue: NTAG424.KeyIssue?
        public init(
            uid: TagUID, action: ActionIndex, label: String = "", validUntil: Int64? = nil, credential: String? = nil,
            keyIssue: NTAG424.KeyIssue? = nil
        ) {
            self.keyIssue = keyIssue
            self.uid = uid
            self.action = action
            self.label = label
            self.validUntil = validUntil
            self.credential = credential
        }

        /// The credential kinds a fleet carries besides stickers (an entry
        /// without `credential`): what `fleet push` writes, from rows of
        /// these kinds, and what a door stores from a document. Any other
        /// name — `ntag424-sun` (an action's tier, never a row), a sticker
        /// kind spelled out, a newer build's kind — is an entry a door skips
        /// and reports (docs/fleet.md "Entries a door cannot store").
        public static let carriedCredentials: Set<String> = [
            CredentialKind.ntag424.rawValue, CredentialKind.uid.rawValue,
        ]

        /// Whether a door stores this entry as what it says: a sticker, or a kind the fleet carries.
        public var isCarried: Bool { credential.map(Self.carriedCredentials.contains) ?? true }

        /// A credential name: 1–32 of a–z, 0–9 and `-`.
        static func isCredentialName(_ s: String) -> Bool {
            (1...32).contains(s.utf8.count)
                && s.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D }
        }
    }

    public var site: String
    public var version: Int64
    /// Who pushed it: the door that published it and the operator's tag.
    public var origin: String
    /// When it was signed (Unix seconds; informative only).
    public var issued: Int64
    /// Revoked UIDs (hex, upper case as `TagUID.hex`).
    public var revokedUIDs: [TagUID]
    /// Revoked v1 sticker signatures (lower-case hex).
    public var revokedSignatures: [[UInt8]]
    public var tags: [Tag]
    /// Removed sticker secrets (issue 24 M1): the SHA-256 of each removed
    /// key (`FleetDocument.tombstone(of:)`), never the key. Every door
    /// deactivates a held secret whose key hashes to one, and never adds or
    /// re-activates it. In the clear (a hash of 32 random bytes gives nothing
    /// away), so a removal travels with every push, `--secrets` or not.
    /// A body without the list (an older build's) carries none: it lifts no
    /// tombstone a door holds.
    public var secretTombstones: [[UInt8]]
    /// Action secrets and remote keys sealed to the site box (`FleetSecrets`), when pushed with them.
    public var sealedSecrets: Crypto.SiteBox.Sealed?

    public init(
        site: String, version: Int64, origin: String, issued: Int64, revokedUIDs: [TagUID] = [],
        revokedSignatures: [[UInt8]] = [], tags: [Tag] = [], secretTombstones: [[UInt8]] = [],
        sealedSecrets: Crypto.SiteBox.Sealed? = nil
    ) {
        self.site = site
        self.version = version
        self.origin = origin
        self.issued = issued
        self.revokedUIDs = revokedUIDs
        self.revokedSignatures = revokedSignatures
        self.tags = tags
        self.secretTombstones = secretTombstones
        self.sealedSecrets = sealedSecrets
    }

    /// The tombstone of a removed sticker secret: the SHA-256 of its key
    /// (the summary's fingerprint is its first 8 hex digits).
    public static func tombstone(of key: [UInt8]) -> [UInt8] { Crypto.sha256(key) }

    /// The envelope format number.
    public static let format: Int64 = 1
    /// Prefixed to the body bytes before signing: a signature over a fleet
    /// body can never be mistaken for one over anything else.
    public static let signingContext = Array("doorgateway-fleet-v1\n".utf8)
    /// Documents larger than this are refused unparsed.
    public static let maximumBytes = 4 << 20
    /// Bounds the lists (a document is a snapshot, not a database dump).
    public static let maximumEntries = 50_000

    // MARK: Body

    /// One tag entry of the body. `credential` only when there is one, `key_version`
    /// and `key_salt` only for a 424 with an issue: a sticker's entry is byte for byte
    /// an older build's. (Built step by step: Swift 6.0.3, the Pi's compiler, gives up
    /// type-checking it as one expression.)
    static func tagJSON(_ t: Tag) -> JSONValue {
        var fields: [(String, JSONValue)] = [
            ("uid", .string(t.uid.hex)), ("action", .int(t.action)), ("label", .string(t.label)),
        ]
        fields.append(("valid_until", t.validUntil.map { JSONValue.int($0) } ?? .null))
        if let credential = t.credential { fields.append(("credential", .string(credential))) }
        if let issue = t.keyIssue {
            fields.append(("key_version", .int(Int(issue.version))))
            if let salt = issue.salt { fields.append(("key_salt", .string(Hex.encode(salt)))) }
        }
        return .object(fields)
    }

    /// The body's JSON (key order fixed; what gets signed).
    public var bodyJSON: JSONValue {
        var fields: [(String, JSONValue)] = [
            ("site", .string(site)),
            ("version", .int(version)),
            ("origin", .string(origin)),
            ("issued", .int(issued)),
            (
                "revocations",
                .object([
                    ("uids", .array(revokedUIDs.map { .string($0.hex) })),
                    ("signatures", .array(revokedSignatures.map { .string(Hex.encode($0)) })),
                ])
            ),
            ("tags", .array(tags.map(Self.tagJSON))),
        ]
        // Only when there are some: a body without removals is byte for byte
        // what builds before M1 signed.
        if !secretTombstones.isEmpty {
            fields.append(("secret_tombstones", .array(secretTombstones.map { .string(Hex.encode($0)) })))
        }
        if let box = sealedSecrets {
            fields.append(
                (
                    "secrets",
                    .object([
                        ("epk", .string(Base64URL.encode(box.ephemeralPublicKey))),
                        ("nonce", .string(Base64URL.encode(box.nonce))),
                        ("ct", .string(Base64URL.encode(box.ciphertext))),
                    ])
                ))
        }
        return .object(fields)
    }

    public var bodyBytes: [UInt8] { Array(bodyJSON.serialized.utf8) }

    /// Parses a body (after its signature checked). Every problem is a
    /// `FleetError.malformed` naming the field.
    public static func parseBody(_ bytes: [UInt8]) throws(FleetError) -> FleetDocument {
        let json: JSONValue
        do {
            json = try JSONValue.parse(bytes, maxDepth: 8, maxBytes: maximumBytes)
        } catch {
            throw .malformed("body: \(error)")
        }
        guard case .object = json else { throw .malformed("body: not an object") }
        func string(_ key: String, in v: JSONValue, max: Int) throws(FleetError) -> String {
            guard case .string(let s)? = v[key] else { throw .malformed("\(key): a string is required") }
            guard !s.isEmpty, s.utf8.count <= max else { throw .malformed("\(key): 1…\(max) bytes") }
            return s
        }
        func int(_ key: String, in v: JSONValue) throws(FleetError) -> Int64 {
            guard case .int(let i)? = v[key] else { throw .malformed("\(key): an integer is required") }
            return i
        }
        func list(_ v: JSONValue?, _ key: String) throws(FleetError) -> [JSONValue] {
            guard case .array(let items)? = v else { throw .malformed("\(key): a list is required") }
            guard items.count <= maximumEntries else { throw .malformed("\(key): more than \(maximumEntries)") }
            return items
        }
        let site = try string("site", in: json, max: 64)
        let version = try int("version", in: json)
        guard version > 0 else { throw .malformed("version: must be positive") }
        let origin = try string("origin", in: json, max: 256)
        let issued = try int("issued", in: json)
        guard let revocations = json["revocations"], case .object = revocations else {
            throw .malformed("revocations: an object is required")
        }
        var uids: [TagUID] = []
        for item in try list(revocations["uids"], "revocations.uids") {
            guard case .string(let hex) = item, let uid = TagUID(hex: hex) else {
                throw .malformed("revocations.uids: a UID in hex is expected")
            }
            uids.append(uid)
        }
        var signatures: [[UInt8]] = []
        for item in try list(revocations["signatures"], "revocations.signatures") {
            guard case .string(let hex) = item, let sig = Hex.decode(hex), !sig.isEmpty, sig.count <= 64 else {
                throw .malformed("revocations.signatures: a signature in hex is expected")
            }
            signatures.append(sig)
        }
        var tags: [Tag] = []
        for item in try list(json["tags"], "tags") {
            guard case .object = item, case .string(let hex)? = item["uid"], let uid = TagUID(hex: hex) else {
                throw .malformed("tags: each needs a uid in hex")
            }
            guard case .int(let action)? = item["action"], (0...255).contains(action) else {
                throw .malformed("tags[\(hex)].action: 0…255 expected")
            }
            var label = ""
            if case .string(let l)? = item["label"] {
                guard l.utf8.count <= 256 else { throw .malformed("tags[\(hex)].label: at most 256 bytes") }
                label = l
            }
            var until: Int64?
            switch item["valid_until"] {
            case .int(let u)?: until = u
            case .null?, nil: until = nil
            default: throw .malformed("tags[\(hex)].valid_until: an integer or null is expected")
            }
            var credential: String?
            switch item["credential"] {
            case .string(let c)? where Tag.isCredentialName(c): credential = c
            case .null?, nil: credential = nil
            default: throw .malformed("tags[\(hex)].credential: a credential name (a–z, 0–9, -) is expected")
            }
            var keyIssue: NTAG424.KeyIssue?
            switch (item["key_version"], item["key_salt"]) {
            case (nil, nil), (.null?, nil), (.null?, .null?), (nil, .null?): keyIssue = nil
            case (.int(let v)?, let salt):
                var bytes: [UInt8]?
                switch salt {
                case .string(let h)?:
                    guard let b = Hex.decode(h) else { throw .malformed("tags[\(hex)].key_salt: hex expected") }
                    bytes = b
                case .null?, nil: bytes = nil
                default: throw .malformed("tags[\(hex)].key_salt: hex expected")
                }
                let issue = NTAG424.KeyIssue(salt: bytes, version: UInt8(clamping: v))
                guard (1...255).contains(v), issue.isWellFormed else {
                    throw .malformed(
                        "tags[\(hex)].key_version/key_salt: a 16-byte salt with version 2…255, or version 1 alone")
                }
                // Version 1 without a salt is the legacy issue: the same as none (it changes no door's issue).
                keyIssue = issue.salt == nil ? nil : issue
            default: throw .malformed("tags[\(hex)].key_version: an integer is expected with key_salt")
            }
            tags.append(
                Tag(
                    uid: uid, action: ActionIndex(action), label: label, validUntil: until, credential: credential,
                    keyIssue: keyIssue))
        }
        var tombstones: [[UInt8]] = []
        if let present = json["secret_tombstones"] {
            for item in try list(present, "secret_tombstones") {
                guard case .string(let hex) = item, let hash = Hex.decode(hex), hash.count == 32 else {
                    throw .malformed("secret_tombstones: a SHA-256 in hex (64 digits) is expected")
                }
                tombstones.append(hash)
            }
        }
        var sealed: Crypto.SiteBox.Sealed?
        if let box = json["secrets"] {
            guard case .string(let e)? = box["epk"], let epk = Base64URL.decode(e),
                epk.count == Crypto.SiteBox.keyLength,
                case .string(let n)? = box["nonce"], let nonce = Base64URL.decode(n),
                nonce.count == Crypto.SiteBox.nonceLength,
                case .string(let c)? = box["ct"], let ct = Base64URL.decode(c), ct.count >= Crypto.SiteBox.tagLength
            else { throw .malformed("secrets: epk, nonce and ct in base64url expected") }
            sealed = Crypto.SiteBox.Sealed(ephemeralPublicKey: epk, nonce: nonce, ciphertext: ct)
        }
        return FleetDocument(
            site: site, version: version, origin: origin, issued: issued, revokedUIDs: uids,
            revokedSignatures: signatures, tags: tags, secretTombstones: tombstones, sealedSecrets: sealed)
    }

    // MARK: Envelope

    /// Signs the body with the site's Ed25519 seed: the bytes to publish.
    public func signed(seed: [UInt8]) throws -> [UInt8] {
        let body = bodyBytes
        let sig = try Crypto.Ed25519.sign(seed: seed, message: Self.signingContext + body)
        return Self.envelope(body: body, signature: sig)
    }

    public static func envelope(body: [UInt8], signature: [UInt8]) -> [UInt8] {
        Array(
            JSONValue.object([
                ("fleet", .int(format)), ("body", .string(Base64URL.encode(body))),
                ("sig", .string(Base64URL.encode(signature))),
            ]).serialized.utf8)
    }

    /// The envelope's parts, unverified.
    public static func openEnvelope(_ bytes: [UInt8]) throws(FleetError) -> (body: [UInt8], signature: [UInt8]) {
        guard !bytes.isEmpty else { throw .malformed("empty document") }
        // base64 grows the body by 4/3.
        guard bytes.count <= maximumBytes / 3 * 4 + 1024 else { throw .malformed("document too large") }
        let json: JSONValue
        do {
            json = try JSONValue.parse(bytes, maxDepth: 2, maxBytes: maximumBytes / 3 * 4 + 1024)
        } catch {
            throw .malformed("\(error)")
        }
        guard case .int(format)? = json["fleet"] else { throw .malformed("fleet: format \(format) expected") }
        guard case .string(let b)? = json["body"], let body = Base64URL.decode(b), !body.isEmpty else {
            throw .malformed("body: base64url expected")
        }
        guard case .string(let s)? = json["sig"], let sig = Base64URL.decode(s),
            sig.count == Crypto.Ed25519.signatureLength
        else {
            throw .malformed("sig: a 64-byte base64url signature expected")
        }
        return (body, sig)
    }
}

/// Why a fleet document is not applied. `reason` is the audit log's reason.
public enum FleetError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not an envelope, or a body that does not parse (after its signature checked).
    case malformed(String)
    /// The signature does not verify with the site public key.
    case badSignature
    /// Signed by our site key for another site ID.
    case wrongSite(String)
    /// Not newer than what this door applied.
    case stale(version: Int64, applied: Int64)
    /// Accepted, but the door's store refuses it for a reason retrying does
    /// not change (a database constraint it breaks): refused, not retried.
    case notStorable(version: Int64, why: String)

    public var reason: String {
        switch self {
        case .malformed: return "malformed"
        case .badSignature: return "bad_signature"
        case .wrongSite: return "wrong_site"
        case .stale: return "stale"
        case .notStorable: return "not_storable"
        }
    }

    public var description: String {
        switch self {
        case .malformed(let why): return "malformed fleet document: \(why)"
        case .badSignature: return "the signature does not verify with the site public key"
        case .wrongSite(let site): return "signed for site \"\(site.prefix(64))\", not this door's"
        case .stale(let v, let a): return "version \(v) is not newer than the applied version \(a)"
        case .notStorable(let v, let why): return "version \(v) cannot be stored here: \(why)"
        }
    }
}
