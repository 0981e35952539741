import DoorCore
import RemoteLink
import Synchronization
import TestSupport
import XCTest

/// The committer MQTT and NATS share: group commit, the counts status
/// shows, flushes and wake-ups, and a stop that commits what was queued.
/// Every wait is on an event (a round recorded); the timeouts only end a
/// test that already failed.
final class OutboxCommitterTests: XCTestCase {
    /// What the rounds saw, for the test thread to wait on.
    final class Rounds: Sendable {
        struct Seen {
            var batches: [Int] = []
            var flushes: [Bool] = []
        }
        let seen = Condition(Seen())
        func record(_ round: OutboxCommitter.Round) {
            seen.update {
                $0.batches.append(round.batch.count)
                $0.flushes.append(round.flushRequested)
            }
        }
        func wait(for count: Int) -> Seen? {
            guard seen.wait(for: .seconds(30), until: { $0.batches.count >= count }) else { return nil }
            return seen.read { $0 }
        }
    }

    private func message(_ n: Int, _ cls: MessageClass = .event) -> OutgoingMessage {
        OutgoingMessage(topic: "door/event", class: cls, created: Int64(n)) { seq in Array("\(n)@\(seq)".utf8) }
    }

    func testWhatIsQueuedBeforeARoundIsCommittedInOneTransactionInOrder() throws {
        let outbox = MemoryOutbox()
        let committer = OutboxCommitter(outbox: outbox)
        let rounds = Rounds()
        for n in 1...3 { committer.enqueue(message(n)) }
        XCTAssertEqual(committer.queuedCount, 3)
        try committer.start(name: "test.commit") { round in
            XCTAssertNil(committer.commit(round))
            rounds.record(round)
        }
        defer {
            committer.requestStop()
            XCTAssertTrue(committer.waitStopped(within: .seconds(30)))
        }
        let seen = try XCTUnwrap(rounds.wait(for: 1))
        XCTAssertEqual(seen.batches, [3], "one round, one commit")
        XCTAssertEqual(
            try outbox.waiting(after: 0, limit: 10).map { String(decoding: $0.payload, as: UTF8.self) },
            ["1@1", "2@2", "3@3"])
        XCTAssertEqual(committer.queuedCount, 0)
    }

    /// `queuedCount` (status' and telemetry's outbox depth) counts what a
    /// round holds until it is committed: nothing is unaccounted for in between.
    func testMessagesBeingCommittedStillCount() throws {
        let outbox = MemoryOutbox()
        let committer = OutboxCommitter(outbox: outbox)
        let gate = Condition((inRound: false, open: false))
        committer.enqueue(message(1))
        committer.enqueue(message(2))
        try committer.start(name: "test.count") { round in
            gate.update { $0.inRound = true }
            gate.wait(until: { $0.open }, then: { _ in })
            _ = committer.commit(round)
            gate.update { $0.inRound = false }
        }
        defer {
            committer.requestStop()
            XCTAssertTrue(committer.waitStopped(within: .seconds(30)))
        }
        XCTAssertTrue(gate.wait(for: .seconds(30)) { $0.inRound })
        XCTAssertEqual(try outbox.depth(), 0)
        XCTAssertEqual(committer.queuedCount, 2, "taken by the round, not yet committed")
        gate.update { $0.open = true }
        XCTAssertTrue(gate.wait(for: .seconds(30)) { !$0.inRound })
        XCTAssertEqual(try outbox.depth(), 2)
        XCTAssertEqual(committer.queuedCount, 0)
    }

    func testAFlushOrAWakeRunsARoundWithNothingToCommit() throws {
        let committer = OutboxCommitter(outbox: MemoryOutbox())
        let rounds = Rounds()
        try committer.start(name: "test.flush") { round in rounds.record(round) }
        defer {
            committer.requestStop()
            XCTAssertTrue(committer.waitStopped(within: .seconds(30)))
        }
        committer.requestFlush()
        XCTAssertEqual(rounds.wait(for: 1)?.flushes, [true])
        committer.wake()
        XCTAssertEqual(rounds.wait(for: 2)?.flushes, [true, false])
        XCTAssertEqual(rounds.wait(for: 2)?.batches, [0, 0])
    }

    /// Stopping commits what was queued first, and waits for the link's own
    /// work (`drained`: MQTT's acknowledgements) before the thread ends.
    func testStopCommitsWhatIsQueuedAndWaitsUntilTheLinkIsDrained() throws {
        let outbox = MemoryOutbox()
        let committer = OutboxCommitter(outbox: outbox)
        // Two rounds of the link's own work: the first round (the batch) does
        // one, and the thread must run another for the second before it ends.
        let linkWork = Mutex(2)
        committer.enqueue(message(1, .access))
        committer.enqueue(message(2))
        committer.requestStop()
        try committer.start(name: "test.stop", drained: { linkWork.withLock { $0 == 0 } }) { round in
            _ = committer.commit(round)
            linkWork.withLock { $0 = max(0, $0 - 1) }
        }
        XCTAssertTrue(committer.waitStopped(within: .seconds(30)))
        XCTAssertEqual(try outbox.depth(), 2, "nothing queued is lost at stop")
        XCTAssertEqual(linkWork.withLock { $0 }, 0, "the link's work was done before the end")
        XCTAssertEqual(committer.queuedCount, 0)
    }

    struct Full: Error, CustomStringConvertible {
        var description: String { "database or disk is full" }
    }
    final class FailingOutbox: Outbox {
        func commit(_ messages: [OutgoingMessage]) throws { throw Full() }
        func waiting(after seq: Int64, limit: Int) throws -> [OutboxRow] { [] }
        func acknowledge(_ seqs: [Int64]) throws {}
        func depth() throws -> Int { 0 }
    }

    func testAFailedCommitIsSaidAndNotCountedAsQueued() throws {
        let committer = OutboxCommitter(outbox: FailingOutbox())
        let failures = Condition([String]())
        committer.enqueue(message(1))
        committer.enqueue(message(2))
        try committer.start(name: "test.fail") { round in
            if let failure = committer.commit(round) { failures.update { $0.append(failure) } }
        }
        defer {
            committer.requestStop()
            XCTAssertTrue(committer.waitStopped(within: .seconds(30)))
        }
        XCTAssertTrue(failures.wait(for: .seconds(30)) { !$0.isEmpty })
        XCTAssertEqual(
            failures.read { $0 }, ["outbox commit of 2 messages failed: database or disk is full"])
        XCTAssertEqual(committer.queuedCount, 0)
    }
}
