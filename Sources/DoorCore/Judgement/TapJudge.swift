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

/// The sticker and fob entry point as it was before `TapDecision` (tests
/// and the fuzz target call it): one call into `TapDecision`, where the
/// rules are.
public enum TapJudge {
    public typealias Result = TapDecision.Outcome

    public static func judge(
        uid: TagUID, message: NDEFMessage?, secrets: [StickerSecret], actionCount: Int,
        registry: some TagRegistryView, now: Int64, policy: TapPolicy? = nil
    ) -> Result {
        TapDecision.decide(
            TapFacts(uid: uid, message: message), secrets: TapSecrets(stickers: secrets), actionCount: actionCount,
            registry: registry, now: now, policy: policy)
    }
}
