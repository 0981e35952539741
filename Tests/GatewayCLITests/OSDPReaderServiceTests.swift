import DoorCore
import Foundation
import GatewayConfig
import GatewayStore
import OSDP
import Synchronization
import TestSupport
import XCTest

@testable import GatewayDaemon

/// The daemon's OSDP reader service (issue 35) — the serial adapter opening the line raw, the
/// bus thread, the keys in the store — against libosdp's peripheral device (PyPI libosdp 3.2.9,
/// an implementation we did not write, scripts/osdp/pd.py) on a pseudo-terminal. The device
/// path is a symlink to the pty, as /dev/serial/by-id/… is to /dev/ttyUSB0: a reader replaced
/// on the same path comes back.
final class OSDPReaderServiceTests: XCTestCase {
    let key: [UInt8] = Array(0x40...0x4F)
    var directory = ""
    var store: GatewayStore!
    var service: OSDPReaders?
    var readers: [LibosdpReader] = []
    let log = LogCapture()
    let reports = Reports()

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "osdp-service-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try GatewayStore(stateDirectory: directory)
    }

    override func tearDown() {
        service?.stop()
        for reader in readers { reader.stop() }
        try? FileManager.default.removeItem(atPath: directory)
        // No key ever reaches a log line.
        let hex = Hex.encode(key)
        for line in log.messages { XCTAssertFalse(line.lowercased().contains(hex), line) }
    }

    var device: String { directory + "/ttyOSDP" }

    /// pd.py with `scbk` (nil: install mode), the device symlink pointed at its pty.
    @discardableResult
    func reader(scbk: [UInt8]?, options: [String] = []) throws -> LibosdpReader {
        let reader = try LibosdpReader(scbk: scbk, address: 1, options: options)
        readers.append(reader)
        try? FileManager.default.removeItem(atPath: device)
        try FileManager.default.createSymbolicLink(atPath: device, withDestinationPath: reader.tty)
        return reader
    }

    func start(insecure: Bool = false) {
        let settings = ReaderSettings(
            name: "street", kind: .osdp, osdp: .init(device: device, baud: 115200, address: 1, insecure: insecure))
        let service = OSDPReaders(readers: [settings], keys: StoreOSDPKeys(store: store), log: log.logger)
        self.service = service
        service.start { [reports] report in reports.withLock { $0.append(report) } }
    }

    /// Waits for a report matching `match` (returned), failing after `seconds`.
    @discardableResult
    func wait(_ seconds: Double = 5, for what: String, _ match: (OSDPReaders.Report) -> Bool) throws
        -> OSDPReaders.Report
    {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let hit = reports.withLock({ $0.first(where: match) }) { return hit }
            usleep(10_000)
        }
        throw LibosdpReader.Failure(what: "no \(what) in \(seconds) s; reports: \(reports.withLock { $0 })")
    }

    func isOnline(_ r: OSDPReaders.Report) -> Bool { if case .online = r { return true } else { return false } }
    func isCard(_ r: OSDPReaders.Report) -> Bool { if case .card = r { return true } else { return false } }
    func refusal(_ r: OSDPReaders.Report) -> String? {
        if case .refused(_, let why) = r { return why } else { return nil }
    }
    func clear() { reports.withLock { $0 = [] } }

    // MARK: The link

    /// Secure Channel up with the stored key; a card arrives inside it with the reader's name;
    /// the door's "granted" pattern reaches the reader as osdp_LED (green) and osdp_BUZ (two
    /// beeps), decoded by libosdp.
    func testSecureChannelCardAndTheDoorsFeedbackOnTheReader() throws {
        try store.setOSDPReaderKey("street", key, now: 1)
        let pd = try reader(scbk: key)
        start()
        XCTAssertEqual(try wait(for: "online", isOnline), .online(reader: "street", secure: true))
        try pd.waitFor("sc-active")
        try pd.send("card 26 AABBCCC0")
        XCTAssertEqual(
            try wait(for: "a card", isCard),
            .card(
                OSDPCardRead(reader: "street", format: 1, bitCount: 26, bits: [0xAA, 0xBB, 0xCC, 0xC0], secure: true)))
        let status = try XCTUnwrap(service?.statuses["street"])
        XCTAssertTrue(status.online && status.secure, "\(status)")

        service?.show(FeedbackPattern.defaultPatterns[.granted]!)
        let led = try pd.waitFor("command", containing: "('temporary', True)")
        for field in ["('on_color', 2)", "('on_count', 1)", "('off_count', 1)", "('timer_count', 4)"] {
            XCTAssertTrue(led.contains(field), "\(field) in \(led)")
        }
        let buzzer = try pd.waitFor("command", containing: "('rep_count', 2)")
        XCTAssertTrue(buzzer.contains("('on_count', 1)") && buzzer.contains("('off_count', 1)"), buzzer)
        service?.show(FeedbackPattern.defaultPatterns[.denied]!)
        let red = try pd.waitFor("command", containing: "('on_color', 1)")
        XCTAssertTrue(red.contains("('on_count', 12)"), red)
    }

    /// The reader goes away: offline within 2 s; a reader back on the same path comes online
    /// again by itself.
    func testOfflineWithinTwoSecondsAndBackOnline() throws {
        try store.setOSDPReaderKey("street", key, now: 1)
        let first = try reader(scbk: key)
        start()
        try wait(for: "online", isOnline)
        clear()
        first.stop()
        let stopped = Date()
        try wait(3, for: "offline") { $0 == .offline(reader: "street") }
        XCTAssertLessThanOrEqual(Date().timeIntervalSince(stopped), 2.0)
        XCTAssertEqual(service?.statuses["street"]?.online, false)
        try reader(scbk: key)
        XCTAssertEqual(try wait(6, for: "online again", isOnline), .online(reader: "street", secure: true))
    }

    // MARK: Attacks

    /// A reader that does not offer Secure Channel is refused and reported, never online.
    func testAPlaintextReaderIsRefused() throws {
        try store.setOSDPReaderKey("street", key, now: 1)
        let pd = try reader(scbk: nil, options: ["--no-sc"])
        start()
        let why = try XCTUnwrap(refusal(try wait(for: "a refusal") { refusal($0) != nil }))
        XCTAssertTrue(why.contains("does not offer Secure Channel"), why)
        try pd.send("card 26 AABBCCC0")
        usleep(1_500_000)
        XCTAssertFalse(reports.withLock { $0.contains { isOnline($0) || isCard($0) } }, "\(reports.withLock { $0 })")
        XCTAssertEqual(
            reports.withLock { $0.filter { refusal($0) != nil }.count }, 1, "reported once, not once a retry")
    }

    /// The same reader named `insecure = true`: the explicit opt-in talks to it in plain text,
    /// and its card says so (not secure).
    func testTheInsecureOptInTalksPlainTextAndSaysSo() throws {
        let pd = try reader(scbk: nil, options: ["--no-sc"])
        start(insecure: true)
        XCTAssertEqual(try wait(for: "online", isOnline), .online(reader: "street", secure: false))
        try pd.send("card 26 AABBCCC0")
        guard case .card(let card) = try wait(for: "a card", isCard) else { return XCTFail() }
        XCTAssertFalse(card.secure)
    }

    /// osdp_FMT (an ASCII card number) from the reader: delivered as a formatted card, decided
    /// like a RAW read (OSDPDoor). pd.py answers a poll with it (libosdp sends no FMT itself).
    func testAFormattedCardIsDelivered() throws {
        let pd = try reader(scbk: nil, options: ["--no-sc"])
        start(insecure: true)
        try wait(for: "online", isOnline)
        try pd.send("fmt-card 12345678")
        try pd.waitFor("attack fmt-card")
        guard case .card(let card) = try wait(for: "a card", isCard) else { return XCTFail() }
        XCTAssertEqual(card.formatted, Array("12345678".utf8))
        XCTAssertEqual(card.reader, "street")
        XCTAssertFalse(card.secure)
    }

    /// A reader holding another key: refused (wrong key), never online, its card never delivered.
    func testAWrongKeyIsRefused() throws {
        try store.setOSDPReaderKey("street", key, now: 1)
        let pd = try reader(scbk: Array(0x00...0x0F))
        start()
        let why = try XCTUnwrap(refusal(try wait(for: "a refusal") { refusal($0) != nil }))
        XCTAssertTrue(why.contains("wrong Secure Channel key"), why)
        try pd.send("card 26 AABBCCC0")
        usleep(1_500_000)
        XCTAssertFalse(reports.withLock { $0.contains { isOnline($0) || isCard($0) } }, "\(reports.withLock { $0 })")
    }

    /// A MAC'd reply with one bit of its MAC flipped (CRC good): dropped, the session ends
    /// (refused, reported) and starts over; the reader comes back with its key.
    func testAMACTamperedReplyIsDropped() throws {
        try store.setOSDPReaderKey("street", key, now: 1)
        let pd = try reader(scbk: key)
        start()
        try wait(for: "online", isOnline)
        clear()
        try pd.send("tamper-mac")
        try pd.waitFor("attack tamper-mac")
        let why = try XCTUnwrap(refusal(try wait(for: "a refusal") { refusal($0) != nil }))
        XCTAssertTrue(why.contains("Secure Channel broken"), why)
        try wait(6, for: "online again", isOnline)
    }

    /// The reader's earlier card reply sent again (a replay): no second card.
    func testAReplayedCardIsNotASecondCard() throws {
        try store.setOSDPReaderKey("street", key, now: 1)
        let pd = try reader(scbk: key)
        start()
        try wait(for: "online", isOnline)
        try pd.send("card 26 AABBCCC0")
        try wait(for: "a card", isCard)
        clear()
        try pd.send("replay-card")
        try pd.waitFor("attack replay-card")
        usleep(1_500_000)
        XCTAssertFalse(reports.withLock { $0.contains(where: isCard) }, "\(reports.withLock { $0 })")
    }

    /// A downgrade: inside the session, a reply in plain text carrying a card. Refused, the
    /// card never delivered.
    func testADowngradeMidSessionIsRefused() throws {
        try store.setOSDPReaderKey("street", key, now: 1)
        let pd = try reader(scbk: key)
        start()
        try wait(for: "online", isOnline)
        clear()
        try pd.send("downgrade-card 11223340")
        try pd.waitFor("attack downgrade-card")
        let why = try XCTUnwrap(refusal(try wait(for: "a refusal") { refusal($0) != nil }))
        XCTAssertTrue(why.contains("Secure Channel broken"), why)
        usleep(500_000)
        XCTAssertFalse(reports.withLock { $0.contains(where: isCard) }, "\(reports.withLock { $0 })")
    }

    // MARK: Install mode

    /// Outside an install window a reader in install mode (SCBK-D) is never driven: refused for
    /// want of a key. Inside it, the door hands the reader a fresh key (osdp_KEYSET), stores it,
    /// closes the window and comes up secure with it.
    func testInstallModeOnlyInsideTheWindow() throws {
        let pd = try reader(scbk: nil)
        start()
        let why = try XCTUnwrap(refusal(try wait(for: "a refusal") { refusal($0) != nil }))
        XCTAssertTrue(why.contains("no Secure Channel key yet"), why)
        usleep(1_000_000)
        XCTAssertFalse(reports.withLock { $0.contains(where: isOnline) })
        XCTAssertNil(try store.osdpReaderKey("street"))

        try service?.openInstallWindow(reader: "street", milliseconds: 10_000)
        // While the window is open the reader is "installing", never "online": a session under
        // the install key is not the reader up (sampled until the key is in).
        var samples = 0
        let until = Date().addingTimeInterval(8)
        while Date() < until, !reports.withLock({ $0.contains(.installed(reader: "street")) }) {
            let s = try XCTUnwrap(service?.statuses["street"])
            XCTAssertFalse(s.installing && (s.online || s.secure), "online under the install key: \(s)")
            samples += 1
            usleep(2000)
        }
        XCTAssertGreaterThan(samples, 5)
        try wait(8, for: "installed") { $0 == .installed(reader: "street") }
        let stored = try XCTUnwrap(try store.osdpReaderKey("street"))
        XCTAssertEqual(stored.count, 16)
        XCTAssertNotEqual(stored, SecureChannel.defaultKey)
        // libosdp's reader got exactly the key the door stored.
        try pd.waitFor("keyset", containing: Hex.encode(stored).lowercased())
        XCTAssertEqual(try wait(8, for: "online with its key", isOnline), .online(reader: "street", secure: true))
        try pd.waitFor("sc-active")
        XCTAssertEqual(service?.statuses["street"]?.installing, false)
        for line in log.messages { XCTAssertFalse(line.lowercased().contains(Hex.encode(stored)), line) }
    }

    /// Two readers on two serial lines (a thread each): each line's thread takes its own
    /// reader's install window and feedback, not the other's.
    func testTwoLinesTakeTheirOwnInstallWindowsAndFeedback() throws {
        let street = try reader(scbk: nil)
        let yard = try LibosdpReader(scbk: nil, address: 2)
        readers.append(yard)
        let yardDevice = directory + "/ttyOSDP2"
        try FileManager.default.createSymbolicLink(atPath: yardDevice, withDestinationPath: yard.tty)
        let service = OSDPReaders(
            readers: [
                ReaderSettings(name: "street", kind: .osdp, osdp: .init(device: device, baud: 115200, address: 1)),
                ReaderSettings(name: "yard", kind: .osdp, osdp: .init(device: yardDevice, baud: 115200, address: 2)),
            ], keys: StoreOSDPKeys(store: store), log: log.logger)
        self.service = service
        service.start { [reports] report in reports.withLock { $0.append(report) } }
        try wait(for: "both refused") {
            $0 == .refused(reader: "yard", why: "no Secure Channel key yet: run gatewayctl reader osdp install yard")
        }
        try service.openInstallWindow(reader: "street", milliseconds: 10_000)
        try service.openInstallWindow(reader: "yard", milliseconds: 10_000)
        try wait(8, for: "street installed") { $0 == .installed(reader: "street") }
        try wait(8, for: "yard installed") { $0 == .installed(reader: "yard") }
        try wait(8, for: "street online") { $0 == .online(reader: "street", secure: true) }
        try wait(8, for: "yard online") { $0 == .online(reader: "yard", secure: true) }
        XCTAssertNotEqual(try store.osdpReaderKey("street"), try store.osdpReaderKey("yard"))
        service.show(FeedbackPattern.defaultPatterns[.granted]!)
        try street.waitFor("command", containing: "('rep_count', 2)")
        try yard.waitFor("command", containing: "('rep_count', 2)")
    }

    /// Two readers on one RS-485 line (scripts/osdp/bus.py joins two libosdp readers, addresses
    /// 1 and 2, into one pty): one command on the wire at a time, each reader keyed, online
    /// and polled, each card delivered with its own reader's name.
    func testTwoReadersShareOneBus() throws {
        let front = try LibosdpReader(scbk: key, address: 1)
        let back = try LibosdpReader(scbk: Array(0x60...0x6F), address: 2)
        readers += [front, back]
        let bus = try BusProcess([front.tty, back.tty])
        defer { bus.stop() }
        try FileManager.default.createSymbolicLink(atPath: device, withDestinationPath: bus.tty)
        try store.setOSDPReaderKey("front", key, now: 1)
        try store.setOSDPReaderKey("back", Array(0x60...0x6F), now: 1)
        let service = OSDPReaders(
            readers: [
                ReaderSettings(name: "front", kind: .osdp, osdp: .init(device: device, baud: 115200, address: 1)),
                ReaderSettings(name: "back", kind: .osdp, osdp: .init(device: device, baud: 115200, address: 2)),
            ], keys: StoreOSDPKeys(store: store), log: log.logger)
        self.service = service
        service.start { [reports] report in reports.withLock { $0.append(report) } }
        try wait(8, for: "front online") { $0 == .online(reader: "front", secure: true) }
        try wait(8, for: "back online") { $0 == .online(reader: "back", secure: true) }
        try back.send("card 26 11223340")
        try front.send("card 26 AABBCCC0")
        try wait(for: "back's card") {
            if case .card(let c) = $0 { return c.reader == "back" && c.bits == [0x11, 0x22, 0x33, 0x40] }
            return false
        }
        try wait(for: "front's card") {
            if case .card(let c) = $0 { return c.reader == "front" && c.bits == [0xAA, 0xBB, 0xCC, 0xC0] }
            return false
        }
        usleep(1_000_000)
        XCTAssertFalse(
            reports.withLock { $0.contains { if case .refused = $0 { return true } else { return false } } },
            "\(reports.withLock { $0 })")
        XCTAssertEqual(service.statuses["front"]?.online, true)
        XCTAssertEqual(service.statuses["back"]?.online, true)
        // Half duplex: never a command to one reader while the other's reply is due.
        XCTAssertEqual(bus.collisions(), [], "commands sent over a reply still due")
    }

    /// A window nobody uses closes itself; the reader is refused again after it.
    func testTheInstallWindowClosesItself() throws {
        try reader(scbk: Array(0x00...0x0F))
        start()
        try wait(for: "a refusal") { refusal($0) != nil }
        try service?.openInstallWindow(reader: "street", milliseconds: 1500)
        XCTAssertEqual(
            try wait(5, for: "the window closed") { if case .installClosed = $0 { return true } else { return false } },
            .installClosed(reader: "street", why: "timed out"))
        XCTAssertEqual(service?.statuses["street"]?.installing, false)
        XCTAssertNil(try store.osdpReaderKey("street"))
        XCTAssertFalse(reports.withLock { $0.contains(where: isOnline) })
        XCTAssertThrowsError(try service?.openInstallWindow(reader: "yard", milliseconds: 1000))
    }
}

/// The reports the service delivered, from its bus thread.
final class Reports: Sendable {
    private let list = Mutex<[OSDPReaders.Report]>([])
    func withLock<T>(_ body: (inout [OSDPReaders.Report]) -> T) -> T { list.withLock { body(&$0) } }
}

/// scripts/osdp/bus.py: readers' ptys joined into one line; reaped on stop (and it dies with us).
final class BusProcess {
    let process = Process()
    let input = Pipe()
    let output = Pipe()
    var tty = ""

    init(_ readers: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Fixtures.root.appendingPathComponent("scripts/osdp/bus.py").path] + readers
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        var line = Data()
        let deadline = Date().addingTimeInterval(5)
        while !line.contains(0x0A), Date() < deadline {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("tty ") else { throw LibosdpReader.Failure(what: "bus.py said \(text)") }
        tty = String(text.dropFirst(4))
    }

    /// The `collision ADDRESS` lines bus.py printed so far.
    func collisions() -> [String] {
        var pfd = pollfd(fd: output.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
        var text = ""
        while poll(&pfd, 1, 0) > 0 {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("collision") }
    }

    func stop() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit { stop() }
}
