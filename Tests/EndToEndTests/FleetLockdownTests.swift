import DoorCore
import Foundation
import Synchronization
import TestSupport
import XCTest

/// The site's lockdown and fire signal (docs/policy.md "Lockdown", docs/fleet.md
/// "Site commands") on five real gatewayd processes over one mosquitto on the
/// shipped configuration and ACL, and over one nats-server (JWT, JetStream):
/// `gatewayctl lockdown start --site-key` at door-a locks every door — timed,
/// 10 starts and 10 ends, the figures printed (the fleet bench, docs/reliability.md)
/// —, the lockdown survives a restart, `policy explain` says why a tap stays
/// shut; a command signed by another key, and door-a's own command replayed
/// (before and after a restart), are refused and audited at every door; the
/// site's fire signal releases every door until `fire reset`.
final class FleetLockdownTests: XCTestCase {
    static let rounds = 10

    func testLockdownReachesFiveDoorsOverMQTT() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        try broker.start()
        try story(try MQTTFleetSite(broker), transport: "mqtt")
    }

    func testLockdownReachesFiveDoorsOverNATS() throws {
        let server = try NATSServer(jetStream: true)
        defer { server.stop() }
        let site = try NATSFleetSite(server)
        try server.start()
        try story(site, transport: "nats")
    }

    /// `gatewayctl lockdown status` of the door at `socket` (nil: no answer).
    static func lockdownActive(socket: String) -> Bool? {
        var env = ProcessInfo.processInfo.environment
        env["DOORGATEWAY_SOCKET"] = socket
        guard
            let r = try? Run.process(
                GatewayUnderTest.gateway, ["ctl", "lockdown", "status", "--json"], environment: env, timeout: 20),
            r.status == 0,
            let v = try? JSONValue.parse(Array(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
        else { return nil }
        return v["active"]?.boolValue
    }

    func lockdown(_ g: GatewayUnderTest) throws -> Bool? {
        try g.ctlJSON(["lockdown", "status"])["active"]?.boolValue
    }

    /// Runs `command` (gatewayctl at door-a) and times, per door, until each
    /// reports `active` (each door polled by its own thread); seconds from the
    /// command's start, and how long the command itself took.
    func timed(_ doors: [GatewayUnderTest], active: Bool, _ command: () throws -> Void) throws -> (
        doors: [Double], command: Double
    ) {
        let start = Date()
        try command()
        let took = Date().timeIntervalSince(start)
        // One thread per door (a pool the size of the CPUs would poll two at a time).
        let reached = Mutex([Double?](repeating: nil, count: doors.count))
        let done = DispatchSemaphore(value: 0)
        for (i, socket) in doors.map(\.socket).enumerated() {
            Thread {
                defer { done.signal() }
                let deadline = Date().addingTimeInterval(E2ETiming.timeout(10))
                while Date() < deadline {
                    if Self.lockdownActive(socket: socket) == active {
                        reached.withLock { $0[i] = Date().timeIntervalSince(start) }
                        return
                    }
                    usleep(5_000)
                }
            }.start()
        }
        for _ in doors { done.wait() }
        let times = reached.withLock { $0.compactMap { $0 } }
        XCTAssertEqual(times.count, doors.count, "a door did not reach lockdown \(active): \(reached.withLock { $0 })")
        return (times, took)
    }

    func story(_ site: any FleetSiteUnderTest, transport: String) throws {
        let keys = try SiteKeys("lockdown")
        defer { keys.remove() }
        var doors: [GatewayUnderTest] = []
        // Every daemon (and its pn532-sim) is stopped, on failure too.
        defer { for g in doors { g.stop() } }
        for name in FleetTests.doorNames {
            let g = try keys.door(site, name)
            // The freshness window needs a synchronised clock; the test host's may not say so.
            try g.editConfig([("declare_synchronised = false", "declare_synchronised = true")])
            doors.append(g)
            try site.prepare(g, name)
            try g.start()
        }
        for g in doors { try waitUntil(timeout: 15) { (try g.status()["broker"]?["connected"]) == .bool(true) } }
        let (a, b, c) = (doors[0], doors[1], doors[2])
        let wire = try site.watchDoorA()
        func signed(_ args: [String], at g: GatewayUnderTest) throws {
            try g.ctlJSON(args + ["--site-key", keys.keyFile, "--by", "alice", "--config", g.configFile.path])
        }

        // Door-a signs with the site key; every door locks. Timed: starts and ends.
        var samples: [Double] = []
        var afterReturn: [Double] = []
        var commands: [Double] = []
        for _ in 0..<Self.rounds {
            for (args, active) in [(["lockdown", "start"], true), (["lockdown", "end"], false)] {
                let t = try timed(doors, active: active) { try signed(args, at: a) }
                samples += t.doors
                afterReturn += t.doors.map { max(0, $0 - t.command) }
                commands.append(t.command)
            }
        }
        func figures(_ values: [Double]) -> String {
            let all = values.sorted()
            func ms(_ q: Double) -> String {
                String(format: "%.0f", all[min(all.count - 1, Int((Double(all.count) * q).rounded(.up)) - 1)] * 1000)
            }
            return "p50 \(ms(0.5)) ms, p99 \(ms(0.99)) ms, max \(ms(1)) ms (n=\(all.count))"
        }
        print(
            "fleet lockdown (\(transport)): \(Self.rounds) starts and \(Self.rounds) ends at door-a, 5 doors; "
                + "from `gatewayctl lockdown start|end --site-key` starting to each door's `lockdown status` "
                + "(polled every ~5 ms per door): \(figures(samples)); the gatewayctl command itself "
                + "(process start, config, signing, door-a's apply and publish): \(figures(commands)); "
                + "from its return to each door: \(figures(afterReturn))")

        // In force: audited with who at every door, published in the state, explained.
        try signed(["lockdown", "start"], at: a)
        for g in doors { try waitUntil { try lockdown(g) == true } }
        let started = try XCTUnwrap(
            try b.ctlJSON(["log", "--limit", "500"]).arrayValue?.last { $0["kind"]?.stringValue == "lockdown_started" })
        XCTAssertEqual(started["source"]?.stringValue, "site", "\(started)")
        XCTAssertTrue("\(started)".contains("alice"), "who: \(started)")
        XCTAssertEqual(try b.status()["mode"]?.stringValue, "lockdown")
        let explained = try b.ctlJSON(["policy", "explain", "--action", "0", "--at", "2026-12-07T12:00:00Z"])
        XCTAssertEqual(explained["reason"]?.stringValue, "lockdown", "\(explained)")
        // No mode change lifts it.
        let unlocked = try b.ctl(["mode", "normal"])
        XCTAssertNotEqual(unlocked.status, 0)
        XCTAssertTrue(unlocked.stderr.contains("gatewayctl lockdown end"), unlocked.stderr)
        XCTAssertEqual(try b.status()["mode"]?.stringValue, "lockdown")

        // Persisted: door-c restarts still locked down.
        XCTAssertEqual(c.stop(), 0, c.log)
        try c.start()
        XCTAssertEqual(try lockdown(c), true, "the lockdown survived a restart")
        XCTAssertEqual(try c.status()["mode"]?.stringValue, "lockdown")
        try waitUntil(timeout: 15) { (try c.status()["broker"]?["connected"]) == .bool(true) }

        // The end, captured off the wire, replayed by a compromised door (door-e's
        // account): refused `replay` everywhere, door-c (restarted since) included.
        try signed(["lockdown", "end"], at: a)
        for g in doors { try waitUntil { try lockdown(g) == false } }
        try signed(["lockdown", "start"], at: a)
        for g in doors { try waitUntil { try lockdown(g) == true } }
        let captured = try XCTUnwrap(
            wire().last { $0.contains(#"{"site_command":1"#) }, "door-a's command on the wire: \(wire())")
        let seen = try doors.map { try $0.eventCount() }
        try site.publishAsDoorE(captured)
        for (i, g) in doors.enumerated() {
            try g.waitForEvent("site_command_refused", reason: "replay", after: seen[i])
            XCTAssertEqual(try lockdown(g), true)
        }
        // Forged: the end signed by another key.
        let forged = try SiteCommand(
            site: FleetTests.site, kind: .lockdownEnd, by: "mallory", timestamp: Int64(Date().timeIntervalSince1970),
            nonce: Hex.encode(Array(repeating: 7, count: 16))
        ).signed(seed: try Crypto.Ed25519.generateSeed())
        try site.publishAsDoorE(String(decoding: forged, as: UTF8.self))
        for (i, g) in doors.enumerated() {
            try g.waitForEvent("site_command_refused", reason: "bad_signature", after: seen[i])
            XCTAssertEqual(try lockdown(g), true, "a forged end lifted the lockdown")
        }
        // A genuine end, signed in the test with the site key, sent by door-e's account: taken.
        let end = try SiteCommand(
            site: FleetTests.site, kind: .lockdownEnd, by: "bob", timestamp: Int64(Date().timeIntervalSince1970),
            nonce: Hex.encode(Array(repeating: 9, count: 16))
        ).signed(seed: try keys.seed())
        try site.publishAsDoorE(String(decoding: end, as: UTF8.self))
        for g in doors { try waitUntil { try lockdown(g) == false } }

        // A forged fire alarm (it would release every maglock): refused everywhere.
        let forgedFire = try SiteCommand(
            site: FleetTests.site, kind: .fireAlarm, by: "mallory", timestamp: Int64(Date().timeIntervalSince1970),
            nonce: Hex.encode(Array(repeating: 8, count: 16))
        ).signed(seed: try Crypto.Ed25519.generateSeed())
        let beforeFire = try doors.map { try $0.eventCount() }
        try site.publishAsDoorE(String(decoding: forgedFire, as: UTF8.self))
        for (i, g) in doors.enumerated() {
            try g.waitForEvent("site_command_refused", reason: "bad_signature", after: beforeFire[i])
            XCTAssertEqual(try g.status()["fire"]?["state"]?.stringValue, "normal")
        }

        // The site's fire alarm: every door in alarm; its end leaves the outputs
        // released until an operator resets each door.
        try signed(["fire", "signal", "alarm"], at: a)
        let alarmOnTheWire = try XCTUnwrap(wire().last { $0.contains(#"{"site_command":1"#) })
        for g in doors { try waitUntil { try g.status()["fire"]?["state"]?.stringValue == "alarm" } }
        let fireRow = try XCTUnwrap(
            try b.ctlJSON(["log", "--limit", "500"]).arrayValue?.last { $0["kind"]?.stringValue == "fire_alarm" })
        XCTAssertEqual(fireRow["source"]?.stringValue, "site", "\(fireRow)")
        XCTAssertNotEqual(try b.ctl(["fire", "reset"]).status, 0, "no reset while the site's alarm holds")
        try signed(["fire", "signal", "clear"], at: a)
        for g in doors { try waitUntil { try g.status()["fire"]?["state"]?.stringValue == "cleared" } }
        try b.ctlJSON(["fire", "reset"])
        XCTAssertEqual(try b.status()["fire"]?["state"]?.stringValue, "normal")
        XCTAssertEqual(try c.status()["fire"]?["state"]?.stringValue, "cleared", "each door is reset by its operator")
        // The alarm captured off the wire and sent again: refused (a replay; older than the
        // clear that followed it, as site commands of one state go in order; or stale once
        // the window has passed); door-b, reset, stays locked.
        let beforeReplay = try b.eventCount()
        try site.publishAsDoorE(alarmOnTheWire)
        let refused = try b.waitForEvent("site_command_refused", after: beforeReplay)
        XCTAssertTrue(
            ["replay", "older_than_highest", "stale"].contains(refused["reason"]?.stringValue ?? ""), "\(refused)")
        XCTAssertEqual(try b.status()["fire"]?["state"]?.stringValue, "normal", "a replayed alarm released door-b")
        for g in doors { try g.assertChainIntact() }
    }
}
