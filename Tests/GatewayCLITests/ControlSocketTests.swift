import DoorCore
import Foundation
import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// Security review L7: the control socket's mode and group are set without
/// a window, checked, and a socket that cannot be made right stops the start.
final class ControlSocketTests: XCTestCase {
    var dir: String!
    override func setUpWithError() throws {
        dir =
            FileManager.default.temporaryDirectory.appendingPathComponent("ctlsock-\(UUID().uuidString.prefix(8))")
            .path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    }
    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: dir) }

    private func server(_ path: String, group: String = "doorgateway-test-admins") throws -> ControlServer {
        let groups = dir + "/group"
        try "doorgateway-test-admins:x:4242:\n".write(toFile: groups, atomically: true, encoding: .utf8)
        return ControlServer(path: path, adminGroup: group, groupPath: groups) { _, _ in .value(.null) }
    }

    func testTheSocketIs0660InTheAdminGroup() throws {
        try FileManager.default.createDirectory(atPath: dir + "/run", withIntermediateDirectories: true)
        let s = try server(dir + "/run/control.sock")
        XCTAssertNil(try s.start())
        defer { s.stop() }
        var st = stat()
        XCTAssertEqual(lstat(dir + "/run/control.sock", &st), 0)
        XCTAssertEqual(st.st_mode & 0o7777, 0o660)
        XCTAssertEqual(st.st_gid, 4242)
    }

    /// Anyone who may write the directory could swap the node between bind
    /// and chown/chmod (or after): refused, nothing left behind.
    func testADirectoryOthersMayWriteIsRefused() throws {
        let run = dir + "/open"
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        chmod(run, 0o777)
        let s = try server(run + "/control.sock")
        XCTAssertThrowsError(try s.start()) { error in
            XCTAssertTrue("\(error)".contains("is writable by others (mode 0777)"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: run + "/control.sock"))
        // Sticky (like /tmp): others cannot rename or delete our node, so it is accepted.
        chmod(run, 0o1777)
        XCTAssertNil(try s.start())
        s.stop()
    }

    func testASymlinkedDirectoryIsRefused() throws {
        try FileManager.default.createDirectory(atPath: dir + "/real", withIntermediateDirectories: true)
        symlink(dir + "/real", dir + "/link")
        let s = try server(dir + "/link/control.sock")
        XCTAssertThrowsError(try s.start()) { error in
            XCTAssertTrue("\(error)".contains("is not a directory (a symlink?)"), "\(error)")
        }
    }

    /// The udev rules stay (docs/security.md L7); who they reach beyond the
    /// admins is named at start.
    func testHardwareGroupMembersWhoAreNotAdminsAreNamed() {
        let accounts = Accounts(
            passwd: """
                root:x:0:0::/root:/bin/sh
                doorgateway:x:998:998::/var/lib/doorgateway:/usr/sbin/nologin
                pi:x:1000:1000::/home/pi:/bin/bash
                alice:x:1001:1001::/home/alice:/bin/bash
                sensor:x:997:997::/:/usr/sbin/nologin
                serial:x:996:20::/:/usr/sbin/nologin
                """,
            group: """
                doorgateway:x:998:alice
                gpio:x:997:doorgateway,pi,alice
                i2c:x:998:
                i2c:x:999:sensor
                spi:x:999:root,doorgateway
                dialout:x:20:
                """)
        let found = accounts.hardwareAccessOutsideAdmins(daemonUser: "doorgateway", adminGroup: "doorgateway")
        XCTAssertEqual(found.map(\.group), ["gpio", "dialout"])
        XCTAssertEqual(found.map(\.users), [["pi", "sensor"], ["serial"]])
    }
}
