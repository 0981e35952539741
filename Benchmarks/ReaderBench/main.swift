// make bench (reader): from tag insertion to decoded NDEF through libnfc and
// the reader adapter, against pn532-sim at an emulated 115200 baud with RF
// timing; p50/p99 over the taps, the PN532 frames and bytes each tap costs
// (from the emulator's stats), beside the wire + RF time of the minimal
// exchange the protocol allows for the same sticker. Prints figures only.
// Usage: reader-bench PN532_SIM_PATH [TAPS]
import DoorCore
import Foundation
import NFCReader
import Synchronization

let args = CommandLine.arguments
guard args.count >= 2 else {
    FileHandle.standardError.write(Data("usage: reader-bench PN532_SIM [TAPS]\n".utf8))
    exit(64)
}
let taps = args.count > 2 ? Int(args[2]) ?? 200 : 200
let dir = FileManager.default.temporaryDirectory.appendingPathComponent("reader-bench-\(getpid())")
try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
let tty = dir.appendingPathComponent("tty").path
let control = dir.appendingPathComponent("control.sock").path
let sim = Process()
sim.executableURL = URL(fileURLWithPath: args[1])
sim.arguments = ["--link", tty, "--control", control, "--baud", "115200", "--rf-timing"]
sim.standardOutput = FileHandle.nullDevice
sim.standardError = FileHandle.nullDevice
try sim.run()
while !FileManager.default.fileExists(atPath: control) { usleep(10_000) }

/// One control line, its answer line (from any thread).
@Sendable func send(_ line: String) -> String {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { for (i, c) in control.utf8.enumerated() { $0[i] = c } }
    _ = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
        }
    }
    let out = Array((line + "\n").utf8)
    _ = write(fd, out, out.count)
    var answer: [UInt8] = []
    var c: UInt8 = 0
    while read(fd, &c, 1) == 1 && c != 0x0A { answer.append(c) }
    return String(decoding: answer, as: UTF8.self)
}

func stats() -> [String: Int] {
    var fields: [String: Int] = [:]
    for part in send("stats").split(separator: " ") {
        let kv = part.split(separator: "=")
        if kv.count == 2, let v = Int(kv[1]) { fields[String(kv[0])] = v }
    }
    return fields
}

// A v2 sticker on an NTAG213: the first COMPAT tags_v2 vector.
let url =
    "smp://action?idx=1&ts=1758686540&sig=eeaa6b04b4a2a004c1e52585799713f461eafa81573a7a23e255963a3ce13e69&u=Kxpen2V3lbY5yg2NFWxRgA"
let uid = TagUID(hex: "04F11AE6510705")!
let message = NDEFMessage(records: [.uri(url)])
let image = try TagImage.make(type: .ntag213, uid: uid, message: message)
let file = dir.appendingPathComponent("sticker.bin").path
try Data(image.bytes).write(to: URL(fileURLWithPath: file))
let tlvBytes = try Type2.ndefTLV(message).count  // TLV with its terminator

let reader = NFCReader(connstring: "pn532_uart:\(tty)")
try reader.open()

/// When the inserter thread sent the tag (it inserts while this thread polls).
final class Inserted: Sendable { let at = Mutex<ContinuousClock.Instant?>(nil) }
var latencies: [Double] = []
var frames: [Int] = []
var bytes: [Int] = []
var commands: [Int] = []
let insert = "insert \(uid.hex) \(file)"
for _ in 0..<taps {
    _ = send("remove")
    while try reader.poll() != nil {}  // the reader has seen the tag leave
    _ = send("stats reset")
    let inserted = Inserted()
    let inserter = Thread {
        usleep(50_000)  // a poll is in flight
        inserted.at.withLock { $0 = ContinuousClock.now }
        _ = send(insert)
    }
    inserter.start()
    while true {
        if let tag = try reader.poll(), (try? tag.message?.firstURI()) == url { break }
    }
    let done = ContinuousClock.now
    let start = inserted.at.withLock { $0 }!
    latencies.append(
        Double((done - start).components.attoseconds) / 1e15 + Double((done - start).components.seconds) * 1000)
    let s = stats()
    frames.append((s["rx_frames"] ?? 0) + (s["tx_frames"] ?? 0))
    bytes.append((s["rx_bytes"] ?? 0) + (s["tx_bytes"] ?? 0))
    commands.append(s["rx_frames"] ?? 0)
}
sim.terminate()
try? FileManager.default.removeItem(at: dir)

func percentile(_ xs: [Double], _ p: Double) -> Double {
    let s = xs.sorted()
    return s[min(s.count - 1, Int((p / 100 * Double(s.count - 1)).rounded()))]
}
func median(_ xs: [Int]) -> Int { xs.sorted()[xs.count / 2] }

// The minimal exchange (stated variant: one InListPassiveTarget, then one
// FAST_READ of pages 3 up to the TLV's last page), on the same models the
// emulator uses: UART 10 bits a byte at 115200 baud; ISO 14443-A at
// 106 kbit/s, 85/8 µs a bit plus an 86 µs frame delay per exchange.
let byteMicros = 10.0 / 115_200 * 1e6
func frame(_ payload: Int) -> Int { payload + 7 }  // 00 00 FF LEN LCS … DCS 00
let ack = 6
let pagesNeeded = (4 + tlvBytes + 3) / 4  // CC page, then the TLV
let fastReadAnswer = pagesNeeded * 4
let wireBytes =
    frame(4) + ack + frame(2 + 13)  // InListPassiveTarget 01 00 → NbTg Tg ATQA SAK len UID(7)
    + frame(2 + 4) + ack + frame(2 + 1 + fastReadAnswer)  // InDataExchange 01 3A s e → status + data
func air(_ bitsOut: Int, _ bitsIn: Int) -> Double { Double(bitsOut + bitsIn) * 85 / 8 + 86 }
let activation = air(7, 16) + 2 * (air(16, 40) + air(72, 24))  // REQA; anticollision + select, cascade levels 1 and 2
let rfMicros = activation + air(5 * 8, (fastReadAnswer + 2) * 8)
let minimalMs = (Double(wireBytes) * byteMicros + rfMicros) / 1000
let minimalFrames = 6  // two commands: host frame, ACK, answer each

print(
    "reader: \(taps) taps of a v2 sticker (\(tlvBytes)-byte TLV) on NTAG213 via libnfc → pn532-sim at 115200 baud with RF timing"
)
print(
    String(
        format: "  insertion → decoded NDEF: p50 %.1f ms, p99 %.1f ms", percentile(latencies, 50),
        percentile(latencies, 99)))
print(
    "  first tap of this sticker (no remembered length): \(commands[0]) commands, \(frames[0]) frames, \(bytes[0]) bytes"
)
print(
    "  per tap: \(median(commands)) PN532 commands, \(median(frames)) frames (host frames + ACKs + answers), \(median(bytes)) bytes"
)
print(
    String(
        format:
            "  minimal exchange (InListPassiveTarget + one FAST_READ of pages 3–%d): %d frames, %d bytes, wire %.1f ms + RF %.1f ms = %.1f ms",
        2 + pagesNeeded, minimalFrames, wireBytes, Double(wireBytes) * byteMicros / 1000, rfMicros / 1000, minimalMs))
print(
    String(
        format: "  targets: frames ≤ minimal + 2 = %d (got %d); p50 ≤ 1.3 × %.1f = %.1f ms (got %.1f)",
        minimalFrames + 2, median(frames), minimalMs, 1.3 * minimalMs, percentile(latencies, 50)))
