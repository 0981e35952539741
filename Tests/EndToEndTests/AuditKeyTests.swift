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

    /// "A local user on the door cannot read the audit key" (docs/security.md),
    /// attacked the way the unit hands the key over: root opens the root-only
    /// 0400 file as gatewayd's standard input (`StandardInput=file:`), then
    /// gatewayd runs as another user (nobody here, `doorgateway` on a door;
    /// setpriv drops to it as systemd does). That user cannot open the file,
    /// and once gatewayd has started none of its descriptors is the key: a
    /// process of gatewayd's own user takes every one of them
    /// (`pidfd_getfd`, which the kernel allows against one's own processes)
    /// and finds no descriptor on the key file; fd 0 is /dev/null.
    func testGatewaydsUserCannotOpenTheKeyNorTakeItFromTheDaemon() throws {
        try XCTSkipUnless(getuid() == 0, "setpriv to another uid needs root")
        // nogroup: nobody's own group, so the socket's chown succeeds (L7).
        let g = try GatewayUnderTest(extra: "[control]\nadmin_group = \"nogroup\"\n")
        let keyDir = g.dir.appendingPathComponent("etc")
        try FileManager.default.createDirectory(at: keyDir, withIntermediateDirectories: true)
        let keyFile = keyDir.appendingPathComponent("audit.key").path
        let key = (0..<32).map { UInt8(0xA0 + $0) }
        _ = FileManager.default.createFile(atPath: keyFile, contents: Data(key), attributes: [.posixPermissions: 0o400])
        for path in [g.dir.path, g.configFile.path] { XCTAssertEqual(chown(path, 65534, 65534), 0, path) }
        let asNobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        g.launcher = ["/bin/sh", "-c", #"exec "$@" < "$0""#, keyFile] + asNobody
        try g.start(environment: ["DOORGATEWAY_AUDIT_KEY": "stdin"])
        defer { g.stop() }
        XCTAssertTrue(g.log.contains("audit: keyed from row 1 on (key fingerprint "), g.log)
        let pid = try XCTUnwrap(g.process?.processIdentifier)
        var st = stat()
        XCTAssertEqual(stat("/proc/\(pid)", &st), 0)
        XCTAssertEqual(st.st_uid, 65534, "gatewayd runs as nobody")

        // The file itself: refused to gatewayd's user.
        let cat = try Run.process(
            URL(fileURLWithPath: asNobody[0]), Array(asNobody.dropFirst()) + ["/bin/cat", keyFile])
        XCTAssertNotEqual(cat.status, 0, "nobody read the key: \(cat.stdout)")
        XCTAssertTrue(cat.stderr.contains("Permission denied"), cat.stderr)

        // The descriptors of the daemon and its pn532-sim, as root sees them:
        // none is the key file.
        let sims = g.simulatorPIDs()
        XCTAssertFalse(sims.isEmpty, "the simulated board's pn532-sim")
        for p in [pid] + sims {
            let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(p)/fd")
            XCTAssertFalse(fds.isEmpty)
            for fd in fds {
                let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(p)/fd/\(fd)")) ?? ""
                XCTAssertFalse(target.hasSuffix("audit.key"), "pid \(p) fd \(fd) -> \(target)")
            }
        }
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/0"), "/dev/null")

        // And as gatewayd's user would take them: every descriptor, by pidfd_getfd.
        let take = try Run.process(
            URL(fileURLWithPath: asNobody[0]),
            Array(asNobody.dropFirst()) + ["/usr/bin/python3", "-c", Self.takeDescriptors, "\(pid)", keyFile])
        XCTAssertEqual(take.status, 0, take.stdout + take.stderr)
        XCTAssertFalse(take.stdout.contains("KEY"), take.stdout)
        XCTAssertFalse(take.stdout.contains(Hex.encode(key)), take.stdout)
        XCTAssertTrue(take.stdout.contains("took fd 0: /dev/null, read 0 bytes"), take.stdout)
        XCTAssertTrue(g.process?.isRunning == true, g.log)
    }

    /// Takes each of process argv[1]'s descriptors with pidfd_getfd (syscall
    /// 438 on every Linux architecture) and says which one is the file argv[2].
    static let takeDescriptors = #"""
        import ctypes, errno, os, sys
        pid, key = int(sys.argv[1]), os.stat(sys.argv[2])
        libc = ctypes.CDLL(None, use_errno=True)
        pidfd = os.pidfd_open(pid)
        taken = 0
        for name in sorted(os.listdir(f"/proc/{pid}/fd"), key=int):
            fd = libc.syscall(438, pidfd, int(name), 0)
            if fd < 0:
                e = ctypes.get_errno()
                if e == errno.EBADF:
                    continue  # closed since the listing
                print(f"fd {name}: pidfd_getfd: {os.strerror(e)}")
                sys.exit(2)
            taken += 1
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == (key.st_dev, key.st_ino):
                print(f"KEY on fd {name}: {os.pread(fd, 64, 0).hex()}")
            if name == "0":
                print(f"took fd 0: {os.readlink('/proc/self/fd/%d' % fd)}, read {len(os.read(fd, 64))} bytes")
            os.close(fd)
        print(f"took {taken} descriptors")
        """#
}
