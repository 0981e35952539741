#if canImport(Glibc)
    import Glibc
#endif
import DoorCore
import Foundation
import TestSupport
import XCTest

@testable import OSDP

/// Our control panel against an OSDP reader we did not write: libosdp's peripheral device
/// (PyPI libosdp 3.2.9, scripts/osdp/pd.py) on a pseudo-terminal the test opens raw, as the
/// serial adapter will open /dev/ttyUSB0. The venv comes from scripts/osdp/venv.sh (cached).
final class LibosdpInteropTests: XCTestCase {
    let scbk: [UInt8] = Array(0x40...0x4F)

    func testSecureChannelCardKeysLEDAndBuzzerWithLibosdp() throws {
        let reader = try LibosdpReader(scbk: scbk)
        let link = try PtyLink(reader.tty, ControlPanel(.init(address: 1, security: .required(scbk: scbk))))
        let online = try link.run(until: 5000) { if case .online = $0 { return true } else { return false } }
        guard case .online(let id, let caps, secure: true) = online else { return XCTFail("\(online)") }
        XCTAssertTrue(link.cp.isSecure)
        // pd.py's identity is libosdp's default PdId(1, 1, 0xcafebabe, 0xdeadbeaf, 0xdeaddead).
        XCTAssertEqual(id.serialNumber, 0xDEAD_BEAF)
        XCTAssertEqual(id.vendor, [0xBE, 0xBA, 0xFE])
        XCTAssertTrue(caps.contains { $0.function == Capability.communicationSecurity && $0.compliance & 1 == 1 })
        try reader.waitFor("sc-active")
        // Tamper and power, asked once when the link comes up (osdp_LSTAT).
        let status = try link.run(until: 2000) { if case .localStatus = $0 { return true } else { return false } }
        XCTAssertEqual(status, .localStatus(tamper: 0, power: 0))

        // A 26-bit Wiegand card, reported by the reader inside the session (SCS_18 on the wire).
        try reader.send("card 26 AABBCCC0")
        let card = try link.run(until: 3000) { if case .card = $0 { return true } else { return false } }
        XCTAssertEqual(card, .card(CardRead(reader: 0, format: 1, bitCount: 26, bits: [0xAA, 0xBB, 0xCC, 0xC0])))
        try reader.send("keys 12#")
        let keys = try link.run(until: 3000) { if case .keypad = $0 { return true } else { return false } }
        XCTAssertEqual(keys, .keypad(reader: 0, keys: Array("12#".utf8)))

        // The door's feedback: an LED pattern and a beep, encrypted (SCS_17), decoded by libosdp.
        link.cp.enqueue(
            .led(
                LEDCommand(
                    reader: 0, led: 0,
                    temporary: .init(control: 2, onTime: 3, offTime: 0, onColor: .green, offColor: .black, timer: 20),
                    permanent: .init(control: 1, onTime: 1, offTime: 0, onColor: .red, offColor: .black))))
        link.cp.enqueue(.buzzer(BuzzerCommand(reader: 0, tone: 2, onTime: 2, offTime: 1, count: 2)))
        let refusals = try link.run(for: 600)
        XCTAssertEqual(refusals.filter { if case .refused = $0 { return true } else { return false } }, [])
        // pd.py prints libosdp's decoded commands: the LED's temporary pattern, the buzzer.
        let led = try reader.waitFor("command", containing: "('temporary', True)")
        for field in ["('led_number', 0)", "('on_color', 2)", "('on_count', 3)", "('timer_count', 20)"] {
            XCTAssertTrue(led.contains(field), "\(field) in \(led)")
        }
        let buzzer = try reader.waitFor("command", containing: "('rep_count', 2)")
        for field in ["('control_code', 2)", "('on_count', 2)", "('off_count', 1)"] {
            XCTAssertTrue(buzzer.contains(field), "\(field) in \(buzzer)")
        }
        XCTAssertTrue(link.cp.isSecure && link.cp.isOnline)
    }

    /// A reader holding another SCBK: our CP refuses it (wrong key) and never comes online.
    func testAReaderWithAnotherKeyIsRefused() throws {
        let reader = try LibosdpReader(scbk: Array(0x00...0x0F))
        let link = try PtyLink(reader.tty, ControlPanel(.init(address: 1, security: .required(scbk: scbk))))
        let events = try link.run(for: 1500)
        XCTAssertTrue(events.contains(.refused(.wrongKey)), "\(events)")
        XCTAssertFalse(events.contains { if case .online = $0 { return true } else { return false } })
        XCTAssertFalse(link.cp.isSecure)
    }

    /// Install mode: a reader without a key yet (libosdp's install mode) and our CP asking for
    /// SCBK-D come up secure; a card then arrives inside the session (our CP would refuse it
    /// in plain text).
    func testInstallModeComesUpWithTheDefaultKey() throws {
        let reader = try LibosdpReader(scbk: nil)
        let link = try PtyLink(reader.tty, ControlPanel(.init(address: 1, security: .install)))
        let online = try link.run(until: 5000) { if case .online = $0 { return true } else { return false } }
        guard case .online(_, _, secure: true) = online else { return XCTFail("\(online)") }
        try reader.send("card 26 AABBCCC0")
        let card = try link.run(until: 3000) { if case .card = $0 { return true } else { return false } }
        XCTAssertEqual(card, .card(CardRead(reader: 0, format: 1, bitCount: 26, bits: [0xAA, 0xBB, 0xCC, 0xC0])))
        XCTAssertTrue(link.cp.isSecure)
    }

    /// The reader goes away: reported offline within 2 s (issue 35).
    func testAReaderThatStopsAnsweringIsOfflineWithinTwoSeconds() throws {
        let reader = try LibosdpReader(scbk: scbk)
        let link = try PtyLink(reader.tty, ControlPanel(.init(address: 1, security: .required(scbk: scbk))))
        _ = try link.run(until: 5000) { if case .online = $0 { return true } else { return false } }
        _ = try link.run(for: 200)
        reader.stop()
        let stopped = PtyLink.now()
        _ = try link.run(until: 3000) { $0 == .offline }
        XCTAssertLessThanOrEqual(PtyLink.now() - stopped, 2000)
        XCTAssertFalse(link.cp.isOnline || link.cp.isSecure)
    }
}

/// The serial adapter in miniature: a raw tty, poll(2), the CP's ticks.
final class PtyLink {
    let fd: Int32
    var cp: ControlPanel
    var started = false

    init(_ path: String, _ cp: ControlPanel) throws {
        fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw LibosdpReader.Failure(what: "open \(path): errno \(errno)") }
        var t = termios()
        tcgetattr(fd, &t)
        cfmakeraw(&t)
        cfsetspeed(&t, speed_t(B115200))
        tcsetattr(fd, TCSANOW, &t)
        self.cp = cp
    }

    deinit { close(fd) }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EAGAIN {
                usleep(1000)
            } else {
                return  // the line is gone (the reader closed its end): what a cut cable does
            }
        }
    }

    /// Runs the link until an event matches (returned), failing after `ms`.
    func run(until ms: UInt64, _ match: (ControlPanel.Event) -> Bool) throws -> ControlPanel.Event {
        var seen: [ControlPanel.Event] = []
        let end = Self.now() + ms
        while Self.now() < end {
            for event in step() {
                seen.append(event)
                if match(event) { return event }
            }
        }
        throw LibosdpReader.Failure(what: "no matching event in \(ms) ms; saw \(seen)")
    }

    /// Runs the link for `ms` and returns every event.
    func run(for ms: UInt64) throws -> [ControlPanel.Event] {
        var seen: [ControlPanel.Event] = []
        let end = Self.now() + ms
        while Self.now() < end { seen += step() }
        return seen
    }

    func step() -> [ControlPanel.Event] {
        var events: [ControlPanel.Event] = []
        if !started {
            started = true
            let out = cp.start(now: Self.now())
            if let bytes = out.send { write(bytes) }
            events += out.events
        }
        let wait = Int32(clamping: max(1, Int64(cp.nextDeadline) - Int64(Self.now())))
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        if poll(&pfd, 1, min(wait, 20)) > 0 {
            var buf = [UInt8](repeating: 0, count: 512)
            let n = read(fd, &buf, buf.count)
            if n > 0 { events += cp.received(buf[0..<n], now: Self.now()).events }
        }
        let out = cp.tick(now: Self.now())
        if let bytes = out.send { write(bytes) }
        return events + out.events
    }
}
