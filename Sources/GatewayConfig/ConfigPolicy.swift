import DoorCore

extension GatewayConfiguration {
    /// `[[schedules]]` (docs/policy.md): named weekly windows with holidays.
    ///
    ///     [[schedules]]
    ///     name = "staff"
    ///     windows = [{ days = ["mon", "tue"], from = "08:00", to = "18:00" }]
    ///     holidays = ["2026-12-25"]
    static func readSchedules(_ root: TableReader) -> [WeeklySchedule] {
        guard let tables = root.tables("schedules") else { return [] }
        var out: [WeeklySchedule] = []
        for t in tables {
            let name = t.optionalString("name", Check.identifier(max: 64))
            if !t.has("name") { t.fail("name", "is required: letters, digits, '-' and '_'") }
            var windows: [ScheduleWindow] = []
            if let ws = t.tables("windows") {
                if ws.count > 64 { t.fail("windows", "at most 64 windows") }
                for w in ws {
                    let days = w.stringList("days", []) { d in
                        ScheduleWindow.dayNames.contains(d)
                            ? nil : "\"\(d.prefix(16))\" is not a day: mon, tue, wed, thu, fri, sat, sun"
                    }
                    if !w.has("days") { w.fail("days", "is required: e.g. [\"mon\", \"tue\"]") }
                    let time = { (v: String) in
                        ScheduleWindow.minutes(v) == nil ? "\"\(v.prefix(16))\" is not a time HH:MM (00:00…24:00)" : nil
                    }
                    let from = w.optionalString("from", time).flatMap(ScheduleWindow.minutes)
                    let to = w.optionalString("to", time).flatMap(ScheduleWindow.minutes)
                    if !w.has("from") { w.fail("from", "is required: HH:MM, the first minute of the window") }
                    if !w.has("to") { w.fail("to", "is required: HH:MM, the end (not included; 24:00 ends the day)") }
                    w.finish()
                    guard let from, let to else { continue }
                    if from == 1440 { w.fail("from", "24:00 is the end of a day, not a start") }
                    if to <= from {
                        w.fail(
                            "to",
                            "must be after from (a window over midnight is two windows: from … to 24:00, and 00:00 … next day)"
                        )
                        continue
                    }
                    let set = Set(days.compactMap { ScheduleWindow.dayNames.firstIndex(of: $0) })
                    if !set.isEmpty { windows.append(ScheduleWindow(days: set, from: from, to: to)) }
                }
            } else {
                t.fail("windows", "is required: [{ days = [\"mon\"], from = \"08:00\", to = \"18:00\" }]")
            }
            let holidays = t.stringList("holidays", []) { d in
                CivilDate(d) == nil ? "\"\(d.prefix(16))\" is not a date YYYY-MM-DD" : nil
            }
            // docs/policy.md "First person in" (FirstPersonIn.swift).
            let firstPersonIn = t.bool("first_person_in", false)
            t.finish()
            guard let name else { continue }
            if out.contains(where: { $0.name == name }) {
                t.fail("name", "\"\(name)\" is another schedule's name too")
                continue
            }
            var schedule = WeeklySchedule(
                name: name, windows: windows, holidays: Set(holidays.compactMap(CivilDate.init)))
            schedule.firstPersonIn = firstPersonIn
            out.append(schedule)
        }
        return out
    }

    /// A schedule name a table refers to (an action's `schedule`,
    /// `door.passage_schedule`): it must be one of `[[schedules]]`.
    static func scheduleName(_ t: TableReader?, _ key: String, schedules: [WeeklySchedule]) -> String? {
        t?.optionalString(key) { n in
            schedules.contains { $0.name == n }
                ? nil
                : "there is no schedule named \"\(n.prefix(64))\""
                    + (schedules.isEmpty
                        ? " (add a [[schedules]] table)"
                        : " (schedules: \(schedules.map(\.name).joined(separator: ", ")))")
        }
    }

    /// `clock.time_zone`: a zone name under /usr/share/zoneinfo (`Europe/Berlin`, `UTC`).
    static let timeZoneName: @Sendable (String) -> String? = { s in
        guard !s.isEmpty, s.utf8.count <= 64, !s.hasPrefix("/"), !s.hasPrefix("-"),
            !s.split(separator: "/").contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }),
            s.utf8.allSatisfy({ Check.isBare($0) || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "+") })
        else { return "\"\(s.prefix(64))\" is not a zone name like \"Europe/Berlin\" (see /usr/share/zoneinfo)" }
        return nil
    }
}
