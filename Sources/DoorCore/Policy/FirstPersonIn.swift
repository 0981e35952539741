/// First person in (docs/policy.md "First person in"): a passage schedule
/// with `first_person_in = true` unlocks the door for its window only after a
/// valid grant inside that window — the first member of staff in opens the
/// office for the day; nobody in, the door stays locked even in the window
/// (snow day, strike). The window still ends passage at its end, as a plain
/// passage schedule does.
///
/// A window is known by the instant it ends (`WeeklySchedule.nextChange`
/// from inside it; `nil`, a window that does not end within the schedule's
/// look-ahead, is one window). The door keeps the end of the window a grant
/// opened (`openedUntil`), which the daemon persists: a gatewayd restart or a
/// reboot inside an opened window comes back in passage, since a person at
/// their desk expects the door not to relock mid-day because the Pi rebooted.
/// A grant in a later window, or the same window after it ended, opens that
/// one afresh.
public struct FirstPersonIn: Equatable, Sendable {
    /// The end of the window a grant opened, nil: none (or `Int64.max`: a window without an end in sight).
    public private(set) var openedUntil: Int64?

    public init(openedUntil: Int64? = nil) {
        self.openedUntil = openedUntil
    }

    /// Whether the schedule holds the door in passage now: inside a window
    /// (`active`), and, with `required`, a grant opened this window.
    public func passage(active: Bool, windowEnd: Int64?, required: Bool) -> Bool {
        guard active else { return false }
        guard required else { return true }
        return openedUntil == Self.key(windowEnd)
    }

    /// A valid grant at a moment the schedule reads `active`: it opens the
    /// window. True when that changed something (persist it, apply passage).
    public mutating func granted(active: Bool, windowEnd: Int64?) -> Bool {
        guard active else { return false }
        let key = Self.key(windowEnd)
        guard openedUntil != key else { return false }
        openedUntil = key
        return true
    }

    static func key(_ windowEnd: Int64?) -> Int64 { windowEnd ?? .max }

    /// The persisted form: the window end's decimal, or empty.
    public var persisted: String { openedUntil.map { "\($0)\n" } ?? "" }

    /// Reads `persisted`; anything else is no opened window (fail closed: locked).
    public init(persisted text: String) {
        let digits = text.split(separator: "\n").first.map(String.init) ?? ""
        self.init(openedUntil: Int64(digits))
    }
}
