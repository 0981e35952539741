// Site lockdown (docs/policy.md "Lockdown", issue 36): the door locks, its
// passage schedule stops, and only credentials of an action marked
// `lockdown_exempt` open. Started and ended by `gatewayctl lockdown`, Home
// Assistant's admin switch or the site's signed command (SiteCommand.swift);
// persisted by the daemon, which hands a restarted machine the lockdown it
// was in (`DoorSettings.initialLockdown`). A fire alarm still releases its
// outputs: its holder is its own, and a lockdown takes none away.

/// A lockdown in force: who started it, through what, when.
public struct Lockdown: Equatable, Hashable, Sendable, Codable {
    /// Who asked (`uid=1000` at the control socket, the site command's `by`, `homeassistant`).
    public var by: String
    /// Through what: `gatewayctl`, `site` (the signed fleet command), `homeassistant`.
    public var source: String
    /// Wall-clock start, Unix seconds.
    public var since: Int64
    /// The mode the door was in before (`lockdown` when an admin had set it:
    /// the end of the site's lockdown does not lift the admin's).
    public var modeBefore: DoorMode

    public init(by: String, source: String, since: Int64, modeBefore: DoorMode = .normal) {
        self.by = by
        self.source = source
        self.since = since
        self.modeBefore = modeBefore
    }

    /// `status`'s and the state document's `lockdown` object.
    public var json: JSONValue {
        .object([
            ("active", .bool(true)), ("by", .string(by)), ("source", .string(source)),
            ("since", .string(UTCTime.iso8601(since))),
        ])
    }

    /// The object when no lockdown holds.
    public static let inactiveJSON = JSONValue.object([("active", .bool(false))])

    /// The rule the door and `policy explain` share: in lockdown, a grant for
    /// an action opens only when the action is `lockdown_exempt`.
    public static func denies(_ action: ActionDefinition?, inLockdown: Bool) -> Bool {
        inLockdown && !(action?.lockdownExempt ?? false)
    }
}

/// A request to start or end the lockdown.
public enum LockdownRequest: Equatable, Hashable, Sendable {
    case start(by: String, source: String, at: Int64)
    case end(by: String, source: String)
}

extension DoorMachine {
    /// Whether a grant for `action` opens in lockdown: only an action marked
    /// `lockdown_exempt` (in the door's lockdown mode and in the site's alike).
    public func lockdownExempt(_ action: ActionIndex) -> Bool {
        !Lockdown.denies(settings.action(action), inLockdown: true)
    }

    /// Whether the door is in lockdown (the site's or an admin's mode).
    public var inLockdown: Bool { mode == .lockdown || lockdown != nil }

    /// The mode a machine starts in: a persisted lockdown wins over the file's mode.
    static func startingMode(_ settings: DoorSettings) -> DoorMode {
        settings.initialLockdown == nil ? settings.initialMode : .lockdown
    }

    /// Start: the door goes into lockdown mode (what sticker and remote runs
    /// hold is stopped, passage released, provisioning and a waiting
    /// approval cancelled — `setMode`'s), then the lockdown is recorded.
    /// Already in lockdown: nothing changes (a site command heard twice, a
    /// second `start`), and nothing is emitted.
    mutating func lockdownRequest(_ request: LockdownRequest, _ now: MonotonicInstant, _ fx: inout [DoorEffect]) {
        switch request {
        case .start(let by, let source, let at):
            guard lockdown == nil else { return }
            let before = mode
            setMode(.lockdown, source: source, now, &fx)
            lockdown = Lockdown(
                by: by, source: source, since: at, modeBefore: before == .lockdown ? .lockdown : .normal)
            fx.append(.emit(DoorEvent(.lockdownStarted, source: source, who: by)))
        case .end(let by, let source):
            guard let held = lockdown else { return }
            lockdown = nil
            // Back to normal (never to passage: the schedule opens the door
            // again at its next edge), or to the admin's own lockdown.
            setMode(held.modeBefore, source: source, now, &fx)
            fx.append(.emit(DoorEvent(.lockdownEnded, source: source, who: by)))
        }
    }

    /// `setMode`'s guard: while the site's lockdown holds, no mode change
    /// (an admin's, a schedule's, Home Assistant's) takes the door out of it;
    /// only `lockdown end` does. Refused ones are audited (`lockdown_refused`
    /// `mode_normal`, `mode_passage`).
    func lockdownAllowsMode(_ new: DoorMode, source: String, _ fx: inout [DoorEffect]) -> Bool {
        guard lockdown != nil, new != .lockdown else { return true }
        fx.append(.emit(DoorEvent(.lockdownRefused, reason: "mode_\(new.rawValue)", source: source)))
        return false
    }
}
