/// A weekly window: on these weekdays, from `from` (included) to `to`
/// (excluded), local wall-clock time, in minutes since midnight.
public struct ScheduleWindow: Hashable, Sendable {
    /// 0 = Sunday … 6 = Saturday.
    public var days: Set<Int>
    /// 0…1439.
    public var from: Int
    /// from+1…1440 (`24:00` is the end of the day).
    public var to: Int
    public init(days: Set<Int>, from: Int, to: Int) {
        self.days = days
        self.from = from
        self.to = to
    }

    public static let dayNames = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// `HH:MM` (00:00…24:00) in minutes.
    public static func minutes(_ text: String) -> Int? {
        let p = text.split(separator: ":", omittingEmptySubsequences: false)
        guard p.count == 2, p[0].count == 2, p[1].count == 2, let h = Int(p[0]), let m = Int(p[1]),
            p[0].allSatisfy(\.isNumber), p[1].allSatisfy(\.isNumber), (0...23).contains(h) || (h == 24 && m == 0),
            (0...59).contains(m)
        else { return nil }
        return h * 60 + m
    }

    func contains(weekday: Int, secondOfDay: Int) -> Bool {
        days.contains(weekday) && secondOfDay >= from * 60 && secondOfDay < to * 60
    }
}

/// A named weekly schedule (`[[schedules]]`): its windows, and holidays on
/// which none applies. Evaluated on local wall-clock time: a window that
/// starts in the hour skipped in spring opens when the clocks reach the
/// window's remaining part; a window over the hour repeated in autumn is
/// open in both (docs/policy.md "Daylight saving time").
public struct WeeklySchedule: Hashable, Sendable {
    public var name: String
    public var windows: [ScheduleWindow]
    public var holidays: Set<CivilDate>
    /// `first_person_in` (FirstPersonIn.swift): as the passage schedule, a
    /// window unlocks only after a valid grant inside it.
    public var firstPersonIn = false
    public init(name: String, windows: [ScheduleWindow], holidays: Set<CivilDate> = []) {
        self.name = name
        self.windows = windows
        self.holidays = holidays
    }

    /// In a window at this local reading.
    public func isActive(_ local: LocalTime) -> Bool {
        if holidays.contains(local.date) { return false }
        let weekday = local.date.weekday
        return windows.contains { $0.contains(weekday: weekday, secondOfDay: local.secondOfDay) }
    }

    public func isActive(at unix: Int64, zone: TimeZoneRules) -> Bool { isActive(zone.local(unix)) }

    /// The first instant after `unix` at which `isActive` changes, looked for
    /// over `horizon` seconds (15 days); nil when it does not change in that
    /// time. Window edges fall on whole local minutes and every zone's
    /// offset today is whole minutes, so whole UTC minutes are enough.
    public func nextChange(after unix: Int64, zone: TimeZoneRules, horizon: Int64 = 15 * 86_400) -> Int64? {
        let start = clampInstant(unix)
        let now = isActive(at: start, zone: zone)
        var t = (floorDiv(start, 60) + 1) * 60
        let end = start + min(max(horizon, 0), 1 << 30)
        while t <= end {
            if isActive(at: t, zone: zone) != now { return t }
            t += 60
        }
        return nil
    }
}

/// The schedule side of a tap's judgement (docs/policy.md): the action's
/// schedule, the tag's own, its validity window and its uses left.
public struct AccessPolicy: Equatable, Sendable {
    public var schedules: [WeeklySchedule]
    public var zone: TimeZoneRules
    public init(schedules: [WeeklySchedule], zone: TimeZoneRules) {
        self.schedules = schedules
        self.zone = zone
    }

    public func schedule(named name: String) -> WeeklySchedule? { schedules.first { $0.name == name } }

    /// Denial reasons, besides the registry's own.
    public enum Denial: String, Sendable, CaseIterable {
        case outsideSchedule = "outside_schedule"
        /// A schedule or a guest window needs the wall clock, and it is not synchronised.
        case clockUnsynchronised = "clock_unsynchronised"
        case unknownSchedule = "unknown_schedule"
        case notYetValid = "not_yet_valid"
        case noUsesLeft = "no_uses_left"
    }

    /// Why a tap for `action` (its schedule `actionSchedule`) by a tag whose
    /// registry row is `tag` is refused at `wall`, or nil when the policy
    /// allows it. Pure; fails closed on an unsynchronised clock and on a
    /// schedule name this configuration does not have.
    public func denial(actionSchedule: String?, tag: IssuedTagView?, wall: WallClock) -> Denial? {
        let names = [actionSchedule, tag?.schedule].compactMap { $0 }
        let needsClock = !names.isEmpty || tag?.validFrom != nil
        if needsClock && !wall.synchronised { return .clockUnsynchronised }
        if let from = tag?.validFrom, wall.unixSeconds < from { return .notYetValid }
        for name in names {
            guard let s = schedule(named: name) else { return .unknownSchedule }
            if !s.isActive(at: wall.unixSeconds, zone: zone) { return .outsideSchedule }
        }
        if let left = tag?.usesLeft, left <= 0 { return .noUsesLeft }
        return nil
    }
}
