import DoorCore
import Foundation
@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon
import GatewayStore
import TestSupport
import XCTest

/// Security review L4: the head telemetry publishes (MQTT and NATS share
/// `Daemon.auditHeadField`), and how gatewayd takes the audit key.
final class AuditHeadTests: TemporaryDirectoryTestCase {
    var dir: String!
    override func setUpWithError() throws { dir = try temporaryDirectory("audithead").path }

    func testTelemetryCarriesTheAuditHead() throws {
        let store = try GatewayStore(stateDirectory: dir + "/state")
        XCTAssertEqual(Daemon.auditHeadField(store).1, .null, "an empty log has no head")
        try store.appendAudit(time: 1, kind: "started")
        let key = [UInt8](repeating: 7, count: 32)
        try store.useAuditKey(key, now: 2)
        try store.appendAudit(time: 3, kind: "admin_open")
        let (name, value) = Daemon.auditHeadField(store)
        XCTAssertEqual(name, "audit_head")
        let check = try store.checkAudit(key: key)
        XCTAssertEqual(
            value,
            .object([
                ("row", .int(3)), ("hash", .string(Hex.encode(check.headHash ?? []))), ("keyed", .bool(true)),
            ]))
    }

    func testTheDaemonTakesTheKeyFromAFileAndRefusesAShortOne() throws {
        let file = dir + "/audit.key"
        _ = FileManager.default.createFile(atPath: file, contents: Data(repeating: 1, count: 32))
        XCTAssertNil(try AuditKeyFile.forDaemon(environment: [:]))
        XCTAssertEqual(
            try AuditKeyFile.forDaemon(environment: ["DOORGATEWAY_AUDIT_KEY": file]), Array(repeating: 1, count: 32))
        XCTAssertThrowsError(try AuditKeyFile.forDaemon(environment: ["DOORGATEWAY_AUDIT_KEY": "audit.key"]))
        _ = FileManager.default.createFile(atPath: file, contents: Data(repeating: 1, count: 16))
        XCTAssertThrowsError(try AuditKeyFile.forDaemon(environment: ["DOORGATEWAY_AUDIT_KEY": file])) { error in
            XCTAssertTrue("\(error)".contains("is 16 bytes; it must be 32 to 4096"), "\(error)")
        }

        // A wrong or short key leaves the door running, unkeyed, and says so once; no key bytes logged.
        let store = try GatewayStore(stateDirectory: dir + "/state")
        let lines = LogCapture()
        Daemon.keyAuditLog(store, environment: ["DOORGATEWAY_AUDIT_KEY": file], log: lines.logger)
        let logged = lines.all
        XCTAssertEqual(logged.count, 1, "\(logged)")
        XCTAssertTrue(logged.first?.hasPrefix("error audit: the audit key from") == true, "\(logged)")
        XCTAssertNil(try store.checkAudit(key: nil).keyedFrom)
    }
}
