import DoorCore
import Foundation
import TestSupport
import XCTest

/// docs/policy.md end to end on the real gatewayd (the static binary under
/// make test): `policy explain` offline and through the daemon across the
/// DST changes of Europe/Berlin and America/New_York; taps outside a
/// schedule denied with their audit rows; a passage schedule; guest passes
/// counted across a restart and a kill -9 while the strike is open.
final class PolicyStoryTests: XCTestCase {
    /// UTC dates around now: a schedule with these as holidays is closed for
    /// the whole test in any zone; one without is open.
    static var aroundToday: String {
        let now = Int64(time(nil))
        return [-1, 0, 1].map { "\"\(UTCTime.iso8601(now + Int64($0) * 86_400).prefix(10))\"" }.joined(separator: ", ")
    }

    /// `g`'s configuration: GatewayUnderTest's base with the schedules, six
    /// actions bound to them and `time_zone = zone`.
    static func configure(_ g: GatewayUnderTest, zone: String, door: String = "") throws {
        let all = #"["mon", "tue", "wed", "thu", "fri", "sat", "sun"]"#
        let schedules = """
            [[schedules]]
            name = "always"
            windows = [{ days = \(all), from = "00:00", to = "24:00" }]
            [[schedules]]
            name = "closed"
            windows = [{ days = \(all), from = "00:00", to = "24:00" }]
            holidays = [\(aroundToday)]
            [[schedules]]
            name = "staff"
            windows = [{ days = ["mon", "tue", "wed", "thu", "fri"], from = "08:00", to = "18:00" }]
            holidays = ["2026-12-25"]
            [[schedules]]
            name = "spring"
            windows = [{ days = ["sun"], from = "02:30", to = "04:00" }]
            [[schedules]]
            name = "autumn"
            windows = [{ days = ["sun"], from = "02:00", to = "03:00" }]
            """
        let scheduled = [
            (0, "front", "always"), (1, "office", "closed"), (2, "staff", "staff"),
            (3, "spring", "spring"), (4, "autumn", "autumn"),
        ].map { index, name, schedule in ConfigText.action(index, name, "schedule = \"\(schedule)\"") }
        let guest = ConfigText.action(5, "guest", ms: 3000)
        try g.writeConfig(
            extra: schedules, door: door, clock: "time_zone = \"\(zone)\"",
            actions: (scheduled + [guest]).joined(separator: "\n"))
    }

    /// `policy explain … --json`: (exit status, answer or nil, stderr).
    func explain(_ g: GatewayUnderTest, _ args: [String], offline: Bool) throws -> (Int32, JSONValue?, String) {
        let r = try g.ctl(
            ["policy", "explain"] + args + (offline ? ["--config", g.configFile.path] : []) + ["--json"])
        let text = r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let json = r.status == 0 ? try JSONValue.parse(Array(text.utf8), maxDepth: 16, maxBytes: 1 << 20) : nil
        return (r.status, json, r.stderr)
    }

    func assertExplain(
        _ g: GatewayUnderTest, action: Int, at: String, allowed: Bool, reason: String, offline: Bool,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let (status, json, stderr) = try explain(g, ["--action", "\(action)", "--at", at], offline: offline)
        XCTAssertEqual(status, 0, stderr, file: file, line: line)
        XCTAssertEqual(json?["allowed"]?.boolValue, allowed, "\(at): \(json?.serialized ?? "")", file: file, line: line)
        XCTAssertEqual(json?["reason"]?.stringValue, reason, "\(at)", file: file, line: line)
    }

    /// A local time in the spring-forward gap of `zone`: refused (exit 1), naming the zone.
    func assertGap(
        _ g: GatewayUnderTest, at: String, zone: String, offline: Bool, file: StaticString = #filePath,
        line: UInt = #line
    ) throws {
        let (status, _, stderr) = try explain(g, ["--action", "3", "--at", at], offline: offline)
        XCTAssertEqual(status, 1, file: file, line: line)
        XCTAssertTrue(stderr.contains("does not exist in \(zone)"), stderr, file: file, line: line)
    }

    /// Europe/Berlin: the staff window's edges (RFC 3339 and local), its
    /// holiday, the spring-forward gap (02:30 does not exist; a 02:30–04:00
    /// window opens at 03:00 CEST), the repeated autumn hour (open in both),
    /// clear errors — the same answers offline and from the daemon.
    func testExplainAcrossBerlinsChangesOfflineAndFromTheDaemon() throws {
        let g = try GatewayUnderTest()
        try Self.configure(g, zone: "Europe/Berlin")
        try g.start()
        for offline in [true, false] {
            // Monday 2026-03-30, CEST (+02:00).
            try assertExplain(
                g, action: 2, at: "2026-03-30T06:30:00Z", allowed: true, reason: "granted", offline: offline)
            try assertExplain(
                g, action: 2, at: "2026-03-30T05:59:59Z", allowed: false, reason: "outside_schedule", offline: offline)
            try assertExplain(g, action: 2, at: "2026-03-30T08:00", allowed: true, reason: "granted", offline: offline)
            try assertExplain(
                g, action: 2, at: "2026-03-30T18:00", allowed: false, reason: "outside_schedule", offline: offline)
            try assertExplain(
                g, action: 2, at: "2026-03-30T17:59:59+02:00", allowed: true, reason: "granted", offline: offline)
            try assertExplain(
                g, action: 2, at: "2026-12-25T10:00:00+01:00", allowed: false, reason: "outside_schedule",
                offline: offline)
            try assertExplain(
                g, action: 0, at: "2026-12-25T10:00:00Z", allowed: true, reason: "granted", offline: offline)

            // Spring forward, Sunday 2026-03-29: 02:00 CET → 03:00 CEST.
            try assertGap(g, at: "2026-03-29T02:30", zone: "Europe/Berlin", offline: offline)
            try assertExplain(g, action: 3, at: "2026-03-29T03:00", allowed: true, reason: "granted", offline: offline)
            try assertExplain(
                g, action: 3, at: "2026-03-29T00:59:59Z", allowed: false, reason: "outside_schedule", offline: offline)
            let (_, before, _) = try explain(g, ["--action", "3", "--at", "2026-03-29T00:30:00Z"], offline: offline)
            XCTAssertEqual(
                before?["schedules"]?.arrayValue?.first?["next_change"]?.stringValue, "2026-03-29T01:00:00Z",
                "opens when the clocks jump to 03:00")

            // Fall back, Sunday 2026-10-25: 03:00 CEST → 02:00 CET; 02:00–03:00 is open twice.
            let (_, first, _) = try explain(g, ["--action", "4", "--at", "2026-10-25T02:30"], offline: offline)
            XCTAssertEqual(first?["allowed"]?.boolValue, true)
            XCTAssertEqual(first?["at"]?.stringValue, "2026-10-25T00:30:00Z", "the first 02:30")
            XCTAssertTrue(first?["note"]?.stringValue?.contains("happens twice") ?? false, "\(first?.serialized ?? "")")
            try assertExplain(
                g, action: 4, at: "2026-10-25T01:30:00Z", allowed: true, reason: "granted", offline: offline)
            let (_, open, _) = try explain(g, ["--action", "4", "--at", "2026-10-25T00:00:00Z"], offline: offline)
            XCTAssertEqual(open?["schedules"]?.arrayValue?.first?["next_change"]?.stringValue, "2026-10-25T02:00:00Z")

            // Errors say what is wrong.
            let (unknown, _, unknownError) = try explain(
                g, ["--action", "9", "--at", "2026-03-30T06:30:00Z"], offline: offline)
            XCTAssertEqual(unknown, 1)
            XCTAssertTrue(unknownError.contains("no action 9"), unknownError)
            let (bad, _, badError) = try explain(g, ["--action", "2", "--at", "tomorrow at 8"], offline: offline)
            XCTAssertEqual(bad, 1)
            XCTAssertTrue(badError.contains("RFC 3339"), badError)
        }
        // The text form says the same.
        let text = try g.ctl(["policy", "explain", "--action", "2", "--at", "2026-03-30T05:30:00Z"])
        XCTAssertEqual(text.status, 0, text.stderr)
        XCTAssertTrue(text.stdout.hasPrefix("stays shut: outside_schedule"), text.stdout)
        XCTAssertTrue(
            text.stdout.contains("schedule staff: outside every window, changes at 2026-03-30T08:00:00+02:00"),
            text.stdout)
        XCTAssertEqual(g.stop(), 0)
    }

    /// A reload takes a new zone; one naming a zone that is not installed is
    /// refused and the door keeps judging in the zone it had.
    func testAReloadChangesTheZoneOrIsRefused() throws {
        let g = try GatewayUnderTest()
        try Self.configure(g, zone: "Europe/Berlin")
        try g.start()
        let pid = try XCTUnwrap(g.process?.processIdentifier)
        let at = ["policy", "explain", "--action", "2", "--at", "2026-03-30T06:30:00Z"]
        XCTAssertEqual(try g.ctlJSON(at)["zone"]?.stringValue, "Europe/Berlin")
        try Self.configure(g, zone: "Mars/Olympus_Mons")
        kill(pid, SIGHUP)
        try waitUntil { g.log.contains("reload refused") && g.log.contains("Mars/Olympus_Mons") }
        XCTAssertEqual(try g.ctlJSON(at)["zone"]?.stringValue, "Europe/Berlin", "the running zone kept")
        try Self.configure(g, zone: "America/New_York")
        let n = try g.eventCount()
        kill(pid, SIGHUP)
        try g.waitForEvent("configuration_reloaded", after: n)
        let ny = try g.ctlJSON(at)
        XCTAssertEqual(ny["zone"]?.stringValue, "America/New_York")
        XCTAssertEqual(ny["reason"]?.stringValue, "outside_schedule", "06:30 UTC is 02:30 in New York")
        XCTAssertEqual(g.stop(), 0)
    }

    /// America/New_York (offline only): 2026-03-08 02:30 does not exist, the
    /// repeated 01:xx on 2026-11-01, the staff window in EDT.
    func testExplainInNewYork() throws {
        let g = try GatewayUnderTest()
        try Self.configure(g, zone: "America/New_York")
        try assertExplain(g, action: 2, at: "2026-03-09T12:30:00Z", allowed: true, reason: "granted", offline: true)
        try assertExplain(
            g, action: 2, at: "2026-03-09T11:30:00Z", allowed: false, reason: "outside_schedule", offline: true)
        try assertGap(g, at: "2026-03-08T02:30", zone: "America/New_York", offline: true)
        try assertExplain(g, action: 3, at: "2026-03-08T03:00", allowed: true, reason: "granted", offline: true)
        let (_, twice, _) = try explain(g, ["--action", "0", "--at", "2026-11-01T01:30"], offline: true)
        XCTAssertEqual(twice?["at"]?.stringValue, "2026-11-01T05:30:00Z", "the first 01:30 (EDT)")
        XCTAssertNotNil(twice?["note"]?.stringValue)
        // A zone that is not installed stops the explanation with the reason.
        try Self.configure(g, zone: "Mars/Olympus_Mons")
        let (missing, _, missingError) = try explain(
            g, ["--action", "0", "--at", "2026-03-09T12:30:00Z"], offline: true)
        XCTAssertEqual(missing, 1)
        XCTAssertTrue(missingError.contains("Mars/Olympus_Mons"), missingError)
    }

    /// Provisions `uid` (`args`: the `provision` command); returns the dump of the written sticker.
    func provision(_ g: GatewayUnderTest, _ uid: String, _ args: [String]) throws -> String {
        try g.issueSticker(uid, arm: args)
    }

    /// Taps a written sticker once more, after the same-tag quiet time; the
    /// audit row of its decision.
    @discardableResult
    func tap(_ g: GatewayUnderTest, _ dump: String, expect kind: String, reason: String? = nil) throws -> JSONValue {
        try g.tapSticker(dump, expect: kind, reason: reason)
    }

    /// Taps outside the action's schedule and outside the tag's own are
    /// denied `outside_schedule` with their audit rows, and do not lock the
    /// tag out (an authentic sticker at the wrong time is not an attack);
    /// inside, the same door opens. The status shows the schedule.
    func testTapsOutsideTheirScheduleAreDeniedWithAuditRows() throws {
        let g = try GatewayUnderTest()
        try Self.configure(g, zone: "Europe/Berlin")
        try g.start()
        let office = try provision(g, "04A10000000001", ["provision", "--action", "1", "--label", "office"])
        for _ in 0..<4 {
            let row = try tap(g, office, expect: "access_denied", reason: "outside_schedule")
            XCTAssertEqual(row["uid"]?.stringValue, "04A10000000001")
        }
        let status = try g.status()
        XCTAssertEqual(status["lockout"]?["tags"]?.intValue, 0, "outside_schedule does not count toward lockout")
        XCTAssertEqual(status["schedule"]?["name"]?.stringValue, "always")
        XCTAssertEqual(status["schedule"]?["active"]?.boolValue, true)

        // The tag's own schedule, on an action that is always open.
        let cleaner = try provision(
            g, "04A10000000002", ["tags", "issue", "--action", "0", "--schedule", "closed", "--label", "cleaner"])
        try tap(g, cleaner, expect: "access_denied", reason: "outside_schedule")
        let listed = try g.ctlJSON(["tags", "list"])["tags"]?.arrayValue ?? []
        XCTAssertEqual(listed.first { $0["uid"]?.stringValue == "04A10000000002" }?["schedule"]?.stringValue, "closed")
        // The daemon's explanation of that tag names it too.
        let why = try g.ctlJSON([
            "policy", "explain", "--action", "0", "--tag", "04A10000000002", "--at", UTCTime.iso8601(Int64(time(nil))),
        ])
        XCTAssertEqual(why["reason"]?.stringValue, "outside_schedule")

        // Inside the schedule the door opens.
        let front = try provision(g, "04A10000000003", ["provision", "--action", "0"])
        try tap(g, front, expect: "access_granted")
        try g.waitForOutput("strike", "unlocked")

        // A schedule the tag names that is gone from the configuration fails closed.
        let refused = try g.ctl(["tags", "issue", "--action", "0", "--schedule", "nope"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("no schedule named \"nope\""), refused.stderr)
        XCTAssertEqual(g.stop(), 0)
    }

    /// door.passage_schedule: inside its window the door starts in passage
    /// (the strike held open, audited with source `schedule`); a schedule
    /// outside its window leaves it normal; a mode set by hand is taken.
    func testPassageScheduleDrivesTheMode() throws {
        let g = try GatewayUnderTest()
        try Self.configure(g, zone: "Europe/Berlin", door: "passage_schedule = \"always\"")
        try g.start()
        let changed = try g.waitForEvent("mode_changed", reason: "passage")
        XCTAssertEqual(changed["source"]?.stringValue, "schedule")
        try waitUntil { try g.status()["outputs"]?["strike"]?.stringValue == "unlocked" }
        XCTAssertEqual(try g.status()["schedule"]?["name"]?.stringValue, "always")
        try g.ctlJSON(["mode", "normal"])
        try waitUntil { try g.status()["mode"]?.stringValue == "normal" }
        XCTAssertEqual(g.stop(), 0)

        try Self.configure(g, zone: "Europe/Berlin", door: "passage_schedule = \"closed\"")
        try g.start()
        try waitUntil { try g.status()["schedule"]?["active"]?.boolValue == false }
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "normal")
        XCTAssertEqual(try g.status()["outputs"]?["strike"]?.stringValue, "locked")
        XCTAssertEqual(g.stop(), 0)
    }

    /// docs/policy.md "Lockdown is never changed by a schedule": a passage
    /// schedule whose window opens at the next whole minute (UTC, at least
    /// 15 s away), the door set to lockdown before it. The edge passes (the
    /// door's status says the schedule is active): the door is still in
    /// lockdown, the strike locked, no `mode_changed` from the schedule.
    ///
    /// gatewayd reads the wall clock itself (there is no clock to inject into
    /// the static binary), so this waits for a real edge: up to 75 s.
    func testAScheduleEdgeDuringLockdownLeavesTheDoorLockedDown() throws {
        let g = try GatewayUnderTest()
        var edge = (Int64(time(nil)) / 60 + 1) * 60
        // Far enough ahead to set lockdown first; never midnight (00:00 has no window to open into).
        while edge - Int64(time(nil)) < 15 || edge % 86_400 == 0 { edge += 60 }
        let hhmm = String(UTCTime.iso8601(edge).dropFirst(11).prefix(5))
        let all = #"["mon", "tue", "wed", "thu", "fri", "sat", "sun"]"#
        try g.writeConfig(
            extra: """
                [[schedules]]
                name = "shop"
                windows = [{ days = \(all), from = "\(hhmm)", to = "24:00" }]
                """,
            door: "passage_schedule = \"shop\"", clock: "time_zone = \"Etc/UTC\"",
            actions: GatewayUnderTest.baseActions)
        try g.start()
        try waitUntil { try g.status()["schedule"]?["active"]?.boolValue == false }
        XCTAssertEqual(try g.status()["schedule"]?["next_change"]?.stringValue, UTCTime.iso8601(edge))
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "normal")
        let seen = try g.eventCount()
        try g.ctlJSON(["mode", "lockdown"])
        try g.waitForEvent("mode_changed", reason: "lockdown", after: seen)
        XCTAssertLessThan(Int64(time(nil)), edge, "lockdown was set before the edge")

        // The edge passes: gatewayd's schedule timer has run once its status shows the window open.
        try waitUntil(timeout: 90) { try g.status()["schedule"]?["active"]?.boolValue == true }
        let status = try g.status()
        XCTAssertEqual(status["mode"]?.stringValue, "lockdown", "the schedule changed lockdown")
        XCTAssertEqual(status["outputs"]?["strike"]?.stringValue, "locked")
        let rows = (try g.ctlJSON(["log", "--limit", "500"]).arrayValue ?? []).dropFirst(seen)
        XCTAssertFalse(
            rows.contains { $0["kind"]?.stringValue == "mode_changed" && $0["source"]?.stringValue == "schedule" },
            "\(rows)")

        XCTAssertEqual(g.stop(), 0)
    }

    func usesLeft(_ g: GatewayUnderTest, _ uid: String) throws -> Int? {
        let tags = try g.ctlJSON(["tags", "list"])["tags"]?.arrayValue ?? []
        return tags.first { $0["uid"]?.stringValue == uid }?["uses_left"]?.intValue
    }

    /// A guest pass of 3 uses: one before a clean restart, one cut by kill -9
    /// while the strike is open (the use stays taken: it was on disk before
    /// the relay moved), the last, then `no_uses_left` — also after another
    /// kill -9. `tags list` shows the uses left throughout.
    func testGuestPassUsesSurviveARestartAndAPowerCut() throws {
        let g = try GatewayUnderTest()
        try Self.configure(g, zone: "Europe/Berlin")
        try g.start()
        let uid = "04B10000000001"
        let pass = try provision(
            g, uid, ["tags", "issue", "--action", "5", "--guest", "--uses", "3", "--label", "visitor"])
        XCTAssertEqual(try usesLeft(g, uid), 3)
        let table = try g.ctl(["tags", "list"])
        XCTAssertTrue(table.stdout.contains("USES-LEFT") && table.stdout.contains("3/3"), table.stdout)

        try tap(g, pass, expect: "access_granted")
        XCTAssertEqual(try usesLeft(g, uid), 2)
        XCTAssertEqual(g.stop(), 0)
        try g.start()
        XCTAssertEqual(try usesLeft(g, uid), 2, "a restart keeps the count")

        // Power cut while the strike is open (a 3 s pulse).
        let seen = try g.eventCount()
        try g.ctlJSON(["sim", "tap", "--dump", pass])
        try g.waitForOutput("strike", "unlocked")
        g.stop(signal: SIGKILL)
        try g.start()
        XCTAssertEqual(try usesLeft(g, uid), 1, "the use taken before the relay moved stays taken")
        XCTAssertGreaterThan(try g.eventCount(), seen)

        try tap(g, pass, expect: "access_granted")
        XCTAssertEqual(try usesLeft(g, uid), 0)
        let denied = try tap(g, pass, expect: "access_denied", reason: "no_uses_left")
        XCTAssertEqual(denied["uid"]?.stringValue, uid)
        g.stop(signal: SIGKILL)
        try g.start()
        XCTAssertEqual(try usesLeft(g, uid), 0)
        try tap(g, pass, expect: "access_denied", reason: "no_uses_left")
        XCTAssertEqual(try g.status()["lockout"]?["tags"]?.intValue, 0, "a used-up pass is not an attack")
        XCTAssertEqual(g.stop(), 0)
    }

    /// A guest pass that starts tomorrow is denied `not_yet_valid`; one that
    /// ended yesterday `expired`; a tap refused in lockdown takes no use.
    func testGuestWindow() throws {
        let g = try GatewayUnderTest()
        try Self.configure(g, zone: "Europe/Berlin")
        try g.start()
        let now = Int64(time(nil))
        let later = try provision(
            g, "04B20000000001", ["tags", "issue", "--action", "0", "--guest", "--from", "\(now + 86_400)"])
        try tap(g, later, expect: "access_denied", reason: "not_yet_valid")
        let over = try provision(
            g, "04B20000000002",
            [
                "tags", "issue", "--action", "0", "--guest", "--from", "\(now - 2 * 86_400)", "--until",
                "\(now - 86_400)",
            ])
        try tap(g, over, expect: "access_denied", reason: "expired")
        XCTAssertEqual(try usesLeft(g, "04B20000000002"), 1, "a denied tap takes no use")

        // In lockdown the door refuses the tap: the pass keeps its use.
        let kept = try provision(g, "04B20000000003", ["tags", "issue", "--action", "0", "--guest"])
        try g.ctlJSON(["mode", "lockdown"])
        try tap(g, kept, expect: "access_denied", reason: "lockdown")
        XCTAssertEqual(try usesLeft(g, "04B20000000003"), 1, "a tap the door refuses takes no use")
        try g.ctlJSON(["mode", "normal"])
        try tap(g, kept, expect: "access_granted")
        XCTAssertEqual(try usesLeft(g, "04B20000000003"), 0)
        XCTAssertEqual(g.stop(), 0)
    }
}
