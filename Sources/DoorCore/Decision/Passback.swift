/// Entry and exit, anti-passback (issue 36, docs/policy.md "Entry, exit and
/// anti-passback"). A door with an entry and an exit reader (`[[readers]]`
/// `side`) records each credential's last granted passage — in at an entry
/// reader, out at an exit reader — and an action's `passback` rule judges a
/// second entry without an exit between: `soft` grants it and says so
/// (granted `passback`), `hard` denies it (`passback`). Per door: the in/out
/// state is this door's store, never a fleet document.
///
/// An exit tap is never refused for passback: the door does not keep anyone
/// in (a person who came in behind someone else can still leave).

/// The side of the door a reader is on.
public enum PassageSide: String, Equatable, Hashable, Sendable, CaseIterable {
    case entry, exit
}

/// An action's `passback` (docs/policy.md).
public enum PassbackMode: String, Equatable, Hashable, Sendable, CaseIterable {
    /// No anti-passback (occupancy is still recorded).
    case off
    /// A second entry opens, granted `passback` (audited).
    case soft
    /// A second entry is denied `passback`.
    case hard
}

/// An action's anti-passback rule: its mode and the timed reset.
public struct PassbackRule: Equatable, Hashable, Sendable {
    public var mode: PassbackMode
    /// Seconds after an entry at which the credential counts as out again
    /// for passback (`passback_reset_minutes`); nil: only an exit or
    /// `gatewayctl passback reset` ends it.
    public var resetAfter: Int64?
    public init(mode: PassbackMode, resetAfter: Int64? = nil) {
        self.mode = mode
        self.resetAfter = resetAfter
    }
    public static let off = PassbackRule(mode: .off)
}

/// A credential's last granted passage, as the store keeps it.
public struct Presence: Equatable, Hashable, Sendable {
    /// In (an entry) or out (an exit).
    public var inside: Bool
    /// When (Unix seconds).
    public var since: Int64
    /// The reader's name.
    public var reader: String
    public init(inside: Bool, since: Int64, reader: String) {
        self.inside = inside
        self.since = since
        self.reader = reader
    }
}

/// What the door knows of a tap's passage, read before it is decided
/// (`TapFacts.passage`): the reader's side and the credential's last passage.
public struct PassageFacts: Equatable, Sendable {
    public var side: PassageSide
    /// nil: no passage recorded (never seen, or reset).
    public var last: Presence?
    /// The store could not be read: a hard rule fails closed (`registry_unavailable`).
    public var unreadable: Bool
    public init(side: PassageSide, last: Presence?, unreadable: Bool = false) {
        self.side = side
        self.last = last
        self.unreadable = unreadable
    }
}

public enum Passback {
    /// The rule's word on one tap.
    public enum Verdict: Equatable, Sendable {
        /// Nothing to say: the tap stands as decided.
        case clear
        /// A second entry under `soft`: opens, granted `passback`.
        case soft
        /// A second entry under `hard`: denied `passback`.
        case hard
        /// Under `hard`, the passage could not be read: denied `registry_unavailable`.
        case unreadable
    }

    /// The one rule, which the tap (`apply`) and `gatewayctl policy explain` both use.
    public static func verdict(_ rule: PassbackRule, passage: PassageFacts, now: Int64) -> Verdict {
        guard rule.mode != .off, passage.side == .entry else { return .clear }
        if passage.unreadable { return rule.mode == .hard ? .unreadable : .clear }
        guard let last = passage.last, last.inside else { return .clear }
        if let reset = rule.resetAfter, now - last.since >= reset { return .clear }
        return rule.mode == .hard ? .hard : .soft
    }

    /// A decided tap with the passback rule of its action applied: only a
    /// grant at a reader with a side is judged.
    static func apply(_ p: TagPresentation, passage: PassageFacts?, policy: TapPolicy?, now: Int64)
        -> TagPresentation
    {
        guard let passage, case .grant(let action, _) = p.verdict,
            let rule = policy?.actions.first(where: { $0.index == action })?.passback
        else { return p }
        switch verdict(rule, passage: passage, now: now) {
        case .clear:
            return p
        case .soft:
            var soft = p
            soft.verdict = .grant(action: action, reason: GrantReason.passback)
            return soft
        case .hard:
            return TapDecision.deny(p.uid, .passback, content: p.content)
        case .unreadable:
            return TapDecision.deny(p.uid, .registryUnavailable, content: p.content)
        }
    }
}
