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
        /// Those of them active (what judges stickers).
        public var activeKeys: Set<[UInt8]> = []
        /// The tombstones of removed secrets this door holds (its own
        /// removals and every document's): `FleetDocument.tombstone(of:)`.
        public var secretTombstones: Set<[UInt8]> = []
        public var compatTimestampKey: [UInt8]?
        public var nativeCommandKey: [UInt8]?
        /// The remote keys' generations (0: a key stored before M1, or none).
        public var compatTimestampGeneration: Int64 = 0
        public var nativeCommandGeneration: Int64 = 0
        /// The credential of each issued tag that is not a sticker (`ntag424`).
        public var tagCredentials: [TagUID: String] = [:]
        /// The key issue of each NTAG 424 row that has one (salted).
        public var tagKeyIssues: [TagUID: NTAG424.KeyIssue] = [:]
        /// The site's NTAG 424 DNA master key as this door holds it, and
        /// whether a tag this door provisioned depends on it.
        public var ntag424MasterKey: [UInt8]? = nil
        public var ntag424MasterKeyInUse = false
        public init(
            revokedUIDs: Set<TagUID> = [], revokedSignatures: Set<[UInt8]> = [],
            tags: [TagUID: (state: RegistryState, action: ActionIndex, label: String, validUntil: Int64?)] = [:],
            secretKeys: Set<[UInt8]> = [], importedKeys: Set<[UInt8]> = [], activeKeys: Set<[UInt8]>? = nil,
            secretTombstones: Set<[UInt8]> = [], compatTimestampKey: [UInt8]? = nil,
            nativeCommandKey: [UInt8]? = nil, compatTimestampGeneration: Int64 = 0, nativeCommandGeneration: Int64 = 0
        ) {
            self.revokedUIDs = revokedUIDs
            self.revokedSignatures = revokedSignatures
            self.tags = tags
            self.secretKeys = secretKeys
            self.importedKeys = importedKeys
            // Unless told otherwise, every held secret is active.
            self.activeKeys = activeKeys ?? secretKeys
            self.secretTombstones = secretTombstones
            self.compatTimestampKey = compatTimestampKey
            self.nativeCommandKey = nativeCommandKey
            self.compatTimestampGeneration = compatTimestampGeneration
            self.nativeCommandGeneration = nativeCommandGeneration
        }
        public static func == (a: Local, b: Local) -> Bool {
            a.revokedUIDs == b.revokedUIDs && a.revokedSignatures == b.revokedSignatures
                && a.secretKeys == b.secretKeys && a.importedKeys == b.importedKeys
                && a.activeKeys == b.activeKeys && a.secretTombstones == b.secretTombstones
                && a.compatTimestampKey == b.compatTimestampKey
                && a.nativeCommandKey == b.nativeCommandKey
                && a.compatTimestampGeneration == b.compatTimestampGeneration
                && a.nativeCommandGeneration == b.nativeCommandGeneration && a.tagCredentials == b.tagCredentials
                && a.tagKeyIssues == b.tagKeyIssues
                && a.ntag424MasterKey == b.ntag424MasterKey && a.ntag424MasterKeyInUse == b.ntag424MasterKeyInUse
                && a.tags.count == b.tags.count
                && a.tags.allSatisfy { uid, t in
                    guard let o = b.tags[uid] else { return false }
                    return o.state == t.state && o.action == t.action && o.label == t.label
                        && o.validUntil == t.validUntil
                }
        }
    }

    /// A remote key a document installs, with the generation it is stored at.
    public struct RemoteKey: Equatable, Sendable {
        public var key: [UInt8]
        public var generation: Int64
        public init(key: [UInt8], generation: Int64) {
            self.key = key
            self.generation = generation
        }
    }

    /// The changes a document makes to a door. Additive: a document never
    /// un-revokes, and never removes a tag (docs/fleet.md "What it changes").
    public struct Changes: Equatable, Sendable {
        public var revokeUIDs: [TagUID] = []
        public var revokeSignatures: [[UInt8]] = []
        /// Issued tags to insert as active, or whose action, label or expiry to update.
        public var upsertTags: [FleetDocument.Tag] = []
        /// Tags of the document this door leaves alone, with why (e.g. an action it does not define).
        public var skipped: [(uid: TagUID, why: String)] = []
        /// Tag entries of a credential kind the fleet does not carry
        /// (`FleetDocument.Tag.isCarried`): nothing is stored for them, a row
        /// of their UID is left as it is, and each is audited
        /// (`fleet_entry_skipped`) and shown by `fleet status`.
        public var notCarried: [FleetDocument.Tag] = []
        /// Sticker secrets this door lacks, stored with their origin (a key
        /// the document says a gateway generated is stored generated).
        public var addSecrets: [FleetSecrets.Secret] = []
        /// Keys this door holds as imported that the document says a gateway
        /// generated: they become generated here (v2 stickers only), so a v2
        /// sticker with its `u` cut off is not a v1 sticker here (review H1).
        /// Never the reverse: a document cannot make a generated key imported.
        public var restrictSecrets: [[UInt8]] = []
        /// Tombstones this door did not hold: recorded, so no later
        /// document (nor `secrets import`) brings the key back (issue 24 M1).
        public var addTombstones: [[UInt8]] = []
        /// Key bytes of active secrets here whose key is tombstoned: deactivated
        /// (the row stays, with its history), never deleted.
        public var deactivateSecrets: [[UInt8]] = []
        /// How many of the document's sealed secrets were not stored because
        /// their key is tombstoned (here or in the document).
        public var refusedRemovedSecrets = 0
        /// Remote keys of a newer generation than this door's (a rotation),
        /// or any key where this door holds none.
        public var setCompatTimestamp: RemoteKey?
        public var setNativeCommand: RemoteKey?
        /// The site's NTAG 424 DNA master key, taken where the door holds
        /// none or one no tag it provisioned depends on (issue 26).
        public var setNTAG424MasterKey: [UInt8]?
        /// Remote keys the document carries that this door keeps, with why
        /// (an older or equal generation: a rollback, or a concurrent rotation).
        public var keptRemoteKeys: [String] = []
        public var setCompatTimestampKey: [UInt8]? { setCompatTimestamp?.key }
        public var setNativeCommandKey: [UInt8]? { setNativeCommand?.key }
        /// Why the document's secrets were not read, when they were not.
        public var secretsNote: String?
        public init() {}
        public var isEmpty: Bool {
            revokeUIDs.isEmpty && revokeSignatures.isEmpty && upsertTags.isEmpty && addSecrets.isEmpty
                && restrictSecrets.isEmpty && addTombstones.isEmpty && deactivateSecrets.isEmpty
                && setCompatTimestamp == nil && setNativeCommand == nil && setNTAG424MasterKey == nil
        }
        public static func == (a: Changes, b: Changes) -> Bool {
            a.revokeUIDs == b.revokeUIDs && a.revokeSignatures == b.revokeSignatures && a.upsertTags == b.upsertTags
                && a.skipped.map(\.uid) == b.skipped.map(\.uid) && a.skipped.map(\.why) == b.skipped.map(\.why)
                && a.notCarried == b.notCarried
                && a.addSecrets == b.addSecrets && a.restrictSecrets == b.restrictSecrets
                && a.addTombstones == b.addTombstones && a.deactivateSecrets == b.deactivateSecrets
                && a.refusedRemovedSecrets == b.refusedRemovedSecrets && a.setCompatTimestamp == b.setCompatTimestamp
                && a.setNativeCommand == b.setNativeCommand && a.keptRemoteKeys == b.keptRemoteKeys
                && a.setNTAG424MasterKey == b.setNTAG424MasterKey
                && a.secretsNote == b.secretsNote
        }
        /// One line for the audit log.
        public var summary: String {
            var s = "+\(revokeUIDs.count) uid revocations, +\(revokeSignatures.count) signature revocations, "
            s += "\(upsertTags.count) tags"
            if !skipped.isEmpty { s += ", \(skipped.count) skipped" }
            if !notCarried.isEmpty {
                // Names are a–z, 0–9 and `-` (the parser's check): safe to print.
                var names: [String] = []
                for name in notCarried.compactMap(\.credential) where !names.contains(name) {
                    names.append(name)
                    if names.count == 4 { break }
                }
                s += ", \(notCarried.count) entries skipped (credential not carried: \(names.joined(separator: ", ")))"
            }
            // Counts and names only: never key material.
            if !addSecrets.isEmpty { s += ", +\(addSecrets.count) secrets" }
            if !restrictSecrets.isEmpty { s += ", \(restrictSecrets.count) secrets made v2-only" }
            if !addTombstones.isEmpty { s += ", +\(addTombstones.count) secret tombstones" }
            if !deactivateSecrets.isEmpty { s += ", \(deactivateSecrets.count) removed secrets deactivated" }
            if refusedRemovedSecrets > 0 { s += ", \(refusedRemovedSecrets) removed secrets not restored" }
            if let k = setCompatTimestamp { s += ", otp key rotated (generation \(k.generation))" }
            if let k = setNativeCommand { s += ", command key rotated (generation \(k.generation))" }
            if setNTAG424MasterKey != nil { s += ", ntag424 master key taken" }
            for note in keptRemoteKeys { s += ", \(note)" }
            if let secretsNote { s += " (secrets not applied: \(secretsNote))" }
            return s
        }
    }

    /// The changes `document` makes to `local`, given the actions this door defines.
    public static func changes(
        _ document: FleetDocument, to local: Local, actions: Set<ActionIndex>, secrets: FleetSecrets? = nil
    ) -> Changes {
        var c = Changes()
        // Removals (M1) first: a tombstone, the door's or the document's,
        // wins over any sealed copy of the key, whoever pushed it.
        var tombstones = local.secretTombstones
        for hash in document.secretTombstones where tombstones.insert(hash).inserted {
            c.addTombstones.append(hash)
        }
        if !tombstones.isEmpty {
            c.deactivateSecrets = local.activeKeys.filter { tombstones.contains(FleetDocument.tombstone(of: $0)) }
                .sorted { $0.lexicographicallyPrecedes($1) }
        }
        if let secrets {
            // Generated wins: a key any entry calls generated is generated.
            let generated = Set(secrets.secrets.lazy.filter { $0.origin == .generated }.map(\.key))
            var seenKeys = local.secretKeys
            var restricted = Set<[UInt8]>()
            var refused = Set<[UInt8]>()
            for var secret in secrets.secrets where actions.contains(secret.action) {
                if !tombstones.isEmpty, tombstones.contains(FleetDocument.tombstone(of: secret.key)) {
                    if !local.secretKeys.contains(secret.key), refused.insert(secret.key).inserted {
                        c.refusedRemovedSecrets += 1
                    }
                    continue
                }
                if generated.contains(secret.key) { secret.origin = .generated }
                if seenKeys.insert(secret.key).inserted {
                    c.addSecrets.append(secret)
                } else if secret.origin == .generated, local.importedKeys.contains(secret.key),
                    restricted.insert(secret.key).inserted
                {
                    c.restrictSecrets.append(secret.key)
                }
            }
            (c.setCompatTimestamp, c.keptRemoteKeys) = remoteKey(
                "otp key", secrets.compatTimestampKey, secrets.compatTimestampGeneration, local.compatTimestampKey,
                local.compatTimestampGeneration, notes: c.keptRemoteKeys)
            (c.setNativeCommand, c.keptRemoteKeys) = remoteKey(
                "command key", secrets.nativeCommandKey, secrets.nativeCommandGeneration, local.nativeCommandKey,
                local.nativeCommandGeneration, notes: c.keptRemoteKeys)
            if let key = secrets.ntag424MasterKey, key != local.ntag424MasterKey {
                // Never replace a key a tag provisioned here depends on: that tag
                // would stop opening here. Two doors that each provisioned with
                // their own key keep them; the audit row says so.
                if local.ntag424MasterKey == nil || !local.ntag424MasterKeyInUse {
                    c.setNTAG424MasterKey = key
                } else {
                    c.keptRemoteKeys.append(
                        "ntag424 master key not taken (tags provisioned here depend on this door's own)")
                }
            }
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
            // A kind this door cannot store as what it says: nothing stored,
            // nothing of a row of that UID changed (never another kind, never
            // downgraded), and reported — revoked or not, its action defined or not.
            guard tag.isCarried else {
                c.notCarried.append(tag)
                continue
            }
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
                        || mine.validUntil != merged.validUntil || local.tagCredentials[tag.uid] != tag.credential
                        || (tag.keyIssue != nil && local.tagKeyIssues[tag.uid] != tag.keyIssue)
                    {
                        c.upsertTags.append(merged)
                    }
                case .pending:
                    c.skipped.append((tag.uid, "being provisioned here"))
                case .revoked:
                    c.skipped.append((tag.uid, "revoked here"))
                case .failed:
                    // A 424 reset here (`provision reset`) holds factory keys: the same
                    // issue does not make its row active again; a reissue (a new issue) does.
                    // (A document without an issue, from an older build, changes no issue.)
                    if local.tagCredentials[tag.uid] == CredentialKind.ntag424.rawValue,
                        tag.credential == CredentialKind.ntag424.rawValue,
                        tag.keyIssue == nil || (local.tagKeyIssues[tag.uid] ?? .legacy) == tag.keyIssue
                    {
                        c.skipped.append((tag.uid, "reset here (re-issue it to use it again)"))
                    } else {
                        c.upsertTags.append(tag)
                    }
                }
            } else {
                c.upsertTags.append(tag)
            }
        }
        return c
    }

    /// Whether a document's remote key replaces the door's (issue 24 M1):
    /// only a strictly newer generation does, or any key where the door
    /// holds none. An older generation is a rollback (the key a rotation
    /// replaced); an equal one with other bytes, a rotation made at two doors
    /// at once: either way the door keeps its key and the audit row says so.
    /// A key without a generation (an older build's document) is taken only
    /// where the door holds none, at generation 0.
    static func remoteKey(
        _ name: String, _ key: [UInt8]?, _ generation: Int64?, _ mine: [UInt8]?, _ myGeneration: Int64,
        notes: [String]
    ) -> (RemoteKey?, [String]) {
        guard let key, key != mine else { return (nil, notes) }
        guard mine != nil else { return (RemoteKey(key: key, generation: generation ?? 0), notes) }
        guard let generation else {
            return (nil, notes + ["\(name) without a generation not taken (generation \(myGeneration) here)"])
        }
        guard generation > myGeneration else {
            let what = generation < myGeneration ? "older than" : "another key at"
            return (
                nil, notes + ["\(name) of generation \(generation) not taken (\(what) generation \(myGeneration) here)"]
            )
        }
        return (RemoteKey(key: key, generation: generation), notes)
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
                    uid: $0.key, action: $0.value.action, label: $0.value.label, validUntil: $0.value.validUntil,
                    credential: local.tagCredentials[$0.key], keyIssue: local.tagKeyIssues[$0.key])
            }
            .sorted { $0.uid.hex < $1.uid.hex }
        return FleetDocument(
            site: site, version: version, origin: origin, issued: now,
            revokedUIDs: local.revokedUIDs.sorted { $0.hex < $1.hex },
            revokedSignatures: local.revokedSignatures.sorted { Hex.encode($0) < Hex.encode($1) }, tags: tags,
            secretTombstones: local.secretTombstones.sorted { $0.lexicographicallyPrecedes($1) },
            sealedSecrets: sealedSecrets)
    }
}
