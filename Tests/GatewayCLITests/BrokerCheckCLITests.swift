import Foundation
import TestSupport
import XCTest

/// `gatewayctl config check --broker` against mosquitto running the shipped
/// configuration and ACL: the door's own round trip passes, a prefix the ACL
/// does not give the door fails with the reason (under MQTT 3.1.1, where the
/// broker acknowledges the denied publish), and a foreign certificate fails at
/// the TLS handshake.
final class BrokerCheckCLITests: BrokerTestCase<MosquittoBroker> {
    func configFile(_ mqttLines: String = "", certificate: String = MosquittoBroker.doorID) throws -> String {
        var section = broker.configurationSection(compatTopic: "phone/front-door")
            .replacingOccurrences(of: "[mqtt]\n", with: "[mqtt]\n\(mqttLines)\n")
        section = section.replacingOccurrences(of: "/\(MosquittoBroker.doorID).", with: "/\(certificate).")
        let text = """
            [device]
            id = "\(MosquittoBroker.doorID)"
            [board]
            kind = "sim"
            \(section)
            """
        let path = broker.path("gateway-\(UUID().uuidString.prefix(6)).toml")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func testTheDoorsOwnRoundTripPasses() throws {
        let r = try Run.gatewayctl(["config", "check", "--broker", try configFile()])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(
            r.stdout.contains(
                "broker: connected to localhost:\(broker.port) (MQTT 3.1.1, TLS with a client certificate)"),
            r.stdout)
        XCTAssertTrue(
            r.stdout.contains("broker: doorgateway/front-door/check: published and received back in"), r.stdout)
    }

    /// Issue 24 M5(1): the doors' listener lets one connection per
    /// certificate (`use_username_as_clientid`), so the check, which is the
    /// door, refuses to run beside a running gatewayd instead of taking over
    /// its session; with --while-running it does take it over (the reason).
    func testTheCheckDoesNotKnockARunningDoorOffTheBroker() throws {
        let socketPath = broker.path("control.sock")
        let listening = try Self.listen(at: socketPath)
        defer { close(listening) }
        let door = try broker.subscribe("doorgateway/front-door/#", as: MosquittoBroker.doorID)
        let config = try configFile()

        let r = try Run.gatewayctl(["config", "check", "--broker", "--socket", socketPath, config])
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(
            r.stderr.contains("broker: gatewayd is running (its control socket \(socketPath) answers)"), r.stderr)
        XCTAssertTrue(r.stderr.contains("systemctl stop gatewayd"), r.stderr)
        XCTAssertFalse(r.stdout.contains("broker: connected"), r.stdout)
        XCTAssertTrue(door.isRunning)
        XCTAssertFalse(broker.log.contains("already connected, closing old connection"), broker.log)

        // Asked to anyway, it is the door, and the broker closes the door's connection for it.
        _ = try Run.gatewayctl(["config", "check", "--broker", "--while-running", "--socket", socketPath, config])
        XCTAssertTrue(
            broker.log.contains("Client front-door already connected, closing old connection"), broker.log)
    }

    /// A listening Unix socket standing for gatewayd's control socket.
    static func listen(at path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0, UnixSocket.bind(fd, to: path) == 0, Glibc.listen(fd, 4) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        return fd
    }

    func testAPrefixTheACLDeniesFailsEvenThoughMQTT311AcknowledgesIt() throws {
        let r = try Run.gatewayctl(
            ["config", "check", "--broker", try configFile(#"topic_prefix = "elsewhere/front-door""#)])
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(
            r.stderr.contains("broker: elsewhere/front-door/check: published but not received back"), r.stderr)
        XCTAssertTrue(broker.log.contains("Denied PUBLISH"), broker.log)
    }

    func testUnderMQTT5TheRefusalIsNamed() throws {
        let r = try Run.gatewayctl(
            [
                "config", "check", "--broker",
                try configFile("protocol = \"5\"\ntopic_prefix = \"elsewhere/front-door\""),
            ])
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(r.stderr.contains("refused"), r.stderr)
    }

    func testAForeignCertificateFails() throws {
        let r = try Run.gatewayctl(["config", "check", "--broker", try configFile(certificate: "intruder")])
        XCTAssertEqual(r.status, 1, r.stdout)
        XCTAssertTrue(r.stderr.hasPrefix("broker: "), r.stderr)
    }
}
