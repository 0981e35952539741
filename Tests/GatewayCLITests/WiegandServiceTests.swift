#if canImport(Glibc)
    import Glibc
#endif
import DoorCore
import DoorIO
import Logging
import Synchronization
import TestSupport
import XCTest

@testable import GatewayConfig
@testable import GatewayDaemon

/// A Wiegand reader of `[[readers]]` in gatewayd (issue 35): its settings as the adapter takes
/// them, and its service's supervision — a reader that cannot start or whose thread ends on an
/// error is reported offline once per cause, retried, and reported back online. (The real
/// lines, a gpio-sim chip removed and added back, are the gpio VM's `check_wiegand`.)
final class WiegandServiceTests: XCTestCase {
    func testTheReadersEntryIsWhatTheAdapterTakes() throws {
        let c = try GatewayConfiguration.load(
            toml: LoaderTestsBase.text + """
                chip = "gpiochip4"
                [[readers]]
                name = "gate"
                kind = "wiegand"
                d0 = "GPIO5"
                d1 = 6
                bits = 34
                keypad_burst = 8
                frame_gap_ms = 25
                [[readers]]
                name = "shed"
                kind = "wiegand"
                chip = "gpio-sim.0"
                d0 = "GPIO5"
                d1 = "GPIO6"

                """)
        XCTAssertEqual(
            c.readers[0].wiegandLines(boardChip: c.chip),
            WiegandLines(
                name: "gate", chip: "gpiochip4", d0: .name("GPIO5"), d1: .offset(6), frameGap: .milliseconds(25),
                cardBits: 34, keypadBurst: 8))
        // Its own chip: the same line names as the other reader's, no conflict; formats unset: any.
        XCTAssertEqual(
            c.readers[1].wiegandLines(boardChip: c.chip),
            WiegandLines(
                name: "shed", chip: "gpio-sim.0", d0: .name("GPIO5"), d1: .name("GPIO6"), frameGap: .milliseconds(50)))
        XCTAssertEqual(c.wiegandReaders.map(\.name), ["gate", "shed"])
        XCTAssertNil(ReaderSettings.legacy.wiegandLines(boardChip: "gpiochip0"))
    }

    /// A fake adapter: each start throws the next of `failures` (nil: starts), and keeps the
    /// `failed` hook of the running reader.
    final class FakeStarter: Sendable {
        final class Running: StoppableReader {
            let stopped = Mutex(false)
            func stop() { stopped.withLock { $0 = true } }
        }
        let plan: Mutex<[String?]>
        let starts = Mutex(0)
        let failedHook = Mutex<(@Sendable (String) -> Void)?>(nil)
        init(_ plan: [String?]) { self.plan = Mutex(plan) }

        var starter: WiegandService.Starter {
            { [self] _, _, _, failed in
                starts.withLock { $0 += 1 }
                if let why = plan.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                    throw GPIOError.chipNotFound(spec: why, available: [])
                }
                failedHook.withLock { $0 = failed }
                return Running()
            }
        }
    }

    func testAFailedReaderIsReportedOnceRetriedAndBackOnline() throws {
        let lines = WiegandLines(name: "gate", chip: "gpio-sim.0", d0: .offset(1), d1: .offset(2))
        let fake = FakeStarter(["gpio-sim.0", "gpio-sim.0", nil])
        let service = WiegandService(
            lines: lines, log: Logger(label: "test"), retry: .milliseconds(20), starter: fake.starter)
        let events = Mutex<[String]>([])
        let sink = WiegandService.Sink(
            frame: { _ in },
            note: { e in events.withLock { $0.append("\(e.kind.rawValue) \(e.reason ?? "") \(e.source ?? "")") } })
        service.start(sink)
        XCTAssertTrue(
            try waitUntil(timeout: 5) { service.online && events.withLock { $0.count } == 2 },
            "started on its third try")
        XCTAssertEqual(fake.starts.withLock { $0 }, 3)
        var seen = events.withLock { $0 }
        XCTAssertEqual(seen.count, 2, "\(seen)")
        XCTAssertTrue(seen.first?.hasPrefix("reader_fault wiegand offline: not started: ") ?? false, "\(seen)")
        XCTAssertTrue(seen.first?.hasSuffix(" reader:gate") ?? false, "\(seen)")
        XCTAssertEqual(seen.last, "reader_recovered wiegand online reader:gate")

        // Its thread ends on an error (the chip gone): offline, started again, online.
        let failed = try XCTUnwrap(fake.failedHook.withLock { $0 })
        failed("D0's event descriptor failed")
        XCTAssertTrue(try waitUntil(timeout: 5) { events.withLock { $0.count } == 4 }, "\(events.withLock { $0 })")
        seen = events.withLock { $0 }
        XCTAssertEqual(
            Array(seen.suffix(2)),
            [
                "reader_fault wiegand offline: D0's event descriptor failed reader:gate",
                "reader_recovered wiegand online reader:gate",
            ])
        XCTAssertTrue(service.online)
        XCTAssertEqual(fake.starts.withLock { $0 }, 4)

        // Stopped: no more tries, whatever comes after.
        service.stop()
        XCTAssertFalse(service.online)
        failed("late")
        usleep(100_000)
        XCTAssertEqual(fake.starts.withLock { $0 }, 4)
        XCTAssertEqual(events.withLock { $0.count }, 4)
    }
}
