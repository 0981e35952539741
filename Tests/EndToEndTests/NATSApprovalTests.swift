import DoorCore
import Foundation
import TestSupport
import XCTest

/// Approval over NATS (docs/nats.md, docs/policy.md "Approval"): gatewayd
/// with `transport = "nats"` publishes the request on `P.D.event`; the
/// phone's signed answer on `P.D.command.native` opens the door once, its
/// replay does not, and `gatewayctl approve` is refused for an action that
/// lists only the phone.
final class NATSApprovalTests: XCTestCase {
    func testThePhoneApprovesOverNATSAndNothingElseDoes() throws {
        let server = try NATSServer()
        try server.start()
        defer { server.stop() }
        let peer = try server.peer()
        defer { peer.close() }
        let event = "\(NATSServer.base).event"
        peer.subscribe(event)
        let g = try GatewayUnderTest(deviceID: NATSServer.device)
        try g.writeConfig(
            extra: try server.configurationSection(accountKeys: false),
            actions: ConfigText.action(0, "visitors", #"approval = { timeout_s = 60, by = ["phone"] }"#))
        defer { g.stop() }
        let dir = g.dir
        func ctl(_ args: [String]) throws -> ProcessResult { try g.ctl(args) }
        @discardableResult func ctlJSON(_ args: [String]) throws -> JSONValue { try g.ctlJSON(args) }
        XCTAssertEqual(
            try ctl(["creds", "import", "--config", g.configFile.path, server.path("k/door.creds")]).status, 0)
        try g.start()
        var log: String { g.log }
        try waitUntil(timeout: 20) { (try g.status()["broker"]?["connected"]) == .bool(true) }
        func events(_ kind: String) -> [JSONValue] {
            peer.messages(event).compactMap { try? JSONValue.parse(Array($0.utf8), maxDepth: 8, maxBytes: 1 << 16) }
                .filter { $0["kind"]?.stringValue == kind }
        }
        func waitFor(_ kind: String, count: Int = 1) -> [JSONValue] {
            peer.wait(timeout: 10) { _ in events(kind).count >= count }
            return events(kind)
        }
        var unlocks: Int { log.split(separator: "\n").filter { $0.contains("sim output strike → unlocked (") }.count }

        try ctlJSON(["keys", "command", "new"])
        let key = try XCTUnwrap(
            Hex.decode(try XCTUnwrap(try ctlJSON(["keys", "command", "export"])["key"]?.stringValue)))
        try ctlJSON(["provision", "--action", "0", "--label", "visitor"])
        XCTAssertEqual(waitFor("provisioning_armed").count, 1, log)
        try ctlJSON(["sim", "tap", "--blank", "--uid", "04A1B2C3D4E5F6"])
        XCTAssertEqual(waitFor("provisioning_written").count, 1, log)
        let dump = dir.appendingPathComponent("visitor.dump").path
        try ctlJSON(["sim", "dump", dump])
        try ctlJSON(["sim", "remove"])
        E2ETiming.outlastQuietWindow()
        try ctlJSON(["sim", "tap", "--dump", dump])
        let request = try XCTUnwrap(waitFor("approval_requested").first, "\(peer.lines)\n\(log)")
        let code = try XCTUnwrap(request["code"]?.stringValue)
        XCTAssertEqual(request["reason"]?.stringValue, "phone", "the approvers")
        XCTAssertEqual(unlocks, 0)

        // gatewayctl is not among this action's approvers: refused, the request waits on.
        let byCtl = try ctl(["approve", code])
        XCTAssertEqual(byCtl.status, 1)
        XCTAssertTrue(byCtl.stderr.contains("wrong_transport"), byCtl.stderr)

        func signed(_ nonce: String) -> String {
            String(
                decoding: CommandJudge.approvalCommand(
                    key: key, device: NATSServer.device, code: code, approve: true,
                    ts: Int64(Date().timeIntervalSince1970), nonce: nonce), as: UTF8.self)
        }
        let answer = signed(String(repeating: "a1", count: 16))
        peer.send("PUB \(NATSServer.base).command.native \(answer)")
        let granted = try XCTUnwrap(waitFor("approval_granted").first, log)
        XCTAssertEqual(granted["source"]?.stringValue, "phone")
        XCTAssertEqual(waitFor("access_granted").first?["reason"]?.stringValue, "approved")
        let opened = Date() + 10
        while unlocks < 1 && Date() < opened { usleep(20_000) }
        XCTAssertEqual(unlocks, 1, log)

        // The same message again, and a fresh one for the settled request: nothing opens.
        peer.send("PUB \(NATSServer.base).command.native \(answer)")
        XCTAssertEqual(waitFor("remote_rejected").first?["reason"]?.stringValue, "replay")
        peer.send("PUB \(NATSServer.base).command.native \(signed(String(repeating: "b2", count: 16)))")
        let refused = waitFor("approval_refused", count: 2).map { $0["reason"]?.stringValue }
        XCTAssertEqual(refused, ["wrong_transport", "replayed"])
        XCTAssertEqual(unlocks, 1)
        XCTAssertEqual(events("access_granted").count, 1)
    }
}
