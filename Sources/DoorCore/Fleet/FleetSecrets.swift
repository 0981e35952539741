/// What a fleet document carries sealed to the site box (docs/fleet.md
/// "Secrets"): action secrets (sticker signing keys, docs/formats.md §1) and the
/// remote keys (docs/formats.md §3 `otp-auth` AES key, docs/formats.md §5 native command key).
/// Never on the broker in clear: `seal` encrypts the JSON to the site box
/// public key, bound to the site and version (the AEAD's additional data),
/// so a sealed part cannot be moved into another document.
public struct FleetSecrets: Equatable, Sendable {
    public struct Secret: Equatable, Sendable {
        public var action: ActionIndex
        public var key: [UInt8]
        public var label: String
        /// Kept from the door that sealed it: a gateway-generated secret must
        /// stay one at every door, or the v2 stickers it signed would pass as
        /// v1 (docs/formats.md §4: v1 is never accepted with generated secrets) once
        /// their `u=` is cut off.
        public var origin: SecretOrigin
        public init(action: ActionIndex, key: [UInt8], label: String = "", origin: SecretOrigin) {
            self.action = action
            self.key = key
            self.label = label
            self.origin = origin
        }
    }
    public var secrets: [Secret]
    /// docs/formats.md §3: 16 bytes.
    public var compatTimestampKey: [UInt8]?
    /// docs/formats.md §5: 32 bytes.
    public var nativeCommandKey: [UInt8]?
    /// Each remote key's generation (issue 24 M1): one more at every local
    /// `keys … new|import`; a door takes a document's key only when its
    /// generation is greater than the one it holds, so a push of the key
    /// that a rotation replaced never rolls the rotation back. Nil in the
    /// secrets of an older build's document: such a key is taken only by a
    /// door that holds none.
    public var compatTimestampGeneration: Int64?
    public var nativeCommandGeneration: Int64?
    /// The site's NTAG 424 DNA master key (issue 26; 16 bytes): every tag's
    /// keys are diversified from it, so a 424 provisioned at one door opens
    /// the others. Nil when the pushing door holds none (or an older build).
    public var ntag424MasterKey: [UInt8]?

    public init(
        secrets: [Secret] = [], compatTimestampKey: [UInt8]? = nil, nativeCommandKey: [UInt8]? = nil,
        compatTimestampGeneration: Int64? = nil, nativeCommandGeneration: Int64? = nil,
        ntag424MasterKey: [UInt8]? = nil
    ) {
        self.ntag424MasterKey = ntag424MasterKey
        self.secrets = secrets
        self.compatTimestampKey = compatTimestampKey
        self.nativeCommandKey = nativeCommandKey
        self.compatTimestampGeneration = compatTimestampGeneration
        self.nativeCommandGeneration = nativeCommandGeneration
    }

    static func context(site: String, version: Int64) -> [UInt8] {
        Array("doorgateway-fleet-secrets-v1\n\(site)\n\(version)".utf8)
    }

    var json: JSONValue {
        var fields: [(String, JSONValue)] = [
            (
                "secrets",
                .array(
                    secrets.map {
                        .object([
                            ("action", .int($0.action)), ("key", .string(Hex.encode($0.key))),
                            ("label", .string($0.label)), ("origin", .string($0.origin.rawValue)),
                        ])
                    })
            ),
            ("compat_timestamp", compatTimestampKey.map { .string(Hex.encode($0)) } ?? .null),
            ("native_command", nativeCommandKey.map { .string(Hex.encode($0)) } ?? .null),
        ]
        if let g = compatTimestampGeneration { fields.append(("compat_timestamp_generation", .int(g))) }
        if let g = nativeCommandGeneration { fields.append(("native_command_generation", .int(g))) }
        if let k = ntag424MasterKey { fields.append(("ntag424_master_key", .string(Hex.encode(k)))) }
        return .object(fields)
    }

    public func seal(to boxPublicKey: [UInt8], site: String, version: Int64) throws -> Crypto.SiteBox.Sealed {
        try Crypto.SiteBox.seal(
            Array(json.serialized.utf8), to: boxPublicKey, context: Self.context(site: site, version: version))
    }

    /// Opens the document's sealed part with the site box private key.
    public static func open(_ document: FleetDocument, boxPrivateKey: [UInt8]) throws(FleetError) -> FleetSecrets? {
        guard let sealed = document.sealedSecrets else { return nil }
        let plain: [UInt8]
        do {
            plain = try Crypto.SiteBox.open(
                sealed, boxPrivateKey: boxPrivateKey, context: context(site: document.site, version: document.version))
        } catch {
            throw .malformed("secrets: cannot open the site box (another site box key?)")
        }
        let json: JSONValue
        do { json = try JSONValue.parse(plain, maxDepth: 4, maxBytes: 1 << 20) } catch {
            throw .malformed("secrets: \(error)")
        }
        guard case .array(let items)? = json["secrets"], items.count <= 10_000 else {
            throw .malformed("secrets: a list is expected")
        }
        var out = FleetSecrets()
        for item in items {
            guard case .int(let a)? = item["action"], (0...255).contains(a), case .string(let k)? = item["key"],
                let key = Hex.decode(k), key.count == 32
            else { throw .malformed("secrets: each needs an action and a 32-byte key") }
            var label = ""
            if case .string(let l)? = item["label"] { label = String(l.prefix(64)) }
            // No origin, or one this build does not know: generated, the
            // stricter of the two (v2 stickers only).
            var origin = SecretOrigin.generated
            if case .string(let o)? = item["origin"], let known = SecretOrigin(rawValue: o) { origin = known }
            out.secrets.append(Secret(action: ActionIndex(a), key: key, label: label, origin: origin))
        }
        func key(_ name: String, _ length: Int) throws(FleetError) -> [UInt8]? {
            switch json[name] {
            case .null?, nil: return nil
            case .string(let h)? where Hex.decode(h)?.count == length: return Hex.decode(h)
            default: throw .malformed("secrets.\(name): \(length) bytes in hex expected")
            }
        }
        out.compatTimestampKey = try key("compat_timestamp", 16)
        out.nativeCommandKey = try key("native_command", 32)
        out.ntag424MasterKey = try key("ntag424_master_key", 16)
        func generation(_ name: String) throws(FleetError) -> Int64? {
            switch json[name] {
            case .null?, nil: return nil
            case .int(let g)? where g >= 0: return g
            default: throw .malformed("secrets.\(name): an integer, 0 or more, expected")
            }
        }
        out.compatTimestampGeneration = try generation("compat_timestamp_generation")
        out.nativeCommandGeneration = try generation("native_command_generation")
        return out
    }
}
