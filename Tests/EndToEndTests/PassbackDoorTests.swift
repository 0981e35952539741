import DoorCore
import Foundation
import TestSupport
import XCTest

/// Entry, exit and anti-passback at a real gatewayd (issue 36): two OSDP readers — libosdp's
/// peripheral device (scripts/osdp/pd.py) on pseudo-terminals — `street` on the entry side and
/// `yard` on the exit side. A member's card (action 0, `passback = "hard"`) in at the entry is
/// denied a second entry (`passback`, the strike untouched); a staff card (action 1, "soft") is
/// let in again, granted `passback`; out at the exit, then in again: granted. `gatewayctl
/// occupancy` and its roll-call export list who is in; a restart keeps it (the store) and the
/// rule still holds; `gatewayctl passback reset` lets the member in again.
final class PassbackDoorTests: XCTestCase {
    let alice = "raw:26:AABBCCC0"
    let bob = "raw:26:11223340"

    func testASecondEntryIsJudgedByItsActionAndWhoIsInSurvivesARestart() throws {
        let osdp = try OSDPReaderFixture(
            "passback",
            [
                .init(name: "street", address: 1, keys: ["side = \"entry\""]),
                .init(name: "yard", address: 2, keys: ["side = \"exit\""]),
            ])
        defer { osdp.stop() }
        let street = try XCTUnwrap(osdp.pd["street"])
        let yard = try XCTUnwrap(osdp.pd["yard"])
        let broker = try MosquittoBroker()
        try broker.start()
        let g = try GatewayUnderTest(deviceID: MosquittoBroker.doorID)
        try g.writeConfig(
            extra: broker.configurationSection(compatTopic: "phone/front-door").replacingOccurrences(
                of: "[mqtt]\n", with: "[mqtt]\nlabel_in_events = true\n") + "\n" + osdp.section(pn532: false),
            actions: ConfigText.action(0, "members", ms: 300, "credentials = [\"osdp\"]\npassback = \"hard\"")
                + "\n" + ConfigText.action(1, "staff", ms: 300, "credentials = [\"osdp\"]\npassback = \"soft\""))
        try g.start()
        defer { g.stop() }
        try osdp.install(g)
        try osdp.waitOnline(g, timeout: 15)
        try g.ctlJSON(["tags", "enroll-card", "--action", "0", "--label", "Alice", alice])
        try g.ctlJSON(["tags", "enroll-card", "--action", "1", "--label", "Bob", bob])

        /// A card at a reader; the access event it caused ("granted REASON" / "denied REASON").
        func tap(_ card: String, at reader: LibosdpReader, _ name: String) throws -> String {
            E2ETiming.outlastQuietWindow()
            let seen = try g.eventCount()
            try reader.send("card 26 \(card.split(separator: ":").last ?? "")")
            let e = try g.accessEvent(after: seen)
            XCTAssertEqual(e["source"]?.stringValue, "reader:\(name)", "\(e)")
            let kind = e["kind"]?.stringValue == "access_granted" ? "granted" : "denied"
            return "\(kind) \(e["reason"]?.stringValue ?? "?")"
        }

        XCTAssertEqual(try tap(alice, at: street, "street"), "granted osdp_secure_channel")
        try waitFor("the strike pulsed", timeout: 5, interval: 0.05, context: { g.log }) {
            g.outputTransitions("strike", to: "unlocked") == 1 ? true : nil
        }
        XCTAssertEqual(try tap(alice, at: street, "street"), "denied passback", "hard: no second entry")
        XCTAssertEqual(try tap(bob, at: street, "street"), "granted osdp_secure_channel")
        XCTAssertEqual(try tap(bob, at: street, "street"), "granted passback", "soft: opens, audited")
        try waitFor("three pulses: the hard denial none", timeout: 5, interval: 0.05, context: { g.log }) {
            g.outputTransitions("strike", to: "unlocked") == 3 ? true : nil
        }

        // Home Assistant's occupancy sensor reads the retained state document's `occupancy`.
        func retainedOccupancy() throws -> JSONValue? {
            let sub = try broker.subscribe("doorgateway/front-door/state", as: "homeassistant")
            guard let line = sub.wait(timeout: 5, { !$0.isEmpty }).last else { return nil }
            return try JSONValue.parse(Array(line.split(separator: "|", maxSplits: 2)[2].utf8))["occupancy"]
        }
        try waitUntil { try retainedOccupancy()?["count"]?.intValue == 2 }
        XCTAssertEqual(
            try retainedOccupancy()?["people"]?.arrayValue?.compactMap { $0["who"]?.stringValue }, ["Alice", "Bob"])

        let occupancy = try g.ctlJSON(["occupancy"])
        XCTAssertEqual(occupancy["count"]?.intValue, 2, "\(occupancy)")
        XCTAssertEqual(occupancy["people"]?.arrayValue?.compactMap { $0["label"]?.stringValue }, ["Alice", "Bob"])
        XCTAssertEqual(occupancy["people"]?.arrayValue?.first?["reader"]?.stringValue, "street")
        let first = occupancy["people"]?.arrayValue?.first
        XCTAssertEqual(first?["uid"]?.stringValue, "raw:26:aabbccc0", "a card as tags list shows it")

        // Out at the exit, in again at the entry.
        XCTAssertEqual(try tap(alice, at: yard, "yard"), "granted osdp_secure_channel")
        XCTAssertEqual(try g.ctlJSON(["occupancy"])["people"]?.arrayValue?.count, 1, "Alice is out")
        XCTAssertEqual(try tap(alice, at: street, "street"), "granted osdp_secure_channel")

        // The roll call, offline from the door's store, as CSV.
        let csv = try g.ctl(["occupancy", "export", "--format", "csv"])
        XCTAssertEqual(csv.status, 0, csv.stderr)
        let lines = csv.stdout.split(separator: "\r\n").map(String.init)
        XCTAssertEqual(lines.first, "label,uid,since,since_local,reader")
        XCTAssertEqual(lines.dropFirst().map { $0.split(separator: ",").first.map(String.init) }, ["Bob", "Alice"])

        // A restart keeps who is in, and the rule still holds. While gatewayd is down the roll
        // call comes from the store itself (root, read-only).
        g.stop()
        let offline = try g.ctl([
            "occupancy", "export", "--format", "json", "--from-store", "--config", g.configFile.path,
        ])
        XCTAssertEqual(offline.status, 0, offline.stderr)
        let roll = try JSONValue.parse(Array(offline.stdout.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
        XCTAssertEqual(roll["people"]?.arrayValue?.compactMap { $0["label"]?.stringValue }, ["Bob", "Alice"])
        try g.start()
        try osdp.waitOnline(g, timeout: 15)
        XCTAssertEqual(
            try g.ctlJSON(["occupancy"])["people"]?.arrayValue?.compactMap { $0["label"]?.stringValue },
            ["Bob", "Alice"])
        XCTAssertEqual(try tap(alice, at: street, "street"), "denied passback", "after the restart")

        // The operator's reset (audited with who) lets her in again.
        let reset = try g.ctlJSON(["passback", "reset", alice])
        XCTAssertEqual(reset["reset"]?.intValue, 1, "\(reset)")
        try g.waitForEvent("passback_reset")
        try waitUntil { try retainedOccupancy()?["count"]?.intValue == 1 }
        XCTAssertEqual(try tap(alice, at: street, "street"), "granted osdp_secure_channel")
        try g.assertChainIntact()
    }
}
