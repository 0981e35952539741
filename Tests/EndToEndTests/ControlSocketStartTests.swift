import DoorCore
import Foundation
import TestSupport
import XCTest

/// Security review L7 on the real binary: a control socket gatewayd cannot
/// make safe (here: its directory writable by everyone) stops the start with
/// the reason, instead of a door running with a socket anyone may swap.
final class ControlSocketStartTests: XCTestCase {
    func testARuntimeDirectoryOthersMayWriteRefusesTheStart() throws {
        let g = try GatewayUnderTest()
        let run = g.dir.appendingPathComponent("run").path
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        chmod(run, 0o777)
        XCTAssertThrowsError(try g.start()) { error in
            XCTAssertTrue("\(error)".contains("gatewayd exited with 1"), "\(error)")
        }
        XCTAssertTrue(
            g.log.contains("refusing to start: control socket directory \(run) is writable by others (mode 0777)"),
            g.log)
        // What had started stops in reverse (issue 34 Move C), the runtime
        // first and the outputs locked last; the control socket never started.
        XCTAssertTrue(
            g.log.contains(
                "services stopped: door runtime, transport, osdp readers, wiegand reader, reader, audit writer, outputs\n"
            ),
            g.log)
        XCTAssertTrue(g.log.contains("stopped; outputs locked"), g.log)
        XCTAssertTrue(try waitUntil { g.simulatorPIDs().isEmpty }, "pn532-sim outlived gatewayd")
    }
}

/// Security review L7, the chown: gatewayd running as a user that is not a
/// member of `[control] admin_group` cannot give the socket that group. It
/// used to ignore the failed chown and run with a socket admins could not
/// reach; now the start stops, naming the group and the errno. The daemon
/// runs as nobody (uid/gid 65534, no supplementary groups) through setpriv,
/// with `admin_group = "root"`: a group /etc/group holds (gatewayd reads the
/// file, never NSS) and nobody is not in.
final class ControlSocketChownTests: XCTestCase {
    func testAChownToAnAdminGroupGatewaydIsNotInRefusesTheStart() throws {
        try XCTSkipUnless(getuid() == 0, "setpriv to another uid needs root")
        let g = try GatewayUnderTest(extra: "[control]\nadmin_group = \"root\"\n")
        // nobody's own test directory (state, runtime dir and socket are made under it).
        for path in [g.dir.path, g.configFile.path] { XCTAssertEqual(chown(path, 65534, 65534), 0, path) }
        g.launcher = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        XCTAssertThrowsError(try g.start()) { error in
            XCTAssertTrue("\(error)".contains("gatewayd exited with 1"), "\(error)")
        }
        XCTAssertTrue(
            g.log.contains(
                "refusing to start: control socket \(g.socket): chown to group root (gid 0) failed: Operation not permitted (gatewayd's user must be a member of [control] admin_group)"
            ), g.log)
        XCTAssertTrue(g.log.contains("stopped; outputs locked"), g.log)
        XCTAssertFalse(FileManager.default.fileExists(atPath: g.socket), "the socket is left behind")
        XCTAssertTrue(try waitUntil { g.simulatorPIDs().isEmpty }, "pn532-sim outlived gatewayd")
    }
}
