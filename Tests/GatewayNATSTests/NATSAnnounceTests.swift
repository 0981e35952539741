import DoorCore
import Foundation
import Synchronization
@testable import GatewayNATS
import TestSupport
import XCTest

/// A (re)connect re-sends the kept documents from the committer thread while
/// the fleet thread may hold the connection lock for seconds (JetStream
/// requests of up to its ack timeout each). The door's queue keeps a newer
/// document on every state change and grant: it must never wait for that.
final class NATSAnnounceTests: XCTestCase {
    func testKeepingADocumentNeverWaitsForTheConnectionLockWhileAConnectReSendsThem() throws {
        let server = try NATSServer()
        try server.start()
        let log = LogCapture()
        let link = NATSLink(
            settings: server.settings(refreshFraction: 0.75, jetStream: false), deviceID: NATSServer.device,
            outbox: MemoryOutbox(), log: log.logger)
        try link.start(RemoteWiring(commands: RecordingHandler()))
        defer { link.stop() }
        XCTAssertTrue(try waitUntil { link.isConnected }, "not connected: \(String(describing: link.status.lastError))")
        link.publishState(.object([("locked", .bool(true))]))

        // The connection lock taken again and again for 200 ms, as the fleet
        // thread's JetStream requests take it at a connect (400 ms here), while connects'
        // announcements re-send the kept documents and the door keeps newer ones.
        let stop = Atomic<Bool>(false)
        let holder = Thread {
            while !stop.load(ordering: .relaxed) {
                link.connection.withLock { _ in usleep(400_000) }
            }
        }
        holder.start()
        defer { stop.store(true, ordering: .relaxed) }
        var longestMs = 0.0
        for round in 0..<15 {
            link.queue.update { $0.announce = true }
            link.core.committer.wake()
            for _ in 0..<10 {
                let t0 = DispatchTime.now().uptimeNanoseconds
                link.publishState(.object([("locked", .bool(round % 2 == 0))]))
                longestMs = max(longestMs, Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
                usleep(20_000)
            }
        }
        XCTAssertLessThan(longestMs, 250, "the door's queue waited up to \(Int(longestMs)) ms for the connection lock")
    }
}
