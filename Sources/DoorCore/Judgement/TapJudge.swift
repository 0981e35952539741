/// A row of the issued-tag registry (docs/design.md "Issued-tag registry"), as the
/// tap judgement sees it.
public enum RegistryState: String, Equatable, Hashable, Sendable, CaseIterable {
    case pending, active, revoked, failed
}

/// What the registry says about one UID: its state and expiry (Unix
/// seconds), and for a guest pass or a scheduled tag (docs/policy.md) its
/// start, uses left (nil: unlimited) and schedule name.
public struct IssuedTagView: Equatable, Sendable {
    public var state: RegistryState
    public var validUntil: Int64?
    public var validFrom: Int64?
    public var usesLeft: Int?
    public var schedule: String?
    /// The credential kind it was issued as (nil: a sticker issued before kinds were recorded).
    public var kind: CredentialKind?
    /// The action it was issued for (a sticker carries its own; a 424 or a fob does not).
    public var action: ActionIndex?
    /// An NTAG 424's key issue (its salt and key version); nil for other kinds
    /// and for a 424 provisioned before salts (`NTAG424.KeyIssue.legacy`).
    public var keyIssue: NTAG424.KeyIssue?
    public init(
        state: RegistryState, validUntil: Int64? = nil, validFrom: Int64? = nil, usesLeft: Int? = nil,
        schedule: String? = nil, kind: CredentialKind? = nil, action: ActionIndex? = nil,
        keyIssue: NTAG424.KeyIssue? = nil
    ) {
        self.keyIssue = keyIssue
        self.kind = kind
        self.action = action
        self.state = state
        self.validUntil = validUntil
        self.validFrom = validFrom
        self.usesLeft = usesLeft
        self.schedule = schedule
    }
}

/// The schedule side of a tap (docs/policy.md): the configured schedules in
/// the door's zone, each action's schedule, and the wall clock.
public struct TapPolicy: Sendable {
    public var policy: AccessPolicy
    public var actions: [ActionDefinition]
    public var wall: WallClock
    public init(policy: AccessPolicy, actions: [ActionDefinition], wall: WallClock) {
        self.policy = policy
        self.actions = actions
        self.wall = wall
    }
}

/// The registry and the revocation list, read-only; the store implements it
/// (GatewayStore.StoreRegistry), tests and the fuzz target fake it.
public protocol TagRegistryView {
    /// The registry row of this UID, or nil when never issued here.
    func issuedTag(_ uid: TagUID) throws -> IssuedTagView?
    /// Revoked by UID, or (v1) by the sticker's signature.
    func isRevoked(uid: TagUID, signature: [UInt8]?) throws -> Bool
}

/// The door's verdict on a tap: docs/design.md's blank / ours / foreign, the
/// sticker verdict of docs/formats.md §1/§4, then the registry's rules on top — a v2
/// sticker needs its UID active here, revocation by UID and (v1) by
/// signature, expiry. Pure but for the registry reads, which fail closed.
public enum TapJudge {
    public struct Result: Equatable, Sendable {
        public var presentation: TagPresentation
        /// The sticker verdict when the tag carries a sticker in our format.
        public var sticker: StickerVerdict?
        public init(presentation: TagPresentation, sticker: StickerVerdict?) {
            self.presentation = presentation
            self.sticker = sticker
        }
    }

    public static func judge(
        uid: TagUID, message: NDEFMessage?, secrets: [StickerSecret], actionCount: Int,
        registry: some TagRegistryView, now: Int64, policy: TapPolicy? = nil
    ) -> Result {
        guard let message, !message.isEmpty else {
            if let fob = UIDFobJudge.judge(uid: uid, registry: registry, now: now, policy: policy) {
                return Result(presentation: fob, sticker: nil)
            }
            return Result(
                presentation: TagPresentation(
                    uid: uid, content: .blank, verdict: Denial.blank.verdict),
                sticker: nil)
        }
        let uri = message.records.lazy.compactMap { try? $0.uri() }.first
        guard let uri, uri.hasPrefix(StickerURL.prefix) else {
            // A SUN URL on a tag that did not activate as an NTAG 424 DNA: a
            // copy of a 424's NDEF (the SUN proves nothing without the chip's
            // key, docs/ntag424.md).
            if let uri, (try? SUNURL.parse(uri)) != nil {
                return Result(
                    presentation: TagPresentation(
                        uid: uid, content: .foreign, verdict: Denial.sunCopy.verdict),
                    sticker: nil)
            }
            if let fob = UIDFobJudge.judge(uid: uid, registry: registry, now: now, policy: policy) {
                return Result(presentation: fob, sticker: nil)
            }
            return Result(
                presentation: TagPresentation(
                    uid: uid, content: .foreign, verdict: Denial.notOurs.verdict),
                sticker: nil)
        }
        let verdict = StickerJudge.judge(uri, uid: uid, secrets: secrets, actionCount: actionCount)
        func deny(_ why: Denial) -> Result {
            Result(presentation: TagPresentation(uid: uid, content: .ours, verdict: why.verdict), sticker: verdict)
        }
        guard verdict.isValid, let url = verdict.url else { return deny(.sticker(verdict.reason)) }
        var tagRow: IssuedTagView?
        do {
            if try registry.isRevoked(uid: uid, signature: url.version == .v1 ? url.signature : nil) {
                return deny(.revoked)
            }
            let row = try registry.issuedTag(uid)
            tagRow = row
            if let until = row?.validUntil, now > until { return deny(.expired) }
            if url.version == .v2 {
                guard let row else { return deny(.notIssued) }
                guard row.state == .active else { return deny(.tagState(row.state)) }
            }
        } catch {
            // The registry could not be read: fail closed.
            return deny(.registryUnavailable)
        }
        // Schedules, a guest pass's start and uses: an authentic sticker at
        // the wrong time is not an attack, so these do not count toward lockout.
        if let policy {
            let kind: CredentialKind = url.version == .v2 ? .stickerV2 : .stickerV1
            let allowed = policy.actions.first { $0.index == url.action }?.credentials ?? []
            if !allowed.contains(kind) {
                return deny(.credentialNotAllowed)
            }
            let schedule = policy.actions.first { $0.index == url.action }?.schedule
            if let why = policy.policy.denial(actionSchedule: schedule, tag: tagRow, wall: policy.wall) {
                return deny(.policy(why))
            }
        }
        let grant = AccessVerdict.grant(action: ActionIndex(url.action), reason: verdict.reason.rawValue)
        return Result(presentation: TagPresentation(uid: uid, content: .ours, verdict: grant), sticker: verdict)
    }
}
