import DoorCore
import Foundation
import TestSupport
import XCTest

/// The daemon as a stock Debian host meets it: the shipped example
/// configuration with its stock `[control] admin_group = "doorgateway"`, and
/// `/etc/nsswitch.conf` listing `systemd` after `files` (Debian 12's default).
/// Each test runs gatewayd in a private mount namespace (unshare(1), as root)
/// whose /etc/group, /etc/passwd and /etc/nsswitch.conf are the test's own
/// files, so nothing on the machine changes.
///
/// Before the fix the static gatewayd died with SIGSEGV ~35 ms after start
/// here: `getgrnam("doorgateway")` fell through `files` to `systemd`, and glibc
/// dlopen'ed libnss_systemd into the static binary.
final class StockInstallTests: XCTestCase {
    static let nsswitch = """
        passwd:         files systemd
        group:          files systemd
        shadow:         files systemd
        hosts:          files dns

        """

    /// Users the tests connect as: alice is in the admin group (listed in
    /// /etc/group only, not her primary group), bob is not.
    static let alice: UInt32 = 4242
    static let bob: UInt32 = 4343
    static let adminGID: UInt32 = 4200

    private func requireRoot() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root for unshare --mount and setpriv") }
        for tool in ["/usr/bin/unshare", "/usr/bin/setpriv"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) missing (util-linux)")
        }
    }

    /// Runs `g`'s gatewayd with its own account files and nsswitch.conf.
    private func isolate(
        _ g: GatewayUnderTest, withAdminGroup: Bool, nsswitch: String = StockInstallTests.nsswitch
    ) throws {
        let real = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        let keep = { (text: String) in
            text.split(separator: "\n").filter { !$0.hasPrefix("doorgateway:") }.joined(separator: "\n") + "\n"
        }
        var group = keep(real("/etc/group"))
        var passwd = keep(real("/etc/passwd"))
        passwd += "alice:x:\(Self.alice):\(Self.alice)::/nonexistent:/usr/sbin/nologin\n"
        passwd += "bob:x:\(Self.bob):\(Self.bob)::/nonexistent:/usr/sbin/nologin\n"
        group += "alice:x:\(Self.alice):\nbob:x:\(Self.bob):\n"
        if withAdminGroup { group += "doorgateway:x:\(Self.adminGID):alice\n" }
        var paths: [String] = []
        for (name, text) in [("group", group), ("passwd", passwd), ("nsswitch.conf", nsswitch)] {
            let url = g.dir.appendingPathComponent("etc-\(name)")
            try text.write(to: url, atomically: true, encoding: .utf8)
            paths.append(url.path)
        }
        g.launcher =
            [
                "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                #"mount --bind "$1" /etc/group && mount --bind "$2" /etc/passwd && mount --bind "$3" /etc/nsswitch.conf && shift 3 && exec "$@""#,
                "sh",
            ] + paths
    }

    /// `gatewayctl status` as another user (setpriv: uid, gid, supplementary groups).
    private func ctl(_ g: GatewayUnderTest, as uid: UInt32, groups: [UInt32]) throws -> ProcessResult {
        var env = ProcessInfo.processInfo.environment
        env["DOORGATEWAY_SOCKET"] = g.socket
        let groupArgs =
            groups.isEmpty ? ["--clear-groups"] : ["--groups", groups.map(String.init).joined(separator: ",")]
        return try Run.process(
            URL(fileURLWithPath: "/usr/bin/setpriv"),
            ["--reuid", String(uid), "--regid", String(uid)] + groupArgs + [
                GatewayUnderTest.gateway.path, "ctl", "status", "--json",
            ], environment: env, timeout: 20)
    }

    func testStockConfigWithoutTheAdminGroupRunsAndSaysWhichKeyToFix() throws {
        try requireRoot()
        let g = try GatewayUnderTest(stockExample: "sim")
        try isolate(g, withAdminGroup: false)
        try g.start()
        let status = try g.status()
        XCTAssertEqual(status["outputs"]?["strike"]?.stringValue, "locked", "\(status)")
        XCTAssertTrue(
            try waitUntil { g.log.contains(#"control.admin_group: group "doorgateway" is not in /etc/group"#) }, g.log)
        // Still serving after it said so (a second round trip, not a pause).
        XCTAssertEqual(try g.status()["outputs"]?["strike"]?.stringValue, "locked")
        XCTAssertNotNil(g.process?.isRunning == true ? g.process : nil, "gatewayd died:\n\(g.log)")
        // Nobody but root and the daemon's user: the socket keeps root's group.
        var st = stat()
        XCTAssertEqual(stat(g.socket, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o660)
        XCTAssertEqual(st.st_gid, getgid())
        let r = try ctl(g, as: Self.bob, groups: [getgid()])
        XCTAssertNotEqual(r.status, 0)
        XCTAssertTrue(r.stderr.contains("not root or in group doorgateway"), r.stderr)
        XCTAssertEqual(g.stop(), 0, g.log)
    }

    func testAdminGroupMemberIsAdmittedAndOutsidersAreNot() throws {
        try requireRoot()
        let g = try GatewayUnderTest(stockExample: "sim")
        try isolate(g, withAdminGroup: true)
        try g.start()
        XCTAssertFalse(g.log.contains("control.admin_group"), g.log)
        var st = stat()
        XCTAssertEqual(stat(g.socket, &st), 0)
        XCTAssertEqual(st.st_gid, Self.adminGID, "the socket belongs to the admin group")
        XCTAssertEqual(st.st_mode & 0o777, 0o660)

        // alice: a member by /etc/group's list (her primary group is her own).
        let member = try ctl(g, as: Self.alice, groups: [Self.adminGID])
        XCTAssertEqual(member.status, 0, member.stderr)
        XCTAssertNotNil(try JSONValue.parse(Array(member.stdout.utf8), maxDepth: 32, maxBytes: 1 << 20)["outputs"])

        // bob holds the group's gid (so the socket's mode lets him connect)
        // but /etc/group does not list him: SO_PEERCRED admission refuses him.
        let pretender = try ctl(g, as: Self.bob, groups: [Self.adminGID])
        XCTAssertNotEqual(pretender.status, 0)
        XCTAssertTrue(
            pretender.stderr.contains("uid \(Self.bob) is not root or in group doorgateway"), pretender.stderr)

        // bob without the gid: the socket's mode refuses him before the daemon sees him.
        let outsider = try ctl(g, as: Self.bob, groups: [])
        XCTAssertNotEqual(outsider.status, 0)
        XCTAssertTrue(outsider.stderr.lowercased().contains("permission denied"), outsider.stderr)

        XCTAssertTrue(g.process?.isRunning ?? false, g.log)
        XCTAssertEqual(g.stop(), 0, g.log)
    }

    /// Whatever nsswitch.conf lists — here `systemd` before `files` for users,
    /// groups and hosts — the static binary resolves the broker's name (and
    /// the admin group) without loading an NSS plugin: before the name-service
    /// switch was pinned, /proc/PID/maps showed libnss_systemd.so.2 and a
    /// second libc.so.6 mapped into gatewayd after its first MQTT connect.
    func testNameLookupsNeverLoadAnNSSPlugin() throws {
        try requireRoot()
        let port = try MosquittoBroker.freePort()
        let g = try GatewayUnderTest(
            stockExample: "sim",
            edits: [
                ("[mqtt]\nenabled = false\n", "[mqtt]\nenabled = true\nport = \(port)\n"),
                ("enabled = true\n# ca_file = ", "enabled = false\n# ca_file = "),
            ])
        try isolate(
            g, withAdminGroup: true, nsswitch: "passwd: systemd files\ngroup: systemd files\nhosts: systemd files dns\n"
        )
        try g.start()
        try waitUntil(timeout: 15) {
            g.log.contains("mqtt: connect to localhost:\(port)") || g.log.contains("reconnect")
        }
        let pid = try XCTUnwrap(g.process?.processIdentifier)
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        XCTAssertFalse(maps.contains("libnss_"), maps)
        XCTAssertFalse(maps.contains("libc.so"), maps)
        XCTAssertEqual(try ctl(g, as: Self.alice, groups: [Self.adminGID]).status, 0)
        XCTAssertEqual(g.stop(), 0, g.log)
    }

    /// SIGKILL (or a crash) of gatewayd takes its pn532-sim along, and a
    /// daemon restarted at once keeps its new emulator's pty link and socket
    /// while the old one exits.
    func testSimulatorDiesWithItsDaemon() throws {
        let g = try GatewayUnderTest()
        try g.start()
        let first = g.simulatorPIDs()
        XCTAssertEqual(first.count, 1, "one pn532-sim for the daemon")
        g.stop(signal: SIGKILL)
        try g.start()
        try waitUntil(timeout: 10) { first.allSatisfy { !Self.isAlive($0) } }
        let second = g.simulatorPIDs().filter(Self.isAlive)
        XCTAssertEqual(second.count, 1, "the restarted daemon's emulator runs")
        XCTAssertFalse(first.contains(second.first ?? -1))
        XCTAssertNotNil(
            FileManager.default.destinationOfSymbolicLinkIfExists(
                g.dir.appendingPathComponent("run/pn532-sim.tty").path),
            "the old emulator removed its successor's pty link")
        XCTAssertTrue(FileManager.default.fileExists(atPath: g.dir.appendingPathComponent("run/pn532-sim.sock").path))
        // The reader still works through the new emulator.
        try waitUntil(timeout: 15) { try g.status()["reader"]?.stringValue == "ok" }
        XCTAssertEqual(g.stop(), 0, g.log)
        try waitUntil(timeout: 10) { second.allSatisfy { !Self.isAlive($0) } }
    }

    /// Alive and not a zombie (an orphan is reaped by whoever pid 1 is).
    static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(close, offsetBy: 2)] != "Z"
    }
}

extension FileManager {
    fileprivate func destinationOfSymbolicLinkIfExists(_ path: String) -> String? {
        try? destinationOfSymbolicLink(atPath: path)
    }
}
