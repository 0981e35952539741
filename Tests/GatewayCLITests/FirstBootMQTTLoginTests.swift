import DoorCore
import Foundation
import GatewayConfig
import TestSupport
import XCTest

/// Issue 33 §3: the image's first boot takes the broker and the door's login
/// from `mqtt.conf` on the boot partition (Home Assistant OS's Mosquitto
/// add-on: the door is a Home Assistant user), so nobody edits gateway.toml
/// or writes a password file over ssh. The shipped script
/// (provisioning/firstboot/doorgateway-firstboot.sh) runs with its
/// directories in a temporary tree, as in FirmwareHoldCLITests; gatewayd's
/// group is `nogroup` here (the test machine has no `doorgateway` group).
final class FirstBootMQTTLoginTests: XCTestCase {
    var dir: URL!
    static let stockCustom = Fixtures.root.appendingPathComponent("provisioning/firstboot/config.txt.custom")
    static let group = "nogroup"

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("firstboot-mqtt-\(UUID().uuidString)")
        for d in ["fb", "etc", "bin"] {
            try FileManager.default.createDirectory(
                at: dir.appendingPathComponent(d), withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(
            at: dir.appendingPathComponent("bin/gatewayctl"), withDestinationURL: Run.product("gateway"))
        try ConfigExample.text(board: .pi).write(toFile: path("etc/gateway.toml"), atomically: true, encoding: .utf8)
        let custom = try String(contentsOf: Self.stockCustom, encoding: .utf8)
        try ("[all]\narm_64bit=1\n" + custom).write(toFile: path("config.txt"), atomically: true, encoding: .utf8)
        try custom.write(toFile: path("raspi-firmware-custom"), atomically: true, encoding: .utf8)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: dir) }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// Runs the shipped first-boot script with `files` on the boot partition.
    func firstBoot(_ files: [String: String]) throws -> (run: ProcessResult, status: String) {
        for (name, text) in files { try text.write(toFile: path("fb/\(name)"), atomically: true, encoding: .utf8) }
        let r = try FirstBootScript.run(dir, ["DOORGATEWAY_GROUP": Self.group])
        XCTAssertEqual(r.status, 0, r.stderr)
        return (r, (try? String(contentsOfFile: path("fb/STATUS.txt"), encoding: .utf8)) ?? "")
    }

    /// A password as people have them: spaces, quotes, a backslash, `=`, `#`.
    static let password = #"s3cret "pass" \ = #word"#

    func testMQTTConfOnTheBootPartitionSetsTheBrokerAndTheLoginWithThePasswordInItsOwnFile() throws {
        let pki = TestPKI(dir)
        try pki.makeCA("addon-ca")
        let ca = try String(contentsOfFile: pki.path("addon-ca.crt"), encoding: .utf8)
        // CRLF, as a Windows editor saves it.
        let conf = "host=homeassistant.local\r\nuser = front-door\r\npassword=\(Self.password)\r\n"
        let fb = try firstBoot([
            "mqtt.conf": conf, "ca.crt": ca, "relay": "active-low\n", "lock": "strike\n",
        ])
        XCTAssertFalse(fb.status.contains("ERROR"), fb.status)
        XCTAssertTrue(
            fb.status.contains("mqtt broker homeassistant.local (tls true), login front-door (password in "), fb.status)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path("firstboot.done")), fb.run.stdout)

        let config = try GatewayConfiguration.load(file: path("etc/gateway.toml"))
        XCTAssertTrue(config.mqtt.enabled)
        XCTAssertEqual(config.mqtt.host, "homeassistant.local")
        XCTAssertEqual(config.mqtt.username, "front-door")
        XCTAssertEqual(config.mqtt.passwordFile, path("etc/mqtt.password"))
        XCTAssertTrue(config.mqtt.tls.enabled)
        XCTAssertEqual(config.mqtt.tls.caFile, path("etc/ca.crt"))

        // The password, and only there: its own file, root:gatewayd's group 0640.
        XCTAssertEqual(try String(contentsOfFile: path("etc/mqtt.password"), encoding: .utf8), Self.password + "\n")
        var st = stat()
        XCTAssertEqual(stat(path("etc/mqtt.password"), &st), 0)
        XCTAssertEqual(st.st_mode & 0o7777, 0o640)
        XCTAssertEqual(st.st_uid, 0)
        XCTAssertEqual(st.st_gid, try XCTUnwrap(getgrnam(Self.group)).pointee.gr_gid)
        let installed = try String(contentsOfFile: path("etc/gateway.toml"), encoding: .utf8)
        for text in [installed, fb.status, fb.run.stdout, fb.run.stderr] {
            XCTAssertFalse(text.contains("s3cret"), "the password leaked: \(text)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("fb/mqtt.conf")), "mqtt.conf left on the FAT")
    }

    func testPlainTCPPublicCAsAndAnIncompleteFileThatChangesNothing() throws {
        let fb = try firstBoot([
            "mqtt.conf": "host=192.168.1.10\nport=1883\ntls=off\nuser=front-door\npassword=pw\n",
            "relay": "active-low\n", "lock": "strike\n",
        ])
        XCTAssertFalse(fb.status.contains("ERROR"), fb.status)
        let config = try GatewayConfiguration.load(file: path("etc/gateway.toml"))
        XCTAssertEqual(config.mqtt.host, "192.168.1.10")
        XCTAssertEqual(config.mqtt.port, 1883)
        XCTAssertFalse(config.mqtt.tls.enabled)
        XCTAssertEqual(config.mqtt.username, "front-door")

        // TLS without a ca.crt: the add-on's certificate is checked against the system's CAs.
        try tearDownWithError()
        try setUpWithError()
        let publicCA = try firstBoot([
            "mqtt.conf": "host=ha.example.org\nuser=front-door\npassword=pw\n", "relay": "active-low\n",
            "lock": "strike\n",
        ])
        XCTAssertFalse(publicCA.status.contains("ERROR"), publicCA.status)
        let tls = try GatewayConfiguration.load(file: path("etc/gateway.toml")).mqtt.tls
        XCTAssertTrue(tls.enabled)
        XCTAssertNil(tls.caFile)
        XCTAssertEqual(tls.caDirectory, "/etc/ssl/certs")

        try tearDownWithError()
        try setUpWithError()
        let incomplete = try firstBoot(["mqtt.conf": "host=broker.lan\nuser=front-door\n"])
        XCTAssertTrue(
            incomplete.status.contains("ERROR: mqtt.conf needs host=, user= and password= lines; not applied"),
            incomplete.status)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("etc/mqtt.password")))
        XCTAssertEqual(
            try String(contentsOfFile: path("etc/gateway.toml"), encoding: .utf8), ConfigExample.text(board: .pi))
    }

    /// `tls=off` with a `.local` host would send the password to whoever answers
    /// the mDNS query, which gatewayd refuses to start with: only mqtt.conf is
    /// refused, and the relay and lock files still give the door its relay hold
    /// and configuration (before, the whole generated configuration was
    /// rejected, leaving an active-low relay at the stock `ip,pd` hold: on).
    func testAPlainTCPDotLocalLoginIsRefusedAloneAndTheRelayHoldStillLands() throws {
        let fb = try firstBoot([
            "mqtt.conf": "host=homeassistant.local\ntls=off\nuser=front-door\npassword=pw\n",
            "relay": "active-low\n", "lock": "strike\n",
        ])
        XCTAssertTrue(fb.status.contains("ERROR: mqtt.conf: tls=off with the .local name"), fb.status)
        XCTAssertFalse(fb.status.contains("rejected"), fb.status)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("etc/mqtt.password")))
        let config = try GatewayConfiguration.load(file: path("etc/gateway.toml"))
        XCTAssertNotEqual(config.mqtt.host, "homeassistant.local")
        let hold = try String(contentsOfFile: path("config.txt"), encoding: .utf8)
        XCTAssertTrue(hold.contains("gpio=17=op,dh,pu"), hold)
    }
}
