import DoorCore
import Logging
import RemoteLink
import Synchronization
import TestSupport
import XCTest

/// The link core MQTT and NATS compose: the documents re-sent at each
/// connect, the event and telemetry bytes both publish, and the counters and
/// error notes status shows.
final class LinkCoreTests: XCTestCase {
    private func core(_ outbox: any Outbox = MemoryOutbox(), log: LogCapture = LogCapture()) -> LinkCore {
        LinkCore(
            name: "mqtt", deviceID: "front-door", outbox: outbox, log: log.logger,
            kept: ["door/state", "door/last_access"])
    }

    /// What a reconnect re-sends: the door state and the last access first
    /// (once there is one), then the others in the order first kept, each
    /// topic's newest only; an empty document is sent too (it clears a
    /// retained topic).
    func testKeptDocumentsAreResentNewestFirstKeptOrderStateAhead() {
        let kept = core().kept
        var sent: [String] = []
        let record: (String, [UInt8]) -> Void = { sent.append("\($0)=\(String(decoding: $1, as: UTF8.self))") }
        kept.keep(Array("t1".utf8), on: "door/tags", send: record)
        kept.keep(Array("s1".utf8), on: "door/state", send: record)
        kept.keep(Array("a1".utf8), on: "door/admin/state", send: record)
        kept.keep(Array("t2".utf8), on: "door/tags", send: record)
        kept.keep([], on: "door/denied", send: record)
        kept.keep(Array("s2".utf8), on: "door/state", send: record)
        XCTAssertEqual(
            sent,
            ["door/tags=t1", "door/state=s1", "door/admin/state=a1", "door/tags=t2", "door/denied=", "door/state=s2"],
            "each document is handed on as it is kept")
        sent = []
        kept.resend(record)
        XCTAssertEqual(sent, ["door/state=s2", "door/tags=t2", "door/admin/state=a1", "door/denied="])
    }

    /// The event both transports publish, byte for byte (docs/mqtt.md), and
    /// its outbox class: access events are kept longest.
    func testEventMessageIsTheDocumentedBytes() throws {
        let core = core()
        let granted = DoorEvent(.accessGranted, reason: "valid_v2", action: 0, source: "reader")
        let message = core.eventMessage(
            on: "door/event", granted, at: 1_700_000_000, uidText: "04A1B2C3D4E5F6", label: "Alice")
        XCTAssertEqual(message.topic, "door/event")
        XCTAssertEqual(message.messageClass, .access)
        XCTAssertFalse(message.retain)
        XCTAssertEqual(
            String(decoding: message.make(7), as: UTF8.self),
            #"{"seq":7,"time":"2023-11-14T22:13:20Z","device":"front-door","kind":"access_granted","#
                + #""event_type":"access_granted","reason":"valid_v2","action":0,"uid":"04A1B2C3D4E5F6","#
                + #""label":"Alice","source":"reader"}"#)
        let revoked = core.eventMessage(on: "door/event", DoorEvent(.tagRevoked), at: 1, uidText: nil, label: "")
        XCTAssertEqual(revoked.messageClass, .event)
        // A duress PIN's silent alarm and a fire alarm are kept as long as access
        // events: a coercer who cuts the network must not evict the alarm first.
        for kind in [DoorEvent.Kind.duress, .fireAlarm] {
            XCTAssertEqual(
                core.eventMessage(on: "door/event", DoorEvent(kind), at: 1, uidText: nil, label: nil).messageClass,
                .access, "\(kind)")
        }
        XCTAssertEqual(
            String(decoding: revoked.make(8), as: UTF8.self),
            #"{"seq":8,"time":"1970-01-01T00:00:01Z","device":"front-door","kind":"tag_revoked","event_type":"tag_revoked"}"#
        )
    }

    /// Telemetry: `seq` and `time` ahead of the fields, committed by the
    /// committer, retained only where the transport asks for it.
    func testTelemetryIsQueuedWithSeqAndTimeFirst() throws {
        let outbox = MemoryOutbox()
        let core = core(outbox)
        core.queueTelemetry(on: "door/telemetry", retain: true, [("uptime_s", .int(5))], at: 1_700_000_000)
        XCTAssertEqual(core.committer.queuedCount, 1)
        try core.committer.start(name: "test.commit") { round in core.commit(round) }
        defer {
            core.committer.requestStop()
            XCTAssertTrue(core.committer.waitStopped(within: .seconds(30)))
        }
        XCTAssertTrue(try waitUntil { (try? outbox.depth()) == 1 })
        let row = try XCTUnwrap(outbox.waiting(after: 0, limit: 1).first)
        XCTAssertEqual(row.topic, "door/telemetry")
        XCTAssertTrue(row.retain)
        XCTAssertEqual(
            String(decoding: row.payload, as: UTF8.self), #"{"seq":1,"time":"2023-11-14T22:13:20Z","uptime_s":5}"#)
    }

    final class BrokenOutbox: Outbox, Sendable {
        struct Refused: Error, CustomStringConvertible { var description: String { "disk I/O error" } }
        func commit(_ messages: [OutgoingMessage]) throws { throw Refused() }
        func waiting(after seq: Int64, limit: Int) throws -> [OutboxRow] { throw Refused() }
        func acknowledge(_ seqs: [Int64]) throws { throw Refused() }
        func depth() throws -> Int { throw Refused() }
    }

    /// Status counts what the outbox took; a store that refuses is the last
    /// error (named by the transport in the log), never a crash or a count.
    func testCountersAndErrorNotes() throws {
        let outbox = MemoryOutbox()
        let core = core(outbox)
        try outbox.commit([
            core.eventMessage(on: "door/event", DoorEvent(.exitRequest), at: 1, uidText: nil, label: nil)
        ])
        core.update {
            $0.connected = true
            $0.published += 1
        }
        XCTAssertTrue(core.acknowledge([1]))
        core.noteDenied("door/event: Not authorized", log: "the broker refused the publish to door/event")
        var status = core.status(queued: 2).json
        XCTAssertEqual(status["connected"], .bool(true))
        XCTAssertEqual(status["outbox"], .int(2), "no row waits; two queued")
        XCTAssertEqual(status["published"], .int(1))
        XCTAssertEqual(status["acknowledged"], .int(1))
        XCTAssertEqual(status["denied"], .int(1))
        XCTAssertEqual(status["last_denied"], .string("door/event: Not authorized"))

        let log = LogCapture()
        let broken = self.core(BrokenOutbox(), log: log)
        XCTAssertFalse(broken.acknowledge([1]))
        XCTAssertEqual(broken.lastError, "outbox: disk I/O error")
        status = broken.status(queued: 0).json
        XCTAssertEqual(status["outbox"], .int(0), "a store that cannot say counts as empty")
        XCTAssertEqual(status["acknowledged"], .int(0))
        XCTAssertEqual(log.messages, ["mqtt: outbox: disk I/O error", "mqtt: outbox: disk I/O error"])
    }
}
