import Arguments
import DoorCore
import GatewayControl
import Glibc
import NFCReader
import Synchronization

/// `gatewayctl reader bench` (hidden): insertion → decoded NDEF through
/// libnfc and the reader adapter against a running pn532-sim on any
/// transport, beside the wire + RF time of the minimal exchange on that
/// wire. It lives in the static binary so that it runs where the I2C and
/// SPI fronts do (the gpio-vm guest, `make bench-bus`); Benchmarks/ReaderBench
/// is the UART original it follows. Prints figures only.
struct ReaderBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "bench", shouldDisplay: false)
    @Option(help: "libnfc connstring of the pn532-sim.") var device: String
    @Option(help: "The pn532-sim's control socket.") var simControl: String
    @Option(help: "The wire, for the minimal exchange: uart:BAUD, i2c:HZ or spi:HZ.") var wire: String
    @Option(help: "Taps.") var taps = 50
    @Option(help: "Scratch directory for the sticker image.") var scratch = "/tmp"

    func run() throws {
        let parts = wire.split(separator: ":")
        guard parts.count == 2, let hz = Double(parts[1]), hz > 0, ["uart", "i2c", "spi"].contains(parts[0]) else {
            throw ValidationError("--wire: uart:BAUD, i2c:HZ or spi:HZ")
        }
        // A v2 sticker on an NTAG213: the first tags_v2 vector of Tests/Fixtures/compat.json.
        let url =
            "smp://action?idx=1&ts=1758686540&sig=eeaa6b04b4a2a004c1e52585799713f461eafa81573a7a23e255963a3ce13e69&u=Kxpen2V3lbY5yg2NFWxRgA"
        let uid = TagUID(hex: "04F11AE6510705")!
        let message = NDEFMessage(records: [.uri(url)])
        let image = try TagImage.make(type: .ntag213, uid: uid, message: message)
        let file = "\(scratch)/reader-bench-\(getpid()).bin"
        try Files.write(file, image.bytes)
        defer { unlink(file) }
        let tlvBytes = try Type2.ndefTLV(message).count

        func send(_ line: String) throws -> String { try SimulatorControl.send(line, to: simControl) }
        func stats() throws -> [String: Int] {
            var fields: [String: Int] = [:]
            for part in try send("stats").split(separator: " ") {
                let kv = part.split(separator: "=")
                if kv.count == 2, let v = Int(kv[1]) { fields[String(kv[0])] = v }
            }
            return fields
        }

        let reader = NFCReader(connstring: device)
        try reader.open()
        /// When the inserter thread sent the tag, or why it could not (this thread polls).
        final class Inserted: Sendable { let at = Mutex<Result<ContinuousClock.Instant, any Error>?>(nil) }
        let control = simControl, insert = "insert \(uid.hex) \(file)"
        var latencies: [Double] = []
        var perTap: [[String: Int]] = []
        for _ in 0..<taps {
            _ = try? send("remove")
            while try reader.poll() != nil {}  // the reader has seen the tag leave
            let inserted = Inserted()
            try Threads.detach(name: "reader-bench") {
                usleep(50_000)  // a poll is in flight
                // The counters cover the tap, not the idle polls before it.
                _ = try? SimulatorControl.send("stats reset", to: control)
                inserted.at.withLock { $0 = .success(ContinuousClock.now) }
                do { _ = try SimulatorControl.send(insert, to: control) } catch {
                    inserted.at.withLock { $0 = .failure(error) }
                }
            }
            while true {
                if let tag = try reader.poll(), (try? tag.message?.firstURI()) == url { break }
                if case .failure(let e)? = inserted.at.withLock({ $0 }) { throw e }
            }
            let done = ContinuousClock.now
            let d = try done - inserted.at.withLock { $0 }!.get()
            latencies.append(Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15)
            perTap.append(try stats())
        }
        _ = try? send("remove")

        func percentile(_ xs: [Double], _ p: Double) -> Double {
            let s = xs.sorted()
            return s[min(s.count - 1, Int((p / 100 * Double(s.count - 1)).rounded()))]
        }
        func median(_ key: String) -> Int { perTap.map { $0[key] ?? 0 }.sorted()[perTap.count / 2] }

        // The minimal exchange: one InListPassiveTarget, one FAST_READ of
        // pages 3 up to the TLV's last page; each command a host frame, the
        // ACK and the answer, each read once when ready.
        func frame(_ payload: Int) -> Int { payload + 7 }  // 00 00 FF LEN LCS … DCS 00
        let ack = 6
        let pagesNeeded = (4 + tlvBytes + 3) / 4
        let hostFrames = [frame(4), frame(2 + 4)]
        let answers = [frame(2 + 13), frame(2 + 1 + pagesNeeded * 4)]
        var wireMicros = 0.0
        switch parts[0] {
        case "uart":  // 10 bits a byte
            let bytes = hostFrames.reduce(0, +) + answers.reduce(0, +) + 2 * ack
            wireMicros = Double(bytes * 10) / hz * 1e6
        case "i2c":  // 9 clocks a byte, the address byte each transfer, reads start with the status byte
            let bytes = hostFrames.map { $0 + 1 }.reduce(0, +) + answers.map { $0 + 2 }.reduce(0, +) + 2 * (ack + 2)
            wireMicros = Double(bytes * 9 + 6 * 2) / hz * 1e6
        default:  // spi, 8 clocks a byte: DW + frame; SR + status, DR + frame for the ACK and the answer
            let bytes =
                hostFrames.map { $0 + 1 }.reduce(0, +) + answers.map { $0 + 1 + 2 }.reduce(0, +) + 2 * (ack + 1 + 2)
            wireMicros = Double(bytes * 8) / hz * 1e6
        }
        func air(_ bitsOut: Int, _ bitsIn: Int) -> Double { Double(bitsOut + bitsIn) * 85 / 8 + 86 }
        let activation = air(7, 16) + 2 * (air(16, 40) + air(72, 24))
        let rfMicros = activation + air(5 * 8, (pagesNeeded * 4 + 2) * 8)
        let minimal = (wireMicros + rfMicros) / 1000
        let p50 = percentile(latencies, 50)
        func f1(_ x: Double) -> String { String((x * 10).rounded() / 10) }
        print("reader bench: \(taps) taps of a v2 sticker (\(tlvBytes)-byte TLV) on NTAG213, \(device), wire \(wire)")
        print("  insertion → decoded NDEF: p50 \(f1(p50)) ms, p99 \(f1(percentile(latencies, 99))) ms")
        print(
            "  per tap (median): \(median("rx_frames")) PN532 commands, \(median("rx_frames") + median("tx_frames")) frames,"
                + " \(median("rx_bytes") + median("tx_bytes")) frame bytes; bus: \(median("bus_transfers")) transfers"
                + " (\(median("bus_not_ready")) answered not-ready), \(median("bus_bytes")) bytes, \(median("bus_ms")) ms clocked"
        )
        if perTap.first?["bus_requests"] != nil {
            // Where the tap's time went (medians over the taps, µs): the
            // emulator's time on the kernel's requests (its modelled bus time
            // slept, and its own work), the host's time between a reply and its
            // next request (libnfc, the kernel's CUSE path, the scheduler), and
            // the same after a not-ready answer (libnfc's poll interval in it).
            let requests = median("bus_requests"), gaps = median("host_gaps")
            let hostGap = median("host_gap_us")
            print(
                "  time (median µs): emulator \(median("bus_serve_us")) (modelled wire \(median("bus_wire_us")),"
                    + " slept \(median("bus_slept_us"))) on \(requests) requests; host between requests"
                    + " \(hostGap) over \(gaps) (\(gaps > 0 ? hostGap / gaps : 0) each); after not-ready"
                    + " \(median("poll_gap_us")) over \(median("poll_gaps")); refused (NACK) \(median("bus_nacks"))")
        }
        print(
            "  minimal exchange: wire \(f1(wireMicros / 1000)) ms + RF \(f1(rfMicros / 1000)) ms = \(f1(minimal)) ms;"
                + " p50 / minimal = \(String((p50 / minimal * 100).rounded() / 100))× (target ≤ 1.3×)")
    }
}
