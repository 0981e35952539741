import DoorCore
import Foundation
import GatewayMQTT
import GatewayStore
import Logging
import Synchronization
import TestSupport
import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// The daemon's side of remote commands and the outbox, on a real store:
/// what `MQTTLink` hands in is judged by the core with the store's key, and
/// the replay record is saved before the door hears of an accepted command.
final class StoreCommandsTests: TemporaryDirectoryTestCase {
    var dir: String!
    let compatKey = Hex.decode("000102030405060708090a0b0c0d0e0f")!

    override func setUpWithError() throws { dir = try temporaryDirectory("store-commands").path }

    final class Submitted: Sendable {
        private let items = Mutex<[RemoteOutcome]>([])
        var list: [RemoteOutcome] { items.withLock { $0 } }
        func add(_ o: RemoteOutcome) { items.withLock { $0.append(o) } }

        /// A number read from the commands queue and set by the test.
        final class Count: Sendable {
            private let n: Mutex<Int>
            init(_ n: Int) { self.n = Mutex(n) }
            var value: Int {
                get { n.withLock { $0 } }
                set { n.withLock { $0 = newValue } }
            }
        }
    }

    func handler(_ store: GatewayStore, _ submitted: Submitted) throws -> StoreCommands {
        try StoreCommands(
            store: store,
            policy: RemotePolicy(commands: CommandJudge(deviceID: "front-door"), homeAssistantOpen: false),
            actionCount: { 4 }, clockSynchronised: { true }, submit: { submitted.add($0) }, log: Logger(label: "test"))
    }

    /// What the transport's thread does, then waits for the commands queue.
    func receive(_ h: StoreCommands, _ message: RemoteMessage) {
        h.received(message)
        h.queue.sync {}
    }

    /// The transport's thread hands the message over and goes on; the
    /// outcomes come in the order the messages did.
    func testMessagesAreJudgedOffTheTransportThreadInOrder() throws {
        let store = try GatewayStore(stateDirectory: dir)
        try store.setKey(.compatTimestamp, compatKey, now: 0)
        let submitted = Submitted()
        let h = try handler(store, submitted)
        var messages: [RemoteMessage] = []
        for i in 0..<20 {
            let block = try OTPBlock.make(
                timestamp: UInt32(time(nil)), random: try Crypto.randomBytes(11), key: compatKey)
            // Commands 1 and 2 (actions 0 and 1) alternating; every tenth a replay of the one before.
            let payload =
                i % 10 == 9
                ? messages[i - 1].payload : Array(#"{"command": \#(1 + i % 2), "otp-auth": "\#(block)"}"#.utf8)
            messages.append(RemoteMessage(channel: .compat, payload: payload, retained: false))
        }
        h.queue.suspend()
        for m in messages { h.received(m) }
        XCTAssertTrue(submitted.list.isEmpty, "nothing judged on the calling thread")
        h.queue.resume()
        h.queue.sync {}
        XCTAssertEqual(submitted.list.count, 20)
        for (i, outcome) in submitted.list.enumerated() {
            if i % 10 == 9 {
                XCTAssertEqual(code(outcome), "replay", "message \(i)")
            } else {
                XCTAssertEqual(outcome, .accepted(.action(i % 2), source: .compat), "message \(i)")
            }
        }
    }

    func testTheReplayRecordIsSavedAndSurvivesARestart() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let submitted = Submitted()
        let block = try OTPBlock.make(
            timestamp: UInt32(time(nil)), random: try Crypto.randomBytes(11), key: compatKey)
        let message = RemoteMessage(
            channel: .compat, payload: Array(#"{"command": 1, "otp-auth": "\#(block)"}"#.utf8), retained: false)
        receive(try handler(store, submitted), message)
        XCTAssertEqual(submitted.list.last.flatMap(code), "no_key", "no timestamp key yet")
        try store.setKey(.compatTimestamp, compatKey, now: 0)
        receive(try handler(store, submitted), message)
        XCTAssertEqual(submitted.list.last, .accepted(.action(0), source: .compat))
        XCTAssertEqual(try store.replayGuard().entries.count, 1, "saved before the door acts")
        // A new handler (a restarted daemon) reads the record back.
        let again = try handler(GatewayStore(stateDirectory: dir), submitted)
        receive(again, message)
        XCTAssertEqual(submitted.list.last.flatMap(code), "replay")
        // A device report on the shared topic reaches nobody.
        receive(again, RemoteMessage(channel: .compat, payload: Array(#"{"TT_ID":"x"}"#.utf8), retained: false))
        XCTAssertEqual(submitted.list.count, 3)
    }

    func testTheStoreOutboxNumbersBoundsAndAcknowledges() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let outbox = StoreOutbox(store: store, limit: 2)
        func message(_ cls: MessageClass) -> OutgoingMessage {
            OutgoingMessage(topic: "t/\(cls.rawValue)", class: cls, created: 0) { Array("\($0)".utf8) }
        }
        try outbox.commit([message(.telemetry), message(.access), message(.event)])
        let rows = try outbox.waiting(after: 0, limit: 10)
        XCTAssertEqual(rows.map(\.topic), ["t/access", "t/event"], "telemetry goes first over the bound")
        XCTAssertEqual(rows.map { String(decoding: $0.payload, as: UTF8.self) }, rows.map { "\($0.seq)" })
        try outbox.acknowledge([rows[0].seq])
        XCTAssertEqual(try outbox.depth(), 1)
        XCTAssertEqual(try outbox.waiting(after: rows[0].seq, limit: 10).map(\.seq), [rows[1].seq])
    }

    /// Issue 25 §3: remote commands judge the actions in effect, read at each
    /// message, so a reload that adds or removes one applies without a restart
    /// (before, the count was fixed when the link was made).
    func testTheActionCountIsReadAtEachMessage() throws {
        let store = try GatewayStore(stateDirectory: dir)
        let submitted = Submitted()
        let count = Submitted.Count(2)
        let h = try StoreCommands(
            store: store,
            policy: RemotePolicy(commands: CommandJudge(deviceID: "front-door"), homeAssistantOpen: true),
            actionCount: { count.value }, clockSynchronised: { true },
            submit: { submitted.add($0) }, log: Logger(label: "test"))
        let third = RemoteMessage(channel: .homeAssistantAction, payload: Array("2".utf8), retained: false)
        receive(h, third)
        XCTAssertEqual(submitted.list.last.flatMap(code), "unknown_action", "two actions: index 2 is unknown")
        count.value = 3
        receive(h, third)
        guard case .accepted(.action(2), _)? = submitted.list.last else {
            return XCTFail(
                "a third action configured: index 2 accepted, got \(String(describing: submitted.list.last))")
        }
        count.value = 1
        receive(h, RemoteMessage(channel: .homeAssistantAction, payload: Array("1".utf8), retained: false))
        XCTAssertEqual(submitted.list.last.flatMap(code), "unknown_action", "removed again: index 1 refused")
    }

    func code(_ o: RemoteOutcome) -> String? {
        if case .rejected(let c, _, _) = o { return c }
        return nil
    }
}
