/// What a fleet document changes against the one the door applied last, for
/// the operator to read before signing it (`gatewayctl fleet push`,
/// docs/security.md "H2"). Pure: both documents (and their opened secrets)
/// in, the differences and their text out.
///
/// A document is a snapshot, so "dropped" here means "not in the new
/// document": doors that hold it keep it (a document never un-revokes and
/// never removes a tag or a secret, docs/fleet.md), and the summary says so.
public struct FleetDiff: Equatable, Sendable {
    public struct TagChange: Equatable, Sendable {
        public var old: FleetDocument.Tag
        public var new: FleetDocument.Tag
    }

    /// A remote key as a document carries it: its bytes and generation
    /// (nil in an older build's document; issue 24 M1).
    public struct Key: Equatable, Sendable {
        public var key: [UInt8]
        public var generation: Int64?
        public init(_ key: [UInt8], generation: Int64? = nil) {
            self.key = key
            self.generation = generation
        }
    }

    /// One of the remote keys (docs/formats.md §3 otp key, docs/formats.md §5 command key).
    public enum KeyChange: Equatable, Sendable {
        /// In neither document.
        case absent
        case unchanged(Key)
        /// In the new document, not in the old one.
        case added(Key)
        /// Other bytes than the old document's: a rotation when its
        /// generation is newer, otherwise refused by the doors holding the
        /// old one (an older key, or a rotation made at two doors at once).
        case rotated(from: Key, to: Key)
        /// In the old document, not in the new one (doors keep theirs).
        case dropped(Key)
    }

    /// The new document's secrets, as far as they can be compared.
    public enum Secrets: Equatable, Sendable {
        /// Pushed without `--secrets`: doors keep the secrets they hold.
        case notCarried
        /// Carried; the old document's secrets were readable (or it had none).
        case carried
        /// Carried; the old document's sealed secrets could not be opened
        /// here, with why: every secret is listed as added.
        case carriedBaselineUnreadable(String)
    }

    public var addedUIDs: [TagUID] = []
    public var droppedUIDs: [TagUID] = []
    public var addedSignatures: [[UInt8]] = []
    public var droppedSignatures: [[UInt8]] = []
    public var addedTags: [FleetDocument.Tag] = []
    public var droppedTags: [FleetDocument.Tag] = []
    public var changedTags: [TagChange] = []
    /// Tombstones of removed secrets (issue 24 M1), by SHA-256 of the key.
    public var addedTombstones: [[UInt8]] = []
    public var droppedTombstones: [[UInt8]] = []
    public var secrets: Secrets = .notCarried
    public var addedSecrets: [FleetSecrets.Secret] = []
    public var droppedSecrets: [FleetSecrets.Secret] = []
    /// Secrets of the old document left out because the new one removes them (a tombstone).
    public var removedSecrets = 0
    public var compatTimestampKey: KeyChange = .absent
    public var nativeCommandKey: KeyChange = .absent
    /// The site's NTAG 424 DNA master key (issue 26), compared like the remote keys (no generation).
    public var ntag424MasterKey: KeyChange = .absent
    /// The push leaves the otp key out on purpose (issue 24 M3: per door
    /// unless `--share-otp-key`); the summary says so instead of "not carried".
    public var otpKeyPerDoor = false
    /// The tags of the old document, by UID (to name what a revocation hits).
    var oldTags: [TagUID: FleetDocument.Tag] = [:]
    /// The UIDs the new document revokes.
    var newRevokedUIDs: Set<TagUID> = []
    /// The old document's secrets by tombstone (to name what a tombstone removes).
    var oldSecretsByTombstone: [[UInt8]: FleetSecrets.Secret] = [:]
    /// Totals in the new document.
    public var totals: (uids: Int, signatures: Int, tags: Int, secrets: Int) = (0, 0, 0, 0)
    public var totalTombstones = 0

    public static func == (a: FleetDiff, b: FleetDiff) -> Bool {
        a.addedUIDs == b.addedUIDs && a.droppedUIDs == b.droppedUIDs && a.addedSignatures == b.addedSignatures
            && a.droppedSignatures == b.droppedSignatures && a.addedTags == b.addedTags
            && a.droppedTags == b.droppedTags && a.changedTags == b.changedTags
            && a.addedTombstones == b.addedTombstones && a.droppedTombstones == b.droppedTombstones
            && a.secrets == b.secrets
            && a.addedSecrets == b.addedSecrets && a.droppedSecrets == b.droppedSecrets
            && a.compatTimestampKey == b.compatTimestampKey && a.nativeCommandKey == b.nativeCommandKey
            && a.ntag424MasterKey == b.ntag424MasterKey
    }

    /// Nothing differs from the old document (the issued time and origin aside).
    public var isEmpty: Bool {
        addedUIDs.isEmpty && droppedUIDs.isEmpty && addedSignatures.isEmpty && droppedSignatures.isEmpty
            && addedTags.isEmpty && droppedTags.isEmpty && changedTags.isEmpty && addedTombstones.isEmpty
            && droppedTombstones.isEmpty && addedSecrets.isEmpty
            && droppedSecrets.isEmpty && !compatTimestampKey.differs && !nativeCommandKey.differs
            && !ntag424MasterKey.differs
    }

    /// `new` against `old` (nil: no document applied, or none on record).
    /// `oldSecrets` are `old`'s opened secrets (nil when it carried none);
    /// `oldSecretsUnreadable` says why they could not be opened, when they
    /// could not. `newSecrets` are what `new` carries sealed (nil: none).
    public static func between(
        _ old: FleetDocument?, oldSecrets: FleetSecrets? = nil, oldSecretsUnreadable: String? = nil,
        _ new: FleetDocument, newSecrets: FleetSecrets? = nil
    ) -> FleetDiff {
        var d = FleetDiff()
        let oldUIDs = Set(old?.revokedUIDs ?? []), newUIDs = Set(new.revokedUIDs)
        d.newRevokedUIDs = newUIDs
        d.addedUIDs = new.revokedUIDs.filter { !oldUIDs.contains($0) }.uniqued()
        d.droppedUIDs = (old?.revokedUIDs ?? []).filter { !newUIDs.contains($0) }.uniqued()
        let oldSigs = Set(old?.revokedSignatures ?? []), newSigs = Set(new.revokedSignatures)
        d.addedSignatures = new.revokedSignatures.filter { !oldSigs.contains($0) }.uniqued()
        d.droppedSignatures = (old?.revokedSignatures ?? []).filter { !newSigs.contains($0) }.uniqued()

        for tag in old?.tags ?? [] where d.oldTags[tag.uid] == nil { d.oldTags[tag.uid] = tag }
        var newTags: [TagUID: FleetDocument.Tag] = [:]
        for tag in new.tags where newTags[tag.uid] == nil {
            newTags[tag.uid] = tag
            if let was = d.oldTags[tag.uid] {
                if was != tag { d.changedTags.append(TagChange(old: was, new: tag)) }
            } else {
                d.addedTags.append(tag)
            }
        }
        var seen = Set<TagUID>()
        for tag in old?.tags ?? [] where newTags[tag.uid] == nil && seen.insert(tag.uid).inserted {
            d.droppedTags.append(tag)
        }

        let oldTombstones = Set(old?.secretTombstones ?? []), newTombstones = Set(new.secretTombstones)
        d.addedTombstones = new.secretTombstones.filter { !oldTombstones.contains($0) }.uniqued()
        d.droppedTombstones = (old?.secretTombstones ?? []).filter { !newTombstones.contains($0) }.uniqued()
        d.totalTombstones = newTombstones.count
        if oldSecretsUnreadable == nil, let oldSecrets {
            for secret in oldSecrets.secrets {
                let hash = FleetDocument.tombstone(of: secret.key)
                if d.oldSecretsByTombstone[hash] == nil { d.oldSecretsByTombstone[hash] = secret }
            }
        }

        d.totals = (Set(new.revokedUIDs).count, Set(new.revokedSignatures).count, newTags.count, 0)
        guard let newSecrets else { return d }
        d.secrets = oldSecretsUnreadable.map { .carriedBaselineUnreadable($0) } ?? .carried
        let before = oldSecretsUnreadable == nil ? oldSecrets : nil
        let oldKeys = Set((before?.secrets ?? []).map(\.key)), newKeys = Set(newSecrets.secrets.map(\.key))
        var added = Set<[UInt8]>(), dropped = Set<[UInt8]>()
        d.addedSecrets = newSecrets.secrets.filter { !oldKeys.contains($0.key) && added.insert($0.key).inserted }
        // A secret left out because it is removed is shown once, as a tombstone.
        d.droppedSecrets = (before?.secrets ?? []).filter {
            !newKeys.contains($0.key) && !newTombstones.contains(FleetDocument.tombstone(of: $0.key))
                && dropped.insert($0.key).inserted
        }
        d.removedSecrets =
            Set(
                (before?.secrets ?? []).lazy.map(\.key).filter {
                    !newKeys.contains($0) && newTombstones.contains(FleetDocument.tombstone(of: $0))
                }
            ).count
        d.totals.secrets = newKeys.count
        d.compatTimestampKey = .between(
            before?.compatTimestampKey.map { Key($0, generation: before?.compatTimestampGeneration) },
            newSecrets.compatTimestampKey.map { Key($0, generation: newSecrets.compatTimestampGeneration) })
        d.nativeCommandKey = .between(
            before?.nativeCommandKey.map { Key($0, generation: before?.nativeCommandGeneration) },
            newSecrets.nativeCommandKey.map { Key($0, generation: newSecrets.nativeCommandGeneration) })
        d.ntag424MasterKey = .between(
            before?.ntag424MasterKey.map { Key($0) }, newSecrets.ntag424MasterKey.map { Key($0) })
        return d
    }

    // MARK: Text

    /// The summary's lines: each kind of entry with its count and, under
    /// it, each entry added, dropped or changed (at most `limit` of each,
    /// then how many more). Labels are shown escaped: a label cannot move
    /// the cursor, recolour or hide a line of the summary.
    public func lines(limit: Int = 20) -> [String] {
        var out: [String] = []
        func entries<T>(_ items: [T], _ mark: String, _ text: (T) -> String) {
            for item in items.prefix(limit) { out.append("  \(mark) \(text(item))") }
            if items.count > limit { out.append("  \(mark) … and \(items.count - limit) more") }
        }
        func counts(_ added: Int, _ dropped: Int, _ changed: Int? = nil) -> String {
            var parts: [String] = []
            if added > 0 { parts.append("+\(added)") }
            if dropped > 0 { parts.append("-\(dropped)") }
            if let changed, changed > 0 { parts.append("~\(changed)") }
            return parts.isEmpty ? "no change" : parts.joined(separator: " ")
        }

        out.append("revoked UIDs: \(totals.uids) (\(counts(addedUIDs.count, droppedUIDs.count)))")
        entries(addedUIDs, "+") { uid in
            guard let tag = oldTags[uid] else { return uid.hex }
            return "\(uid.hex) (issued until now: action \(tag.action) \(Self.quoted(tag.label)))"
        }
        entries(droppedUIDs, "-") { "\($0.hex) (left out: doors that revoked it keep it revoked)" }

        out.append(
            "revoked signatures: \(totals.signatures) (\(counts(addedSignatures.count, droppedSignatures.count)))")
        entries(addedSignatures, "+") { Hex.encode($0) }
        entries(droppedSignatures, "-") { "\(Hex.encode($0)) (left out: doors that revoked it keep it revoked)" }

        out.append(
            "issued tags: \(totals.tags) (\(counts(addedTags.count, droppedTags.count, changedTags.count)))")
        entries(addedTags, "+") { Self.describe($0) }
        entries(droppedTags, "-") { tag in
            Self.describe(tag)
                + (newRevokedUIDs.contains(tag.uid) ? " (revoked)" : " (left out: doors that hold it keep it active)")
        }
        entries(changedTags, "~") { change in
            var what: [String] = []
            if change.old.action != change.new.action {
                what.append("action \(change.old.action) → \(change.new.action)")
            }
            if change.old.label != change.new.label {
                what.append("label \(Self.quoted(change.old.label)) → \(Self.quoted(change.new.label))")
            }
            if change.old.credential != change.new.credential {
                what.append("credential \(change.old.credential ?? "sticker") → \(change.new.credential ?? "sticker")")
            }
            if change.old.validUntil != change.new.validUntil {
                what.append("valid until \(Self.until(change.old.validUntil)) → \(Self.until(change.new.validUntil))")
            }
            return "\(change.new.uid.hex): " + what.joined(separator: ", ")
        }

        if totalTombstones > 0 || !droppedTombstones.isEmpty {
            out.append(
                "removed secrets (tombstones): \(totalTombstones) (\(counts(addedTombstones.count, droppedTombstones.count)))"
            )
            entries(addedTombstones, "+") { hash in
                let what = oldSecretsByTombstone[hash].map(Self.describe) ?? "key \(Self.fingerprint(tombstone: hash))"
                return "\(what): every door deactivates it; no push brings it back"
            }
            entries(droppedTombstones, "-") {
                "key \(Self.fingerprint(tombstone: $0)) (left out: doors that hold it keep it removed)"
            }
        }

        switch secrets {
        case .notCarried:
            out.append("secrets: not carried (push --secrets carries them); doors keep the ones they hold")
            return out
        case .carried:
            var change = counts(addedSecrets.count, droppedSecrets.count)
            if removedSecrets > 0 {
                change = (change == "no change" ? "" : change + ", ") + "\(removedSecrets) removed: tombstones above"
            }
            out.append("secrets: \(totals.secrets) sealed to the site box (\(change))")
        case .carriedBaselineUnreadable(let why):
            out.append(
                "secrets: \(totals.secrets) sealed to the site box; the last document's secrets "
                    + "could not be read here (\(Self.printable(why))), so each is listed as added")
        }
        entries(addedSecrets, "+") { Self.describe($0) }
        entries(droppedSecrets, "-") { "\(Self.describe($0)) (left out: doors that hold it keep it)" }
        if otpKeyPerDoor, case .absent = compatTimestampKey {
            out.append("otp key (COMPAT §3): \(Self.perDoorOTP)")
        } else if otpKeyPerDoor, case .dropped(let was) = compatTimestampKey {
            out.append("otp key (COMPAT §3): \(Self.perDoorOTP) (the last document carried \(was.name))")
        } else {
            out.append("otp key (COMPAT §3): \(compatTimestampKey.text)")
        }
        out.append("command key (COMPAT §5): \(nativeCommandKey.text)")
        if case .absent = ntag424MasterKey {
        } else {
            // A door whose own tags depend on another key keeps it (docs/ntag424.md "Fleet").
            out.append("ntag424 master key: \(ntag424MasterKey.text)")
        }
        return out
    }

    static let perDoorOTP =
        "not carried: each door keeps its own (a block names no door: with one key, a block seen at one door "
        + "opens the others; --share-otp-key carries it)"

    /// A key named without its bytes: the first 8 hex digits of its SHA-256.
    public static func fingerprint(_ key: [UInt8]) -> String {
        fingerprint(tombstone: Crypto.sha256(key))
    }

    /// The same name from a tombstone (the key's SHA-256).
    public static func fingerprint(tombstone hash: [UInt8]) -> String {
        "sha256:" + Hex.encode(Array(hash.prefix(4)))
    }

    static func describe(_ tag: FleetDocument.Tag) -> String {
        (tag.credential.map { "\($0) " } ?? "")
            + "\(tag.uid.hex) action \(tag.action) \(quoted(tag.label)), valid until \(until(tag.validUntil))"
    }

    static func describe(_ secret: FleetSecrets.Secret) -> String {
        "action \(secret.action) \(secret.origin.rawValue) \(quoted(secret.label)) key \(fingerprint(secret.key))"
    }

    static func until(_ time: Int64?) -> String { time.map(UTCTime.iso8601) ?? "never" }

    static func quoted(_ text: String) -> String { "\"" + printable(text) + "\"" }

    /// `text` with every control character (C0, DEL, C1 — ESC and CSI among
    /// them) and every bidirectional override written as `\u{…}`, and quotes
    /// and backslashes escaped: what the terminal shows is what is signed.
    public static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if v < 0x20 || (0x7F...0x9F).contains(v) || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v)
                || v == 0x200E || v == 0x200F || v == 0x061C
            {
                out += "\\u{" + String(v, radix: 16) + "}"
            } else if scalar == "\"" || scalar == "\\" {
                out += "\\" + String(scalar)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension FleetDiff.KeyChange {
    static func between(_ old: FleetDiff.Key?, _ new: FleetDiff.Key?) -> Self {
        switch (old, new) {
        case (nil, nil): return .absent
        case (let o?, nil): return .dropped(o)
        case (nil, let n?): return .added(n)
        case (let o?, let n?): return o.key == n.key ? .unchanged(n) : .rotated(from: o, to: n)
        }
    }

    var differs: Bool {
        switch self {
        case .absent, .unchanged: return false
        default: return true
        }
    }

    var text: String {
        switch self {
        case .absent: return "not carried"
        case .unchanged(let k): return "unchanged (\(k.name))"
        case .added(let k):
            return "added \(k.name) (doors that hold none or an older generation take it; the others keep theirs)"
        case .rotated(let o, let n):
            guard let to = n.generation else {
                return "\(n.name) replaces no key a door holds (the last document's was \(o.name))"
            }
            if to > (o.generation ?? -1) {
                return "ROTATED \(o.name) → \(n.name) (every door holding an older generation rotates to it)"
            }
            let what = to == o.generation ? "of the same generation as" : "OLDER than"
            return "NOT A ROTATION: \(n.name) is \(what) the last document's \(o.name): doors that hold that "
                + "one keep it (`gatewayctl keys … new` here makes a newer generation)"
        case .dropped(let o): return "not carried (was \(o.name); doors keep theirs)"
        }
    }
}

extension FleetDiff.Key {
    /// Fingerprint and generation, never the bytes.
    var name: String {
        FleetDiff.fingerprint(key) + (generation.map { " generation \($0)" } ?? " without a generation")
    }
}

extension Array where Element: Hashable {
    fileprivate func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
