import Foundation
import TestSupport
import XCTest

/// provisioning/make-certs.sh as shipped: only the `--server` certificate is
/// good for a server. A broker that presents a client's certificate (a phone's,
/// taken from the phone) is refused by the door even with `tls.insecure = true`
/// (which skips the host-name check, not the chain or its purpose).
final class CertificateRoleTests: XCTestCase {
    func testAClientCertificateCannotPoseAsTheBroker() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "certroles-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let script = Fixtures.root.appendingPathComponent("provisioning/make-certs.sh")
        let made = try Run.process(script, [dir.path, "--server", "localhost", "front-door", "phone-alice"])
        XCTAssertEqual(made.status, 0, made.stderr)
        func path(_ n: String) -> String { dir.appendingPathComponent(n).path }

        for (server, insecure, shouldConnect) in [
            ("localhost", false, true), ("phone-alice", true, false), ("front-door", true, false),
        ] {
            let port = try MosquittoBroker.freePort()
            let conf = """
                persistence false
                user root
                log_dest file \(path("mosquitto-\(server).log"))
                listener \(port) 127.0.0.1
                cafile \(path("ca.crt"))
                certfile \(path("\(server).crt"))
                keyfile \(path("\(server).key"))
                require_certificate true
                use_identity_as_username true

                """
            try conf.write(toFile: path("mosquitto-\(server).conf"), atomically: true, encoding: .utf8)
            let broker = try ServerProcess("/usr/sbin/mosquitto", ["-c", path("mosquitto-\(server).conf")])
            defer { broker.stop() }
            XCTAssertTrue(broker.waitUntilReady { MosquittoBroker.canConnect(port) }, "mosquitto listens")
            let toml =
                ConfigText.simWithMQTT(port: port) + """
                    [mqtt.tls]
                    ca_file = "\(path("ca.crt"))"
                    cert_file = "\(path("front-door.crt"))"
                    key_file = "\(path("front-door.key"))"
                    insecure = \(insecure)
                    """
            try toml.write(toFile: path("gateway-\(server).toml"), atomically: true, encoding: .utf8)
            let r = try Run.gatewayctl(["config", "check", "--broker", path("gateway-\(server).toml")])
            if shouldConnect {
                XCTAssertEqual(r.status, 0, "server certificate \(server): \(r.stderr)")
            } else {
                XCTAssertEqual(
                    r.status, 1, "the door accepted \(server)'s client certificate as the broker: \(r.stdout)")
                XCTAssertTrue(r.stderr.contains("\nbroker: "), r.stderr)
            }
        }
    }
}
