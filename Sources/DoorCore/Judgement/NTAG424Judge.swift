/// What the reader established on one tap of an NTAG 424 DNA
/// (NFCReader's `NTAG424Tap`, as the core needs it).
public struct NTAG424TapFacts: Equatable, Sendable {
    public enum Proof: Equatable, Sendable {
        /// AuthenticateEV2First with the door's key for this UID succeeded;
        /// GetCardUID (CommMode.Full) answered `cardUID`.
        case authenticated(cardUID: [UInt8])
        /// The tag refused the key, or could not show it holds it.
        case refused(String)
        /// Not tried (the door has no site key).
        case notTried
        /// The tag left before the tap finished (a tear): nothing proved, nothing attempted.
        case torn
    }
    /// The anticollision UID.
    public var uid: TagUID
    /// The first URI record of the NDEF file, read before authenticating (its SUN mirror live).
    public var uri: String?
    public var proof: Proof
    public init(uid: TagUID, uri: String?, proof: Proof) {
        self.uid = uid
        self.uri = uri
        self.proof = proof
    }
}

/// The door's verdict on an NTAG 424 DNA tap (issue 26, docs/ntag424.md): the
/// registry must hold the UID as an active `ntag424` tag, the tag must have
/// proved the key diversified for it from the site master key
/// (AuthenticateEV2First) with GetCardUID naming the same UID, its action
/// must list `"ntag424"`, and where the NDEF carries a SUN URL it must verify
/// with the door's keys and its read counter must be strictly above the last
/// one accepted for that UID. The counter is accepted (and stored, durably,
/// by `acceptCounter`) last, only for a tap that is granted otherwise.
///
/// The SUN-only tier (`"ntag424-sun"`, docs/ntag424.md "The SUN-only tier"):
/// an action that lists it also opens for a tap that did not prove the key —
/// EV2 skipped (`wantsEV2`) or failed — when its SUN URL verifies, names the
/// anticollision UID and carries a fresh counter. Such a grant is audited
/// `valid_sun_only`: anyone who read the tag once holds a URL the door has
/// not seen (pre-play). A tap that proved the key is audited `ntag424`
/// wherever it opens.
public enum NTAG424Judge {
    public static func judge(
        tap: NTAG424TapFacts, siteKey: [UInt8]?, registry: some TagRegistryView, now: Int64, policy: TapPolicy,
        acceptCounter: (TagUID, UInt32) throws -> Bool
    ) -> TagPresentation {
        let uid = tap.uid
        func deny(_ why: Denial) -> TagPresentation {
            TagPresentation(uid: uid, content: .ours, verdict: why.verdict)
        }
        // A torn tap is no attempt at anything: denied, not counted.
        if tap.proof == .torn { return deny(.tagLost) }
        let row: IssuedTagView
        do {
            if try registry.isRevoked(uid: uid, signature: nil) { return deny(.revoked) }
            guard let r = try registry.issuedTag(uid) else { return deny(.unknownTag) }
            row = r
        } catch {
            return deny(.registryUnavailable)
        }
        // A 424 enrolled as a plain fob is judged as one (weak, opt-in).
        if row.kind == .uid {
            return UIDFobJudge.judge(uid: uid, registry: registry, now: now, policy: policy)
                ?? deny(.unknownTag)
        }
        guard row.kind == .ntag424 else { return deny(.unknownTag) }
        guard row.state == .active else { return deny(.tagState(row.state)) }
        if let until = row.validUntil, now > until { return deny(.expired) }
        let definition = row.action.flatMap { action in policy.actions.first { $0.index == action } }
        let byKey = definition?.credentials.contains(.ntag424) ?? false
        let bySUN = definition?.credentials.contains(.ntag424SUN) ?? false
        let sunURL = tap.uri.flatMap { try? SUNURL.parse($0) }
        let proved: Bool
        switch tap.proof {
        case .authenticated(let cardUID):
            guard cardUID == uid.bytes else { return deny(.uidMismatch) }
            proved = true
        case .notTried, .refused, .torn:
            // Without the chip's proof only the SUN-only tier can open, and only on a SUN.
            guard bySUN, sunURL != nil else { return deny(.authFailed) }
            proved = false
        }
        guard let action = row.action, let definition else { return deny(.unknownAction) }
        guard byKey || bySUN else { return deny(.credentialNotAllowed) }
        // The SUN, where the NDEF carries one (always, on the SUN-only tier).
        var counter: UInt32?
        if let sun = sunURL {
            guard let siteKey else { return deny(.authFailed) }
            do {
                let keys = try NTAG424.DoorKeys(masterKey: siteKey, uid: uid.bytes, issue: row.keyIssue ?? .legacy)
                let verdict = try sun.verify(
                    metaReadKey: keys[NTAG424.DoorKeys.metaRead], fileReadKey: keys[NTAG424.DoorKeys.fileRead])
                guard verdict.macOK, let c = verdict.piccData.counter, let piccUID = verdict.piccData.uid else {
                    return deny(.sunInvalid)
                }
                guard piccUID == uid.bytes else { return deny(.uidMismatch) }
                counter = c
            } catch {
                return deny(.sunInvalid)
            }
        }
        // Schedules, a guest pass's start and uses: not an attack.
        if let why = policy.policy.denial(actionSchedule: definition.schedule, tag: row, wall: policy.wall) {
            return deny(.policy(why))
        }
        if let counter {
            do {
                guard try acceptCounter(uid, counter) else { return deny(.counterReplay) }
            } catch {
                return deny(.registryUnavailable)
            }
        }
        let reason = proved ? GrantReason.ntag424 : GrantReason.validSUNOnly
        return TagPresentation(uid: uid, content: .ours, verdict: .grant(action: action, reason: reason))
    }

    /// Whether the door runs AuthenticateEV2First on this UID's tap. Not when
    /// the registry holds it as an `ntag424` tag whose action lists
    /// `"ntag424-sun"` and not `"ntag424"`: that action opens on the SUN alone,
    /// so the tap skips the EV2 round trip. Any doubt (no such row, an
    /// unreadable registry, an unknown action) answers true.
    public static func wantsEV2(uid: TagUID, registry: some TagRegistryView, actions: [ActionDefinition]) -> Bool {
        wantsEV2(try? registry.issuedTag(uid), actions: actions)
    }

    private static func wantsEV2(_ row: IssuedTagView?, actions: [ActionDefinition]) -> Bool {
        guard let row, row.kind == .ntag424, let action = row.action,
            let definition = actions.first(where: { $0.index == action })
        else { return true }
        return definition.credentials.contains(.ntag424) || !definition.credentials.contains(.ntag424SUN)
    }

    /// The key issue a tap of `uid` authenticates key 0 with, or nil when it
    /// skips EV2 (`wantsEV2`): the registry row's issue, the legacy one for a
    /// row without a salt or no row at all (such a tap is denied either way).
    public static func ev2Issue(uid: TagUID, registry: some TagRegistryView, actions: [ActionDefinition])
        -> NTAG424.KeyIssue?
    {
        // One registry read per tap (this runs on the reader thread before EV2).
        let row = try? registry.issuedTag(uid)
        guard wantsEV2(row, actions: actions) else { return nil }
        guard let row, row.kind == .ntag424 else { return .legacy }
        return row.keyIssue ?? .legacy
    }
}

/// A plain key fob or card (`"uid"` credentials, docs/ntag424.md): it opens
/// on its UID alone — trivially cloned — so only an action that lists
/// `"uid"`, and only when the registry holds the UID as an active `uid` tag.
/// The grant's reason is `weak_credential`, so the audit log says so.
public enum UIDFobJudge {
    /// The verdict on an enrolled fob; nil when the UID is not enrolled as
    /// one (the caller's verdict stands).
    public static func judge(uid: TagUID, registry: some TagRegistryView, now: Int64, policy: TapPolicy?)
        -> TagPresentation?
    {
        func deny(_ why: Denial) -> TagPresentation {
            TagPresentation(uid: uid, content: .ours, verdict: why.verdict)
        }
        let row: IssuedTagView
        do {
            guard let r = try registry.issuedTag(uid), r.kind == .uid else { return nil }
            row = r
            if try registry.isRevoked(uid: uid, signature: nil) { return deny(.revoked) }
        } catch {
            return deny(.registryUnavailable)
        }
        guard row.state == .active else { return deny(.tagState(row.state)) }
        if let until = row.validUntil, now > until { return deny(.expired) }
        guard let policy, let action = row.action,
            let definition = policy.actions.first(where: { $0.index == action })
        else { return deny(.unknownAction) }
        guard definition.credentials.contains(.uid) else { return deny(.credentialNotAllowed) }
        if let why = policy.policy.denial(actionSchedule: definition.schedule, tag: row, wall: policy.wall) {
            return deny(.policy(why))
        }
        return TagPresentation(
            uid: uid, content: .ours, verdict: .grant(action: action, reason: GrantReason.weakCredential))
    }
}
