/// The verdict on a sticker, with a stable reason code (docs/formats.md §1, §4).
public struct StickerVerdict: Equatable, Sendable, Hashable, CustomStringConvertible {
    public enum Outcome: String, Sendable, Hashable { case valid, invalid, undecided }

    public enum Reason: String, Sendable, Hashable, CaseIterable {
        case validV1 = "valid_v1"
        case validV2 = "valid_v2"
        case notOurs = "not_ours"
        case malformed
        case unknownAction = "unknown_action"
        case noSecret = "no_secret"
        case badSignature = "bad_signature"
        case uidMismatch = "uid_mismatch"
        case uidUnknown = "uid_unknown"
        case v1NotAllowed = "v1_not_allowed"
    }

    public var reason: Reason
    public var url: StickerURL?
    /// The secret that verified it (valid verdicts, and v1NotAllowed / uidMismatch).
    public var secretID: Int64?
    public var detail: String?

    public var outcome: Outcome {
        switch reason {
        case .validV1, .validV2: return .valid
        case .noSecret, .uidUnknown: return .undecided
        default: return .invalid
        }
    }
    public var isValid: Bool { outcome == .valid }
    public var action: Int? { url?.action }

    /// Denials of stickers in our format count toward lockout; a foreign tag
    /// (a bank card, a web link) is "not ours", not an attack (docs/design.md).
    public var countsTowardLockout: Bool { !isValid && reason != .notOurs }

    public var description: String {
        let base: String
        switch reason {
        case .validV1: base = "valid v1 sticker (phone-written, imported secret)"
        case .validV2: base = "valid v2 sticker (bound to this tag's UID)"
        case .notOurs: base = "not our sticker"
        case .malformed: base = "malformed sticker"
        case .unknownAction: base = "unknown action"
        case .noSecret: base = "no active secret for this action"
        case .badSignature: base = "bad signature"
        case .uidMismatch: base = "UID mismatch: the sticker is bound to another tag"
        case .uidUnknown: base = "v2 sticker but the tag's UID is not known"
        case .v1NotAllowed:
            base = "v1 not allowed: a verifying secret is gateway-generated (a v2 sticker with u removed?)"
        }
        return detail.map { "\(base): \($0)" } ?? base
    }
}

/// Judges signatures and origin only (docs/formats.md §4 acceptance rules). The
/// issued-tag registry and revocations are the daemon's, on top of this.
public enum StickerJudge {
    /// - Parameters:
    ///   - text: the URI record's text.
    ///   - uid: the tag's hardware UID, when known.
    ///   - secrets: candidate secrets; only active ones of the sticker's action are used.
    ///   - actionCount: the number of configured actions (`idx` must be below it).
    public static func judge(_ text: String, uid: TagUID?, secrets: [StickerSecret], actionCount: Int) -> StickerVerdict
    {
        let url: StickerURL
        do {
            url = try StickerURL.parse(text)
        } catch {
            switch error {
            case .notOurs: return StickerVerdict(reason: .notOurs)
            case .malformed(let why): return StickerVerdict(reason: .malformed, detail: why)
            }
        }
        return judge(url, uid: uid, secrets: secrets, actionCount: actionCount)
    }

    public static func judge(_ url: StickerURL, uid: TagUID?, secrets: [StickerSecret], actionCount: Int)
        -> StickerVerdict
    {
        guard url.action < actionCount else {
            return StickerVerdict(reason: .unknownAction, url: url, detail: "idx=\(url.action)")
        }
        let candidates = secrets.filter { $0.active && $0.action == url.action }
        guard !candidates.isEmpty else { return StickerVerdict(reason: .noSecret, url: url) }
        // Every candidate is checked (no early exit) so timing does not tell which matched.
        let verifying = candidates.filter {
            Crypto.constantTimeEqual(Crypto.hmacSHA256(key: $0.key, message: url.signedMessage), url.signature)
        }
        if let binding = url.uidBinding {
            // `u` present: judged only as v2 (no downgrade).
            guard !verifying.isEmpty else { return StickerVerdict(reason: .badSignature, url: url) }
            guard let uid else { return StickerVerdict(reason: .uidUnknown, url: url) }
            let bound = verifying.filter {
                Crypto.constantTimeEqual(
                    Array(Crypto.hmacSHA256(key: $0.key, message: url.uidMessage(uid)).prefix(16)),
                    binding)
            }
            guard let secret = bound.first else {
                return StickerVerdict(reason: .uidMismatch, url: url, secretID: verifying[0].id)
            }
            return StickerVerdict(reason: .validV2, url: url, secretID: secret.id)
        }
        guard !verifying.isEmpty else { return StickerVerdict(reason: .badSignature, url: url) }
        // v1 needs every verifying secret imported: one the gateway generated
        // signed v2 stickers, and this may be one with its `u` cut off. The
        // same key held twice (a share link of it imported back) stays v2-only.
        if let generated = verifying.first(where: { $0.origin == .generated }) {
            return StickerVerdict(reason: .v1NotAllowed, url: url, secretID: generated.id)
        }
        return StickerVerdict(reason: .validV1, url: url, secretID: verifying[0].id)
    }
}
