import Foundation
import TestSupport
import XCTest

/// `gatewayctl config check --broker` against mosquitto running the shipped
/// configuration and ACL: the door's own round trip passes, a prefix the ACL
/// does not give the door fails with the reason (under MQTT 3.1.1, where the
/// broker acknowledges the denied publish), and a foreign certificate fails at
/// the TLS handshake.
final class BrokerCheckCLITests: XCTestCase {
    var broker: MosquittoBroker!

    override func setUpWithError() throws {
        broker = try MosquittoBroker()
        try broker.start()
    }

    override func tearDown() {
        broker?.stop()
        broker = nil
    }

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
