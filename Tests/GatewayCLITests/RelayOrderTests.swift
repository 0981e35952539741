import DoorCore
import DoorIO
import Foundation
import GatewayConfig
import GatewayStore
import Logging
import Synchronization
import TestSupport
import XCTest

@testable import GatewayDaemon

/// The relay off the store's path (issue 25 §5, docs/reliability.md "What a
/// power cut keeps"): on the real store on disk, a granted tap drives the
/// relay before the audit row commits, a guest pass's use is on disk before
/// the relay moves, and the audit row (with the tag's last_seen) follows in
/// one transaction on the audit writer's queue, which a shutdown right after
/// the tap waits for.
///
/// "A power cut at the instant the relay moves" is the database's files as
/// they are then: the board (CuttingBoard) copies gateway.db and its WAL the moment
/// it is driven unlocked (every commit before it is in them, with
/// synchronous=FULL on disk), and the test opens that copy as the door would
/// after the cut.
final class RelayOrderTests: DoorRuntimeTestCase {
    struct Door {
        let runtime: DoorRuntime
        let store: GatewayStore
        let board: CuttingBoard
        let writer: AuditWriter
        let state: String
    }

    func makeDoor(pulseMs: Int = 10000) throws -> Door {
        let state = stateDirectory
        let configuration = try doorConfiguration(
            id: "relay-order", "[door]\nsame_tag_quiet_ms = 1000\n" + ConfigText.action(0, "strike", ms: pulseMs))
        let (runtime, board, store, writer) = try makeRuntime(configuration, label: "relay-order")
        runtime.start()
        runtime.committed()
        return Door(runtime: runtime, store: store, board: board, writer: writer, state: state)
    }

    /// An active v2 sticker for action 0 on `uid` (with `uses`: a guest pass).
    func issue(_ door: Door, _ uid: TagUID, uses: Int? = nil) throws -> TapFacts {
        let now = Int64(time(nil))
        let secret = try door.store.newestGeneratedSecretCreatingIfNeeded(action: 0, now: now)
        let url = StickerSigner.signV2(action: 0, timestamp: now, key: secret.key, uid: uid)
        try door.store.createPendingTag(
            uid: uid, action: 0, secretID: secret.id, label: "t", limits: TagLimits(uses: uses), now: now)
        _ = try door.store.appendAudit(
            time: now, kind: "provisioning_written", action: 0, uid: uid.hex, activating: uid.hex)
        return TapFacts(uid: uid, message: NDEFMessage(records: [.uri(url.text)]))
    }

    /// Holds the store's writer (a commit in progress) until the returned
    /// semaphore is signalled.
    func holdWriter(_ store: GatewayStore) -> DispatchSemaphore {
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? store.pool.write { _ in
                held.signal()
                release.wait()
            }
        }
        held.wait()
        return release
    }

    func granted(_ store: GatewayStore, _ uid: TagUID) throws -> Int {
        try store.auditTail(100).filter { $0.kind == "access_granted" && $0.uid == uid.hex }.count
    }

    /// A guest pass: at the relay the use is on disk and the audit row is not
    /// yet; once the door queue has run, the row is there with last_seen, and
    /// the chain verifies.
    func testGuestPassUseIsDurableAtTheRelayAndTheAuditRowFollows() throws {
        let door = try makeDoor()
        let uid = TagUID(hex: "04A1B2C3D4E501")!
        let tag = try issue(door, uid, uses: 3)

        door.runtime.readerReport(.arrived(tag))
        door.runtime.sync {}
        door.writer.flush()

        let cuts = door.board.cuts.withLock { $0 }
        XCTAssertEqual(cuts.count, 1, "one unlock for one granted tap")
        let atRelay = try GatewayStore(stateDirectory: cuts[0])
        XCTAssertEqual(try atRelay.issuedTag(uid)?.usesLeft, 2, "the use is taken on disk before the relay moves")
        XCTAssertEqual(try granted(atRelay, uid), 0, "the relay moved before the audit row committed")
        guard case .intact = try atRelay.verifyAudit() else { return XCTFail("chain of the cut copy broken") }

        XCTAssertEqual(try granted(door.store, uid), 1, "the audit row follows the relay")
        XCTAssertNotNil(try door.store.issuedTag(uid)?.lastSeen)
        XCTAssertEqual(try door.store.issuedTag(uid)?.usesLeft, 2)
        guard case .intact = try door.store.verifyAudit() else { return XCTFail("chain broken") }
    }

    /// An unlimited sticker: nothing is written before the relay (last_seen
    /// is not on disk at the relay), and last_seen commits with the audit row.
    func testLastSeenCommitsWithTheAuditRowAfterTheRelay() throws {
        let door = try makeDoor()
        let uid = TagUID(hex: "04A1B2C3D4E502")!
        let tag = try issue(door, uid)

        door.runtime.readerReport(.arrived(tag))
        door.runtime.sync {}
        door.writer.flush()

        let cuts = door.board.cuts.withLock { $0 }
        XCTAssertEqual(cuts.count, 1)
        let atRelay = try GatewayStore(stateDirectory: cuts[0])
        XCTAssertNil(try atRelay.issuedTag(uid)?.lastSeen, "no store write before the relay for an unlimited sticker")
        XCTAssertEqual(try granted(atRelay, uid), 0)

        let row = try XCTUnwrap(door.store.auditTail(100).last { $0.kind == "access_granted" })
        XCTAssertEqual(row.uid, uid.hex)
        // The tap's wall time, read when it was judged (the row's is read when recorded: a second may turn).
        let seen = try XCTUnwrap(door.store.issuedTag(uid)?.lastSeen, "last_seen committed with the audit row")
        XCTAssertTrue((row.time - 1...row.time).contains(seen), "last_seen \(seen), audit row \(row.time)")
    }

    /// The daemon stopping right after a tap (SIGTERM's shutdown) still finds
    /// the tap's audit row written.
    func testShutdownRightAfterATapKeepsItsAuditRow() throws {
        let door = try makeDoor()
        let uid = TagUID(hex: "04A1B2C3D4E503")!
        let tag = try issue(door, uid, uses: 1)

        door.runtime.readerReport(.arrived(tag))
        door.runtime.shutdown()

        XCTAssertEqual(door.board.cuts.withLock { $0.count }, 1)
        XCTAssertEqual(try granted(door.store, uid), 1, "the tap's row is written before shutdown runs")
        XCTAssertEqual(try door.store.issuedTag(uid)?.usesLeft, 0)
        guard case .intact = try door.store.verifyAudit() else { return XCTFail("chain broken") }
        XCTAssertEqual(door.board.snapshot().outputs["strike"]?.state, .locked, "shutdown locked the strike")
    }

    /// The door does not wait for the audit commit: with the store's writer
    /// held (as by a slow commit in flight), a granted tap still moves the
    /// relay and its 50 ms pulse still ends; the row commits once the writer
    /// is free.
    func testTheDoorDoesNotWaitForTheAuditCommit() throws {
        let door = try makeDoor(pulseMs: 50)
        let uid = TagUID(hex: "04A1B2C3D4E505")!
        let tag = try issue(door, uid)
        let unlocked = expectation(description: "strike unlocked")
        let locked = expectation(description: "strike locked again")
        door.board.driven.withLock {
            $0 = { state in state == .unlocked ? unlocked.fulfill() : locked.fulfill() }
        }
        let release = holdWriter(door.store)
        var released = false
        defer { if !released { release.signal() } }

        door.runtime.readerReport(.arrived(tag))
        wait(for: [unlocked, locked], timeout: 10, enforceOrder: true)
        XCTAssertEqual(try granted(door.store, uid), 0, "the row waits for the writer")

        release.signal()
        released = true
        door.writer.flush()
        XCTAssertEqual(try granted(door.store, uid), 1)
        XCTAssertNotNil(try door.store.issuedTag(uid)?.lastSeen)
        guard case .intact = try door.store.verifyAudit() else { return XCTFail("chain broken") }
    }

    /// `committed()` (the barrier a control request and Home Assistant's admin
    /// screen wait on) returns only once the tap's row is durable: not while
    /// the store's writer is held, though the door queue has long handed the
    /// event on (the relay moved and locked again), and at once after.
    func testCommittedWaitsForTheTapsAuditRow() throws {
        let door = try makeDoor(pulseMs: 50)
        let uid = TagUID(hex: "04A1B2C3D4E506")!
        let tag = try issue(door, uid)
        let locked = expectation(description: "strike locked again")
        door.board.driven.withLock { $0 = { state in if state == .locked { locked.fulfill() } } }
        let release = holdWriter(door.store)
        var released = false
        defer { if !released { release.signal() } }

        door.runtime.readerReport(.arrived(tag))
        let returned = Mutex(false)
        let committed = expectation(description: "committed() returned")
        DispatchQueue.global().async {
            door.runtime.committed()
            returned.withLock { $0 = true }
            committed.fulfill()
        }
        wait(for: [locked], timeout: 10)
        XCTAssertFalse(returned.withLock { $0 }, "committed() returned while the tap's row could not be written")

        release.signal()
        released = true
        wait(for: [committed], timeout: 10)
        XCTAssertEqual(try granted(door.store, uid), 1, "the tap's row is durable once committed() returns")
    }

    /// A sticker just written is active before the door judges its next tap:
    /// `provisioning_written` activates the row in its audit transaction, and
    /// that write waits for its commit. Here the store's writer is held while
    /// the event is recorded and the new sticker is presented; with the
    /// commit left to follow (as every other event's), the tap was judged on
    /// the pending row and denied (seen: the fault suite's flood, a loaded
    /// host, "no strike pulse").
    func testAStickerJustWrittenOpensOnItsNextTap() throws {
        let door = try makeDoor(pulseMs: 50)
        let uid = TagUID(hex: "04A1B2C3D4E507")!
        let now = Int64(time(nil))
        let secret = try door.store.newestGeneratedSecretCreatingIfNeeded(action: 0, now: now)
        try door.store.createPendingTag(
            uid: uid, action: 0, secretID: secret.id, label: "new", limits: TagLimits(), now: now)
        let url = StickerSigner.signV2(action: 0, timestamp: now, key: secret.key, uid: uid)
        let tag = TapFacts(uid: uid, message: NDEFMessage(records: [.uri(url.text)]))
        let release = holdWriter(door.store)
        door.runtime.note(DoorEvent(.provisioningWritten, action: 0, uid: uid))
        door.runtime.readerReport(.arrived(tag))
        // Long enough for the door queue to judge the tap if nothing holds it.
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { release.signal() }
        door.runtime.committed()
        XCTAssertEqual(try granted(door.store, uid), 1, "the new sticker's first tap opens")
        XCTAssertEqual(try door.store.issuedTag(uid)?.state, .active)
    }

    /// The machine lists a tap's effects in the order they must run and the
    /// runtime runs them in that order (issue 34 Move A): the relay first,
    /// then the granted pattern (its buzzer; the idle heartbeat never sounds
    /// it), then the audit record. Before, the pattern played before the relay
    /// moved, and events were held back by the runtime instead.
    func testTheRelayMovesBeforeTheFeedbackAndTheEvent() throws {
        let door = try makeDoor()
        let uid = TagUID(hex: "04A1B2C3D4E508")!
        let tag = try issue(door, uid)
        door.board.trace.withLock { $0 = [] }

        door.runtime.readerReport(.arrived(tag))
        door.runtime.sync {}

        let trace = door.board.trace.withLock { $0 }
        let relay = try XCTUnwrap(trace.firstIndex(of: "drive strike unlocked"), "\(trace)")
        let beep = try XCTUnwrap(trace.firstIndex { $0.hasPrefix("indicators") && $0.contains("buzzer") }, "\(trace)")
        let event = try XCTUnwrap(trace.firstIndex(of: "audit access_granted"), "\(trace)")
        XCTAssertLessThan(relay, beep, "the relay before the granted pattern: \(trace)")
        XCTAssertLessThan(relay, event, "the relay before the event: \(trace)")
        XCTAssertLessThan(beep, event, "the pattern as listed, before the event: \(trace)")
    }

    /// A denied tap moves nothing and is audited as before.
    func testADeniedTapIsAudited() throws {
        let door = try makeDoor()
        let uid = TagUID(hex: "04A1B2C3D4E504")!
        var tag = try issue(door, uid, uses: 1)
        tag.uid = TagUID(hex: "04A1B2C3D4E5FF")!  // a copy on another UID

        door.runtime.readerReport(.arrived(tag))
        door.runtime.sync {}
        door.writer.flush()

        XCTAssertEqual(door.board.cuts.withLock { $0.count }, 0)
        XCTAssertEqual(try door.store.auditTail(100).filter { $0.kind == "access_denied" }.count, 1)
        XCTAssertEqual(try door.store.issuedTag(uid)?.usesLeft, 1, "a denial takes no use")
    }
}
