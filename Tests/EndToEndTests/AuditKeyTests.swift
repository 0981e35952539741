import DoorCore
import Foundation
import TestSupport
import XCTest

/// Security review L4 on the real binaries: gatewayd keys its audit log with
/// the key it is given at start, and `gatewayctl log --verify` says what it
/// checked and how — every MAC with the key (as root), links only through
/// the daemon.
final class AuditKeyTests: XCTestCase {
    func testLogVerifySaysWhatItCheckedAndHow() throws {
        let g = try GatewayUnderTest()
        let keyFile = g.dir.appendingPathComponent("audit.key").path
        _ = FileManager.default.createFile(
            atPath: keyFile, contents: Data((0..<32).map { UInt8($0) }), attributes: [.posixPermissions: 0o400])
        try g.start(environment: ["DOORGATEWAY_AUDIT_KEY": keyFile])
        XCTAssertTrue(g.log.contains("audit: keyed from row 1 on (key fingerprint "), g.log)
        XCTAssertEqual(try g.ctl(["open", "--action", "0"]).status, 0)
        try g.waitForEvent("admin_open")
        // The action's end is a row of its own (after its pulse): counted only
        // once it is there, or a slow door (the aarch64 binary under qemu)
        // adds it between the count and the check.
        try g.waitForEvent("action_completed")
        let rows = try g.eventCount()

        // With the key: every MAC, from the store itself.
        let withKey = try g.ctlJSON(["log", "--verify", "--key", keyFile, "--config", g.configFile.path])
        XCTAssertEqual(withKey["intact"], .bool(true), "\(withKey)")
        XCTAssertEqual(withKey["rows"], .int(rows))
        XCTAssertEqual(withKey["keyed_from"], .int(1))
        XCTAssertEqual(withKey["macs_checked"], .bool(true))
        XCTAssertEqual(withKey["head_row"], .int(rows))
        let how = withKey["how"]?.stringValue ?? ""
        XCTAssertTrue(how.contains("rows from 1: HMAC-SHA256 under the ratcheted audit key from \(keyFile)"), how)
        XCTAssertTrue(how.contains("compare head_hash with the audit head the door published"), how)

        // Through the daemon, which no longer holds the key: links only, and it says so.
        // (No --key: the default /etc/doorgateway/audit.key is not on a test machine.)
        let daemon = try g.ctlJSON(["log", "--verify"])
        XCTAssertEqual(daemon["intact"], .bool(true), "\(daemon)")
        XCTAssertEqual(daemon["macs_checked"], .bool(false))
        XCTAssertTrue((daemon["how"]?.stringValue ?? "").contains("their MACs NOT checked"), "\(daemon)")
        XCTAssertEqual(daemon["head_hash"], withKey["head_hash"])

        // Someone with the database alters a row: the key finds it, the exit is 1.
        XCTAssertEqual(g.stop(), 0)
        let db = g.dir.appendingPathComponent("state/gateway.db").path
        let sql = try Run.process(
            URL(fileURLWithPath: "/usr/bin/sqlite3"), [db, "UPDATE audit SET reason = 'forged' WHERE id = 2"],
            timeout: 10)
        XCTAssertEqual(sql.status, 0, sql.stderr)
        let broken = try g.ctl(["log", "--verify", "--key", keyFile, "--config", g.configFile.path])
        XCTAssertEqual(broken.status, 1, broken.stdout)
        XCTAssertTrue(broken.stdout.contains("content does not match its MAC (audit key)"), broken.stdout)
        let wrong = try g.ctl(["log", "--verify", "--key", "/nonexistent/audit.key", "--config", g.configFile.path])
        XCTAssertEqual(wrong.status, 1)
        XCTAssertTrue(wrong.stderr.contains("cannot read the audit key /nonexistent/audit.key"), wrong.stderr)
    }
}
