/// A calendar date (proleptic Gregorian) and its day number since 1970-01-01.
public struct CivilDate: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int
    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// `YYYY-MM-DD`, a real date (2026-02-30 is refused).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]), (1...12).contains(m),
            d >= 1, d <= CivilDate.daysIn(year: y, month: m)
        else { return nil }
        self.init(year: y, month: m, day: d)
    }

    /// Howard Hinnant's days_from_civil.
    public var dayNumber: Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = Int64(month > 2 ? month - 3 : month + 9)
        let doy = (153 * mp + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    public init(dayNumber: Int64) {
        let (y, m, d) = UTCTime.civil(fromDays: dayNumber)
        self.init(year: Int(y), month: Int(m), day: Int(d))
    }

    /// 0 = Sunday … 6 = Saturday.
    public var weekday: Int { CivilDate.weekday(dayNumber: dayNumber) }
    static func weekday(dayNumber: Int64) -> Int { Int(((dayNumber + 4) % 7 + 7) % 7) }

    public static func isLeap(_ y: Int) -> Bool { y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) }
    public static func daysIn(year: Int, month: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    public static func < (a: Self, b: Self) -> Bool { a.dayNumber < b.dayNumber }

    public var description: String {
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let y = String(year)
        return String(repeating: "0", count: max(0, 4 - y.count)) + y + "-\(two(month))-\(two(day))"
    }
}

/// A wall-clock reading in a zone: the local date, seconds into it, and the
/// offset (east of UTC) and abbreviation in force.
public struct LocalTime: Equatable, Sendable, CustomStringConvertible {
    public var date: CivilDate
    public var secondOfDay: Int
    public var offset: Int
    public var isDST: Bool
    public var abbreviation: String

    /// `2026-03-29T03:00:00+02:00`.
    public var description: String {
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let h = secondOfDay / 3600, m = secondOfDay % 3600 / 60, s = secondOfDay % 60
        let o = abs(offset)
        var zone = "\(offset < 0 ? "-" : "+")\(two(o / 3600)):\(two(o % 3600 / 60))"
        if offset == 0 { zone = "Z" }
        return "\(date)T\(two(h)):\(two(m)):\(two(s))\(zone)"
    }
}

public enum TimeZoneError: Error, Equatable, CustomStringConvertible {
    case notTZif(String)
    case truncated(String)
    case badFooter(String)
    public var description: String {
        switch self {
        case .notTZif(let why): return "not a TZif file: \(why)"
        case .truncated(let what): return "TZif file truncated in \(what)"
        case .badFooter(let footer): return "TZif footer \"\(footer.prefix(64))\" is not a POSIX TZ rule"
        }
    }
}

/// A POSIX TZ rule (`CET-1CEST,M3.5.0,M10.5.0/3`), the footer of a TZif v2+
/// file: it gives the offset for times past the file's transition table.
public struct PosixTZ: Equatable, Sendable {
    /// A transition date of the rule.
    public enum DateRule: Equatable, Sendable {
        /// `Mm.w.d`: weekday d (0 = Sunday) of week w (5 = last) of month m.
        case monthWeekDay(month: Int, week: Int, weekday: Int)
        /// `Jn`: day n (1…365), February 29 never counted.
        case julian1(Int)
        /// `n`: day n (0…365), February 29 counted in leap years.
        case julian0(Int)
    }
    public struct Rule: Equatable, Sendable {
        public var date: DateRule
        /// Local time of the change, seconds (−167…167 hours in TZif v3).
        public var time: Int
    }
    public var standardName: String
    /// Seconds east of UTC (the POSIX sign reversed).
    public var standardOffset: Int
    public var dstName: String?
    public var dstOffset: Int
    public var start: Rule?
    public var end: Rule?

    public init(_ text: String) throws(TimeZoneError) {
        var p = Substring(text)
        func fail() -> TimeZoneError { .badFooter(text) }
        func name() throws(TimeZoneError) -> String {
            if p.first == "<" {
                guard let close = p.firstIndex(of: ">") else { throw fail() }
                let n = String(p[p.index(after: p.startIndex)..<close])
                p = p[p.index(after: close)...]
                guard n.count >= 3 else { throw fail() }
                return n
            }
            let n = p.prefix { $0.isLetter && $0.isASCII }
            p = p.dropFirst(n.count)
            guard n.count >= 3 else { throw fail() }
            return String(n)
        }
        /// `[+-]hh[:mm[:ss]]` in seconds.
        func time(maxHours: Int) throws(TimeZoneError) -> Int {
            var sign = 1
            if p.first == "+" || p.first == "-" {
                if p.first == "-" { sign = -1 }
                p = p.dropFirst()
            }
            var parts: [Int] = []
            while parts.count < 3 {
                let digits = p.prefix { $0.isASCII && $0.isNumber }
                guard !digits.isEmpty, digits.count <= 3, let v = Int(digits) else { throw fail() }
                parts.append(v)
                p = p.dropFirst(digits.count)
                guard p.first == ":" else { break }
                p = p.dropFirst()
            }
            guard parts[0] <= maxHours, parts.dropFirst().allSatisfy({ $0 < 60 }) else { throw fail() }
            let seconds = parts[0] * 3600 + (parts.count > 1 ? parts[1] * 60 : 0) + (parts.count > 2 ? parts[2] : 0)
            return sign * seconds
        }
        func number() throws(TimeZoneError) -> Int {
            let digits = p.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 3, let v = Int(digits) else { throw fail() }
            p = p.dropFirst(digits.count)
            return v
        }
        func rule() throws(TimeZoneError) -> Rule {
            let date: DateRule
            if p.first == "M" {
                p = p.dropFirst()
                let m = try number()
                guard p.first == "." else { throw fail() }
                p = p.dropFirst()
                let w = try number()
                guard p.first == "." else { throw fail() }
                p = p.dropFirst()
                let d = try number()
                guard (1...12).contains(m), (1...5).contains(w), (0...6).contains(d) else { throw fail() }
                date = .monthWeekDay(month: m, week: w, weekday: d)
            } else if p.first == "J" {
                p = p.dropFirst()
                let n = try number()
                guard (1...365).contains(n) else { throw fail() }
                date = .julian1(n)
            } else {
                let n = try number()
                guard (0...365).contains(n) else { throw fail() }
                date = .julian0(n)
            }
            var t = 7200
            if p.first == "/" {
                p = p.dropFirst()
                t = try time(maxHours: 167)
            }
            return Rule(date: date, time: t)
        }
        standardName = try name()
        standardOffset = -(try time(maxHours: 24))
        dstName = nil
        dstOffset = standardOffset + 3600
        if !p.isEmpty && p.first != "," {
            dstName = try name()
            if !p.isEmpty && p.first != "," { dstOffset = -(try time(maxHours: 24)) }
        }
        if p.first == "," {
            guard dstName != nil else { throw fail() }
            p = p.dropFirst()
            start = try rule()
            guard p.first == "," else { throw fail() }
            p = p.dropFirst()
            end = try rule()
        } else if dstName != nil {
            // No rule given: POSIX leaves it to the implementation; glibc
            // uses the US rules of 2007. A TZif footer always names them.
            start = Rule(date: .monthWeekDay(month: 3, week: 2, weekday: 0), time: 7200)
            end = Rule(date: .monthWeekDay(month: 11, week: 1, weekday: 0), time: 7200)
        }
        guard p.isEmpty else { throw fail() }
    }

    /// The day number of a rule's date in `year`.
    static func day(_ rule: DateRule, year: Int) -> Int64 {
        let jan1 = CivilDate(year: year, month: 1, day: 1).dayNumber
        switch rule {
        case .julian0(let n): return jan1 + Int64(n)
        case .julian1(let n):
            let leapShift = CivilDate.isLeap(year) && n >= 60 ? 1 : 0
            return jan1 + Int64(n - 1 + leapShift)
        case .monthWeekDay(let m, let w, let d):
            let first = CivilDate(year: year, month: m, day: 1).dayNumber
            var dom = 1 + (d - CivilDate.weekday(dayNumber: first) + 7) % 7 + 7 * (w - 1)
            while dom > CivilDate.daysIn(year: year, month: m) { dom -= 7 }
            return first + Int64(dom - 1)
        }
    }

    /// (offset, isDST, abbreviation) at a Unix time.
    public func type(at instant: Int64) -> (offset: Int, isDST: Bool, abbreviation: String) {
        let unix = clampInstant(instant)
        let standard = (standardOffset, false, standardName)
        guard let dstName, let start, let end else { return standard }
        let dst = (dstOffset, true, dstName)
        // The year by standard time; the rule's transitions of that year and
        // its neighbours cover an instant near New Year either way.
        let year = Int(CivilDate(dayNumber: floorDiv(unix + Int64(standardOffset), 86_400)).year)
        var inDST = false
        var latest: Int64 = .min
        for y in (year - 1)...(year + 1) {
            // The start is in standard local time, the end in daylight time.
            let s = Self.day(start.date, year: y) * 86_400 + Int64(start.time) - Int64(standardOffset)
            let e = Self.day(end.date, year: y) * 86_400 + Int64(end.time) - Int64(dstOffset)
            for (t, on) in [(s, true), (e, false)] where t <= unix && t > latest {
                latest = t
                inDST = on
            }
        }
        return inDST ? dst : standard
    }
}

/// Instants are judged within ±2^40 s (±34 000 years) of 1970: beyond, the
/// edge's answer, so no arithmetic below can overflow on any Int64.
func clampInstant(_ unix: Int64) -> Int64 { min(max(unix, -(1 << 40)), 1 << 40) }

func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
    let q = a / b
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
}

/// A time zone from a TZif file (RFC 8536, versions 1–4): the transition
/// table, and for times past it the POSIX TZ footer. Pure: the caller reads
/// the file (`/usr/share/zoneinfo/Europe/Berlin`, `/etc/localtime`).
public struct TimeZoneRules: Equatable, Sendable {
    public struct LocalType: Equatable, Sendable {
        public var offset: Int
        public var isDST: Bool
        public var abbreviation: String
    }
    /// The zone's name when known (`Europe/Berlin`), else a description.
    public var name: String
    public var transitions: [Int64]
    /// The type index in force from each transition on.
    public var transitionTypes: [Int]
    public var types: [LocalType]
    public var footer: PosixTZ?

    /// UTC: no transitions, offset 0.
    public static let utc = TimeZoneRules(
        name: "UTC", transitions: [], transitionTypes: [],
        types: [LocalType(offset: 0, isDST: false, abbreviation: "UTC")],
        footer: nil)

    public init(name: String, transitions: [Int64], transitionTypes: [Int], types: [LocalType], footer: PosixTZ?) {
        self.name = name
        self.transitions = transitions
        self.transitionTypes = transitionTypes
        self.types = types
        self.footer = footer
    }

    /// Parses a TZif file. Version 1 files use the 32-bit table; v2+ the
    /// 64-bit one and the footer.
    public init(tzif bytes: [UInt8], name: String) throws(TimeZoneError) {
        var pos = 0
        func need(_ n: Int, _ what: String) throws(TimeZoneError) {
            guard n >= 0, bytes.count - pos >= n else { throw .truncated(what) }
        }
        func be(_ width: Int) -> Int64 {
            var v: UInt64 = 0
            for i in 0..<width { v = v << 8 | UInt64(bytes[pos + i]) }
            pos += width
            if width == 4 { return Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: v))) }
            return Int64(bitPattern: v)
        }
        struct Header {
            var version: UInt8
            var isut, isstd, leap, time, type, char: Int
        }
        func header() throws(TimeZoneError) -> Header {
            try need(44, "the header")
            guard bytes[pos..<pos + 4].elementsEqual("TZif".utf8) else { throw .notTZif("no TZif magic") }
            let version = bytes[pos + 4]
            pos += 20
            var counts: [Int] = []
            for _ in 0..<6 {
                let c = be(4)
                guard c >= 0, c < 1 << 20 else { throw .notTZif("a count of \(c)") }
                counts.append(Int(c))
            }
            let h = Header(
                version: version, isut: counts[0], isstd: counts[1], leap: counts[2], time: counts[3], type: counts[4],
                char: counts[5])
            guard h.type >= 1 else { throw .notTZif("no local time type") }
            guard h.isut == 0 || h.isut == h.type, h.isstd == 0 || h.isstd == h.type else {
                throw .notTZif("indicator counts that do not match the type count")
            }
            return h
        }
        func block(_ h: Header, timeWidth: Int) throws(TimeZoneError) -> ([Int64], [Int], [LocalType]) {
            let size = h.time * timeWidth + h.time + h.type * 6 + h.char + h.leap * (timeWidth + 4) + h.isstd + h.isut
            try need(size, "the data block")
            var times: [Int64] = []
            for _ in 0..<h.time { times.append(be(timeWidth)) }
            var indexes: [Int] = []
            for _ in 0..<h.time {
                let i = Int(bytes[pos])
                pos += 1
                guard i < h.type else { throw .notTZif("transition type \(i) of \(h.type)") }
                indexes.append(i)
            }
            var raw: [(Int, Bool, Int)] = []
            for _ in 0..<h.type {
                let off = be(4)
                let dst = bytes[pos] != 0
                let idx = Int(bytes[pos + 1])
                pos += 2
                guard off > -25 * 3600, off < 26 * 3600 else { throw .notTZif("offset \(off)") }
                raw.append((Int(off), dst, idx))
            }
            let chars = Array(bytes[pos..<pos + h.char])
            pos += h.char
            pos += h.leap * (timeWidth + 4) + h.isstd + h.isut
            var types: [LocalType] = []
            for (off, dst, idx) in raw {
                guard idx < max(chars.count, 1) else { throw .notTZif("abbreviation index \(idx)") }
                let tail = chars.isEmpty ? [] : chars[idx...]
                let abbr = String(decoding: tail.prefix { $0 != 0 }, as: UTF8.self)
                types.append(LocalType(offset: off, isDST: dst, abbreviation: abbr))
            }
            for (a, b) in zip(times, times.dropFirst()) where a >= b {
                throw .notTZif("transition times out of order")
            }
            return (times, indexes, types)
        }
        let first = try header()
        var (times, indexes, types) = try block(first, timeWidth: 4)
        var footer: PosixTZ?
        if first.version >= UInt8(ascii: "2") {
            let second = try header()
            (times, indexes, types) = try block(second, timeWidth: 8)
            try need(1, "the footer")
            guard bytes[pos] == UInt8(ascii: "\n") else { throw .notTZif("no newline before the footer") }
            pos += 1
            guard let end = bytes[pos...].firstIndex(of: UInt8(ascii: "\n")) else { throw .truncated("the footer") }
            let text = String(decoding: bytes[pos..<end], as: UTF8.self)
            if !text.isEmpty { footer = try PosixTZ(text) }
        }
        self.init(name: name, transitions: times, transitionTypes: indexes, types: types, footer: footer)
    }

    /// The offset (seconds east of UTC) and type in force at a Unix time.
    public func type(at unix: Int64) -> LocalType {
        if let last = transitions.last, unix >= last, let footer {
            let t = footer.type(at: unix)
            return LocalType(offset: t.offset, isDST: t.isDST, abbreviation: t.abbreviation)
        }
        if transitions.isEmpty, let footer {
            let t = footer.type(at: unix)
            return LocalType(offset: t.offset, isDST: t.isDST, abbreviation: t.abbreviation)
        }
        // The last transition at or before `unix` (binary search).
        var lo = 0, hi = transitions.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if transitions[mid] <= unix { lo = mid + 1 } else { hi = mid }
        }
        // Before the first transition: type 0 (RFC 8536 3.2).
        return lo == 0 ? types[0] : types[transitionTypes[lo - 1]]
    }

    /// The local reading of a Unix time.
    public func local(_ instant: Int64) -> LocalTime {
        let unix = clampInstant(instant)
        let t = type(at: unix)
        let l = unix + Int64(t.offset)
        let day = floorDiv(l, 86_400)
        return LocalTime(
            date: CivilDate(dayNumber: day), secondOfDay: Int(l - day * 86_400), offset: t.offset, isDST: t.isDST,
            abbreviation: t.abbreviation)
    }

    /// What a local date and time means here.
    public enum Resolution: Equatable, Sendable {
        case unique(Int64)
        /// The repeated hour when the clocks go back: both instants, earlier first.
        case ambiguous(Int64, Int64)
        /// Skipped when the clocks go forward; the instant the gap ends.
        case nonexistent(gapEnd: Int64)
    }

    /// The instants a local wall-clock reading names (at most one
    /// transition within a day of it, as in every real zone).
    public func resolve(date: CivilDate, secondOfDay: Int) -> Resolution {
        let wall = date.dayNumber * 86_400 + Int64(secondOfDay)
        let before = type(at: wall - 86_400).offset, after = type(at: wall + 86_400).offset
        var hits: [Int64] = []
        for o in Set([before, after]) {
            let u = wall - Int64(o)
            if type(at: u).offset == o { hits.append(u) }
        }
        hits.sort()
        switch hits.count {
        case 0:
            // In the gap: wall − after is still before the change, wall − before
            // already past it; the change is the first second on the new offset.
            var lo = wall - Int64(after), hi = wall - Int64(before)
            while lo < hi {
                let mid = lo + (hi - lo) / 2
                if type(at: mid).offset == after { hi = mid } else { lo = mid + 1 }
            }
            return .nonexistent(gapEnd: lo)
        case 1: return .unique(hits[0])
        default: return .ambiguous(hits[0], hits[1])
        }
    }
}
