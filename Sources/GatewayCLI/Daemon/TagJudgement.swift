import DoorCore

/// What the issued-tag registry and the revocation list say about a tag
/// (DESIGN.md "Issued-tag registry"); the store implements it, tests fake it.
protocol StickerRegistry {
    /// The registry row of this UID: its state (`pending`, `active`, `revoked`,
    /// `failed`) and expiry (Unix seconds), or nil when never issued here.
    func issuedTag(_ uid: TagUID) throws -> (state: String, validUntil: Int64?)?
    /// Revoked by UID, or (v1) by the sticker's signature.
    func isRevoked(uid: TagUID, signature: [UInt8]?) throws -> Bool
}

/// The door's verdict on a tag read: DESIGN.md's blank / ours / foreign, the
/// sticker verdict of COMPAT §1/§4, then the registry's rules on top — a v2
/// sticker needs its UID active here, revocation by UID and (v1) by
/// signature, expiry.
enum TagJudgement {
    struct Result: Equatable {
        var presentation: TagPresentation
        /// The sticker verdict when the tag carries a sticker in our format.
        var sticker: StickerVerdict?
    }

    static func judge(
        uid: TagUID, message: NDEFMessage?, secrets: [StickerSecret], actionCount: Int,
        registry: StickerRegistry, now: Int64
    ) -> Result {
        guard let message, !message.isEmpty else {
            return Result(
                presentation: TagPresentation(
                    uid: uid, content: .blank, verdict: .deny(reason: "blank", countsTowardLockout: false)),
                sticker: nil)
        }
        let uri = message.records.lazy.compactMap { try? $0.uri() }.first
        guard let uri, uri.hasPrefix(StickerURL.prefix) else {
            return Result(
                presentation: TagPresentation(
                    uid: uid, content: .foreign, verdict: .deny(reason: "not_ours", countsTowardLockout: false)),
                sticker: nil)
        }
        let verdict = StickerJudge.judge(uri, uid: uid, secrets: secrets, actionCount: actionCount)
        func deny(_ reason: String) -> Result {
            Result(
                presentation: TagPresentation(
                    uid: uid, content: .ours, verdict: .deny(reason: reason, countsTowardLockout: true)),
                sticker: verdict)
        }
        guard verdict.isValid, let url = verdict.url else { return deny(verdict.reason.rawValue) }
        do {
            if try registry.isRevoked(uid: uid, signature: url.version == .v1 ? url.signature : nil) {
                return deny("revoked")
            }
            let row = try registry.issuedTag(uid)
            if let until = row?.validUntil, now > until { return deny("expired") }
            if url.version == .v2 {
                guard let row else { return deny("not_issued") }
                guard row.state == "active" else { return deny("tag_\(row.state)") }
            }
        } catch {
            // The registry could not be read: fail closed.
            return deny("registry_unavailable")
        }
        let grant = AccessVerdict.grant(action: ActionIndex(url.action), reason: verdict.reason.rawValue)
        return Result(presentation: TagPresentation(uid: uid, content: .ours, verdict: grant), sticker: verdict)
    }
}
