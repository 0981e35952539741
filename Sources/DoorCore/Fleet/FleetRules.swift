/// The fleet's rules, pure (docs/fleet.md): which document a door accepts,
/// and what an accepted one changes in its registry and revocation list.
/// The daemon applies the changes through the store in one transaction; the
/// tap decisions stay `TapJudge`'s, on the registry the fleet fed.
public enum FleetRules {
    /// What this door has applied (persisted by the store).
    public struct Applied: Equatable, Sendable {
        public var site: String
        public var version: Int64
        public var digest: [UInt8]
        public init(site: String, version: Int64, digest: [UInt8]) {
            self.site = site
            self.version = version
            self.digest = digest
        }
    }

    /// A verified document, with the digest of its body (to tell a copy of
    /// the applied document, which is ignored, from a stale one).
    public struct Accepted: Equatable, Sendable {
        public var document: FleetDocument
        public var digest: [UInt8]
        /// The signed envelope as heard: the store keeps the applied one, so
        /// `gatewayctl fleet push` can check it with the site key and show
        /// what the next document changes against it.
        public var envelope: [UInt8]
    }

    public enum Verdict: Equatable, Sendable {
        /// New: apply it.
        case apply(Accepted)
        /// The very document this door applied last (heard again on
        /// reconnect, or its own push coming back): nothing to do.
        case alreadyApplied
        /// Refused, with why (audited).
        case refuse(FleetError)
    }

    /// Judges the bytes heard on a fleet topic: envelope, then the signature
    /// over the exact body with the site public key, then the body, the site
    /// ID and the version (strictly newer than the applied one). Never traps.
    public static func judge(
        _ bytes: [UInt8], sitePublicKey: [UInt8], siteID: String, applied: Applied?
    ) -> Verdict {
        let parts: (body: [UInt8], signature: [UInt8])
        do { parts = try FleetDocument.openEnvelope(bytes) } catch { return .refuse(error) }
        guard
            Crypto.Ed25519.verify(
                publicKey: sitePublicKey, signature: parts.signature, message: FleetDocument.signingContext + parts.body
            )
        else { return .refuse(.badSignature) }
        let document: FleetDocument
        do { document = try FleetDocument.parseBody(parts.body) } catch { return .refuse(error) }
        guard document.site == siteID else { return .refuse(.wrongSite(document.site)) }
        let digest = Crypto.sha256(parts.body)
        if let applied, applied.site == siteID {
            if document.version == applied.version && Crypto.constantTimeEqual(digest, applied.digest) {
                return .alreadyApplied
            }
            guard document.version > applied.version else {
                return .refuse(.stale(version: document.version, applied: applied.version))
            }
        }
        return .apply(Accepted(document: document, digest: digest, envelope: bytes))
    }

    /// What the door holds now, as the fleet sees it.
    public struct Local: Equatable, Sendable {
        public var revokedUIDs: Set<TagUID>
        public var revokedSignatures: Set<[UInt8]>
        /// Issued tags by UID: their state and fields.
        public var tags: [TagUID: (state: RegistryState, action: ActionIndex, label: String, validUntil: Int64?)]
        /// The key bytes of every sticker secret held (any action, active or not).
        public var secretKeys: Set<[UInt8]> = []
        /// Those of them held as imported (any action, active or not).
        public var importedKeys: Set<[UInt8]> = []
        public var compatTimestampKey: [UInt8]?
        public var nativeCommandKey: [UInt8]?
        public init(
            revokedUIDs: Set<TagUID> = [], revokedSignatures: Set<[UInt8]> = [],
            tags: [TagUID: (state: RegistryState, action: ActionIndex, label: String, validUntil: Int64?)] = [:],
            secretKeys: Set<[UInt8]> = [], importedKeys: Set<[UInt8]> = [], compatTimestampKey: [UInt8]? = nil,
            nativeCommandKey: [UInt8]? = nil
        ) {
            self.revokedUIDs = revokedUIDs
            self.revokedSignatures = revokedSignatures
            self.tags = tags
            self.secretKeys = secretKeys
            self.importedKeys = importedKeys
            self.compatTimestampKey = compatTimestampKey
            self.nativeCommandKey = nativeCommandKey
        }
        public static func == (a: Local, b: Local) -> Bool {
            a.revokedUIDs == b.revokedUIDs && a.revokedSignatures == b.revokedSignatures
                && a.secretKeys == b.secretKeys && a.importedKeys == b.importedKeys
                && a.compatTimestampKey == b.compatTimestampKey
                && a.nativeCommandKey == b.nativeCommandKey && a.tags.count == b.tags.count
                && a.tags.allSatisfy { uid, t in
                    guard let o = b.tags[uid] else { return false }
                    return o.state == t.state && o.action == t.action && o.label == t.label
                        && o.validUntil == t.validUntil
                }
        }
    }

    /// The changes a document makes to a door. Additive: a document never
    /// un-revokes, and never removes a tag (docs/fleet.md "What a document changes").
    public struct Changes: Equatable, Sendable {
        public var revokeUIDs: [TagUID] = []
        public var revokeSignatures: [[UInt8]] = []
        /// Issued tags to insert as active, or whose action, label or expiry to update.
        public var upsertTags: [FleetDocument.Tag] = []
        /// Tags of the document this door leaves alone, with why (e.g. an action it does not define).
        public var skipped: [(uid: TagUID, why: String)] = []
        /// Sticker secrets this door lacks, stored with their origin (a key
        /// the document says a gateway generated is stored generated).
        public var addSecrets: [FleetSecrets.Secret] = []
        /// Keys this door holds as imported that the document says a gateway
        /// generated: they become generated here (v2 stickers only), so a v2
        /// sticker with its `u` cut off is not a v1 sticker here (review H1).
        /// Never the reverse: a document cannot make a generated key imported.
        public var restrictSecrets: [[UInt8]] = []
        /// Remote keys that differ from this door's (a rotation).
        public var setCompatTimestampKey: [UInt8]?
        public var setNativeCommandKey: [UInt8]?
        /// Why the document's secrets were not read, when they were not.
        public var secretsNote: String?
        public init() {}
        public var isEmpty: Bool {
            revokeUIDs.isEmpty && revokeSignatures.isEmpty && upsertTags.isEmpty && addSecrets.isEmpty
                && restrictSecrets.isEmpty && setCompatTimestampKey == nil && setNativeCommandKey == nil
        }
        public static func == (a: Changes, b: Changes) -> Bool {
            a.revokeUIDs == b.revokeUIDs && a.revokeSignatures == b.revokeSignatures && a.upsertTags == b.upsertTags
                && a.skipped.map(\.uid) == b.skipped.map(\.uid) && a.skipped.map(\.why) == b.skipped.map(\.why)
                && a.addSecrets == b.addSecrets && a.restrictSecrets == b.restrictSecrets
                && a.setCompatTimestampKey == b.setCompatTimestampKey
                && a.setNativeCommandKey == b.setNativeCommandKey && a.secretsNote == b.secretsNote
        }
        /// One line for the audit log.
        public var summary: String {
            var s = "+\(revokeUIDs.count) uid revocations, +\(revokeSignatures.count) signature revocations, "
            s += "\(upsertTags.count) tags"
            if !skipped.isEmpty { s += ", \(skipped.count) skipped" }
            // Counts and names only: never key material.
            if !addSecrets.isEmpty { s += ", +\(addSecrets.count) secrets" }
            if !restrictSecrets.isEmpty { s += ", \(restrictSecrets.count) secrets made v2-only" }
            if setCompatTimestampKey != nil { s += ", otp key rotated" }
            if setNativeCommandKey != nil { s += ", command key rotated" }
            if let secretsNote { s += " (secrets not applied: \(secretsNote))" }
            return s
        }
    }

    /// The changes `document` makes to `local`, given the actions this door defines.
    public static func changes(
        _ document: FleetDocument, to local: Local, actions: Set<ActionIndex>, secrets: FleetSecrets? = nil
    ) -> Changes {
        var c = Changes()
        if let secrets {
            // Generated wins: a key any entry calls generated is generated.
            let generated = Set(secrets.secrets.lazy.filter { $0.origin == .generated }.map(\.key))
            var seenKeys = local.secretKeys
            var restricted = Set<[UInt8]>()
            for var secret in secrets.secrets where actions.contains(secret.action) {
                if generated.contains(secret.key) { secret.origin = .generated }
                if seenKeys.insert(secret.key).inserted {
                    c.addSecrets.append(secret)
                } else if secret.origin == .generated, local.importedKeys.contains(secret.key),
                    restricted.insert(secret.key).inserted
                {
                    c.restrictSecrets.append(secret.key)
                }
            }
            if let k = secrets.compatTimestampKey, k != local.compatTimestampKey { c.setCompatTimestampKey = k }
            if let k = secrets.nativeCommandKey, k != local.nativeCommandKey { c.setNativeCommandKey = k }
        }
        var seenUIDs = Set<TagUID>()
        for uid in document.revokedUIDs where !local.revokedUIDs.contains(uid) && seenUIDs.insert(uid).inserted {
            c.revokeUIDs.append(uid)
        }
        var seenSigs = Set<[UInt8]>()
        for sig in document.revokedSignatures
        where !local.revokedSignatures.contains(sig) && seenSigs.insert(sig).inserted {
            c.revokeSignatures.append(sig)
        }
        let revoked = local.revokedUIDs.union(document.revokedUIDs)
        var seenTags = Set<TagUID>()
        for tag in document.tags {
            guard seenTags.insert(tag.uid).inserted else { continue }
            if revoked.contains(tag.uid) { continue }
            guard actions.contains(tag.action) else {
                c.skipped.append((tag.uid, "action \(tag.action) is not defined here"))
                continue
            }
            if let mine = local.tags[tag.uid] {
                switch mine.state {
                case .active:
                    // Expiry only comes sooner through the fleet: a door's own
                    // `tags expire` is not undone by another door's push that
                    // still carries the later date (nil is "never").
                    var merged = tag
                    merged.validUntil = [mine.validUntil, tag.validUntil].compactMap { $0 }.min()
                    if mine.action != merged.action || mine.label != merged.label
                        || mine.validUntil != merged.validUntil
                    {
                        c.upsertTags.append(merged)
                    }
                case .pending:
                    c.skipped.append((tag.uid, "being provisioned here"))
                case .revoked:
                    c.skipped.append((tag.uid, "revoked here"))
                case .failed:
                    c.upsertTags.append(tag)
                }
            } else {
                c.upsertTags.append(tag)
            }
        }
        return c
    }

    /// The door's shareable state as a document to sign: every revocation and
    /// every active issued tag, at `version`.
    public static func snapshot(
        _ local: Local, site: String, version: Int64, origin: String, now: Int64,
        sealedSecrets: Crypto.SiteBox.Sealed? = nil
    ) -> FleetDocument {
        let tags = local.tags.filter { $0.value.state == .active }
            .map {
                FleetDocument.Tag(
                    uid: $0.key, action: $0.value.action, label: $0.value.label, validUntil: $0.value.validUntil)
            }
            .sorted { $0.uid.hex < $1.uid.hex }
        return FleetDocument(
            site: site, version: version, origin: origin, issued: now,
            revokedUIDs: local.revokedUIDs.sorted { $0.hex < $1.hex },
            revokedSignatures: local.revokedSignatures.sorted { Hex.encode($0) < Hex.encode($1) }, tags: tags,
            sealedSecrets: sealedSecrets)
    }
}
