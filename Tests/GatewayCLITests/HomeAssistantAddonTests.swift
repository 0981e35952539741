import Foundation
import TestSupport
import XCTest

/// Issue 33 §3: Home Assistant OS's Mosquitto add-on, configured the way it
/// configures itself (its mosquitto.gtpl): logins with passwords (there from
/// Home Assistant's users and the `logins:` option through its auth plugin;
/// here a mosquitto_passwd file, which the door cannot tell apart), a plain
/// listener and a TLS listener with a server certificate only
/// (`require_certificate false`), no per-listener settings, and the
/// `customize` folder read last — holding `acl.conf` with `acl_file` naming
/// the shipped provisioning/home-assistant-addon.acl, as
/// docs/home-assistant.md says. The door logs in as the user named after its
/// device id (`gatewayctl config check --broker`: gatewayd's own connection
/// setup, a publish/subscribe round trip on its own prefix).
final class HomeAssistantAddonTests: XCTestCase {
    var dir: URL!
    var server: ServerProcess?
    var plainPort = 0
    var tlsPort = 0
    static let shippedACL = Fixtures.root.appendingPathComponent("provisioning/home-assistant-addon.acl")
    /// Logins: the door, HA's own, a phone, another device's (named in the
    /// ACL) and an HA user the ACL does not name.
    static let logins = ["front-door", "homeassistant", "phone-alice", "zigbee2mqtt", "someone"]
    static func password(_ user: String) -> String { "pw of \(user) 7h9" }

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("addon-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("share/mosquitto"), withIntermediateDirectories: true)
        let pki = TestPKI(dir)
        try pki.makeCA("ca", cn: "addon-ca")
        try pki.makeCert("broker", cn: "localhost")
        _ = FileManager.default.createFile(atPath: path("pw"), contents: nil)
        for user in Self.logins {
            let r = try Run.process(
                URL(fileURLWithPath: "/usr/bin/mosquitto_passwd"), ["-b", path("pw"), user, Self.password(user)],
                timeout: 20)
            XCTAssertEqual(r.status, 0, r.stderr)
        }
        plainPort = try MosquittoBroker.freePort()
        tlsPort = try MosquittoBroker.freePort()
    }

    override func tearDown() {
        server?.stop()
        server = nil
        try? FileManager.default.removeItem(at: dir)
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }
    var log: String { (try? String(contentsOfFile: path("mosquitto.log"), encoding: .utf8)) ?? "" }

    /// The add-on's configuration (ports 1883/8883 moved), with the ACL
    /// installed through its customize folder or not.
    func start(acl: Bool) throws {
        let conf = """
            user root
            log_dest file \(path("mosquitto.log"))
            log_type all
            persistence false
            password_file \(path("pw"))

            listener \(plainPort) 127.0.0.1
            protocol mqtt

            listener \(tlsPort) 127.0.0.1
            protocol mqtt
            cafile \(path("broker.crt"))
            certfile \(path("broker.crt"))
            keyfile \(path("broker.key"))
            require_certificate false

            include_dir \(path("share/mosquitto"))

            """
        try conf.write(toFile: path("mosquitto.conf"), atomically: true, encoding: .utf8)
        if acl {
            try FileManager.default.copyItem(
                atPath: Self.shippedACL.path, toPath: path("share/mosquitto/accesscontrollist"))
            try "acl_file \(path("share/mosquitto/accesscontrollist"))\n".write(
                toFile: path("share/mosquitto/acl.conf"), atomically: true, encoding: .utf8)
        }
        let p = try ServerProcess("/usr/sbin/mosquitto", ["-c", path("mosquitto.conf")], stderr: path("stderr"))
        server = p
        guard p.waitUntilReady({ self.log.contains(" running") && MosquittoBroker.canConnect(self.plainPort) }) else {
            throw NSError(domain: "broker", code: 1, userInfo: [NSLocalizedDescriptionKey: "mosquitto: \(log)"])
        }
    }

    func login(_ user: String, tls: Bool = false) -> [String] {
        ["-h", "localhost", "-u", user, "-P", Self.password(user)]
            + (tls ? ["-p", "\(tlsPort)", "--cafile", path("ca.crt")] : ["-p", "\(plainPort)"])
    }

    func pub(_ user: String, _ topic: String, _ message: String, retain: Bool = false) throws {
        let r = try Run.process(
            URL(fileURLWithPath: "/usr/bin/mosquitto_pub"),
            login(user) + ["-q", "1", "-t", topic, "-m", message] + (retain ? ["-r"] : []), timeout: 20)
        XCTAssertEqual(r.status, 0, "\(user) \(topic): \(r.stderr)")
    }

    func sub(_ user: String, _ topics: [String]) throws -> MosquittoBroker.Subscription {
        try MosquittoBroker.Subscription(
            arguments: login(user) + ["-q", "1"] + topics.flatMap { ["-t", $0] } + ["-F", "%t|%r|%p"])
    }

    /// The door's gatewayctl check, logged in as its HA user over the add-on's TLS listener.
    func doorCheck() throws -> ProcessResult {
        let pw = path("mqtt.password")
        try (Self.password("front-door") + "\n").write(toFile: pw, atomically: true, encoding: .utf8)
        chmod(pw, 0o640)
        let toml =
            ConfigText.simWithMQTT(port: tlsPort) + """
                username = "front-door"
                password_file = "\(pw)"
                [mqtt.tls]
                ca_file = "\(path("ca.crt"))"
                """
        try toml.write(toFile: path("gateway.toml"), atomically: true, encoding: .utf8)
        return try Run.gatewayctl(["config", "check", "--broker", path("gateway.toml")])
    }

    /// With the shipped ACL in the add-on's customize folder: the door logs
    /// in as its HA user over TLS (server certificate only) and its round
    /// trip on its own prefix works; Home Assistant's login reads it and
    /// presses its buttons; another device's login keeps its own topics but
    /// cannot read or write the door's; an HA user the ACL does not name can
    /// do nothing; the phone commands the door and reads its events but not
    /// the approval requests. Each "did not arrive" is read after a later
    /// permitted message on the same subscription has arrived.
    func testTheShippedAddonACLLetsTheDoorInAndKeepsOtherLoginsOut() throws {
        // First as the add-on comes (no ACL): every login of the broker — any
        // Home Assistant user, any add-on — presses Home Assistant's buttons
        // (`…/lock/set`, honoured with `home_assistant_open = true`) and reads
        // the door's events. docs/home-assistant.md says so.
        try start(acl: false)
        XCTAssertEqual(try doorCheck().status, 0, log)
        do {
            let door = try sub("front-door", ["doorgateway/front-door/#"])
            let other = try sub("someone", ["doorgateway/#"])
            try pub("someone", "doorgateway/front-door/lock/set", "UNLOCK")
            XCTAssertEqual(door.wait { !$0.isEmpty }, ["doorgateway/front-door/lock/set|0|UNLOCK"])
            try pub("front-door", "doorgateway/front-door/event", "door-event")
            XCTAssertTrue(
                other.wait { $0.contains { $0.hasSuffix("|door-event") } }.contains {
                    $0.hasSuffix("|door-event")
                })
        }
        server?.stop()

        // Then with the ACL, as docs/home-assistant.md installs it.
        try start(acl: true)
        let check = try doorCheck()
        XCTAssertEqual(check.status, 0, check.stderr + log)
        XCTAssertTrue(check.stdout.contains("published and received back"), check.stdout)
        XCTAssertTrue(check.stdout.contains("TLS"), check.stdout)
        XCTAssertFalse(
            check.stdout.contains(Self.password("front-door")) || check.stderr.contains(Self.password("front-door")))

        // Writers: only HA's button and the phone's command reach the door.
        let door = try sub("front-door", ["doorgateway/front-door/#", "phone/front-door"])
        try pub("zigbee2mqtt", "doorgateway/front-door/lock/set", "z2m-UNLOCK")
        try pub("someone", "doorgateway/front-door/lock/set", "someone-UNLOCK")
        try pub("zigbee2mqtt", "phone/front-door", "z2m-compat")
        try pub("phone-alice", "doorgateway/front-door/approval/set", "phone-APPROVE")
        try pub("phone-alice", "doorgateway/front-door/command", "phone-native")
        try pub("homeassistant", "doorgateway/front-door/lock/set", "ha-UNLOCK")
        let heard = door.wait { $0.contains { $0.hasSuffix("|ha-UNLOCK") } }
        XCTAssertEqual(
            heard, ["doorgateway/front-door/command|0|phone-native", "doorgateway/front-door/lock/set|0|ha-UNLOCK"],
            log)

        // Readers: the door publishes; zigbee2mqtt reads none of it,
        // the phone not the approval request; HA all of it.
        let z2m = try sub("zigbee2mqtt", ["#"])
        let phone = try sub("phone-alice", ["doorgateway/front-door/#"])
        let ha = try sub("homeassistant", ["doorgateway/#", "someone/#"])
        let request = #"{"event_type":"approval_requested","code":"K7M2QX"}"#
        try pub("front-door", "doorgateway/front-door/approval", request)
        try pub("front-door", "doorgateway/front-door/event", "door-event")
        try pub("zigbee2mqtt", "zigbee2mqtt/bridge/state", "online")
        XCTAssertEqual(z2m.wait { $0.contains { $0.hasSuffix("|online") } }, ["zigbee2mqtt/bridge/state|0|online"])
        XCTAssertEqual(
            phone.wait { $0.contains { $0.hasSuffix("|door-event") } }, ["doorgateway/front-door/event|0|door-event"])
        XCTAssertEqual(
            ha.wait { $0.count >= 2 },
            ["doorgateway/front-door/approval|0|\(request)", "doorgateway/front-door/event|0|door-event"])

        // `someone` has no block: even a topic of its own is refused (its
        // publish is dropped; HA's later one on the same topic arrives alone).
        try pub("someone", "someone/x", "own")
        try pub("homeassistant", "someone/x", "barrier")
        XCTAssertEqual(Array(ha.wait { $0.count >= 3 }.dropFirst(2)), ["someone/x|0|barrier"])
    }
}
