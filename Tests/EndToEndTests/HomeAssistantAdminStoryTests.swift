import DoorCore
import Foundation
import TestSupport
import XCTest

/// gatewayd with `home_assistant_admin = true` against mosquitto on the
/// shipped configuration and ACL, driven as Home Assistant drives it (its
/// certificate, its topics): provisioning armed and cancelled, the issued
/// tags, a tag revoked by label and then denied, the last denied tag, every
/// change audited with source `homeassistant`; then the stock configuration
/// (the option off): the entities removed, the commands refused and audited.
final class HomeAssistantAdminStoryTests: XCTestCase {
    let prefix = "doorgateway/front-door"
    let alice = "04A1B2C3D4E5F6", bob = "04B0B0B0B0B0B0"

    var broker: MosquittoBroker!

    /// A running broker for this test. XCTest keeps the test case (and so
    /// `broker`) until the whole run ends, so tearDown stops it, failed or not.
    func startBroker() throws -> MosquittoBroker {
        let broker = try MosquittoBroker()
        self.broker = broker
        try broker.start()
        return broker
    }

    override func tearDown() {
        broker?.stop()
        broker = nil
        super.tearDown()
    }

    /// The retained messages on `topic` now, as `topic|retain|payload` lines, read as Home
    /// Assistant reads them. One short-lived client at a time: the doors' listener ties a
    /// client's id to its certificate (`use_username_as_clientid`), so two clients with HA's
    /// certificate at once would knock each other off, as they would in a real house.
    func retained(_ topic: String) throws -> [String] {
        let r = try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_sub"),
            broker.clientArguments("homeassistant") + [
                "-q", "1", "-t", topic, "-F", "%t|%r|%p", "--retained-only", "-W", "1",
            ], timeout: 20)
        return r.stdout.split(separator: "\n").map(String.init)
    }

    /// Reads the retained `topic` until `ok` holds for its lines (or the timeout passes).
    @discardableResult
    func retained(_ topic: String, timeout: TimeInterval = 10, until ok: ([String]) -> Bool) throws -> [String] {
        let deadline = Date() + timeout
        var lines = try retained(topic)
        while !ok(lines) && Date() < deadline {
            usleep(100_000)
            lines = try retained(topic)
        }
        return lines
    }

    /// The retained document on `topic` once `ok` holds for it, as HA reads it.
    func latest(_ topic: String, timeout: TimeInterval = 10, _ ok: (JSONValue) -> Bool = { _ in true }) throws
        -> JSONValue
    {
        func doc(_ lines: [String]) -> JSONValue? {
            lines.last.flatMap { try? JSONValue.parse(Array($0.split(separator: "|", maxSplits: 2)[2].utf8)) }
        }
        let lines = try retained(topic, timeout: timeout) { doc($0).map(ok) ?? false }
        return try XCTUnwrap(doc(lines).flatMap { ok($0) ? $0 : nil }, "\(topic): \(lines)")
    }

    func testHomeAssistantProvisionsListsRevokesAndSeesTheDenial() throws {
        let broker = try startBroker()
        let section = broker.configurationSection(compatTopic: "phone/front-door")
        let g = try GatewayUnderTest(
            extra: section.replacingOccurrences(of: "[mqtt]\n", with: "[mqtt]\nhome_assistant_admin = true\n"),
            deviceID: MosquittoBroker.doorID)
        try g.start()
        defer { g.stop() }
        try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
        let state = "\(prefix)/admin/state", tags = "\(prefix)/tags", denied = "\(prefix)/denied"
        let revokeConfig = "homeassistant/select/doorgateway_front-door/revoke_tag/config"
        func ha(_ topic: String, _ payload: String) throws {
            XCTAssertEqual(try broker.publish("\(prefix)/\(topic)", payload, as: "homeassistant").status, 0)
        }

        var s = try latest(state)
        XCTAssertEqual(s["provision_action"]?.stringValue, "front", "the configured provisioning action")
        XCTAssertEqual(s["revoke_tag"]?.stringValue, "(none)")
        XCTAssertEqual(try latest(tags)["total"], .int(0))

        // Choose the action and the label, arm: the door is provisioning.
        var seen = try g.eventCount()
        try ha("admin/provision_label/set", "Alice")
        try ha("admin/provision_action/set", "long")
        s = try latest(state) { $0["provision_action"]?.stringValue == "long" }
        XCTAssertEqual(s["provision_label"]?.stringValue, "Alice")
        try ha("admin/provision/set", "ARM")
        var row = try g.waitForEvent("provisioning_armed", after: seen)
        XCTAssertEqual(row["source"]?.stringValue, "homeassistant")
        XCTAssertEqual(row["action"]?.intValue, 1)
        XCTAssertEqual(try g.status()["state"]?.stringValue, "provisioning_armed")
        try ha("admin/provision/set", "CANCEL")
        row = try g.waitForEvent("provisioning_cancelled", after: seen)
        XCTAssertEqual(row["source"]?.stringValue, "homeassistant")
        XCTAssertEqual(try g.status()["state"]?.stringValue, "idle")

        // Armed again, a blank sticker tapped: written with HA's label and action.
        try ha("admin/provision/set", "ARM")
        try waitUntil { try g.status()["state"]?.stringValue == "provisioning_armed" }
        try g.ctlJSON(["sim", "tap", "--blank", "--uid", alice])
        try g.waitForEvent("provisioning_written", after: seen)
        let aliceDump = g.dir.appendingPathComponent("alice.dump").path
        try g.ctlJSON(["sim", "dump", aliceDump])
        try g.ctlJSON(["sim", "remove"])
        XCTAssertEqual(
            try latest(state) { $0["provision_label"]?.stringValue == "" }["provision_action"], .string("long"))

        // A second tag from the admin's socket; HA's list and selector follow.
        try g.ctlJSON(["provision", "--action", "0", "--label", "Bob"])
        try g.ctlJSON(["sim", "tap", "--blank", "--uid", bob])
        try waitUntil { (try g.ctlJSON(["tags", "list"])["tags"]?.arrayValue?.count) == 2 }
        let listed = try latest(tags) { $0["active"] == .int(2) }
        let entries = try XCTUnwrap(listed["tags"]?.arrayValue)
        let aliceEntry = try XCTUnwrap(entries.first { $0["label"]?.stringValue == "Alice" })
        XCTAssertEqual(aliceEntry["state"]?.stringValue, "active")
        XCTAssertEqual(aliceEntry["action"]?.intValue, 1)
        let aliceHash = try XCTUnwrap(aliceEntry["uid"]?.stringValue)
        XCTAssertEqual(aliceHash.count, 16)
        for line in try retained(tags) + retained(state) + retained(revokeConfig) {
            XCTAssertFalse(line.contains(alice) || line.contains(bob), "a raw UID reached HA: \(line)")
        }
        let options = try retained(revokeConfig) { $0.contains { $0.contains(#"["(none)","Alice","Bob"]"#) } }
        XCTAssertTrue(options.contains { $0.contains(#""options":["(none)","Alice","Bob"]"#) }, "\(options)")

        // Alice's sticker opens; its last_seen reaches HA.
        E2ETiming.outlastQuietWindow()  // since Alice's sticker left
        seen = try g.eventCount()
        try g.ctlJSON(["sim", "tap", "--dump", aliceDump])
        try g.waitForEvent("access_granted", after: seen)
        try g.ctlJSON(["sim", "remove"])
        _ = try latest(tags) { doc in
            doc["tags"]?.arrayValue?.contains { $0["label"]?.stringValue == "Alice" && $0["last_seen"] != .null }
                == true
        }

        try waitUntil { try g.status()["outputs"]?["strike"]?.stringValue == "locked" }  // action 1's 3 s pulse

        // Revoke by label: chosen, revoked, and the next tap is denied.
        seen = try g.eventCount()
        try ha("admin/revoke_tag/set", "Alice")
        _ = try latest(state) { $0["revoke_tag"]?.stringValue == "Alice" }
        try ha("admin/revoke/set", "REVOKE")
        row = try g.waitForEvent("tag_revoked", after: seen)
        XCTAssertEqual(row["source"]?.stringValue, "homeassistant")
        XCTAssertEqual(row["uid"]?.stringValue, alice, "the local audit log names the UID")
        let registry = try XCTUnwrap(try g.ctlJSON(["tags", "list"])["tags"]?.arrayValue)
        XCTAssertEqual(registry.first { $0["uid"]?.stringValue == alice }?["state"]?.stringValue, "revoked")
        XCTAssertEqual(registry.first { $0["uid"]?.stringValue == bob }?["state"]?.stringValue, "active")
        _ = try latest(state) { $0["revoke_tag"]?.stringValue == "(none)" }
        _ = try latest(tags) { $0["active"] == .int(1) }
        let bobOnly = try retained(revokeConfig) { $0.last?.contains(#""options":["(none)","Bob"]"#) ?? false }
        XCTAssertTrue(bobOnly.last?.contains(#""options":["(none)","Bob"]"#) ?? false, "\(bobOnly)")

        E2ETiming.outlastQuietWindow()  // since Alice's sticker left
        seen = try g.eventCount()
        try g.ctlJSON(["sim", "tap", "--dump", aliceDump])
        try g.waitForEvent("access_denied", reason: "revoked", after: seen)
        XCTAssertEqual(try g.status()["outputs"]?["strike"]?.stringValue, "locked")
        let last = try latest(denied) { $0["reason"]?.stringValue == "revoked" }
        XCTAssertEqual(last["uid"]?.stringValue, aliceHash, "the same hashed UID as in the tag list")
        XCTAssertEqual(last["label"]?.stringValue, "Alice")
        XCTAssertFalse(try retained(denied).contains { $0.contains(alice) })

        // What cannot be resolved is refused and audited.
        seen = try g.eventCount()
        try ha("admin/revoke/set", "REVOKE")
        try g.waitForEvent("remote_rejected", reason: "no_tag_chosen", after: seen)
        try ha("admin/revoke_tag/set", "Alice")  // revoked: no longer offered
        try g.waitForEvent("remote_rejected", reason: "unknown_option", after: seen)
        try ha("admin/provision/set", "CANCEL")
        try g.waitForEvent("remote_rejected", reason: "not_armed", after: seen)

        // The lockdown switch (docs/policy.md "Lockdown"): on, the door is locked down
        // (audited by homeassistant, in the state HA reads); off, it is not.
        try ha("admin/lockdown/set", "ON")
        try waitUntil { try g.ctlJSON(["lockdown", "status"])["active"]?.boolValue == true }
        XCTAssertEqual(try g.ctlJSON(["lockdown", "status"])["by"]?.stringValue, "homeassistant")
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "lockdown")
        _ = try latest("\(prefix)/state") { $0["lockdown"]?["active"]?.boolValue == true }
        try ha("admin/lockdown/set", "OFF")
        try waitUntil { try g.ctlJSON(["lockdown", "status"])["active"]?.boolValue == false }
        XCTAssertEqual(try g.status()["mode"]?.stringValue, "normal")

        // Every change from HA is in the audit log with its source.
        let rows = try XCTUnwrap(try g.ctlJSON(["log", "--limit", "500"]).arrayValue)
        let fromHA = rows.filter { $0["source"]?.stringValue == "homeassistant" }.map {
            "\($0["kind"]?.stringValue ?? "")/\($0["reason"]?.stringValue ?? "")"
        }
        for expected in [
            "remote_accepted/provision_label", "remote_accepted/provision_action", "provisioning_armed/",
            "provisioning_cancelled/cancelled", "remote_accepted/revoke_tag", "tag_revoked/",
            "remote_rejected/no_tag_chosen", "remote_rejected/unknown_option", "lockdown_started/", "lockdown_ended/",
        ] {
            XCTAssertTrue(fromHA.contains(expected), "\(expected) not audited: \(fromHA)")
        }
        try g.assertChainIntact("the chain holds")
        XCTAssertEqual(g.stop(), 0, g.log)

        // The stock configuration (the option off): every admin entity leaves
        // HA, the retained documents are cleared, the commands are refused.
        try g.writeConfig(extra: section)
        let admin = [
            "provision_action", "provision_label", "provision_arm", "provision_cancel", "provisioning",
            "tags", "revoke_tag", "revoke", "last_denied", "lockdown",
        ]
        // While the door is off, the broker still holds what the admin screen published.
        XCTAssertFalse(try retained(tags).isEmpty, "retained before the restart")
        try g.start()
        try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
        func offeredNow(_ lines: [String]) -> [String] {
            lines.filter { $0.contains("|1|{") }.map { String($0.split(separator: "/")[3]) }
        }
        let offered = offeredNow(
            try retained("homeassistant/+/doorgateway_front-door/+/config") { lines in
                let o = offeredNow(lines)
                return o.contains("lock") && !admin.contains { o.contains($0) }
            })
        XCTAssertTrue(offered.contains("lock"), "\(offered)")
        for object in admin {
            XCTAssertFalse(offered.contains(object), "\(object) still offered: \(offered)")
        }
        // The retained documents are cleared a few seconds after the connect
        // (once HA has dropped the entities reading them): a subscriber then
        // gets none of them.
        for topic in [tags, denied, state] {
            let left = try retained(topic, timeout: 15) { $0.isEmpty }
            XCTAssertEqual(left, [], "\(topic) still retained")
        }
        seen = try g.eventCount()
        try ha("admin/provision/set", "ARM")
        row = try g.waitForEvent("remote_rejected", reason: "ha_admin_disabled", after: seen)
        XCTAssertEqual(row["source"]?.stringValue, "homeassistant")
        try ha("admin/revoke_tag/set", "Bob")
        try ha("admin/revoke/set", "REVOKE")
        try ha("admin/lockdown/set", "ON")
        try waitUntil {
            (try g.ctlJSON(["log", "--limit", "500"]).arrayValue ?? []).filter {
                $0["reason"]?.stringValue == "ha_admin_disabled" && $0["source"]?.stringValue == "homeassistant"
            }.count == 4
        }
        XCTAssertEqual(try g.ctlJSON(["lockdown", "status"])["active"]?.boolValue, false)
        XCTAssertEqual(try g.status()["state"]?.stringValue, "idle")
        let stillActive = try XCTUnwrap(try g.ctlJSON(["tags", "list"])["tags"]?.arrayValue)
        XCTAssertEqual(stillActive.first { $0["uid"]?.stringValue == bob }?["state"]?.stringValue, "active")
        XCTAssertTrue(g.log.contains("remote_rejected reason=ha_admin_disabled source=homeassistant"), g.log)
    }

    /// Issue 25 §3 (one owner of the live configuration) at Home Assistant's
    /// edge: a reload that adds an action gives it its HA button and a place
    /// in the provisioning selector, where HA can choose it; a reload that
    /// removes it takes both away (an empty retained config: HA drops the
    /// entity) and the selector falls back to the first action. With the
    /// admin screen off, the buttons follow the reload the same way. Before,
    /// HA kept the actions gatewayd started with until a restart.
    func testAReloadRedrawsHomeAssistantsEntities() throws {
        let broker = try startBroker()
        // Action 2 also brings the first schedule and the first approval.
        let garage = """
            [[actions]]
            index = 2
            name = "garage"
            steps = [{ pulse = "strike", ms = 300 }]
            schedule = "always"
            approval = { timeout_s = 60, by = ["home_assistant"] }
            [[schedules]]
            name = "always"
            windows = [{ days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], from = "00:00", to = "24:00" }]
            """
        let scheduleSensor = "homeassistant/binary_sensor/doorgateway_front-door/schedule/config"
        let approvalEvent = "homeassistant/event/doorgateway_front-door/approval/config"
        let button2 = "homeassistant/button/doorgateway_front-door/action_2/config"
        let selector = "homeassistant/select/doorgateway_front-door/provision_action/config"
        for adminScreen in [false, true] {
            // The actions' buttons are offered where HA may open the door.
            var extra = broker.configurationSection(compatTopic: "phone/front-door").replacingOccurrences(
                of: "[mqtt]\n", with: "[mqtt]\nhome_assistant_open = true\n")
            if adminScreen {
                extra = extra.replacingOccurrences(of: "[mqtt]\n", with: "[mqtt]\nhome_assistant_admin = true\n")
            }
            let g = try GatewayUnderTest(extra: extra, deviceID: MosquittoBroker.doorID)
            try g.start()
            defer { g.stop() }
            try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
            func reload(_ actions: String) throws {
                try g.writeConfig(extra: extra, actions: actions)
                let seen = try g.eventCount()
                kill(try XCTUnwrap(g.process?.processIdentifier), SIGHUP)
                try g.waitForEvent("configuration_reloaded", after: seen)
            }
            let what = adminScreen ? "admin screen on" : "admin screen off"
            XCTAssertTrue(
                try retained("homeassistant/button/doorgateway_front-door/action_1/config") { !$0.isEmpty }.first?
                    .contains("long") ?? false, what)
            XCTAssertEqual(try retained(button2), [], "\(what): no action 2 yet")
            XCTAssertEqual(try retained(scheduleSensor), [], "\(what): no schedule yet")
            XCTAssertEqual(try retained(approvalEvent), [], "\(what): no approval yet")

            try reload(GatewayUnderTest.baseActions + "\n" + garage)
            let added = try retained(button2) { $0.first?.contains("garage") ?? false }
            XCTAssertTrue(added.first?.contains("garage") ?? false, "\(what): the new action's button: \(added)")
            XCTAssertFalse(try retained(scheduleSensor) { !$0.isEmpty }.isEmpty, "\(what): the schedule's sensor")
            XCTAssertFalse(try retained(approvalEvent) { !$0.isEmpty }.isEmpty, "\(what): the approval entity")
            if adminScreen {
                var offered =
                    try latest(selector) { ($0["options"]?.arrayValue?.count ?? 0) == 3 }["options"]?.arrayValue?
                    .compactMap(\.stringValue) ?? []
                XCTAssertEqual(offered.count, 3, "\(offered)")
                let option = try XCTUnwrap(offered.first { $0.contains("garage") }, "\(offered)")
                let seen = try g.eventCount()
                XCTAssertEqual(
                    try broker.publish("\(prefix)/admin/provision_action/set", option, as: "homeassistant").status, 0)
                try g.waitForEvent("remote_accepted", after: seen)
                XCTAssertEqual(
                    try latest("\(prefix)/admin/state") { $0["provision_action"]?.stringValue == option }[
                        "provision_action"]?.stringValue, option)

                try reload(GatewayUnderTest.baseActions)
                offered =
                    try latest(selector) { ($0["options"]?.arrayValue?.count ?? 0) == 2 }["options"]?
                    .arrayValue?.compactMap(\.stringValue) ?? []
                XCTAssertFalse(offered.contains(option), "\(offered)")
                let first = try XCTUnwrap(offered.first)
                XCTAssertEqual(
                    try latest("\(prefix)/admin/state") { $0["provision_action"]?.stringValue == first }[
                        "provision_action"]?.stringValue, first, "a removed action chosen falls back to the first")
                let refused = try g.eventCount()
                _ = try broker.publish("\(prefix)/admin/provision_action/set", option, as: "homeassistant")
                XCTAssertEqual(
                    try g.waitForEvent("remote_rejected", after: refused)["reason"]?.stringValue, "unknown_option")
                // A changed `[provisioning] action` is the selector's choice after the reload
                // (issue 34: it stayed the one gatewayd started with).
                try g.writeConfig(
                    extra: extra + "\n[provisioning]\naction = 1\n", actions: GatewayUnderTest.baseActions)
                let before = try g.eventCount()
                kill(try XCTUnwrap(g.process?.processIdentifier), SIGHUP)
                try g.waitForEvent("configuration_reloaded", after: before)
                XCTAssertEqual(
                    try latest("\(prefix)/admin/state") { $0["provision_action"]?.stringValue == "long" }[
                        "provision_action"]?.stringValue, "long", "the reloaded [provisioning] action")
            } else {
                try reload(GatewayUnderTest.baseActions)
            }
            XCTAssertEqual(
                try retained(button2, timeout: 10) { $0.isEmpty }, [], "\(what): the removed action's button is gone")
            XCTAssertEqual(try retained(scheduleSensor, timeout: 10) { $0.isEmpty }, [], "\(what): schedule gone")
            XCTAssertEqual(try retained(approvalEvent, timeout: 10) { $0.isEmpty }, [], "\(what): approval gone")
            XCTAssertEqual(g.stop(), 0)
        }
    }
}
