import DoorCore
import Foundation
import TestSupport
import XCTest

/// Consent-first approval end to end (docs/policy.md "Approval";
/// docs/security.md "Approval"): the real gatewayd (the static binary under
/// make test) with mosquitto on the shipped configuration and ACL. A tap for
/// an action that needs approval waits; Home Assistant's button, the phone's
/// signed answer and `gatewayctl approve` each open the door once; replays,
/// answers to nothing, answers after the timeout and answers over a
/// transport the action does not list never do.
final class ApprovalStoryTests: XCTestCase {
    static let visitor = "04A1B2C3D4E5F6", cleaner = "04C1EA0E000001"

    /// Action 1's approval window: 10 s natively, stretched by `E2ETiming.scale`
    /// (30 s under qemu-user). The deny/timeout test makes about ten
    /// `gatewayctl`/`mosquitto_pub` calls inside this window before it lets it
    /// run out: the one door-side time bound an emulated test races (they took
    /// 2 s of it under qemu-user with the host's cores busy).
    static var cleanerTimeout: Int { Int((10 * E2ETiming.scale).rounded()) }

    /// Action 0 asks anyone (60 s), action 1 only gatewayctl (`cleanerTimeout`).
    static let actions =
        ConfigText.action(
            0, "visitors", #"approval = { timeout_s = 60, by = ["home_assistant", "phone", "gatewayctl"] }"#)
        + "\n"
        + ConfigText.action(1, "cleaner", #"approval = { timeout_s = \#(cleanerTimeout), by = ["gatewayctl"] }"#)

    func startDoor(_ broker: MosquittoBroker) throws -> GatewayUnderTest {
        let g = try GatewayUnderTest(deviceID: MosquittoBroker.doorID)
        try g.writeConfig(
            extra: broker.configurationSection(compatTopic: "phone/front-door").replacingOccurrences(
                of: "[mqtt]\n", with: "[mqtt]\nlabel_in_events = true\n"),
            actions: Self.actions)
        try g.start()
        try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
        return g
    }

    /// Writes a sticker for `action` on `uid` (`extra`: guest-pass options); its dump.
    func provision(_ g: GatewayUnderTest, _ uid: String, action: Int, label: String, extra: [String] = []) throws
        -> String
    {
        try g.issueSticker(uid, arm: ["provision", "--action", "\(action)", "--label", label] + extra)
    }

    /// Taps the sticker; the code of the request it made (from its audit row).
    func tap(_ g: GatewayUnderTest, _ dump: String, file: StaticString = #filePath, line: UInt = #line) throws
        -> String
    {
        let row = try g.tapSticker(dump, expect: "approval_requested")
        let detail = try XCTUnwrap(row["detail"]?.stringValue, "\(row)", file: file, line: line)
        let code = try XCTUnwrap(
            detail.split(separator: " ").first { $0.hasPrefix("code=") }?.dropFirst(5), detail, file: file, line: line)
        XCTAssertEqual(code.count, 6, detail, file: file, line: line)
        return String(code)
    }

    /// The phone's signed answer, with the door's command key.
    func phoneAnswer(_ g: GatewayUnderTest, code: String, approve: Bool) throws -> String {
        let key = try XCTUnwrap(
            Hex.decode(try XCTUnwrap(try g.ctlJSON(["keys", "command", "export"])["key"]?.stringValue)))
        let nonce = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        let ts = Int64(Date().timeIntervalSince1970)
        return String(
            decoding: CommandJudge.approvalCommand(
                key: key, device: g.deviceID, code: code, approve: approve, ts: ts, nonce: nonce), as: UTF8.self)
    }

    func unlocks(_ g: GatewayUnderTest) -> Int { g.outputTransitions("strike", to: "unlocked") }

    func testEachApproverOpensOnceAndNoReplayOrUnaskedAnswerDoes() throws {
        let broker = try MosquittoBroker()
        try broker.start()
        defer { broker.stop() }
        let g = try startDoor(broker)
        try g.ctlJSON(["keys", "command", "new"])
        let visitor = try provision(g, Self.visitor, action: 0, label: "Grandma")

        // Home Assistant (one short-lived client at a time): the approval
        // entity, the buttons, and the request with its code and label.
        var code: String
        do {
            let ha = try MosquittoBroker.Subscription(
                arguments: broker.clientArguments("homeassistant") + [
                    "-q", "1", "-t", "doorgateway/front-door/approval", "-t",
                    "homeassistant/+/doorgateway_front-door/+/config", "-F", "%t|%r|%p",
                ])
            code = try tap(g, visitor)
            func isRequest(_ line: String) -> Bool {
                line.hasPrefix("doorgateway/front-door/approval|") && line.contains("approval_requested")
            }
            let lines = ha.wait { $0.contains(where: isRequest) }
            let request = try XCTUnwrap(lines.first(where: isRequest), "\(lines)")
            XCTAssertTrue(request.contains(#""code":"\#(code)""#), request)
            XCTAssertTrue(request.contains(#""label":"Grandma""#), "label_in_events: \(request)")
            XCTAssertTrue(request.hasPrefix("doorgateway/front-door/approval|0|"), "not retained: \(request)")
            for object in [
                "event/doorgateway_front-door/approval", "button/doorgateway_front-door/approve",
                "button/doorgateway_front-door/deny",
            ] {
                XCTAssertTrue(lines.contains { $0.hasPrefix("homeassistant/\(object)/config|1|{") }, object)
            }
            withExtendedLifetime(ha) {}
        }
        let waiting = try g.status()
        XCTAssertEqual(waiting["state"]?.stringValue, "awaiting_approval")
        XCTAssertEqual(waiting["approval"]?["code"]?.stringValue, code, "gatewayctl status shows the code")
        XCTAssertEqual(waiting["approval"]?["uid"]?.stringValue, Self.visitor)
        XCTAssertEqual(unlocks(g), 0, "a tap needing approval opens nothing by itself")
        var seen = try g.eventCount()
        XCTAssertEqual(
            try broker.publish("doorgateway/front-door/approval/set", "APPROVE", as: "homeassistant").status, 0)
        var granted = try g.waitForEvent("approval_granted", after: seen)
        XCTAssertEqual(granted["source"]?.stringValue, "home_assistant")
        XCTAssertEqual(
            try g.waitForEvent("access_granted", reason: "approved", after: seen)["uid"]?.stringValue, Self.visitor)
        try g.waitForOutput("strike", "unlocked", times: 1)

        // gatewayctl on the control socket.
        let byCtl = try tap(g, visitor)
        seen = try g.eventCount()
        let approved = try g.ctl(["approve", byCtl.lowercased()])
        XCTAssertEqual(approved.status, 0, approved.stderr)
        granted = try g.waitForEvent("approval_granted", after: seen)
        XCTAssertEqual(granted["source"]?.stringValue, "gatewayctl")
        XCTAssertTrue(granted["detail"]?.stringValue?.contains("by=uid=\(getuid())") ?? false, "\(granted)")
        try g.waitForOutput("strike", "unlocked", times: 2)

        // The phone: a native answer signed with the door's command key.
        code = try tap(g, visitor)
        let phone = try phoneAnswer(g, code: code, approve: true)
        seen = try g.eventCount()
        XCTAssertEqual(try broker.publish("doorgateway/front-door/command", phone).status, 0)
        granted = try g.waitForEvent("approval_granted", after: seen)
        XCTAssertEqual(granted["source"]?.stringValue, "phone")
        try g.waitForOutput("strike", "unlocked", times: 3)

        // Nothing below opens the door.
        let opened = unlocks(g)
        let grants = try g.auditKinds().filter { $0 == "access_granted" }.count
        // The same signed message again: the replay guard refuses it.
        seen = try g.eventCount()
        _ = try broker.publish("doorgateway/front-door/command", phone)
        XCTAssertEqual(try g.waitForEvent("remote_rejected", after: seen)["reason"]?.stringValue, "replay")
        // A fresh signature for a settled request: replayed.
        seen = try g.eventCount()
        _ = try broker.publish("doorgateway/front-door/command", try phoneAnswer(g, code: code, approve: true))
        XCTAssertEqual(try g.waitForEvent("approval_refused", after: seen)["reason"]?.stringValue, "replayed")
        // gatewayctl repeating an answered code: refused, exit 1.
        let again = try g.ctl(["approve", byCtl])
        XCTAssertEqual(again.status, 1)
        XCTAssertTrue(again.stderr.contains("replayed"), again.stderr)
        // A code the door never issued, and HA's button with nothing waiting.
        let unknown = try g.ctl(["approve", "ABCDEF", "--json"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stdout.contains(#""reason":"unknown_request""#), unknown.stdout)
        seen = try g.eventCount()
        _ = try broker.publish("doorgateway/front-door/approval/set", "APPROVE", as: "homeassistant")
        XCTAssertEqual(try g.waitForEvent("approval_refused", after: seen)["reason"]?.stringValue, "no_request")
        let malformed = try g.ctl(["approve", "0OIL1"])
        XCTAssertNotEqual(malformed.status, 0, "not a code: refused before the socket")
        XCTAssertEqual(unlocks(g), opened)
        XCTAssertEqual(try g.auditKinds().filter { $0 == "access_granted" }.count, grants)
        XCTAssertEqual(try g.status()["state"]?.stringValue, "idle")
        XCTAssertEqual(try g.status()["approval"], .null)
        try g.assertChainIntact()
        XCTAssertEqual(g.stop(), 0, g.log)
    }

    func testDenyTimeoutAndAnotherTransportNeverOpen() throws {
        let broker = try MosquittoBroker()
        try broker.start()
        defer { broker.stop() }
        let g = try startDoor(broker)
        try g.ctlJSON(["keys", "command", "new"])
        let visitor = try provision(g, Self.visitor, action: 0, label: "courier")
        let cleaner = try provision(g, Self.cleaner, action: 1, label: "cleaner")

        // Deny.
        var code = try tap(g, visitor)
        var seen = try g.eventCount()
        let denied = try g.ctl(["deny", code])
        XCTAssertEqual(denied.status, 0, denied.stderr)
        XCTAssertEqual(try g.waitForEvent("approval_denied", after: seen)["source"]?.stringValue, "gatewayctl")
        XCTAssertEqual(
            try g.waitForEvent("access_denied", reason: "not_approved", after: seen)["uid"]?.stringValue, Self.visitor)

        // A second tap replaces the first request.
        let first = try tap(g, visitor)
        code = try tap(g, cleaner)
        let asked = Date()
        XCTAssertNotEqual(first, code)
        XCTAssertTrue(try g.auditKinds().contains("approval_cancelled"))

        // Action 1 lists only gatewayctl: HA's button and the phone are refused, the request waits on.
        seen = try g.eventCount()
        _ = try broker.publish("doorgateway/front-door/approval/set", "APPROVE \(code)", as: "homeassistant")
        var refused = try g.waitForEvent("approval_refused", after: seen)
        XCTAssertEqual(refused["reason"]?.stringValue, "wrong_transport")
        XCTAssertEqual(refused["source"]?.stringValue, "home_assistant")
        seen = try g.eventCount()
        _ = try broker.publish("doorgateway/front-door/command", try phoneAnswer(g, code: code, approve: true))
        refused = try g.waitForEvent("approval_refused", after: seen)
        XCTAssertEqual(refused["reason"]?.stringValue, "wrong_transport")
        XCTAssertEqual(refused["source"]?.stringValue, "phone")
        XCTAssertEqual(
            try g.status()["state"]?.stringValue, "awaiting_approval",
            "\(Int(Date().timeIntervalSince(asked))) s since the request, window \(Self.cleanerTimeout) s")
        // A local user outside the admin group cannot answer on the socket
        // (with its file mode opened up, SO_PEERCRED refuses the caller by name).
        if getuid() == 0 {
            chmod(g.socket, 0o666)
            let nobody = try Run.process(
                URL(fileURLWithPath: "/usr/bin/setpriv"),
                [
                    "--reuid=65534", "--regid=65534", "--clear-groups", GatewayUnderTest.gateway.path, "ctl", "approve",
                    code, "--socket", g.socket,
                ], timeout: 20)
            XCTAssertNotEqual(nobody.status, 0)
            XCTAssertTrue(nobody.stderr.contains("uid 65534 is not root or in group"), nobody.stderr)
            XCTAssertEqual(try g.status()["state"]?.stringValue, "awaiting_approval")
        }

        // No answer within the window: denied not_approved; a yes after it opens nothing.
        print("approval window: the checks took \(Int(Date().timeIntervalSince(asked))) s of \(Self.cleanerTimeout) s")
        XCTAssertLessThan(
            Date().timeIntervalSince(asked), Double(Self.cleanerTimeout),
            "the checks above ran inside the approval window")
        let timedOut = try g.waitForEvent(
            "approval_timed_out", after: seen, timeout: Double(Self.cleanerTimeout) / E2ETiming.scale + 10)
        XCTAssertEqual(timedOut["uid"]?.stringValue, Self.cleaner)
        try g.waitForEvent("access_denied", reason: "not_approved", after: seen)
        let late = try g.ctl(["approve", code])
        XCTAssertEqual(late.status, 1)
        XCTAssertTrue(late.stderr.contains("replayed"), late.stderr)
        XCTAssertEqual(unlocks(g), 0, "nothing in this test opens the door")
        XCTAssertFalse(try g.auditKinds().contains("access_granted"))

        // A guest pass's use is taken when the request is made: denied, it is not given back.
        let guest = try provision(g, "04E5E5E5E5E501", action: 0, label: "guest", extra: ["--uses", "1"])
        let guestCode = try tap(g, guest)
        XCTAssertEqual(try g.ctl(["deny", guestCode]).status, 0)
        E2ETiming.outlastQuietWindow()
        seen = try g.eventCount()
        try g.ctlJSON(["sim", "tap", "--dump", guest])
        XCTAssertEqual(
            try g.waitForEvent("access_denied", after: seen)["reason"]?.stringValue, "no_uses_left",
            "no second request from a used-up pass")
        try g.ctlJSON(["sim", "remove"])

        // A reload ends a waiting request (audited); its code answers nothing afterwards.
        let beforeReload = try tap(g, visitor)
        seen = try g.eventCount()
        kill(try XCTUnwrap(g.process?.processIdentifier), SIGHUP)
        XCTAssertEqual(
            try g.waitForEvent("approval_cancelled", reason: "reload", after: seen)["uid"]?.stringValue, Self.visitor)
        try g.waitForEvent("configuration_reloaded", after: seen)
        let afterReload = try g.ctl(["approve", beforeReload, "--json"])
        XCTAssertEqual(afterReload.status, 1)
        XCTAssertTrue(afterReload.stdout.contains(#""reason":"unknown_request""#), afterReload.stdout)
        XCTAssertEqual(unlocks(g), 0)

        // policy explain says the action needs approval.
        let explained = try g.ctlJSON(["policy", "explain", "--action", "1", "--at", "2026-12-01T10:00:00Z"])
        XCTAssertEqual(explained["approval"]?["timeout_s"]?.intValue, Self.cleanerTimeout)
        XCTAssertEqual(explained["approval"]?["by"], .array([.string("gatewayctl")]))
        let text = try g.ctl([
            "policy", "explain", "--config", g.configFile.path, "--action", "0", "--at", "2026-12-01T10:00:00Z",
        ])
        XCTAssertTrue(text.stdout.hasPrefix("opens once approved: granted"), text.stdout)
        XCTAssertTrue(text.stdout.contains("gatewayctl, home_assistant, phone"), text.stdout)
        XCTAssertEqual(g.stop(), 0, g.log)
    }
}
