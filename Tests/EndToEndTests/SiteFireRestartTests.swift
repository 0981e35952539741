import DoorCore
import Foundation
import TestSupport
import XCTest

/// docs/policy.md "Fire alarm" (across a restart), issue 36's follow-up: the
/// site's fire signal on two real gatewayd processes (simulated boards, the
/// shipped example with `on_fire = "release"` for its strike) over one
/// mosquitto on the shipped configuration and ACL. Door-a signs the alarm;
/// door-b hears it over the broker and releases. Door-b is killed (-9, a
/// crash) and started again: still in alarm, released, its strike never
/// driven locked by the door (only the board's request as it starts), a reset
/// refused. The site's clear: `cleared`, still released; stopped and started
/// again (an upgrade): still `cleared`, released; the captured alarm sent
/// again after the restart is refused; `fire reset` locks, and a restart
/// after it starts locked. Before the fix the restarted door came up `normal`
/// with its strike locked while the site's alarm was still on.
final class SiteFireRestartTests: XCTestCase {
    func testASiteFireAlarmOutlivesARestartUntilItsClearAndAReset() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        try broker.start()
        let site = try MQTTFleetSite(broker)
        let keys = try SiteKeys("site-fire")
        defer { keys.remove() }
        var doors: [GatewayUnderTest] = []
        // Every daemon (and its pn532-sim) is stopped, on failure too.
        defer { for g in doors { g.stop() } }
        for name in ["door-a", "door-b"] {
            let g = try keys.door(site, name)
            try g.editConfig([
                // The freshness window needs a synchronised clock; the test host's may not say so.
                ("declare_synchronised = false", "declare_synchronised = true"),
                ("# on_fire = \"release\"", "on_fire = \"release\""),
            ])
            doors.append(g)
            try site.prepare(g, name)
            try g.start()
        }
        let (a, b) = (doors[0], doors[1])
        func connected(_ g: GatewayUnderTest) throws {
            try waitUntil(timeout: 15) { (try g.status()["broker"]?["connected"]) == .bool(true) }
        }
        for g in doors { try connected(g) }
        let wire = try site.watchDoorA()
        func signed(_ args: [String]) throws {
            try a.ctlJSON(args + ["--site-key", keys.keyFile, "--by", "alice", "--config", a.configFile.path])
        }
        func fire(_ g: GatewayUnderTest) throws -> String? { try g.status()["fire"]?["state"]?.stringValue }
        func strike(_ g: GatewayUnderTest) throws -> String? { try g.status()["outputs"]?["strike"]?.stringValue }

        try signed(["fire", "signal", "alarm"])
        // Door-a's command as it went to the site (it reaches the watch a moment after gatewayctl returns).
        try waitUntil { wire().contains { $0.contains(#"{"site_command":1"#) } }
        let alarm = try XCTUnwrap(wire().last { $0.contains(#"{"site_command":1"#) }, "the alarm on the wire")
        try waitUntil { try fire(b) == "alarm" }
        XCTAssertEqual(try strike(b), "unlocked")

        // A crash during the alarm, then a start (systemd's Restart=).
        b.stop(signal: SIGKILL)
        try b.start()
        XCTAssertEqual(try fire(b), "alarm", "the site's alarm survived the restart")
        // Released again as the door starts (its first effects run just after the socket answers).
        try waitUntil { try strike(b) == "unlocked" }
        XCTAssertEqual(
            b.outputTransitions("strike", to: "locked"), 1,
            "only the board's request at its start, never the door's drive:\n\(b.log.suffix(3000))")
        XCTAssertTrue(b.log.contains("fire alarm kept from before the start"), b.log.suffix(3000).description)
        XCTAssertNotEqual(try b.ctl(["fire", "reset"]).status, 0, "no reset while the site's alarm holds")
        XCTAssertEqual(try strike(b), "unlocked")
        try connected(b)

        // The site's clear: cleared, still released; a stop and a start (an upgrade) keep it so.
        try signed(["fire", "signal", "clear"])
        try waitUntil { try fire(b) == "cleared" }
        XCTAssertEqual(try strike(b), "unlocked")
        XCTAssertEqual(b.stop(), 0, b.log)
        try b.start()
        XCTAssertEqual(try fire(b), "cleared", "waiting for its reset across the restart")
        try waitUntil { try strike(b) == "unlocked" }  // the clear alone locks nothing, across a restart too
        XCTAssertEqual(b.outputTransitions("strike", to: "locked"), 1, b.log.suffix(3000).description)
        try connected(b)

        // The alarm captured off the wire, sent again by door-e's account after
        // the restart: refused (its replay record was saved), door-b unchanged.
        let seen = try b.eventCount()
        try site.publishAsDoorE(alarm)
        let refused = try b.waitForEvent("site_command_refused", after: seen)
        XCTAssertTrue(
            ["replay", "older_than_highest", "stale"].contains(refused["reason"]?.stringValue ?? ""), "\(refused)")
        XCTAssertEqual(try fire(b), "cleared")

        // Its operator's reset locks it; a restart after the reset starts locked.
        try b.ctlJSON(["fire", "reset"])
        XCTAssertEqual(try fire(b), "normal")
        XCTAssertEqual(try strike(b), "locked")
        XCTAssertEqual(b.stop(), 0, b.log)
        try b.start()
        XCTAssertEqual(try fire(b), "normal", "the reset was saved")
        XCTAssertEqual(try strike(b), "locked")
        let reset = try XCTUnwrap(
            try b.ctlJSON(["log", "--limit", "500"]).arrayValue?.last { $0["kind"]?.stringValue == "fire_reset" })
        XCTAssertEqual(reset["source"]?.stringValue, "gatewayctl", "\(reset)")
        for g in doors { try g.assertChainIntact() }
    }
}
