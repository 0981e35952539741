import DoorCore
import Foundation
import TestSupport
import XCTest

/// What the five-door scenario needs of the site's broker: MQTT (retained
/// documents, one topic per door) or NATS (a JetStream key-value bucket, one
/// key per door).
protocol FleetSiteUnderTest {
    /// A gatewayd on the shipped example with this transport and the fleet keys.
    func door(_ name: String, publicKey: String, boxKey: String) throws -> GatewayUnderTest
    /// Before the first start (NATS: the door's credentials imported).
    func prepare(_ g: GatewayUnderTest, _ name: String) throws
    /// Documents door-a writes, as they are on the wire (read from now on).
    func watchDoorA() throws -> () -> [String]
    /// Door-e's credentials, writing `document` where door-e's document goes.
    func publishAsDoorE(_ document: String) throws
    /// Door-e's credentials, writing door-a's document: refused by the broker.
    func assertDoorECannotWriteDoorA() throws
}

/// The operator's keys of a test site, made with `gatewayctl fleet keygen`
/// in a work directory of their own: the site key (`keyFile`, a 0600 file;
/// `publicKey` for `[fleet]`) and, with `box`, the site box key (`boxKey`).
/// `remove()` (deferred by the test) deletes the directory.
struct SiteKeys {
    let work: URL
    let keyFile: String
    let publicKey: String
    let boxKey: String

    init(_ prefix: String, box: Bool = true) throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        keyFile = work.appendingPathComponent("site.key").path
        boxKey = work.appendingPathComponent("site-box.key").path
        publicKey = try Self.keygen(["--out", keyFile])
        if box { _ = try Self.keygen(["--box", "--out", boxKey]) }
    }

    private static func keygen(_ args: [String]) throws -> String {
        let r = try Run.process(GatewayUnderTest.gateway, ["ctl", "fleet", "keygen"] + args)
        guard r.status == 0 else { throw E2EError("fleet keygen \(args.joined(separator: " ")): \(r.stderr)") }
        return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The site key's private seed (what the key file holds, hex).
    func seed() throws -> [UInt8] {
        let hex = try String(contentsOfFile: keyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let seed = Hex.decode(hex) else { throw E2EError("\(keyFile) is not hex") }
        return seed
    }

    func path(_ name: String) -> String { work.appendingPathComponent(name).path }

    /// A door `name` of `site` with these keys.
    func door(_ site: any FleetSiteUnderTest, _ name: String) throws -> GatewayUnderTest {
        try site.door(name, publicKey: publicKey, boxKey: boxKey)
    }

    func remove() { try? FileManager.default.removeItem(at: work) }
}

/// The fleet (docs/fleet.md) on five real gatewayd processes (simulated
/// boards, each with its pn532-sim), over one mosquitto on the shipped
/// configuration and ACL, and over one nats-server in operator/JWT mode with
/// JetStream; mutual TLS, each door its own certificate (and NATS user): a
/// sticker provisioned at one door opens another after a push; a revocation
/// pushed at one door reaches the others (timed); a door stopped during it
/// catches up at restart; a forged and a replayed document are refused and
/// audited at every door.
final class FleetTests: XCTestCase {
    static let site = "main-site"
    static let doorNames = ["door-a", "door-b", "door-c", "door-d", "door-e"]

    /// The shipped example's `[fleet]` turned on with the test's keys.
    static func fleetEdits(publicKey: String, boxKey: String) -> [(String, String)] {
        [
            ("(docs/fleet.md).\nenabled = false\n", "(docs/fleet.md).\nenabled = true\n"),
            ("# site_id = \"\(site)\"", "site_id = \"\(site)\""),
            ("# site_public_key = \"\(String(repeating: "0", count: 64))\"", "site_public_key = \"\(publicKey)\""),
            ("# box_key_file = \"/etc/doorgateway/site-box.key\"", "box_key_file = \"\(boxKey)\""),
        ]
    }

    func appliedVersion(_ g: GatewayUnderTest) throws -> Int64? {
        try g.ctlJSON(["fleet", "status"])["applied_version"]?.intValue.map(Int64.init)
    }

    /// Taps the sticker image and returns the access event.
    func tap(_ g: GatewayUnderTest, _ dump: String) throws -> JSONValue {
        try g.ctlJSON(["sim", "remove"])
        E2ETiming.outlastQuietWindow()  // longer than the stock same_tag_quiet_ms
        let seen = try g.eventCount()
        try g.ctlJSON(["sim", "tap", "--dump", dump])
        return try g.accessEvent(after: seen)
    }

    func testFiveDoorsShareIssuedTagsAndRevocationsOverMQTT() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        try broker.start()
        let site = try MQTTFleetSite(broker)
        try fiveDoors(site, transport: "mqtt")
    }

    func testFiveDoorsShareIssuedTagsAndRevocationsOverNATS() throws {
        let server = try NATSServer(jetStream: true)
        defer { server.stop() }
        let site = try NATSFleetSite(server)
        try server.start()
        try fiveDoors(site, transport: "nats")
    }

    /// The scenario, the same on either transport.
    func fiveDoors(_ site: any FleetSiteUnderTest, transport: String) throws {
        // The operator's site key: private part in a 0600 file, the public key for [fleet].
        // The site box key beside it: each door gets its private part at enrollment (a 0600 file).
        let keys = try SiteKeys("fleet")
        defer { keys.remove() }
        let (work, keyFile) = (keys.work, keys.keyFile)
        XCTAssertEqual(Hex.decode(keys.publicKey)?.count, 32, keys.publicKey)
        var st = stat()
        XCTAssertEqual(stat(keyFile, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)

        var doors: [GatewayUnderTest] = []
        // Every daemon (and its pn532-sim) is stopped, on failure too.
        defer { for g in doors { g.stop() } }
        let started = Date()
        for name in Self.doorNames {
            let g = try keys.door(site, name)
            doors.append(g)
            try site.prepare(g, name)
            try g.start()
        }
        for g in doors { try waitUntil(timeout: 15) { (try g.status()["broker"]?["connected"]) == .bool(true) } }
        print(
            "fleet (\(transport)): 5 gateways started and connected in "
                + "\(String(format: "%.2f", Date().timeIntervalSince(started))) s")
        let (a, b, c, d, e) = (doors[0], doors[1], doors[2], doors[3], doors[4])

        // A sticker provisioned at A (with a secret generated at A: the other doors lack it).
        let uid = "04A1B2C3D4E5F6"
        try a.provisionTag(uid, arm: ["provision", "--action", "0", "--label", "alice"])
        let dump = work.appendingPathComponent("alice.dump").path
        try a.ctlJSON(["sim", "dump", dump])
        XCTAssertEqual(try a.ctlJSON(["secrets", "list"]).arrayValue?.count, 1)
        XCTAssertEqual(try b.ctlJSON(["secrets", "list"]).arrayValue?.count, 0)
        XCTAssertEqual(try tap(b, dump)["kind"]?.stringValue, "access_denied", "B before the push")

        // A's remote keys (issue 24 M3): the site command key travels, the OTP key does not.
        try a.ctlJSON(["keys", "otp", "new"])
        try a.ctlJSON(["keys", "command", "new"])

        // Pushed at A with its secrets (sealed to the site box): granted at B.
        let documentsOfA = try site.watchDoorA()
        // gatewayctl makes the document from the door's store (its configuration names it) and,
        // not on a terminal here, signs it with --yes once the summary is printed.
        let pushA = try a.ctlJSON([
            "fleet", "push", "--site-key", keyFile, "--by", "alice-admin", "--secrets", "--yes", "--config",
            a.configFile.path,
        ])
        XCTAssertEqual(pushA["version"]?.intValue, 1, "\(pushA)")
        for g in doors {
            try waitUntil { try appliedVersion(g) == 1 }
            if try appliedVersion(g) != 1 { print("version 1 not applied at \(g.dir.path):\n\(g.log.suffix(3000))") }
        }
        // M3: B did not take A's OTP key (a phone block names no door), and B's
        // native key is its own, derived from the shared site key: what B
        // exports is what A derives for door-b, and not A's.
        let otpAtB = try b.ctl(["keys", "otp", "export"])
        XCTAssertNotEqual(otpAtB.status, 0, "B holds A's OTP key: \(otpAtB.stdout)")
        XCTAssertTrue(otpAtB.stderr.contains("no otp key yet"), otpAtB.stderr)
        let commandB = try b.ctlJSON(["keys", "command", "export"])
        XCTAssertEqual(commandB["device"]?.stringValue, "door-b")
        XCTAssertEqual(commandB["key"]?.stringValue?.count, 64)
        XCTAssertEqual(try a.ctlJSON(["keys", "command", "export", "--device", "door-b"])["key"], commandB["key"])
        XCTAssertNotEqual(try a.ctlJSON(["keys", "command", "export"])["key"], commandB["key"])
        // Generated at A, so generated at B too: v2 stickers only (a v1 copy of
        // a v2 sticker, its u= cut off, must not pass with it; docs/formats.md §4).
        XCTAssertEqual(try b.ctlJSON(["secrets", "list"]).arrayValue?.first?["origin"]?.stringValue, "generated")
        try waitUntil { !documentsOfA().isEmpty }
        let onTheWire = try XCTUnwrap(documentsOfA().first)
        XCTAssertTrue(onTheWire.contains(#""fleet":1"#), onTheWire)
        XCTAssertFalse(onTheWire.contains("smpshare"), "no secret in clear on the broker")
        let atB = try tap(b, dump)
        XCTAssertEqual(atB["kind"]?.stringValue, "access_granted", "\(atB)")
        XCTAssertEqual(try tap(e, dump)["kind"]?.stringValue, "access_granted")
        let appliedAtB = try XCTUnwrap(
            try b.ctlJSON(["log", "--limit", "200"]).arrayValue?.last { $0["kind"]?.stringValue == "fleet_applied" })
        XCTAssertEqual(appliedAtB["source"]?.stringValue, "door-a/alice-admin", "the origin is audited")

        // D goes down; revoked at B and pushed: A and C (and E) deny it, timed from the push.
        XCTAssertEqual(d.stop(), 0, d.log)
        try b.ctlJSON(["tags", "revoke", uid])
        let pushStart = Date()
        let pushB = try b.ctlJSON(["fleet", "push", "--site-key", keyFile, "--yes", "--config", b.configFile.path])
        XCTAssertEqual(pushB["version"]?.intValue, 2, "\(pushB)")
        let pushed = Date()
        // How long it took is printed for the record (a figure, not a bound:
        // time bounds are for benchmarks); what is asserted is that it arrived.
        var reached: [String: TimeInterval] = [:]
        try waitUntil(timeout: 10) {
            for (name, g) in [("door-a", a), ("door-c", c), ("door-e", e)] where reached[name] == nil {
                if try appliedVersion(g) == 2 { reached[name] = Date().timeIntervalSince(pushed) }
            }
            return reached.count == 3
        }
        let took = pushed.timeIntervalSince(pushStart)
        print(
            "fleet (\(transport)): revocation pushed at door-b (gatewayctl fleet push: \(String(format: "%.3f", took)) s); applied at "
                + reached.sorted { $0.key < $1.key }.map {
                    "\($0.key) \(String(format: "%.3f", $0.value)) s after it returned "
                        + "(\(String(format: "%.3f", $0.value + took)) s from its start)"
                }.joined(separator: ", ") + "; status polled every ~20 ms through gatewayctl")
        XCTAssertEqual(reached.count, 3, "not every online door applied version 2: \(reached)")
        for g in [a, c, e] {
            let denied = try tap(g, dump)
            XCTAssertEqual(denied["kind"]?.stringValue, "access_denied", "\(denied)")
            XCTAssertEqual(denied["reason"]?.stringValue, "revoked")
        }

        // `fleet pull` re-reads the retained documents: nothing new, nothing re-applied.
        let appliedRows = { try c.auditKinds().filter { $0 == "fleet_applied" }.count }
        let before = try appliedRows()
        let pulled = try c.ctlJSON(["fleet", "pull"])
        XCTAssertEqual(pulled["applied_version"]?.intValue, 2, "\(pulled)")
        XCTAssertEqual(try appliedRows(), before, "the retained copies are not applied twice")
        // A site key readable by others is refused before anything is signed.
        let loose = work.appendingPathComponent("loose.key").path
        try FileManager.default.copyItem(atPath: keyFile, toPath: loose)
        chmod(loose, 0o644)
        let refusedPush = try c.ctl(["fleet", "push", "--site-key", loose, "--yes", "--config", c.configFile.path])
        XCTAssertEqual(refusedPush.status, 1)
        XCTAssertTrue(refusedPush.stderr.contains("chmod 600"), refusedPush.stderr)
        XCTAssertFalse(refusedPush.stderr.contains(try String(contentsOfFile: keyFile, encoding: .utf8).prefix(16)))
        // Not on a terminal and without --yes: the summary, and nothing signed (docs/security.md "H2").
        let unconfirmed = try c.ctl(["fleet", "push", "--site-key", keyFile, "--config", c.configFile.path])
        XCTAssertEqual(unconfirmed.status, 1, unconfirmed.stdout + unconfirmed.stderr)
        XCTAssertTrue(
            unconfirmed.stdout.hasPrefix("fleet push: site main-site, version 3, after version 2"), unconfirmed.stdout)
        XCTAssertTrue(unconfirmed.stderr.contains("add --yes"), unconfirmed.stderr)
        XCTAssertEqual(try appliedVersion(c), 2)

        // D restarts and catches up from the retained documents.
        try d.start()
        try waitUntil(timeout: 15) { try appliedVersion(d) == 2 }
        XCTAssertEqual(try tap(d, dump)["reason"]?.stringValue, "revoked", "D caught up at restart")

        // A forged document (another key), published by a compromised door on
        // its own topic, and a replay of version 1: refused and audited everywhere.
        let forger = try Crypto.Ed25519.generateSeed()
        let forged = try FleetDocument(
            site: Self.site, version: 99, origin: "door-e/mallory", issued: 0,
            tags: [FleetDocument.Tag(uid: TagUID(hex: "04DEADBEEF0001")!, action: 0)]
        ).signed(seed: forger)
        try site.publishAsDoorE(String(decoding: forged, as: UTF8.self))
        for g in doors { try g.waitForEvent("fleet_refused", reason: "bad_signature") }
        // A door cannot write another door's document (the ACL's second line; the NATS user's permissions).
        try site.assertDoorECannotWriteDoorA()
        XCTAssertTrue(onTheWire.contains(#"{"fleet":1,"#), "door-a's document: \(onTheWire)")
        try site.publishAsDoorE(onTheWire)
        for g in doors {
            try g.waitForEvent("fleet_refused", reason: "stale")
            XCTAssertEqual(try appliedVersion(g), 2)
            let status = try g.ctlJSON(["fleet", "status"])
            XCTAssertNotNil(status["last_refused"]?["reason"]?.stringValue, "\(status)")
            try g.assertChainIntact()
        }
        XCTAssertEqual(try tap(a, dump)["reason"]?.stringValue, "revoked")

        // M1: A removes its secret (say it leaked). B, still holding it,
        // pushes its secrets first: it does not come back at A. A's push then
        // carries the removal (a tombstone, shown in the summary): every door
        // keeps the secret as an inactive, removed row.
        let secretID = try XCTUnwrap(try a.ctlJSON(["secrets", "list"]).arrayValue?.first?["id"]?.intValue)
        try a.ctlJSON(["secrets", "remove", String(secretID)])
        let pushB3 = try b.ctlJSON([
            "fleet", "push", "--site-key", keyFile, "--secrets", "--yes", "--config", b.configFile.path,
        ])
        XCTAssertEqual(pushB3["version"]?.intValue, 3, "\(pushB3)")
        for g in doors { try waitUntil { try appliedVersion(g) == 3 } }
        XCTAssertEqual(
            try a.ctlJSON(["secrets", "list"]).arrayValue?.map { $0["active"] }, [.bool(false)],
            "B's push brought the removed secret back at A")
        let pushA4 = try a.ctl(["fleet", "push", "--site-key", keyFile, "--yes", "--config", a.configFile.path])
        XCTAssertEqual(pushA4.status, 0, pushA4.stdout + pushA4.stderr)
        XCTAssertTrue(pushA4.stdout.contains("removed secrets (tombstones): 1 (+1)"), pushA4.stdout)
        for g in doors {
            try waitUntil { try appliedVersion(g) == 4 }
            let secrets = try XCTUnwrap(try g.ctlJSON(["secrets", "list"]).arrayValue)
            XCTAssertEqual(secrets.map { $0["removed"] }, [.bool(true)], "\(g.dir.path)")
            XCTAssertEqual(secrets.map { $0["active"] }, [.bool(false)], "\(g.dir.path)")
        }
    }
}

/// mosquitto on the shipped configuration and ACL; each door a client
/// certificate whose CN the ACL names.
struct MQTTFleetSite: FleetSiteUnderTest {
    let broker: MosquittoBroker

    init(_ broker: MosquittoBroker) throws {
        self.broker = broker
        for name in FleetTests.doorNames + [Self.observer, Self.reader] { try Self.makeDoorCertificate(broker, name) }
    }

    /// A door account of the site whose daemon is not running, for the test's own reads: the
    /// doors' listener ties a client id to its certificate (`use_username_as_clientid`), so
    /// reading with a running door's certificate would knock that door off the broker.
    static let observer = "door-f"
    /// Another one, for a read while the observer watches.
    static let reader = "door-g"

    /// A client certificate with CN `name` from the broker's CA.
    static func makeDoorCertificate(_ broker: MosquittoBroker, _ name: String) throws {
        func openssl(_ args: [String]) throws {
            let r = try Run.process(URL(fileURLWithPath: "/usr/bin/openssl"), args, timeout: 30)
            guard r.status == 0 else { throw E2EError("openssl \(args.first ?? ""): \(r.stderr)") }
        }
        try openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(name)",
            "-keyout", broker.path("\(name).key"), "-out", broker.path("\(name).csr"),
        ])
        try openssl([
            "x509", "-req", "-in", broker.path("\(name).csr"), "-CA", broker.path("ca.crt"), "-CAkey",
            broker.path("ca.key"), "-CAcreateserial", "-days", "2", "-out", broker.path("\(name).crt"),
        ])
    }

    /// The shipped example for the simulated board, every value stock, plus
    /// MQTT to the test broker with this door's certificate and the fleet keys.
    func door(_ name: String, publicKey: String, boxKey: String) throws -> GatewayUnderTest {
        try GatewayUnderTest(
            stockExample: "sim",
            edits: [
                ("\nid = \"front-door\"\n", "\nid = \"\(name)\"\n"),
                ("[mqtt]\nenabled = false\n", "[mqtt]\nenabled = true\nport = \(broker.port)\n"),
                ("# ca_file = \"/etc/doorgateway/ca.crt\"", "ca_file = \"\(broker.path("ca.crt"))\""),
                ("# cert_file = \"/etc/doorgateway/door.crt\"", "cert_file = \"\(broker.path("\(name).crt"))\""),
                (
                    "# key_file = \"/run/credentials/gatewayd.service/door.key\"",
                    "key_file = \"\(broker.path("\(name).key"))\""
                ),
            ] + FleetTests.fleetEdits(publicKey: publicKey, boxKey: boxKey))
    }

    func prepare(_ g: GatewayUnderTest, _ name: String) throws {}

    func watchDoorA() throws -> () -> [String] {
        let watch = try broker.subscribe("doorgateway/door-a/fleet/\(FleetTests.site)", as: Self.observer)
        // `topic|retained|payload`
        return { watch.lines.map { String($0.split(separator: "|", maxSplits: 2).last ?? "") } }
    }

    func publishAsDoorE(_ document: String) throws {
        let r = try broker.publish(
            "doorgateway/door-e/fleet/\(FleetTests.site)", document, retain: true, as: "door-e")
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    func assertDoorECannotWriteDoorA() throws {
        _ = try broker.publish("doorgateway/door-a/fleet/\(FleetTests.site)", "garbage", retain: true, as: "door-e")
        let retainedAtA = try broker.subscribe("doorgateway/door-a/fleet/\(FleetTests.site)", as: Self.reader)
        let line = try XCTUnwrap(retainedAtA.wait { !$0.isEmpty }.first)
        XCTAssertTrue(line.contains(#"{"fleet":"#), "door-a's document still there: \(line)")
    }
}

/// nats-server in operator/JWT mode with JetStream: each door its own user
/// (JWT + nkey seed, imported with `gatewayctl creds import`) and client
/// certificate. A door may write its own key of the bucket and read the
/// bucket through JetStream's API (docs/fleet.md lists the permissions).
struct NATSFleetSite: FleetSiteUnderTest {
    static let bucket = "doorgateway-fleet"
    let server: NATSServer

    init(_ server: NATSServer) throws {
        self.server = server
        for name in FleetTests.doorNames {
            let base = "\(NATSServer.prefix).\(name)"
            try server.addUser(
                name,
                publish: ["\(base).>"] + Self.fleetPermissions(device: name),
                subscribe: ["\(base).command.>", "\(base).creds.jwt", "\(base).inbox.>"])
        }
        // The operator's view of the documents as they are stored.
        try server.addUser("fleet-watch", publish: [], subscribe: ["$KV.\(Self.bucket).>"])
    }

    /// What a door's user may publish for the fleet (docs/fleet.md).
    static func fleetPermissions(device: String) -> [String] {
        let stream = "KV_\(bucket)"
        return [
            // A watch finds the bucket's stream by its subjects (STREAM.NAMES).
            "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.\(stream)", "$JS.API.STREAM.CREATE.\(stream)",
            "$JS.API.CONSUMER.CREATE.\(stream)",
            "$JS.API.CONSUMER.CREATE.\(stream).>", "$JS.API.CONSUMER.DELETE.\(stream).>", "$JS.FC.\(stream).>",
            "$KV.\(bucket).\(FleetTests.site).\(device)",
        ]
    }

    func door(_ name: String, publicKey: String, boxKey: String) throws -> GatewayUnderTest {
        try GatewayUnderTest(
            stockExample: "sim",
            edits: [
                ("\nid = \"front-door\"\n", "\nid = \"\(name)\"\n"),
                ("transport = \"mqtt\"", "transport = \"nats\""),
                ("# servers = [\"tls://nats.example:4222\"]", "servers = [\"tls://localhost:\(server.port)\"]"),
                ("prefix = \"doorgateway\"", "prefix = \"\(NATSServer.prefix)\""),
                ("# ca_file = \"/etc/doorgateway/nats-ca.pem\"", "ca_file = \"\(server.path("ca.crt"))\""),
                (
                    "# cert_file = \"/etc/doorgateway/front-door-nats.crt\"",
                    "cert_file = \"\(server.path("\(name).crt"))\""
                ),
                (
                    "# key_file = \"/etc/doorgateway/front-door-nats.key\"",
                    "key_file = \"\(server.path("\(name).key"))\""
                ),
            ] + FleetTests.fleetEdits(publicKey: publicKey, boxKey: boxKey))
    }

    /// `gatewayctl creds import` of the door's `.creds` (before its first start).
    func prepare(_ g: GatewayUnderTest, _ name: String) throws {
        let r = try Run.process(
            GatewayUnderTest.gateway,
            ["ctl", "creds", "import", "--config", g.configFile.path, server.path("k/\(name).creds")], timeout: 30)
        XCTAssertEqual(r.status, 0, r.stderr)
    }

    func watchDoorA() throws -> () -> [String] {
        let peer = try server.peer(as: "fleet-watch")
        let subject = "$KV.\(Self.bucket).\(FleetTests.site).door-a"
        peer.subscribe(subject)
        return { peer.messages(subject) }
    }

    func publishAsDoorE(_ document: String) throws {
        let peer = try server.peer(as: "door-e")
        defer { peer.close() }
        peer.send("PUB $KV.\(Self.bucket).\(FleetTests.site).door-e \(document)")
        peer.send("FLUSH")
        let lines = peer.wait { $0.contains { $0["flushed"] != nil } }
        XCTAssertFalse(lines.isEmpty, "no flush")
        XCTAssertFalse(lines.contains { $0["error"] != nil }, "\(lines)")
    }

    func assertDoorECannotWriteDoorA() throws {
        let peer = try server.peer(as: "door-e")
        defer { peer.close() }
        peer.send("PUB $KV.\(Self.bucket).\(FleetTests.site).door-a garbage")
        let lines = peer.wait { $0.contains { $0["error"] != nil } }
        XCTAssertTrue(
            lines.contains { ($0["error"] ?? "").contains("Permissions Violation") }, "the server refused it: \(lines)")
    }
}
