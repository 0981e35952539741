import DoorCore
import Foundation
import TestSupport
import XCTest

/// Issue 32 M-1 on the real gatewayctl, run as root: the commands that read
/// gatewayd's store themselves (`log --verify` with the audit key, `fleet
/// push`, `reader write --protect`) meet what a compromised daemon can leave
/// in its own state directory — `gateway.db` a symbolic link to a setuid
/// file or to an empty root-owned file, a hard link, an unmigrated store —
/// and change none of it: each refuses, saying why, and the target keeps its
/// mode, owner and content. (Before the fix each followed the link, made the
/// setuid file 0600 and filled the empty file with the schema.)
final class RootToolStoreTests: XCTestCase {
    struct Target {
        let path: String
        let mode: mode_t
        let uid: uid_t
        let content: Data
    }

    func target(_ path: String, mode: mode_t, content: Data) throws -> Target {
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: content))
        XCTAssertEqual(chown(path, 0, 0), 0)
        XCTAssertEqual(chmod(path, mode), 0)
        return Target(path: path, mode: mode, uid: 0, content: content)
    }

    func assertUnchanged(_ t: Target, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        var st = stat()
        XCTAssertEqual(lstat(t.path, &st), 0, file: file, line: line)
        XCTAssertEqual(st.st_mode & 0o7777, t.mode, "\(what): mode of \(t.path)", file: file, line: line)
        XCTAssertEqual(st.st_uid, t.uid, "\(what): owner of \(t.path)", file: file, line: line)
        XCTAssertEqual(
            FileManager.default.contents(atPath: t.path), t.content, "\(what): content of \(t.path)", file: file,
            line: line)
    }

    func testRootToolsRefuseWhatACompromisedDaemonPlantsInItsStateDirectory() throws {
        try XCTSkipUnless(getuid() == 0, "the attack is on gatewayctl run as root")
        // The site key first: the stock example's [fleet] turned on with it.
        let keys = try SiteKeys("roottool", box: false)
        defer { keys.remove() }
        let (work, siteKey, publicKey) = (keys.work, keys.keyFile, keys.publicKey)
        // [fleet] on, over an MQTT broker that is not there (fleet push reads the store before publishing).
        let g = try GatewayUnderTest(extra: GatewayUnderTest.fleetWithoutBroker(publicKey: publicKey))
        let auditKey = work.appendingPathComponent("audit.key").path
        XCTAssertTrue(
            FileManager.default.createFile(
                atPath: auditKey, contents: Data((0..<32).map { UInt8($0) }), attributes: [.posixPermissions: 0o400]))

        // The daemon makes its store, then stops; its state directory is what it left.
        try g.start(environment: ["DOORGATEWAY_AUDIT_KEY": auditKey])
        XCTAssertEqual(g.stop(), 0, g.log)
        let state = g.dir.appendingPathComponent("state").path
        let db = state + "/gateway.db"
        // The commands, as root. Each reads the store before anything else can fail.
        let config = g.configFile.path
        let commands: [(String, [String])] = [
            ("log --verify", ["log", "--verify", "--key", auditKey, "--config", config]),
            ("fleet push", ["fleet", "push", "--site-key", siteKey, "--yes", "--config", config]),
            (
                "reader write --protect",
                [
                    "reader", "write", "--device", "pn532_uart:/nonexistent", "--url", "https://example.com/x",
                    "--protect", "--state-dir", state,
                ]
            ),
        ]
        // With the real store, each gets past the store (the sanity check of the set-up).
        let verified = try g.ctl(commands[0].1)
        XCTAssertEqual(verified.status, 0, verified.stdout + verified.stderr)
        let written = try g.ctl(commands[2].1)
        XCTAssertFalse(written.stderr.contains("device key"), written.stderr)
        XCTAssertTrue(written.stderr.contains("no reader") || written.stderr.contains("/nonexistent"), written.stderr)

        // The real store aside (its WAL with it: the daemon's rows may still be there).
        for side in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: db + side) {
            try FileManager.default.moveItem(atPath: db + side, toPath: state + "/real.db" + side)
        }

        // A setuid file, and an empty root-owned file, each behind a symbolic link.
        let setuid = try target(
            work.appendingPathComponent("setuid-tool").path, mode: 0o4755, content: Data("#!/bin/sh\nexit 0\n".utf8))
        let empty = try target(work.appendingPathComponent("empty-root-file").path, mode: 0o644, content: Data())
        for t in [setuid, empty] {
            try? FileManager.default.removeItem(atPath: db)
            XCTAssertEqual(symlink(t.path, db), 0)
            for (name, args) in commands {
                let r = try g.ctl(args)
                XCTAssertEqual(r.status, 1, "\(name) -> \(t.path): \(r.stdout)")
                XCTAssertTrue(r.stderr.contains("refusing the daemon's store"), "\(name): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains("gateway.db is a symbolic link"), "\(name): \(r.stderr)")
                assertUnchanged(t, "\(name) through the link")
                for side in ["-wal", "-shm"] {
                    XCTAssertFalse(FileManager.default.fileExists(atPath: db + side), "\(name) made \(db)\(side)")
                    XCTAssertFalse(
                        FileManager.default.fileExists(atPath: t.path + side), "\(name) made \(t.path)\(side)")
                }
            }
        }

        // A hard link to a root-owned file in a state directory of another user (the daemon's).
        try FileManager.default.removeItem(atPath: db)
        XCTAssertEqual(link(empty.path, db), 0)
        XCTAssertEqual(chown(state, 65534, 65534), 0)
        for (name, args) in commands {
            let r = try g.ctl(args)
            XCTAssertEqual(r.status, 1, "\(name) on a hard link: \(r.stdout)")
            XCTAssertTrue(r.stderr.contains("refusing the daemon's store"), "\(name): \(r.stderr)")
            assertUnchanged(empty, "\(name) through a hard link")
        }
        XCTAssertEqual(chown(state, 0, 0), 0)

        // An empty (unmigrated) store of the directory's owner: never migrated by a root tool.
        try FileManager.default.removeItem(atPath: db)
        let unmigrated = try target(db, mode: 0o600, content: Data())
        for (name, args) in commands {
            let r = try g.ctl(args)
            XCTAssertEqual(r.status, 1, "\(name) on an empty store: \(r.stdout)")
            XCTAssertTrue(r.stderr.contains("start or restart gatewayd"), "\(name): \(r.stderr)")
            assertUnchanged(unmigrated, "\(name) on an empty store")
        }

        // The real store back: the commands read it again.
        try FileManager.default.removeItem(atPath: db)
        for side in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: state + "/real.db" + side) {
            try FileManager.default.moveItem(atPath: state + "/real.db" + side, toPath: db + side)
        }
        let again = try g.ctl(commands[0].1)
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
    }
}
