import DoorCore
import XCTest

@testable import OSDP

/// The poll cycle (make bench's OSDP row, docs/reliability.md "OSDP card to relay"): a command
/// every `pollInterval` from the previous one's send, so a reply's round trip (frame times at
/// 9600 baud, a reader's own latency) does not stretch the time a card waits for its poll.
final class PollCycleTests: XCTestCase {
    let scbk: [UInt8] = Array(0x60...0x6F)

    func testTheNextPollIsAPollIntervalAfterTheLastSendNotAfterItsReply() throws {
        var cp = ControlPanel(.init(address: 1, security: .required(scbk: scbk))) { _ in Array(0xB0...0xB7) }
        var reader = TestReader(scbk: scbk)
        var now: UInt64 = 1000
        var sends: [UInt64] = []
        // Every reply comes 30 ms after its command (a slow line or reader).
        for step in 0..<10 {
            let out = step == 0 ? cp.start(now: now) : cp.tick(now: now)
            if let bytes = out.send {
                sends.append(now)
                if let reply = reader.answer(bytes) {
                    now += 30
                    _ = cp.received(reply, now: now)
                }
            }
            now = max(now, cp.nextDeadline)
        }
        XCTAssertTrue(cp.isSecure && cp.isOnline)
        XCTAssertEqual(reader.commandErrors, [])
        let gaps = zip(sends, sends.dropFirst()).map { $1 - $0 }
        XCTAssertEqual(Array(gaps.suffix(5)), [50, 50, 50, 50, 50], "sends at \(sends)")

        // A reply slower than the interval: the next command at once, not 50 ms after it.
        let out = cp.tick(now: now)
        let bytes = try XCTUnwrap(out.send)
        let reply = try XCTUnwrap(reader.answer(bytes))
        now += 80
        _ = cp.received(reply, now: now)
        XCTAssertEqual(cp.nextDeadline, now)
    }
}
