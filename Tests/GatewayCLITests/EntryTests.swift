import Foundation
@testable import GatewayCLI
@testable import GatewayCtl
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

/// `gatewayctl version --verbose`: BUILDINFO is believed only when one of its
/// `binary gateway sha256` lines is the running binary's digest.
final class BuildInfoTests: XCTestCase {
    private func scratch() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "buildinfo-\(getpid())-\(name.hashValue)")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    func testStreamedDigestIsSHA256OfTheFile() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        // 2.5 MiB: more than two of the 1 MiB chunks it reads.
        let bytes = (0..<(5 << 19)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let file = dir.appendingPathComponent("gateway")
        try Data(bytes).write(to: file)
        XCTAssertEqual(BuildInfo.sha256Hex(ofFile: file.path), Hex.encode(Crypto.sha256(bytes)))
        XCTAssertEqual(
            BuildInfo.sha256Hex(ofFile: "/dev/null"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertNil(BuildInfo.sha256Hex(ofFile: dir.appendingPathComponent("absent").path))
    }

    func testBelievesOnlyTheBuildInfoOfThisBinary() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let exe = dir.appendingPathComponent("gateway")
        try Data("not really a gateway".utf8).write(to: exe)
        let digest = try XCTUnwrap(BuildInfo.sha256Hex(ofFile: exe.path))
        let info = dir.appendingPathComponent("BUILDINFO")

        // None beside it, none in the doc directory: said, not invented.
        var report = BuildInfo.report(executable: exe.path, extraPlaces: [])
        XCTAssertTrue(report.text.hasPrefix("BUILDINFO: none found"), report.text)

        // Another build's BUILDINFO is shown with a warning naming this binary's digest.
        try Data("compiler: x\nbinary gateway    sha256 \(String(repeating: "0", count: 64))\n".utf8).write(to: info)
        report = BuildInfo.report(executable: exe.path, extraPlaces: [])
        XCTAssertTrue(report.text.hasPrefix("compiler: x"))
        XCTAssertTrue(report.note?.contains("warning: written for another build") == true, "\(report.note ?? "nil")")
        XCTAssertTrue(report.note?.contains(digest) == true)

        // A line for pn532-sim with this digest does not count; the gateway line does.
        try Data("binary pn532-sim  sha256 \(digest)\n".utf8).write(to: info)
        XCTAssertTrue(BuildInfo.report(executable: exe.path, extraPlaces: []).note?.contains("warning") == true)
        try Data("compiler: y\nbinary gateway    sha256 \(digest)\n".utf8).write(to: info)
        report = BuildInfo.report(executable: exe.path, extraPlaces: [])
        XCTAssertEqual(report.note, "BUILDINFO: \(info.path) (its gateway line matches this binary)")

        // The package's doc directory is read when nothing is beside the binary, and
        // the stripped binary's line (deb.sh adds it) is the one that matches.
        try FileManager.default.removeItem(at: info)
        let doc = dir.appendingPathComponent("doc-BUILDINFO")
        try Data(
            "binary gateway sha256 \(String(repeating: "a", count: 64))\n# stripped:\nbinary gateway sha256 \(digest)\n"
                .utf8
        )
        .write(to: doc)
        report = BuildInfo.report(executable: exe.path, extraPlaces: [doc.path])
        XCTAssertEqual(report.note, "BUILDINFO: \(doc.path) (its gateway line matches this binary)")
    }
}
