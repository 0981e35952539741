@testable import GatewayCLI
import DoorCore
import TestSupport
import XCTest

final class EntryTests: XCTestCase {
    func testRoutesByInvokedNameAndRoleWord() {
        XCTAssertEqual(Entry.route(["/usr/bin/gatewayd", "-c", "x"])?.0, .daemon)
        XCTAssertEqual(Entry.route(["/usr/bin/gatewayd", "-c", "x"])?.1, ["-c", "x"])
        XCTAssertEqual(Entry.route(["gatewayctl", "status"])?.0, .ctl)
        XCTAssertEqual(Entry.route(["gateway", "ctl", "status"])?.1, ["status"])
        XCTAssertEqual(Entry.route(["./gateway", "daemon"])?.0, .daemon)
        XCTAssertNil(Entry.route(["gateway"]))
        XCTAssertNil(Entry.route(["gateway", "status"]))
    }

    func testGlobalOptionsBeforeTheCommandMoveAfterIt() {
        XCTAssertEqual(Entry.hoistingGlobalOptions(["--socket", "/s", "status"]), ["status", "--socket", "/s"])
        XCTAssertEqual(
            Entry.hoistingGlobalOptions(["--json", "--socket=/s", "keys", "otp", "new"]),
            ["keys", "otp", "new", "--json", "--socket=/s"])
        XCTAssertEqual(Entry.hoistingGlobalOptions(["status", "--socket", "/s"]), ["status", "--socket", "/s"])
        XCTAssertEqual(
            Entry.hoistingGlobalOptions(["--socket", "/s", "tag", "--", "-x"]), ["tag", "--socket", "/s", "--", "-x"])
        XCTAssertEqual(Entry.hoistingGlobalOptions(["--socket"]), ["--socket"], "incomplete: left to the parser")
        XCTAssertEqual(Entry.hoistingGlobalOptions(["--json"]), ["--json"])
    }

    /// The real binary: a global --socket before the command reaches it
    /// (a socket that is not there is named in the error).
    func testGlobalSocketReachesTheCommand() throws {
        let r = try Run.gatewayctl(["--socket", "/nonexistent/ctl.sock", "status"])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("/nonexistent/ctl.sock"), r.stderr)
        let dashed = try Run.gatewayctl(["--version"])
        XCTAssertEqual(dashed.status, 0, dashed.stderr)
        XCTAssertEqual(dashed.stdout, try Run.gatewayctl(["version"]).stdout)
        let daemon = try Run.process(Run.product("gateway"), ["daemon", "--version"])
        XCTAssertEqual(daemon.stdout, dashed.stdout)
        let v = try Run.gatewayctl(["--json", "version"])
        XCTAssertNotEqual(v.status, 0, "version takes no --json: said, not ignored")
    }

    func testBinaryAnswersUnderEachName() throws {
        let version = try Run.gatewayctl(["version"])
        XCTAssertEqual(version.status, 0)
        XCTAssertTrue(version.stdout.hasPrefix("gateway "), version.stdout)
        let bare = try Run.process(Run.product("gateway"), [])
        XCTAssertEqual(bare.status, 64)
        XCTAssertTrue(bare.stderr.contains("gateway ctl <command>"))
        let linkDir = FileManager.default.temporaryDirectory.appendingPathComponent("links-\(getpid())")
        try? FileManager.default.createDirectory(at: linkDir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: linkDir) }
        let ctl = linkDir.appendingPathComponent("gatewayctl")
        try? FileManager.default.removeItem(at: ctl)
        try FileManager.default.createSymbolicLink(at: ctl, withDestinationURL: Run.product("gateway"))
        let viaLink = try Run.process(ctl, ["version"])
        XCTAssertEqual(viaLink.stdout, version.stdout)
    }
}

final class HumanOutputTests: XCTestCase {
    func testTablesAlignTheirColumns() {
        let lines = TextTable.render(
            ["UID", "STATE", "LABEL"],
            [["04A1B2C3D4E5F6", "active", "front"], ["04FF", "revoked", "-"]])
        XCTAssertEqual(
            lines,
            [
                "UID             STATE    LABEL",
                "04A1B2C3D4E5F6  active   front",
                "04FF            revoked  -",
            ])
    }

    func testHumanStatusHidesInternalsJSONKeepsThem() {
        let status = JSONValue.object([
            ("state", .string("idle")), ("last_unlock_monotonic_ns", .int(123)), ("reader", .string("ok")),
        ])
        let text = StatusCommand.human(status)
        XCTAssertFalse(text.contains("monotonic"), text)
        XCTAssertTrue(text.contains("state: idle") && text.contains("reader: ok"), text)
    }
}
