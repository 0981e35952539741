import DoorCore

/// What the issued-tag registry and the revocation list say about a tag, in
/// the store's spelling (`StoreRegistry`, the fuzz target's open registry).
/// The decision itself is `DoorCore.TapJudge`'s; this only reads the row's
/// state into `RegistryState`.
protocol StickerRegistry {
    /// The registry row of this UID: its state (`pending`, `active`, `revoked`,
    /// `failed`) and expiry (Unix seconds), or nil when never issued here.
    func issuedTag(_ uid: TagUID) throws -> RegistryRow?
    /// Revoked by UID, or (v1) by the sticker's signature.
    func isRevoked(uid: TagUID, signature: [UInt8]?) throws -> Bool
}

/// A registry row as the judgement reads it (docs/policy.md for the guest
/// and schedule fields).
struct RegistryRow {
    var state: String
    var validUntil: Int64?
    var validFrom: Int64? = nil
    var usesLeft: Int? = nil
    var schedule: String? = nil
    /// `kind` as the store spells it (`v11-ntag424`; nil for rows before it).
    var kind: String? = nil
    var action: Int? = nil
}

/// A registry row whose state the core does not know: read as a registry
/// that cannot be read (the tap is denied, `registry_unavailable`).
struct UnknownRegistryState: Error, CustomStringConvertible {
    let state: String
    var description: String { "unknown registry state \"\(state.prefix(32))\"" }
}

/// The store's registry as the core's view of it.
struct RegistryView<Base: StickerRegistry>: TagRegistryView {
    let base: Base
    func issuedTag(_ uid: TagUID) throws -> IssuedTagView? {
        guard let row = try base.issuedTag(uid) else { return nil }
        guard let state = RegistryState(rawValue: row.state) else { throw UnknownRegistryState(state: row.state) }
        var kind: CredentialKind?
        if let raw = row.kind {
            guard let k = CredentialKind(rawValue: raw) else { throw UnknownRegistryState(state: "kind \(raw)") }
            kind = k
        }
        return IssuedTagView(
            state: state, validUntil: row.validUntil, validFrom: row.validFrom, usesLeft: row.usesLeft,
            schedule: row.schedule, kind: kind, action: row.action)
    }
    func isRevoked(uid: TagUID, signature: [UInt8]?) throws -> Bool {
        try base.isRevoked(uid: uid, signature: signature)
    }
}

/// The daemon's tap judgement: `TapJudge` (DoorCore) on the store's registry.
enum TagJudgement {
    typealias Result = TapJudge.Result

    static func judge(
        uid: TagUID, message: NDEFMessage?, secrets: [StickerSecret], actionCount: Int,
        registry: some StickerRegistry, now: Int64, policy: TapPolicy? = nil
    ) -> Result {
        TapJudge.judge(
            uid: uid, message: message, secrets: secrets, actionCount: actionCount,
            registry: RegistryView(base: registry), now: now, policy: policy)
    }

    /// An NTAG 424 DNA's tap: `NTAG424Judge` (DoorCore) on the store's registry.
    static func judgeNTAG424(
        _ tap: NTAG424TapFacts, siteKey: [UInt8]?, registry: some StickerRegistry, now: Int64, policy: TapPolicy,
        acceptCounter: (TagUID, UInt32) throws -> Bool
    ) -> TagPresentation {
        NTAG424Judge.judge(
            tap: tap, siteKey: siteKey, registry: RegistryView(base: registry), now: now, policy: policy,
            acceptCounter: acceptCounter)
    }
}
