#if canImport(Glibc)
    import Glibc
#endif
import DoorCore
import Foundation
import PN532Emulator
import TestSupport
import XCTest

/// The built `pn532-sim` driven by the real libnfc 1.8.0 `pn532_uart`
/// driver (Debian libnfc-bin tools) and by a raw host on the pty
/// (DEVELOPERS.md "Conventions" §8: the real library against a real peer).
final class LibnfcIntegrationTests: XCTestCase {
    static let tools = URL(fileURLWithPath: "/usr/bin")

    override func setUpWithError() throws {
        try XCTSkipUnless(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/nfc-list"),
            "libnfc-bin is not installed (apt-get install libnfc-bin)")
    }

    // MARK: Fixtures

    typealias Sim = PN532SimProcess

    static let uid = TagUID([0x04, 0x5E, 0x11, 0xA0, 0x22, 0x80, 0x5A])

    /// An image with recognisable user data (and PWD/PACK zero, as a read shows them).
    func image(_ type: NTAGType = .ntag213, seed: UInt8 = 1, edit: (inout [UInt8]) -> Void = { _ in }) throws -> [UInt8]
    {
        var b = try TagImage.make(type: type, uid: Self.uid).bytes
        for i in 16..<(16 + type.userBytes) { b[i] = UInt8(truncatingIfNeeded: i &* 7 &+ Int(seed)) }
        edit(&b)
        return b
    }

    func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    // MARK: libnfc tools

    func testNfcListShowsTheUID() throws {
        let sim = try Sim(["--uid", Self.uid.hex])
        let r = try sim.tool("nfc-list", [])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("UID (NFCID1): 04  5e  11  a0  22  80  5a"), r.stdout)
        XCTAssertTrue(r.stdout.contains("ATQA (SENS_RES): 00  44"), r.stdout)
        // A second run (the chip was powered down by the first) works just as well.
        XCTAssertEqual(try sim.control("remove"), "ok removed")
        let empty = try sim.tool("nfc-list", [])
        XCTAssertEqual(empty.status, 0, empty.stderr)
        XCTAssertFalse(empty.stdout.contains("UID"), empty.stdout)
        XCTAssertTrue(empty.stdout.contains("NFC device: user defined device opened"), empty.stdout)
        let stats = try sim.control("stats")
        XCTAssertTrue(stats.contains("commands=00:2,02:2,"), stats)
        XCTAssertTrue(stats.contains("rx_corrupt=0"), stats)
    }

    func testNfcMfultralightReadsTheImage() throws {
        for type in NTAGType.allCases {
            let sim = try Sim()
            let img = try image(type)
            try write(img, to: sim.path("in.mfd"))
            XCTAssertEqual(try sim.control("insert \(sim.path("in.mfd"))"), "ok inserted \(type) \(Self.uid.hex)")
            // nfc-list first: its probes of other modulations rewrite framing, CRC and parity registers.
            XCTAssertTrue(try sim.tool("nfc-list", []).stdout.contains("SAK (SEL_RES): 00"))
            let r = try sim.tool("nfc-mfultralight", ["r", sim.path("out.mfd")])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.stdout.contains("\(type.pages) of \(type.pages) pages read (0 pages failed)"), r.stdout)
            XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: sim.path("out.mfd")))), img, "\(type)")
        }
    }

    func testNfcMfultralightWritesAnImageBack() throws {
        let sim = try Sim(["--uid", Self.uid.hex])
        let blank = try sim.dump()
        let img = try image(seed: 9)
        try write(img, to: sim.path("new.mfd"))
        // It asks four y/N questions: OTP, lock bytes, dynamic lock bytes, UID.
        let r = try sim.tool("nfc-mfultralight", ["w", sim.path("new.mfd")], stdin: "n\nn\nn\nn\n")
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("40 of 45 pages written (5 pages skipped, 0 pages failed)"), r.stdout)
        let after = try sim.dump()
        XCTAssertEqual(after, img)
        XCTAssertNotEqual(after, blank)
        XCTAssertEqual(Array(after[0..<16]), Array(blank[0..<16]))
    }

    func testLockedPagesFailAndTheToolCarriesOn() throws {
        let locked = try image { b in b[10] = 0x10 }  // static lock bit L4
        let sim = try Sim()
        try write(locked, to: sim.path("locked.mfd"))
        _ = try sim.control("insert \(sim.path("locked.mfd"))")
        let img = try image(seed: 3)
        try write(img, to: sim.path("new.mfd"))
        let r = try sim.tool("nfc-mfultralight", ["w", sim.path("new.mfd")], stdin: "n\nn\nn\nn\n")
        XCTAssertTrue(r.stdout.contains("39 of 45 pages written (5 pages skipped, 1 pages failed)"), r.stdout)
        let after = try sim.dump()
        XCTAssertEqual(Array(after[16..<20]), Array(locked[16..<20]), "page 4 is locked")
        XCTAssertEqual(Array(after[20..<160]), Array(img[20..<160]))
    }

    func testPasswordProtectedTagNeedsPw() throws {
        let sim = try Sim()
        let img = try image { b in
            b[0x29 * 4 + 3] = 0x04  // AUTH0: from page 4
            b[0x2A * 4] = 0x80  // PROT: reads too
            b[0x2B * 4..<0x2C * 4] = [0x12, 0x34, 0x56, 0x78]
            b[0x2C * 4..<0x2C * 4 + 2] = [0xAB, 0xCD]
        }
        try write(img, to: sim.path("prot.mfd"))
        _ = try sim.control("insert \(sim.path("prot.mfd"))")
        let denied = try sim.tool("nfc-mfultralight", ["r", sim.path("denied.mfd")])
        XCTAssertTrue(denied.stdout.contains("Warning! Read failed"), denied.stdout)
        let r = try sim.tool("nfc-mfultralight", ["r", sim.path("out.mfd"), "--pw", "12345678"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("Success - PACK: abcd"), r.stdout)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: sim.path("out.mfd")))), img)
    }

    // MARK: Host timeout and abort, on the raw link

    /// The host side of the pty, in raw mode, as libnfc's `uart_open` sets it.
    final class RawHost {
        let fd: Int32
        init(_ path: String) throws {
            fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK)
            guard fd >= 0 else { throw POSIXError(.ENOENT) }
            var t = termios()
            tcgetattr(fd, &t)
            cfmakeraw(&t)
            tcsetattr(fd, TCSANOW, &t)
        }
        deinit { close(fd) }

        func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }
        func command(_ data: [UInt8]) { send(Frame.encode(tfi: 0xD4, data)) }

        /// Everything that arrives until 300 ms of quiet; the first byte
        /// may take up to 3 s (a loaded machine), or 500 ms when silence is expected.
        func receive(expectingSilence: Bool = false) -> [UInt8] {
            var out = [UInt8]()
            var buf = [UInt8](repeating: 0, count: 512)
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            var wait: Int32 = expectingSilence ? 500 : 3000
            while poll(&p, 1, wait) == 1 {
                let n = read(fd, &buf, buf.count)
                if n <= 0 { break }
                out += buf[0..<n]
                wait = 300
            }
            return out
        }
    }

    func testHungListPassiveTargetAbortedByAckKeepsHostAndChipInStep() throws {
        let sim = try Sim()
        let host = try RawHost(sim.tty)
        host.send([0x55, 0x55] + [UInt8](repeating: 0, count: 14) + Frame.encode(tfi: 0xD4, [0x14, 0x01]))
        XCTAssertEqual(host.receive(), Frame.ack + Frame.encode([0x15]))
        host.command([0x32, 0x05, 0xFF, 0xFF, 0xFF])  // MaxRetries: forever
        XCTAssertEqual(host.receive(), Frame.ack + Frame.encode([0x33]))
        host.command([0x4A, 0x01, 0x00])
        XCTAssertEqual(host.receive(), Frame.ack, "no tag: the chip keeps polling")
        // The host gave up: its next command is not even acknowledged.
        host.command([0x02])
        XCTAssertEqual(host.receive(expectingSilence: true), [])
        XCTAssertTrue(try sim.control("stats").contains("ignored_busy=1"))
        // An ACK aborts the polling; the next command gets its own answer.
        host.send(Frame.ack)
        host.command([0x02])
        XCTAssertEqual(host.receive(), Frame.ack + Frame.encode([0x03, 0x32, 0x01, 0x06, 0x07]))
        XCTAssertTrue(try sim.control("stats").contains("aborted=1"))
    }

    func testLateAnswerArrivesWhenATagComesAfterTheHostGaveUp() throws {
        let sim = try Sim()
        let host = try RawHost(sim.tty)
        host.send([0x55, 0x55, 0x00, 0x00] + Frame.encode(tfi: 0xD4, [0x14, 0x01]))
        _ = host.receive()
        host.command([0x4A, 0x01, 0x00])  // power-on MaxRetries: poll forever
        XCTAssertEqual(host.receive(), Frame.ack)
        XCTAssertTrue(try sim.control("insert \(Self.uid.hex)").hasPrefix("ok inserted NTAG213"))
        XCTAssertEqual(host.receive(), Frame.encode([0x4B, 0x01, 0x01, 0x00, 0x44, 0x00, 0x07] + Self.uid.bytes))
    }

    func testLibnfcWorksAgainAfterARawHostLeftTheChipBusyAndAborted() throws {
        let sim = try Sim(["--uid", Self.uid.hex])
        do {
            let host = try RawHost(sim.tty)
            host.send([0x55, 0x55, 0x00, 0x00] + Frame.encode(tfi: 0xD4, [0x14, 0x01]))
            _ = host.receive()
            _ = try sim.control("hang")
            host.command([0x02])
            XCTAssertEqual(host.receive(), Frame.ack, "hang: ACK, then nothing")
            _ = try sim.control("unmute")
        }
        let r = try sim.tool("nfc-list", [])
        XCTAssertTrue(r.stdout.contains("UID (NFCID1): 04  5e  11  a0  22  80  5a"), r.stdout + r.stderr)
    }

    func testMutedChipIsNotFoundByLibnfc() throws {
        let sim = try Sim(["--uid", Self.uid.hex])
        XCTAssertEqual(try sim.control("mute"), "ok muted")
        // nfc-list reports the device it could not open and exits 0.
        let r = try sim.tool("nfc-list", [])
        XCTAssertTrue(r.stderr.contains("Unable to open NFC device: pn532_uart:\(sim.tty)"), r.stderr)
        XCTAssertFalse(r.stdout.contains("UID"), r.stdout)
        // nfc-mfultralight fails outright.
        let m = try sim.tool("nfc-mfultralight", ["r", sim.path("out.mfd")])
        XCTAssertNotEqual(m.status, 0)
        XCTAssertTrue(m.stderr.contains("Error opening NFC device"), m.stderr)
    }

    // MARK: Control socket

    func testControlSocketAnswersOneLineEach() throws {
        let sim = try Sim()
        XCTAssertTrue(try sim.control("explode").hasPrefix("error unknown command 'explode'"))
        XCTAssertEqual(try sim.control("dump"), "error no tag")
        XCTAssertEqual(try sim.control("remove"), "error no tag in the field")
        XCTAssertEqual(try sim.control("tear-after 0"), "error no tag in the field")
        XCTAssertEqual(try sim.control("tear-after 4"), "ok the next tag leaves after 4 exchanges")
        XCTAssertTrue(try sim.control("status").contains("tag=none tear_next=4"))
        XCTAssertTrue(try sim.control("insert /nonexistent.mfd").hasPrefix("error cannot read /nonexistent.mfd"))
        XCTAssertTrue(try sim.control("insert ntag216").hasPrefix("ok inserted NTAG216 04"))
        XCTAssertEqual(try sim.dump().count, 924)
        XCTAssertEqual(try sim.control("dump \(sim.path("d.mfd"))"), "ok wrote 924 bytes to \(sim.path("d.mfd"))")
        XCTAssertEqual(try sim.control("tear-after 2"), "ok tag leaves after 2 exchanges")
        XCTAssertTrue(try sim.control("status").contains("power=lowvbat rf=off busy=no"))
        XCTAssertEqual(try sim.control("stats reset"), "ok reset")
        XCTAssertTrue(try sim.control("stats").hasPrefix("ok rx_frames=0 rx_bytes=0 tx_frames=0 tx_bytes=0"))
    }
}

extension PN532SimProcess {
    /// Runs a libnfc tool against this emulator.
    func tool(_ name: String, _ arguments: [String], stdin: String? = nil) throws -> ProcessResult {
        try Run.process(
            LibnfcIntegrationTests.tools.appendingPathComponent(name), arguments, stdin: stdin,
            environment: [
                "LIBNFC_DEVICE": "pn532_uart:\(tty)", "LIBNFC_AUTO_SCAN": "false",
                "LIBNFC_INTRUSIVE_SCAN": "false", "LIBNFC_LOG_LEVEL": "1",
                "PATH": "/usr/bin:/bin",
            ],
            timeout: 60)
    }
}
