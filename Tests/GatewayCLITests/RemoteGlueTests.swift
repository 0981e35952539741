import DoorCore
import GatewayConfig
import Logging
import Synchronization
import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// The daemon's remote glue (issue 25 §1): the same code hands the door's
/// events to MQTT and to NATS, so it is driven here through a fake
/// `RemoteTransport` that records what it was asked.
final class RemoteGlueTests: XCTestCase {
    /// A transport that only records: each outbox message the glue asked
    /// for (with the UID text and label it passed) and each direct publish.
    final class FakeTransport: RemoteTransport {
        enum Call: Equatable {
            case entry(kind: DoorEvent.Kind, uidText: String?, label: String?)
            case tagScan(String)
            case approval(kind: DoorEvent.Kind, uidText: String?, label: String?)
        }
        let calls = Mutex<[Call]>([])

        var transportName: String { "fake" }
        func start(_ wiring: RemoteWiring) throws {}
        func stop(flushWithin: Duration) {}
        func eventEntry(_ event: DoorEvent, at time: Int64, uidText: String?, label: String?) -> OutgoingMessage {
            calls.withLock { $0.append(.entry(kind: event.kind, uidText: uidText, label: label)) }
            let cls: MessageClass = [.accessGranted, .accessDenied].contains(event.kind) ? .access : .event
            return OutgoingMessage(topic: "fake/event", class: cls, created: time) { seq in Array("\(seq)".utf8) }
        }
        func outboxCommitted() {}
        func publishTelemetry(_ fields: [(String, JSONValue)], at time: Int64) {}
        func publishState(_ state: JSONValue) {}
        func publishLastAccess(_ access: JSONValue) {}
        func publishTagScan(uidText: String) { calls.withLock { $0.append(.tagScan(uidText)) } }
        func publishReport(_ report: JSONValue) {}
        func publishApproval(_ event: DoorEvent, at time: Int64, uidText: String?, label: String?) {
            calls.withLock { $0.append(.approval(kind: event.kind, uidText: uidText, label: label)) }
        }
        var isConnected: Bool { false }
        var transportStatus: TransportStatus {
            TransportStatus(
                connected: false, lastError: nil, outboxDepth: 0, published: 0, acknowledged: 0, denied: 0,
                lastDenied: nil)
        }
        func publishFleet(_ document: [UInt8]) -> Bool { false }
        func refreshFleet() -> Bool { false }
    }

    let uid = TagUID(hex: "04A1B2C3D4E5F6")!
    let log = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The UIDs whose label was looked up.
    final class Asked: Sendable {
        let uids = Mutex<[TagUID]>([])
    }

    /// The glue with `[mqtt] label_in_events` on, and the labels it asked for.
    private func glue(_ link: FakeTransport, _ mode: UIDInEvents, deviceKey: [UInt8]?) -> (RemoteGlue, Asked) {
        let asked = Asked()
        let uidText = RemoteService.eventUIDText(mode, transport: "fake", log: log) { deviceKey }
        let glue = RemoteGlue(
            link: link, uidText: uidText,
            label: { uid in
                asked.uids.withLock { $0.append(uid) }
                return "front door key"
            })
        return (glue, asked)
    }

    func testAStickerPresentedIsAnEventWithItsUIDAndLabelAndATagScan() throws {
        for kind in [DoorEvent.Kind.accessGranted, .accessDenied] {
            let link = FakeTransport()
            let (glue, asked) = glue(link, .full, deviceKey: nil)
            let event = DoorEvent(kind, uid: uid)
            let message = glue.outboxMessage(for: event, at: 1_700_000_000)
            glue.published(event)
            XCTAssertEqual(message.topic, "fake/event", "the transport's own entry")
            XCTAssertEqual(message.messageClass, .access)
            XCTAssertEqual(
                link.calls.withLock { $0 },
                [.entry(kind: kind, uidText: uid.hex, label: "front door key"), .tagScan(uid.hex)], "\(kind)")
            XCTAssertEqual(asked.uids.withLock { $0 }, [uid])
        }
    }

    func testOtherEventsKeepTheirUIDButAskNoLabelAndAreNoTagScan() throws {
        let link = FakeTransport()
        let (glue, asked) = glue(link, .full, deviceKey: nil)
        for event in [DoorEvent(.tagRevoked, uid: uid), DoorEvent(.exitRequest)] {
            _ = glue.outboxMessage(for: event, at: 1_700_000_000)
            glue.published(event)
        }
        XCTAssertEqual(
            link.calls.withLock { $0 },
            [
                .entry(kind: .tagRevoked, uidText: uid.hex, label: nil),
                .entry(kind: .exitRequest, uidText: nil, label: nil),
            ])
        XCTAssertEqual(asked.uids.withLock { $0 }, [], "a label is looked up for events naming a tap only")
    }

    /// docs/policy.md "Approval": an approval request names a tap, so it
    /// carries the label (`label_in_events`) on either transport; it is no
    /// tag scan (the tap's own scan comes with its access event).
    func testApprovalEventsCarryTheLabelButAreNoTagScan() throws {
        let link = FakeTransport()
        let (glue, asked) = glue(link, .full, deviceKey: nil)
        for kind in [DoorEvent.Kind.approvalRequested, .approvalGranted, .approvalDenied, .approvalTimedOut] {
            let event = DoorEvent(kind, action: 0, uid: uid, code: "K7M2QX")
            _ = glue.outboxMessage(for: event, at: 1_700_000_000)
            glue.published(event)
        }
        _ = glue.outboxMessage(for: DoorEvent(.approvalRefused, reason: "unknown_request", code: "ABCDEF"), at: 1)
        XCTAssertEqual(
            link.calls.withLock { $0 },
            [
                .entry(kind: .approvalRequested, uidText: uid.hex, label: "front door key"),
                .entry(kind: .approvalGranted, uidText: uid.hex, label: "front door key"),
                .entry(kind: .approvalDenied, uidText: uid.hex, label: "front door key"),
                .entry(kind: .approvalTimedOut, uidText: uid.hex, label: "front door key"),
                .entry(kind: .approvalRefused, uidText: nil, label: nil),
            ])
        XCTAssertEqual(asked.uids.withLock { $0 }, [uid, uid, uid, uid])
    }

    /// Approval events reach whichever transport through its port (MQTT
    /// puts them on `…/approval` for HA's event entity, NATS has no place of
    /// its own): the daemon casts to no concrete link. Other events are not
    /// handed over, and no label is looked up for them.
    func testApprovalEventsGoToTheTransportsOwnPlaceThroughItsPort() throws {
        let link = FakeTransport()
        let (glue, asked) = glue(link, .full, deviceKey: nil)
        let publish = RemoteService.approvalPublisher(link, uidText: glue.uidText, label: glue.label)
        publish(DoorEvent(.accessGranted, uid: uid), 1_700_000_000)
        publish(DoorEvent(.approvalRequested, action: 0, uid: uid, code: "K7M2QX"), 1_700_000_001)
        publish(DoorEvent(.approvalRefused, reason: "unknown_request", code: "ABCDEF"), 1_700_000_002)
        XCTAssertEqual(
            link.calls.withLock { $0 },
            [.approval(kind: .approvalRequested, uidText: uid.hex, label: "front door key")])
        XCTAssertEqual(asked.uids.withLock { $0 }, [uid], "the label of the approval request's tap only")
    }

    /// Issue 24 L3 on either transport: hashed UIDs without a device key
    /// are withheld from the event, and no tag scan goes out at all.
    func testHashedUIDsWithoutADeviceKeyAreWithheldAndNoTagScanIsSent() throws {
        let link = FakeTransport()
        let (glue, _) = glue(link, .hmac, deviceKey: nil)
        let event = DoorEvent(.accessGranted, uid: uid)
        _ = glue.outboxMessage(for: event, at: 1_700_000_000)
        glue.published(event)
        XCTAssertEqual(
            link.calls.withLock { $0 }, [.entry(kind: .accessGranted, uidText: nil, label: "front door key")])

        let keyed = FakeTransport()
        let (withKey, _) = self.glue(keyed, .hmac, deviceKey: [UInt8](repeating: 7, count: 32))
        _ = withKey.outboxMessage(for: event, at: 1_700_000_000)
        withKey.published(event)
        let calls = keyed.calls.withLock { $0 }
        guard case .entry(_, let text?, _) = calls.first, calls.count == 2 else {
            return XCTFail("an event with the hashed UID, then its scan: \(calls)")
        }
        XCTAssertNotEqual(text, uid.hex)
        XCTAssertEqual(calls.last, .tagScan(text), "the scan names the tag as the event does")
    }

    func testWithoutLabelInEventsNoLabelIsLookedUp() throws {
        let link = FakeTransport()
        let glue = RemoteGlue(
            link: link, uidText: RemoteService.eventUIDText(.full, transport: "fake", log: log) { nil }, label: nil)
        _ = glue.outboxMessage(for: DoorEvent(.accessGranted, uid: uid), at: 1_700_000_000)
        XCTAssertEqual(link.calls.withLock { $0 }, [.entry(kind: .accessGranted, uidText: uid.hex, label: nil)])
    }

    /// `status`'s `broker` object: the fields both transports report, in
    /// one order, then the transport's own.
    func testStatusHasTheCommonFieldsThenTheTransportsOwn() throws {
        var status = TransportStatus(
            connected: true, lastError: "x", outboxDepth: 3, published: 5, acknowledged: 4, denied: 1,
            lastDenied: "door/event: not authorised")
        let keys = [
            "enabled", "connected", "outbox", "published", "acknowledged", "last_error", "denied", "last_denied",
        ]
        guard case .object(let common) = status.json else { return XCTFail("\(status.json)") }
        XCTAssertEqual(common.map(\.0), keys)
        XCTAssertEqual(status.json["outbox"], .int(3))
        XCTAssertEqual(status.json["last_denied"], .string("door/event: not authorised"))
        status.details = [("transport", .string("nats")), ("reconnects", .int(2))]
        guard case .object(let all) = status.json else { return XCTFail("\(status.json)") }
        XCTAssertEqual(all.map(\.0), keys + ["transport", "reconnects"])
        XCTAssertEqual(status.json["transport"], .string("nats"))
    }
}
