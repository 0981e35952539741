import Foundation
import TestSupport
import XCTest

/// Issue 33 §3, the broker people already run: the shipped provisioning/
/// files dropped into Debian's stock mosquitto layout (its own
/// /etc/mosquitto/mosquitto.conf, our two files in conf.d, as
/// provisioning/README.md installs them). Only the ports, the certificate
/// paths and the stock file's own paths change; `user root` is added (as
/// root mosquitto would drop to its user, which cannot read the test's keys).
final class StockMosquittoInstallTests: XCTestCase {
    /// The certificates (MosquittoBroker makes them; that broker itself is never started).
    var pki: MosquittoBroker!
    var server: ServerProcess?
    var etc: URL!
    var tlsPort = 0
    var localPort = 0

    static let localConfiguration = Fixtures.root.appendingPathComponent("provisioning/mosquitto-local.conf")

    /// Debian 12's /etc/mosquitto/mosquitto.conf (mosquitto 2.0.11-1.2+deb12u1)
    /// as the package installs it; `root` stands for `/` (its three paths).
    static func debianStock(root: String) -> String {
        """
        # Place your local configuration in /etc/mosquitto/conf.d/
        #
        # A full description of the configuration file is at
        # /usr/share/doc/mosquitto/examples/mosquitto.conf.example

        pid_file \(root)/run/mosquitto/mosquitto.pid

        persistence true
        persistence_location \(root)/var/lib/mosquitto/

        log_dest file \(root)/var/log/mosquitto/mosquitto.log

        include_dir \(root)/etc/mosquitto/conf.d

        """
    }

    override func setUpWithError() throws {
        pki = try MosquittoBroker()
        etc = pki.dir.appendingPathComponent("root")
        for d in ["run/mosquitto", "var/lib/mosquitto", "var/log/mosquitto", "etc/mosquitto/conf.d"] {
            try FileManager.default.createDirectory(
                at: etc.appendingPathComponent(d), withIntermediateDirectories: true)
        }
        tlsPort = try MosquittoBroker.freePort()
        localPort = try MosquittoBroker.freePort()
    }

    override func tearDown() {
        server?.stop()
        server = nil
        pki = nil
    }

    func rooted(_ p: String) -> String { etc.appendingPathComponent(p).path }
    var log: String { (try? String(contentsOfFile: rooted("var/log/mosquitto/mosquitto.log"), encoding: .utf8)) ?? "" }

    /// Installs the shipped files as provisioning/README.md says (00- and
    /// 01- in conf.d; the local one only if it is shipped) and starts mosquitto
    /// on the stock mosquitto.conf.
    func startStockBrokerWithTheShippedFiles() throws {
        try Self.debianStock(root: etc.path).write(
            toFile: rooted("etc/mosquitto/mosquitto.conf"), atomically: true, encoding: .utf8)
        let doors = try MosquittoBroker.testConfiguration(
            shipped: String(contentsOf: MosquittoBroker.shippedConfiguration, encoding: .utf8),
            replacing: [
                "listener": "\(tlsPort)", "cafile": pki.path("ca.crt"), "certfile": pki.path("broker.crt"),
                "keyfile": pki.path("broker.key"), "acl_file": MosquittoBroker.shippedACL.path,
            ])
        try doors.write(
            toFile: rooted("etc/mosquitto/conf.d/00-doorgateway.conf"), atomically: true, encoding: .utf8)
        if let shipped = try? String(contentsOf: Self.localConfiguration, encoding: .utf8) {
            // Only the port of the shipped `listener 1883 localhost` changes.
            let moved = shipped.replacingOccurrences(of: "\nlistener 1883 ", with: "\nlistener \(localPort) ")
            XCTAssertNotEqual(moved, shipped, "the local listener is no longer `listener 1883 …`: update this test")
            let local = try MosquittoBroker.testConfiguration(
                shipped: moved, replacing: ["acl_file": MosquittoBroker.shippedACL.path])
            try local.write(
                toFile: rooted("etc/mosquitto/conf.d/01-doorgateway-local.conf"), atomically: true, encoding: .utf8)
        }
        try "user root\n".write(toFile: rooted("etc/mosquitto/conf.d/zz-test.conf"), atomically: true, encoding: .utf8)
        let p = try ServerProcess(
            "/usr/sbin/mosquitto", ["-c", rooted("etc/mosquitto/mosquitto.conf")], stderr: pki.path("stderr"))
        server = p
        guard p.waitUntilReady({ self.log.contains(" running") }) else {
            let why = (try? String(contentsOfFile: pki.path("stderr"), encoding: .utf8)) ?? ""
            throw NSError(
                domain: "broker", code: 1,
                userInfo: [NSLocalizedDescriptionKey: "mosquitto did not start: \(why)\(log)"])
        }
    }

    func tlsArguments(_ name: String) -> [String] {
        [
            "-h", "localhost", "-p", "\(tlsPort)", "--cafile", pki.path("ca.crt"), "--cert", pki.path("\(name).crt"),
            "--key", pki.path("\(name).key"),
        ]
    }
    var localArguments: [String] { ["-h", "localhost", "-p", "\(localPort)"] }

    func pub(_ arguments: [String], _ topic: String, _ message: String) throws {
        let r = try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_pub"), arguments + ["-q", "1", "-t", topic, "-m", message],
            timeout: 20)
        XCTAssertEqual(r.status, 0, "\(topic): \(r.stderr)\n\(log)")
    }

    /// A local client of Debian's stock broker (localhost, no login) keeps
    /// working once the doors' listener is installed, beside a door and a
    /// phone on mutual TLS; it cannot reach the doors' topics. On the files
    /// before mosquitto-local.conf the `listener 8883` line turned the stock
    /// local listener off: the local client is refused.
    func testALocalClientOfTheStockBrokerKeepsWorkingBesideTheDoors() throws {
        try startStockBrokerWithTheShippedFiles()
        let local = try MosquittoBroker.Subscription(
            arguments: localArguments + [
                "-q", "1", "-t", "zigbee2mqtt/#", "-t", "doorgateway/#", "-t", "phone/#", "-F", "%t|%r|%p",
            ])
        var door: MosquittoBroker.Subscription? = try MosquittoBroker.Subscription(
            arguments: tlsArguments("front-door") + [
                "-q", "1", "-t", "doorgateway/front-door/#", "-t", "phone/front-door", "-F", "%t|%r|%p",
            ])

        // A local process cannot press HA's button nor send a phone-app command;
        // the phone's command on TLS reaches the door (sent last: the barrier).
        try pub(localArguments, "doorgateway/front-door/lock/set", "UNLOCK")
        try pub(localArguments, "phone/front-door", "local-forged")
        try pub(tlsArguments("phone-alice"), "phone/front-door", "real-command")
        let heard = door?.wait { $0.contains { $0.hasSuffix("|real-command") } } ?? []
        XCTAssertEqual(heard, ["phone/front-door|0|real-command"], log)
        door = nil  // one certificate, one connection: the door publishes next
        let phone = try MosquittoBroker.Subscription(
            arguments: tlsArguments("phone-alice") + [
                "-q", "1", "-t", "doorgateway/front-door/event", "-F", "%t|%r|%p",
            ])

        // The door's event reaches the phone, not the local client; the local
        // client's own traffic (published after it: the barrier) reaches it.
        try pub(tlsArguments("front-door"), "doorgateway/front-door/event", "door-event")
        XCTAssertEqual(phone.wait { !$0.isEmpty }, ["doorgateway/front-door/event|0|door-event"], log)
        try pub(localArguments, "zigbee2mqtt/bridge/state", "online")
        XCTAssertEqual(local.wait { $0.contains { $0.hasSuffix("|online") } }, ["zigbee2mqtt/bridge/state|0|online"])

        // The doors' listener still wants a certificate.
        let anonymous = try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_pub"),
            ["-h", "localhost", "-p", "\(tlsPort)", "--cafile", pki.path("ca.crt"), "-t", "x", "-m", "y"], timeout: 20)
        XCTAssertNotEqual(anonymous.status, 0, "a client without a certificate reached the doors' listener")
    }
}

/// docs/security.md L-7 (issue 32): the shipped ACL's phone (`phone-alice`)
/// commands its door and reads what it needs, but not what the door publishes
/// for Home Assistant alone — approval requests (`…/approval`), the issued
/// tags (`…/tags`), the last denied tag (`…/denied`), the admin selections
/// (`…/admin/state`). Real mosquitto on the shipped files, the phone's own
/// certificate; "never arrived" is read after a later message the phone may
/// read has arrived (a positive barrier).
final class PhoneACLTests: BrokerTestCase<MosquittoBroker> {
    func testThePhoneReadsItsDoorButNotHomeAssistantsApprovalTagsOrAdminTopics() throws {
        let prefix = "doorgateway/front-door"
        let forbidden = ["approval", "tags", "denied", "admin/state"].map { "\(prefix)/\($0)" }
        // Retained as the door publishes them (home_assistant_admin = true);
        // a new subscription is handed retained messages first.
        for (topic, retained) in [
            ("\(prefix)/tags", true), ("\(prefix)/denied", true), ("\(prefix)/admin/state", true),
            ("\(prefix)/state", true), ("\(prefix)/availability", true),
        ] {
            XCTAssertEqual(
                try broker.publish(topic, "retained-\(topic)", retain: retained, as: "front-door").status, 0, topic)
        }
        // The phone asks for everything, and for each forbidden topic by name.
        let phone = try MosquittoBroker.Subscription(
            arguments: broker.clientArguments("phone-alice") + ["-q", "1", "-t", "\(prefix)/#"]
                + forbidden.flatMap { ["-t", $0] } + ["-F", "%t|%r|%p"])
        let ha = try MosquittoBroker.Subscription(
            arguments: broker.clientArguments("homeassistant") + forbidden.flatMap { ["-t", $0] } + [
                "-q", "1", "-F", "%t|%r|%p",
            ])
        let request = #"{"event_type":"approval_requested","code":"K7M2QX","action":0}"#
        for (topic, message) in [
            ("\(prefix)/approval", request), ("\(prefix)/tags", "live-tags"), ("\(prefix)/denied", "live-denied"),
            ("\(prefix)/admin/state", "live-admin"),
            // What the phone needs, last: its report, then the barrier event.
            ("\(prefix)/report", "device-report"), ("\(prefix)/event", "barrier"),
        ] {
            XCTAssertEqual(try broker.publish(topic, message, as: "front-door").status, 0, topic)
        }
        // Home Assistant does read them: they were published.
        let haSaw = ha.wait { l in l.contains { $0.hasSuffix("|live-admin") } && l.contains { $0.contains("K7M2QX") } }
        XCTAssertTrue(haSaw.contains("\(prefix)/approval|0|\(request)"), "\(haSaw)\n\(broker.log)")
        XCTAssertTrue(haSaw.contains("\(prefix)/tags|0|live-tags"), "\(haSaw)")

        let seen = phone.wait { $0.contains("\(prefix)/event|0|barrier") }
        XCTAssertTrue(seen.contains("\(prefix)/event|0|barrier"), "the phone reads its door's events: \(seen)")
        XCTAssertTrue(seen.contains("\(prefix)/report|0|device-report"), "\(seen)")
        XCTAssertTrue(seen.contains("\(prefix)/state|1|retained-\(prefix)/state"), "\(seen)")
        XCTAssertTrue(seen.contains("\(prefix)/availability|1|retained-\(prefix)/availability"), "\(seen)")
        for topic in forbidden {
            XCTAssertFalse(seen.contains { $0.hasPrefix("\(topic)|") }, "the phone read \(topic): \(seen)")
        }
        XCTAssertTrue(phone.isRunning, broker.log)
    }
}
