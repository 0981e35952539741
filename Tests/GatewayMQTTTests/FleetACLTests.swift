import Foundation
import TestSupport
import XCTest

/// The fleet's lines of the shipped ACL (docs/fleet.md "Broker ACL"): every
/// door reads every door's fleet topic; a door writes only its own; Home
/// Assistant and phones write none. Denials are checked on the receiving
/// side, after a permitted marker sent later has arrived (MQTT 3.1.1
/// acknowledges a denied publish).
final class FleetACLTests: XCTestCase {
    func testDoorsReadEveryFleetTopicAndWriteOnlyTheirOwn() throws {
        let broker = try MosquittoBroker()
        defer { broker.stop() }
        try broker.start()
        let front = "doorgateway/front-door/fleet/main-site", back = "doorgateway/back-door/fleet/main-site"
        // A third door listens: the writers' certificates must stay free (one
        // connection per certificate, its CN being the client id).
        let atSide = try broker.subscribe("doorgateway/+/fleet/main-site", as: "side-door")

        for (topic, who) in [
            (front, "back-door"), (front, "homeassistant"), (back, "homeassistant"), (front, "phone-alice"),
        ] {
            XCTAssertEqual(try broker.publish(topic, "forged-by-\(who)", retain: true, as: who).status, 0)
        }
        XCTAssertEqual(try broker.publish(back, "doc-of-back-door", retain: true, as: "back-door").status, 0)
        XCTAssertEqual(try broker.publish(front, "doc-of-front-door", retain: true, as: "front-door").status, 0)
        let lines = atSide.wait { $0.contains { $0.hasSuffix("|doc-of-front-door") } }
        XCTAssertEqual(
            lines.sorted(),
            ["\(back)|0|doc-of-back-door", "\(front)|0|doc-of-front-door"], "only each door's own document")

        // Retained: a door connecting later reads both, and nothing forged.
        let later = try broker.subscribe("doorgateway/+/fleet/main-site", as: "back-door")
        let retained = later.wait { $0.count >= 2 }
        XCTAssertEqual(retained.sorted(), ["\(back)|1|doc-of-back-door", "\(front)|1|doc-of-front-door"])
    }
}
