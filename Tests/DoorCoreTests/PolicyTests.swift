import DoorCore
import Glibc
import TestSupport
import XCTest

/// The real tzdata files (Debian's `tzdata`, `make deps`).
func zoneFile(_ name: String) throws -> TimeZoneRules {
    let path = "/usr/share/zoneinfo/" + name
    guard let f = fopen(path, "rb") else {
        throw XCTSkip("\(path) missing: install tzdata (make deps)")
    }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buffer, 1, buffer.count, f)
        if n <= 0 { break }
        bytes += buffer[..<n]
    }
    return try TimeZoneRules(tzif: bytes, name: name)
}

/// `2026-03-29T01:00:00Z` as Unix seconds.
func utc(_ text: String) -> Int64 {
    let p = text.dropLast().split(separator: "T")
    let d = CivilDate(String(p[0]))!
    let t = p[1].split(separator: ":").map { Int64($0)! }
    return d.dayNumber * 86_400 + t[0] * 3600 + t[1] * 60 + (t.count > 2 ? t[2] : 0)
}

final class TimeZoneTests: XCTestCase {
    /// Each UTC instant's local time in `z`, as written.
    func assertLocal(
        _ z: TimeZoneRules, _ expected: KeyValuePairs<String, String>, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        for (instant, local) in expected {
            XCTAssertEqual(z.local(utc(instant)).description, local, instant, file: file, line: line)
        }
    }

    func testBerlinAcrossBothChangesOf2026() throws {
        let z = try zoneFile("Europe/Berlin")
        XCTAssertNotNil(z.footer, "a v2+ file carries its POSIX rule")
        assertLocal(
            z,
            [
                "2026-03-29T00:59:59Z": "2026-03-29T01:59:59+01:00",
                "2026-03-29T01:00:00Z": "2026-03-29T03:00:00+02:00",
                "2026-10-25T00:59:59Z": "2026-10-25T02:59:59+02:00",
                "2026-10-25T01:00:00Z": "2026-10-25T02:00:00+01:00",
            ])
        XCTAssertEqual(z.local(utc("2026-03-29T01:00:00Z")).abbreviation, "CEST")
        XCTAssertEqual(z.local(utc("2026-10-25T01:00:00Z")).abbreviation, "CET")
    }

    func testNewYorkAcrossBothChangesOf2026() throws {
        assertLocal(
            try zoneFile("America/New_York"),
            [
                "2026-03-08T06:59:59Z": "2026-03-08T01:59:59-05:00",
                "2026-03-08T07:00:00Z": "2026-03-08T03:00:00-04:00",
                "2026-11-01T05:59:59Z": "2026-11-01T01:59:59-04:00",
                "2026-11-01T06:00:00Z": "2026-11-01T01:00:00-05:00",
            ])
    }

    /// Past the table (2037 in these files) only the footer answers; the
    /// values are python's zoneinfo's for the same instants.
    func testFarFutureComesFromTheFooterRule() throws {
        let berlin = try zoneFile("Europe/Berlin")
        XCTAssertLessThan(berlin.transitions.last!, 4_109_878_800)
        XCTAssertEqual(berlin.local(4_109_878_799).description, "2100-03-28T01:59:59+01:00")
        XCTAssertEqual(berlin.local(4_109_878_800).description, "2100-03-28T03:00:00+02:00")
        XCTAssertEqual(berlin.local(4_128_627_600).description, "2100-10-31T02:00:00+01:00")
        let ny = try zoneFile("America/New_York")
        XCTAssertEqual(ny.local(4_108_690_800).description, "2100-03-14T03:00:00-04:00")
        let lordHowe = try zoneFile("Australia/Lord_Howe")
        XCTAssertEqual(lordHowe.local(1_791_072_000).description, "2026-10-04T11:00:00+11:00")
        let dublin = try zoneFile("Europe/Dublin")
        XCTAssertEqual(dublin.local(1_782_864_000).description, "2026-07-01T01:00:00+01:00")
    }

    /// The footer rule agrees with every table transition after 2000 in
    /// zones with northern, southern, negative and half-hour DST: the POSIX
    /// rule reader is checked against the real data, not against itself.
    /// (Not Africa/Casablanca: its table runs to 2087 and its footer, a
    /// fixed +01, describes only the time after it.)
    func testFooterAgreesWithTheTableOfRealZones() throws {
        for name in [
            "Europe/Berlin", "America/New_York", "Europe/London", "Europe/Dublin", "Australia/Sydney",
            "Australia/Lord_Howe", "America/Santiago", "Pacific/Auckland", "America/Sao_Paulo", "Asia/Kolkata",
            "America/St_Johns", "Asia/Tehran", "UTC",
        ] {
            let z = try zoneFile(name)
            guard let footer = z.footer else { continue }
            let lastRuleChange = z.transitions.last ?? 0
            // From the last change of rules on: the years the footer already describes.
            var checked = 0
            for (i, t) in z.transitions.enumerated() where t > 946_684_800 && t >= lastRuleChange - 10 * 365 * 86_400 {
                let table = z.types[z.transitionTypes[i]]
                let rule = footer.type(at: t)
                // Only transitions inside the footer's era: same offsets as the footer's.
                guard [footer.standardOffset, footer.dstOffset].contains(table.offset) else { continue }
                XCTAssertEqual(rule.offset, table.offset, "\(name) at \(UTCTime.iso8601(t))")
                XCTAssertEqual(
                    footer.type(at: t - 1).offset, z.type(at: t - 1).offset, "\(name) before \(UTCTime.iso8601(t))")
                checked += 1
            }
            if footer.start != nil { XCTAssertGreaterThan(checked, 0, name) }
        }
    }

    func testLocalTimesThatDoNotExistOrHappenTwice() throws {
        let z = try zoneFile("Europe/Berlin")
        let spring = CivilDate("2026-03-29")!, autumn = CivilDate("2026-10-25")!
        XCTAssertEqual(
            z.resolve(date: spring, secondOfDay: 2 * 3600 + 1800), .nonexistent(gapEnd: utc("2026-03-29T01:00:00Z")))
        XCTAssertEqual(
            z.resolve(date: autumn, secondOfDay: 2 * 3600 + 1800),
            .ambiguous(utc("2026-10-25T00:30:00Z"), utc("2026-10-25T01:30:00Z")))
        XCTAssertEqual(z.resolve(date: spring, secondOfDay: 3600 * 8), .unique(utc("2026-03-29T06:00:00Z")))
        let ny = try zoneFile("America/New_York")
        XCTAssertEqual(
            ny.resolve(date: CivilDate("2026-03-08")!, secondOfDay: 2 * 3600 + 1800),
            .nonexistent(gapEnd: utc("2026-03-08T07:00:00Z")))
        XCTAssertEqual(
            ny.resolve(date: CivilDate("2026-11-01")!, secondOfDay: 3600 + 1800),
            .ambiguous(utc("2026-11-01T05:30:00Z"), utc("2026-11-01T06:30:00Z")))
    }

    func testPosixRules() throws {
        let berlin = try PosixTZ("CET-1CEST,M3.5.0,M10.5.0/3")
        XCTAssertEqual(berlin.standardOffset, 3600)
        XCTAssertEqual(berlin.dstOffset, 7200)
        XCTAssertEqual(berlin.end?.time, 3 * 3600)
        let india = try PosixTZ("<+0530>-5:30")
        XCTAssertEqual(india.standardName, "+0530")
        XCTAssertEqual(india.standardOffset, 5 * 3600 + 1800)
        XCTAssertNil(india.start)
        let lordHowe = try PosixTZ("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0")
        XCTAssertEqual(lordHowe.dstOffset, 11 * 3600)
        let v3 = try PosixTZ("<-03>3<-02>,M3.5.0/-2,M10.5.0/-1")
        XCTAssertEqual(v3.start?.time, -7200)
        XCTAssertEqual(try PosixTZ("EST5EDT,J60/2,300").end?.date, .julian0(300))
        for bad in [
            "", "C-1", "CET", "CET-1CEST,M13.5.0,M10.5.0", "CET-1CEST,M3.5.0", "CET-1CEST,M3.6.0,M10.5.0", "CET-1x",
        ] {
            XCTAssertThrowsError(try PosixTZ(bad), bad)
        }
    }

    /// Every file of the installed tzdata parses (or is refused with an
    /// error, never a trap), and truncations and garbage are refused.
    func testMalformedFilesAreRefused() throws {
        _ = try zoneFile("Europe/Berlin")
        guard let f = fopen("/usr/share/zoneinfo/Europe/Berlin", "rb") else { return }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let n = fread(&bytes, 1, bytes.count, f)
        fclose(f)
        bytes = Array(bytes[..<n])
        for cut in stride(from: 0, to: bytes.count - 1, by: 7) {
            XCTAssertThrowsError(try TimeZoneRules(tzif: Array(bytes[..<cut]), name: "cut"), "cut at \(cut)")
        }
        var wrong = bytes
        wrong[0] = UInt8(ascii: "X")
        XCTAssertThrowsError(try TimeZoneRules(tzif: wrong, name: "x"))
        // Mutated files: refused or read, never a trap, and a file that is
        // read answers every instant with a sane offset (the footer too).
        var random = SeededRandom(seed: 0x7A1F)
        var read = 0
        for _ in 0..<3000 {
            guard let z = try? TimeZoneRules(tzif: random.mutate(bytes), name: "m") else { continue }
            read += 1
            for t in [Int64.min, -1, 0, 1_800_000_000, 4_200_000_000, Int64.max / 2] {
                _ = z.local(t)
                _ = z.resolve(date: CivilDate(year: 2026, month: 3, day: 29), secondOfDay: 9000)
            }
        }
        XCTAssertGreaterThan(read, 0, "some mutations keep a valid file")
        var noFooter = bytes
        noFooter[noFooter.count - 5] = UInt8(ascii: "!")
        XCTAssertThrowsError(try TimeZoneRules(tzif: noFooter, name: "x"))
    }
}

final class ScheduleTests: XCTestCase {
    let weekdays: Set<Int> = [1, 2, 3, 4, 5]
    var staff: WeeklySchedule {
        WeeklySchedule(
            name: "staff", windows: [ScheduleWindow(days: weekdays, from: 8 * 60, to: 18 * 60)],
            holidays: [CivilDate("2026-12-25")!])
    }

    func testWindowIncludesFromAndExcludesTo() throws {
        let z = try zoneFile("Europe/Berlin")
        // Monday 2026-03-30, CEST (+02:00).
        XCTAssertFalse(staff.isActive(at: utc("2026-03-30T05:59:59Z"), zone: z))
        XCTAssertTrue(staff.isActive(at: utc("2026-03-30T06:00:00Z"), zone: z), "08:00 is in")
        XCTAssertTrue(staff.isActive(at: utc("2026-03-30T15:59:59Z"), zone: z))
        XCTAssertFalse(staff.isActive(at: utc("2026-03-30T16:00:00Z"), zone: z), "18:00 is out")
        XCTAssertFalse(staff.isActive(at: utc("2026-03-28T10:00:00Z"), zone: z), "a Saturday")
        // Friday 2026-12-25 is a holiday: no window.
        XCTAssertFalse(staff.isActive(at: utc("2026-12-25T10:00:00Z"), zone: z))
        XCTAssertTrue(staff.isActive(at: utc("2026-12-24T10:00:00Z"), zone: z))
        XCTAssertEqual(staff.nextChange(after: utc("2026-12-24T16:30:00Z"), zone: z), utc("2026-12-24T17:00:00Z"))
        XCTAssertEqual(
            staff.nextChange(after: utc("2026-12-24T17:00:00Z"), zone: z), utc("2026-12-28T07:00:00Z"),
            "past the holiday and the weekend")
    }

    /// Spring forward (Berlin 2026-03-29, 02:00 → 03:00): a window from
    /// 02:30 opens when the clocks reach 03:00; one inside the gap never opens.
    func testSpringForwardWindow() throws {
        let z = try zoneFile("Europe/Berlin")
        let sunday: Set<Int> = [0]
        let night = WeeklySchedule(name: "night", windows: [ScheduleWindow(days: sunday, from: 150, to: 240)])
        XCTAssertFalse(night.isActive(at: utc("2026-03-29T00:59:59Z"), zone: z), "01:59:59 local")
        XCTAssertTrue(night.isActive(at: utc("2026-03-29T01:00:00Z"), zone: z), "03:00 local, inside 02:30–04:00")
        XCTAssertEqual(night.nextChange(after: utc("2026-03-29T00:00:00Z"), zone: z), utc("2026-03-29T01:00:00Z"))
        XCTAssertEqual(night.nextChange(after: utc("2026-03-29T01:00:00Z"), zone: z), utc("2026-03-29T02:00:00Z"))
        let gap = WeeklySchedule(name: "gap", windows: [ScheduleWindow(days: sunday, from: 125, to: 165)])
        for minute in stride(from: utc("2026-03-28T23:00:00Z"), to: utc("2026-03-29T03:00:00Z"), by: 60) {
            XCTAssertFalse(gap.isActive(at: minute, zone: z), UTCTime.iso8601(minute))
        }
    }

    /// Fall back (Berlin 2026-10-25, 03:00 → 02:00): a window over 02:00–03:00
    /// is open in both of those hours, two real hours.
    func testFallBackWindowIsOpenInBothHours() throws {
        let z = try zoneFile("Europe/Berlin")
        let sunday: Set<Int> = [0]
        let night = WeeklySchedule(name: "night", windows: [ScheduleWindow(days: sunday, from: 120, to: 180)])
        XCTAssertFalse(night.isActive(at: utc("2026-10-24T23:59:59Z"), zone: z))
        XCTAssertTrue(night.isActive(at: utc("2026-10-25T00:30:00Z"), zone: z), "the first 02:30 (CEST)")
        XCTAssertTrue(night.isActive(at: utc("2026-10-25T01:30:00Z"), zone: z), "the second 02:30 (CET)")
        XCTAssertEqual(night.nextChange(after: utc("2026-10-25T00:00:00Z"), zone: z), utc("2026-10-25T02:00:00Z"))
    }

    func testNewYorkChanges() throws {
        let z = try zoneFile("America/New_York")
        let sunday: Set<Int> = [0]
        let s = WeeklySchedule(name: "s", windows: [ScheduleWindow(days: sunday, from: 150, to: 200)])
        XCTAssertEqual(s.nextChange(after: utc("2026-03-08T05:00:00Z"), zone: z), utc("2026-03-08T07:00:00Z"))
        let f = WeeklySchedule(name: "f", windows: [ScheduleWindow(days: sunday, from: 60, to: 120)])
        XCTAssertTrue(f.isActive(at: utc("2026-11-01T05:30:00Z"), zone: z), "the first 01:30 (EDT)")
        XCTAssertTrue(f.isActive(at: utc("2026-11-01T06:30:00Z"), zone: z), "the second 01:30 (EST)")
        XCTAssertEqual(f.nextChange(after: utc("2026-11-01T05:00:00Z"), zone: z), utc("2026-11-01T07:00:00Z"))
    }

    func testWindowTimes() {
        XCTAssertEqual(ScheduleWindow.minutes("08:00"), 480)
        XCTAssertEqual(ScheduleWindow.minutes("24:00"), 1440)
        for bad in ["8:00", "24:01", "25:00", "08:60", "0800", "08:00:00", "+8:00", "", "ab:cd"] {
            XCTAssertNil(ScheduleWindow.minutes(bad), bad)
        }
        XCTAssertNil(CivilDate("2026-02-29"))
        XCTAssertNotNil(CivilDate("2028-02-29"))
        XCTAssertEqual(CivilDate("2026-03-29")?.weekday, 0)
    }
}

final class AccessPolicyTests: XCTestCase {
    let wall = WallClock(unixSeconds: utc("2026-03-30T07:00:00Z"), synchronised: true)  // Monday 09:00 CEST

    func policy() throws -> AccessPolicy {
        AccessPolicy(
            schedules: [
                WeeklySchedule(name: "staff", windows: [ScheduleWindow(days: [1, 2, 3, 4, 5], from: 480, to: 1080)]),
                WeeklySchedule(
                    name: "cleaner", windows: [ScheduleWindow(days: [1, 2, 3, 4, 5], from: 1080, to: 1320)]),
            ], zone: try zoneFile("Europe/Berlin"))
    }

    func testDenials() throws {
        let p = try policy()
        XCTAssertNil(p.denial(actionSchedule: "staff", tag: nil, wall: wall))
        XCTAssertEqual(p.denial(actionSchedule: "cleaner", tag: nil, wall: wall), .outsideSchedule)
        XCTAssertEqual(
            p.denial(actionSchedule: nil, tag: IssuedTagView(state: .active, schedule: "cleaner"), wall: wall),
            .outsideSchedule, "the tag's own schedule")
        XCTAssertEqual(
            p.denial(actionSchedule: "staff", tag: IssuedTagView(state: .active, schedule: "gone"), wall: wall),
            .unknownSchedule, "a name the configuration lost fails closed")
        var off = wall
        off.synchronised = false
        XCTAssertEqual(p.denial(actionSchedule: "staff", tag: nil, wall: off), .clockUnsynchronised)
        XCTAssertNil(p.denial(actionSchedule: nil, tag: IssuedTagView(state: .active), wall: off), "unrestricted opens")
        XCTAssertEqual(
            p.denial(actionSchedule: nil, tag: IssuedTagView(state: .active, validFrom: 1), wall: off),
            .clockUnsynchronised, "a guest window needs the clock")
        XCTAssertEqual(
            p.denial(
                actionSchedule: nil, tag: IssuedTagView(state: .active, validFrom: wall.unixSeconds + 1), wall: wall),
            .notYetValid)
        XCTAssertEqual(
            p.denial(actionSchedule: nil, tag: IssuedTagView(state: .active, usesLeft: 0), wall: wall), .noUsesLeft)
        XCTAssertNil(p.denial(actionSchedule: nil, tag: IssuedTagView(state: .active, usesLeft: 1), wall: wall))
    }

    /// Through the tap judgement: an authentic sticker outside its action's
    /// schedule is denied `outside_schedule`, not counted toward lockout.
    func testTapOutsideScheduleIsDeniedAndNotCounted() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let uid = TagUID(hex: "04A1B2C3D4E5F6")!
        let message = NDEFMessage(records: [
            .uri(StickerSigner.signV2(action: 1, timestamp: 1_700_000_000, key: key, uid: uid).text)
        ])
        let registry = TapJudgeTests.Registry(row: IssuedTagView(state: .active))
        let actions = [
            ActionDefinition(index: 0, name: "a", steps: []),
            ActionDefinition(index: 1, name: "b", steps: [], schedule: "cleaner"),
        ]
        func judge(_ wall: WallClock) throws -> AccessVerdict {
            TapJudge.judge(
                uid: uid, message: message, secrets: [StickerSecret(id: 1, action: 1, key: key, origin: .generated)],
                actionCount: 2, registry: registry, now: wall.unixSeconds,
                policy: TapPolicy(policy: try policy(), actions: actions, wall: wall)
            ).presentation.verdict
        }
        XCTAssertEqual(try judge(wall), .deny(reason: "outside_schedule", countsTowardLockout: false))
        XCTAssertEqual(
            try judge(WallClock(unixSeconds: utc("2026-03-30T17:00:00Z"), synchronised: true)),
            .grant(action: 1, reason: "valid_v2"), "19:00 is the cleaner's")
        XCTAssertEqual(
            try judge(WallClock(unixSeconds: utc("2026-03-30T17:00:00Z"), synchronised: false)),
            .deny(reason: "clock_unsynchronised", countsTowardLockout: false))
    }
}

final class AllZonesTests: XCTestCase {
    /// Every TZif file Debian's tzdata installs parses, and its offsets at a
    /// few instants are sane (within ±26 h): the parser meets all the real data.
    func testEveryInstalledZoneParses() throws {
        var files: [String] = []
        func walk(_ dir: String) {
            guard let d = opendir(dir) else { return }
            defer { closedir(d) }
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name.hasPrefix(".") || name == "right" || name == "posix" { continue }
                let path = dir + "/" + name
                var st = stat()
                guard stat(path, &st) == 0 else { continue }
                if st.st_mode & S_IFMT == S_IFDIR {
                    walk(path)
                } else if st.st_mode & S_IFMT == S_IFREG {
                    files.append(path)
                }
            }
        }
        walk("/usr/share/zoneinfo")
        if files.isEmpty { throw XCTSkip("no tzdata installed") }
        var parsed = 0
        for path in files {
            guard let f = fopen(path, "rb") else { continue }
            var head = [UInt8](repeating: 0, count: 4)
            let n = fread(&head, 1, 4, f)
            fclose(f)
            guard n == 4, head == Array("TZif".utf8) else { continue }  // zone.tab, tzdata.zi, …
            let name = String(path.dropFirst("/usr/share/zoneinfo/".count))
            let z = try zoneFile(name)
            for t in [Int64(0), 1_800_000_000, 4_000_000_000] {
                XCTAssertLessThan(abs(z.type(at: t).offset), 26 * 3600, name)
            }
            parsed += 1
        }
        XCTAssertGreaterThan(parsed, 300)
    }
}
