import DoorCore
import GatewayConfig
import Logging
import Synchronization
import TestSupport
import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// Issue 24 L3, at the daemon: how events and tag scans name a UID when the
/// device key cannot be had. Hashed UIDs fail closed (withheld), logged
/// once; full UIDs need no key.
final class EventUIDTests: XCTestCase {
    struct Unreadable: Error, CustomStringConvertible {
        var description: String { "database disk image is malformed" }
    }

    func testWithoutADeviceKeyHashedUIDsAreWithheldAndThatIsLoggedOnce() throws {
        let uid = try XCTUnwrap(TagUID(hex: "04A1B2C3D4E5F6"))
        for (name, read) in [
            ("unreadable", { () throws -> [UInt8]? in throw Unreadable() }),
            ("missing", { () throws -> [UInt8]? in nil }),
            ("empty", { () throws -> [UInt8]? in [] }),
        ] {
            let lines = LogCapture()
            let text = RemoteService.eventUIDText(.hmac, transport: "mqtt", log: lines.logger, deviceKey: read)
            XCTAssertNil(text(uid), name)
            XCTAssertNil(text(uid), name)
            let logged = lines.all
            XCTAssertEqual(logged.count, 1, "\(name): once, at start: \(logged)")
            XCTAssertTrue(logged.first?.hasPrefix("error mqtt: the device key is ") == true, "\(logged)")
            XCTAssertTrue(logged.first?.contains("events carry no UID") == true, "\(logged)")
            if name == "unreadable" { XCTAssertTrue(logged.first?.contains("malformed") == true, "\(logged)") }
        }

        let lines = LogCapture()
        let key = [UInt8](repeating: 7, count: 32)
        let hashed = RemoteService.eventUIDText(.hmac, transport: "nats", log: lines.logger) { key }
        XCTAssertEqual(hashed(uid)?.count, 16)
        XCTAssertNotEqual(hashed(uid), uid.hex)
        let full = RemoteService.eventUIDText(.full, transport: "nats", log: lines.logger) { throw Unreadable() }
        XCTAssertEqual(full(uid), uid.hex, "full UIDs need no key")
        XCTAssertEqual(lines.all, [], "nothing to say with a key, or without hashing")
    }
}
