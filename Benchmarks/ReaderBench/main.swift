// make bench (reader): from tag insertion to decoded NDEF through libnfc and
// the reader adapter, against pn532-sim at an emulated 115200 baud with RF
// timing; p50/p99 over the taps, the PN532 frames and bytes each tap costs
// (from the emulator's stats), beside the wire + RF time of the minimal
// exchange the protocol allows for the same sticker. Prints figures only.
// A second row does the same for an NTAG 424 DNA the door provisioned
// (issue 26): insertion → decision inputs proved (EV2 + GetCardUID, SUN
// verified), beside the minimal activation + read + EV2 exchange on UART and
// on I²C at 400 kHz.
// Usage: reader-bench PN532_SIM_PATH [TAPS] [sticker] [ntag424]   (both rows by default)
import DoorCore
import Foundation
import NFCReader
import Synchronization

let args = CommandLine.arguments
guard args.count >= 2 else {
    FileHandle.standardError.write(Data("usage: reader-bench PN532_SIM [TAPS] [sticker] [ntag424]\n".utf8))
    exit(64)
}
let taps = args.count > 2 ? Int(args[2]) ?? 200 : 200
let rows = Set(args.dropFirst(3))
guard rows.isSubset(of: ["sticker", "ntag424"]) else {
    FileHandle.standardError.write(Data("reader-bench: rows are sticker and ntag424\n".utf8))
    exit(64)
}
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

/// One control line, its answer line.
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

func percentile(_ xs: [Double], _ p: Double) -> Double {
    let s = xs.sorted()
    return s[min(s.count - 1, Int((p / 100 * Double(s.count - 1)).rounded()))]
}
func median(_ xs: [Int]) -> Int { xs.sorted()[xs.count / 2] }

let reader = NFCReader(connstring: "pn532_uart:\(tty)")
try reader.open()

/// When the inserter thread put the tag in the field (it inserts while this thread polls).
final class Inserted: Sendable { let at = Mutex<ContinuousClock.Instant?>(nil) }

/// Puts the tag in the field once a poll is in flight, on another thread.
func insertSoon(_ line: String) -> Inserted {
    let inserted = Inserted()
    Thread {
        usleep(50_000)  // a poll is in flight
        inserted.at.withLock { $0 = ContinuousClock.now }
        _ = send(line)
    }.start()
    return inserted
}

@MainActor func stickerRow() throws {
    // A v2 sticker on an NTAG213: the first tags_v2 vector of Tests/Fixtures/compat.json.
    let url =
        "smp://action?idx=1&ts=1758686540&sig=eeaa6b04b4a2a004c1e52585799713f461eafa81573a7a23e255963a3ce13e69&u=Kxpen2V3lbY5yg2NFWxRgA"
    let uid = TagUID(hex: "04F11AE6510705")!
    let message = NDEFMessage(records: [.uri(url)])
    let image = try TagImage.make(type: .ntag213, uid: uid, message: message)
    let file = dir.appendingPathComponent("sticker.bin").path
    try Data(image.bytes).write(to: URL(fileURLWithPath: file))
    let tlvBytes = try Type2.ndefTLV(message).count  // TLV with its terminator

    var latencies: [Double] = []
    var frames: [Int] = []
    var bytes: [Int] = []
    var commands: [Int] = []
    for _ in 0..<taps {
        _ = send("remove")
        while try reader.poll() != nil {}  // the reader has seen the tag leave
        _ = send("stats reset")
        let inserted = insertSoon("insert \(uid.hex) \(file)")
        while true {
            if let tag = try reader.poll(), (try? tag.message?.firstURI()) == url { break }
        }
        let d = ContinuousClock.now - inserted.at.withLock { $0 }!
        latencies.append(ms(d))
        let s = stats()
        frames.append((s["rx_frames"] ?? 0) + (s["tx_frames"] ?? 0))
        bytes.append((s["rx_bytes"] ?? 0) + (s["tx_bytes"] ?? 0))
        commands.append(s["rx_frames"] ?? 0)
    }
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
    // REQA; anticollision + select, cascade levels 1 and 2
    let activation = air(7, 16) + 2 * (air(16, 40) + air(72, 24))
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
            2 + pagesNeeded, minimalFrames, wireBytes, Double(wireBytes) * byteMicros / 1000, rfMicros / 1000, minimalMs
        ))
    print(
        String(
            format: "  targets: frames ≤ minimal + 2 = %d (got %d); p50 ≤ 1.3 × %.1f = %.1f ms (got %.1f)",
            minimalFrames + 2, median(frames), minimalMs, 1.3 * minimalMs, percentile(latencies, 50)))

    // The same sticker as gatewayd's reader polls (NFCReader.pollTap: InAutoPoll for the
    // generic type A, 00h, one activation whatever the tag; until 2026-12 20h then 10h,
    // which activated a sticker twice). This, not the reader above, is what the daemon's
    // tap → output starts with (scripts/bench-daemon.py).
    var doorLatencies: [Double] = []
    var doorFrames: [Int] = []
    for _ in 0..<taps {
        _ = send("remove")
        while try reader.pollTap(ntag424Key: { _ in nil }) != nil {}
        _ = send("stats reset")
        let inserted = insertSoon("insert \(uid.hex) \(file)")
        while true {
            if case .type2(let tag)? = try reader.pollTap(ntag424Key: { _ in nil }),
                (try? tag.message?.firstURI()) == url
            {
                break
            }
        }
        doorLatencies.append(ms(ContinuousClock.now - inserted.at.withLock { $0 }!))
        let s = stats()
        doorFrames.append((s["rx_frames"] ?? 0) + (s["tx_frames"] ?? 0))
    }
    print(
        String(
            format:
                "  as gatewayd polls it (pollTap: InAutoPoll 00h, one activation): p50 %.1f ms, p99 %.1f ms, %d frames",
            percentile(doorLatencies, 50), percentile(doorLatencies, 99), median(doorFrames)))
}

func ms(_ d: Duration) -> Double { Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000 }

/// The NTAG 424 DNA row (issue 26): a factory tag provisioned once by the
/// reader with a site master key, then tapped: insertion → the facts the
/// door decides on, proved — the NDEF read before authenticating, its SUN
/// verified with the tag's keys and its counter above the last one,
/// AuthenticateEV2First with the tag's diversified key 0 and GetCardUID equal
/// to the anticollision UID. The store (counter, registry) is not in it.
@MainActor func ntag424Row() throws {
    let uid = TagUID(hex: "04DE5F1EACC040")!
    let master = try Crypto.randomBytes(16)
    let base = "https://door.example/t"
    _ = send("remove")
    _ = send("insert ntag424 \(uid.hex)")
    // A salted issue, as the door gives (docs/ntag424.md "Re-issuing a tag").
    let issue = NTAG424.KeyIssue.next(after: nil, salt: try Crypto.randomBytes(NTAG424.KeyIssue.saltLength))
    let plan = NTAG424IssuePlan(uid: uid, fresh: { issue })
    guard let provisioned = try reader.provisionNTAG424(masterKey: master, base: base, plan: plan) else {
        fatalError("the NTAG 424 did not answer for provisioning")
    }
    let keys = try NTAG424.DoorKeys(masterKey: master, uid: uid.bytes, issue: provisioned.issue)
    let lastCounter = Mutex(provisioned.counter)

    /// The door's checks on one tap; nil when they hold.
    @Sendable func refusal(_ tap: NTAG424Tap) -> String? {
        guard case .authenticated(let cardUID) = tap.proof, cardUID == tap.uid.bytes else {
            return "proof \(tap.proof)"
        }
        guard let uri = try? tap.message?.firstURI(), let sun = try? SUNURL.parse(uri),
            let v = try? sun.verify(
                metaReadKey: keys[NTAG424.DoorKeys.metaRead], fileReadKey: keys[NTAG424.DoorKeys.fileRead]),
            v.macOK, v.piccData.uid == tap.uid.bytes, let counter = v.piccData.counter
        else { return "SUN" }
        return lastCounter.withLock { last in
            guard counter > last else { return "counter \(counter) after \(last)" }
            last = counter
            return nil
        }
    }

    // The door's reader starts afresh: it has not read this tag's NDEF file yet.
    reader.close()
    let door = NFCReader(connstring: "pn532_uart:\(tty)")
    try door.open()
    // One tap with the tag already in the field: what a tap costs on the wire and in the air.
    // The door's own path (NFCReader.pollTap): InAutoPoll for ISO/IEC 14443-4 (with RATS)
    // then MIFARE, and the 424 tap on the target it activated.
    // Key 0 of the issue the tag was provisioned with (its salt: NTAG424.KeyIssue).
    let key0: (TagUID) -> [UInt8]? = {
        try? NTAG424.tagKey(masterKey: master, uid: $0.bytes, keyNumber: 0, issue: provisioned.issue)
    }
    func probeTap() -> (NTAG424Tap, String) {
        _ = send("remove")
        _ = send("reinsert")
        _ = send("stats reset")
        guard case .ntag424(let probe)? = try? door.pollTap(ntag424Key: key0) else {
            fatalError("the provisioned NTAG 424 did not answer")
        }
        if let why = refusal(probe) { fatalError("the probe tap was refused: \(why)") }
        return (probe, send("stats"))
    }
    // The first tap of this tag by this reader (NLEN read alone), then one with its length remembered.
    let (_, firstTapLine) = probeTap()
    let (probe, perTapLine) = probeTap()
    var perTap: [String: Int] = [:]
    for part in perTapLine.split(separator: " ") {
        let kv = part.split(separator: "=")
        if kv.count == 2, let v = Int(kv[1]) { perTap[String(kv[0])] = v }
    }
    var firstTap: [String: Int] = [:]
    for part in firstTapLine.split(separator: " ") {
        let kv = part.split(separator: "=")
        if kv.count == 2, let v = Int(kv[1]) { firstTap[String(kv[0])] = v }
    }
    let commandsText = perTapLine.split(separator: " ").first { $0.hasPrefix("commands=") }?.dropFirst(9) ?? "?"
    let ndefBytes = probe.ndef.count

    var latencies: [Double] = []
    for _ in 0..<taps {
        _ = send("remove")
        while try door.pollTap(ntag424Key: { _ in nil }) != nil {}  // the reader has seen the tag leave
        let inserted = insertSoon("reinsert")
        polling: while true {
            switch try door.pollTap(ntag424Key: key0) {
            case .ntag424(let tap)?:
                if let why = refusal(tap) { fatalError("a tap was refused: \(why)") }
                break polling
            case nil: continue
            case let other?: fatalError("not the 424: \(other)")
            }
        }
        let d = ContinuousClock.now - inserted.at.withLock { $0 }!
        latencies.append(Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000)
    }

    // The minimal exchange: InListPassiveTarget with RATS (activation + ATS),
    // ISOSelectFile of the NDEF application and of E104, one ISOReadBinary of
    // NLEN and the whole message, AuthenticateEV2First in its two parts; each
    // a host frame, the ACK and the answer. The door's own tap (pollTap) adds
    // GetCardUID and InAutoPoll's longer frames; the first tap of a tag by a
    // reader also reads NLEN alone.
    func frame(_ payload: Int) -> Int { payload + 7 }  // 00 00 FF LEN LCS (TFI cmd …) DCS 00
    let ack = 6
    let readLength = ndefBytes + 2
    // (command payload after D4, answer payload after D5; APDU out, R-APDU in, for the air)
    let apdus: [(out: Int, back: Int)] = [(13, 2), (7, 2), (5, readLength + 2), (8, 18), (38, 34)]
    let hostFrames = [frame(1 + 3)] + apdus.map { frame(1 + 2 + $0.out) }
    let answers = [frame(1 + 1 + 19)] + apdus.map { frame(1 + 1 + 1 + $0.back) }
    let commandCount = hostFrames.count
    let uartBytes = hostFrames.reduce(0, +) + answers.reduce(0, +) + commandCount * ack
    let uartMicros = Double(uartBytes * 10) / 115_200 * 1e6
    // I²C (the bench-bus model): 9 clocks a byte, the address byte each transfer,
    // reads begin with the status byte, a start and a stop each transfer.
    let i2cBytes =
        hostFrames.map { $0 + 1 }.reduce(0, +) + answers.map { $0 + 2 }.reduce(0, +) + commandCount * (ack + 2)
    let i2cMicros = Double(i2cBytes * 9 + 3 * commandCount * 2) / 400_000 * 1e6
    func air(_ bitsOut: Int, _ bitsIn: Int) -> Double { Double(bitsOut + bitsIn) * 85 / 8 + 86 }
    // REQA; anticollision + select on both cascade levels; RATS → ATS (6 bytes), each with CRC.
    var rfMicros = air(7, 16) + 2 * (air(16, 40) + air(72, 24)) + air(4 * 8, 8 * 8)
    let room = 128 - 3  // the tag's FSC less PCB and CRC
    for a in apdus {
        // I-block PCB + APDU + CRC out; the answer chained in blocks of `room`, each block
        // after the first fetched with an R(ACK) (PCB + CRC).
        let blocks = max(1, (a.back + room - 1) / room)
        rfMicros += air((1 + a.out + 2) * 8, (1 + min(a.back, room) + 2) * 8)
        for b in 1..<blocks { rfMicros += air(3 * 8, (1 + min(room, a.back - b * room) + 2) * 8) }
    }
    let minimalUART = (uartMicros + rfMicros) / 1000
    let minimalI2C = (i2cMicros + rfMicros) / 1000

    // The door's own tap on UART and on I²C at 400 kHz, from its measured frames and
    // bytes and the emulator's air time for it (the same models).
    func modelled(_ t: [String: Int]) -> (uart: Double, i2c: Double) {
        let hostIn = t["rx_frames"] ?? 0, chipOut = t["tx_frames"] ?? 0
        let i2cBytes = (t["rx_bytes"] ?? 0) + hostIn + (t["tx_bytes"] ?? 0) + 2 * chipOut
        let air = Double(t["air_us"] ?? 0)
        let i2c = (Double(i2cBytes * 9 + 2 * (hostIn + chipOut) * 2) / 400_000 * 1e6 + air) / 1000
        let uart = (Double(((t["rx_bytes"] ?? 0) + (t["tx_bytes"] ?? 0)) * 10) / 115_200 * 1e6 + air) / 1000
        return (uart, i2c)
    }
    let (doorUART, doorI2C) = modelled(perTap)
    let (firstUART, firstI2C) = modelled(firstTap)
    let p50 = percentile(latencies, 50)

    print(
        "reader: \(taps) taps of an NTAG 424 DNA the door provisioned (\(ndefBytes)-byte NDEF with SUN) via libnfc → pn532-sim at 115200 baud with RF timing"
    )
    print(
        String(
            format: "  insertion → proved (NDEF + SUN verified, EV2 + GetCardUID): p50 %.1f ms, p99 %.1f ms", p50,
            percentile(latencies, 99)))
    print(
        "  per tap: \(perTap["rx_frames"] ?? 0) host frames (by code \(commandsText)),"
            + " \(perTap["tag_exchanges"] ?? 0) air exchanges, \((perTap["rx_bytes"] ?? 0) + (perTap["tx_bytes"] ?? 0)) frame bytes, air \(perTap["air_us"] ?? 0) µs"
    )
    print(
        "  first tap of this tag by this reader (no remembered length): \(firstTap["rx_frames"] ?? 0) host frames,"
            + " \(firstTap["tag_exchanges"] ?? 0) air exchanges, \((firstTap["rx_bytes"] ?? 0) + (firstTap["tx_bytes"] ?? 0)) frame bytes, air \(firstTap["air_us"] ?? 0) µs;"
            + String(format: " modelled UART %.1f ms, I²C %.1f ms", firstUART, firstI2C)
    )
    print(
        String(
            format:
                "  minimal exchange (InListPassiveTarget+RATS, 2 ISOSelect, 1 ISOReadBinary of %d bytes, EV2First ×2): %d commands, %d frames, RF %.1f ms;"
                + " UART 115200: wire %.1f ms = %.1f ms; I²C 400 kHz: wire %.1f ms = %.1f ms",
            readLength, commandCount, 3 * commandCount, rfMicros / 1000, uartMicros / 1000, minimalUART,
            i2cMicros / 1000, minimalI2C))
    print(
        String(
            format:
                "  the door's tap modelled (its frames and bytes, the emulator's air time): UART 115200 %.1f ms, I²C 400 kHz %.1f ms",
            doorUART, doorI2C))
    print(
        String(
            format:
                "  targets: p50 ≤ 1.3 × UART minimal %.1f = %.1f ms (got %.1f, %.2f×); I²C: door's tap modelled %.1f ms vs 1.3 × %.1f = %.1f ms and < 150 ms",
            minimalUART, 1.3 * minimalUART, p50, p50 / minimalUART, doorI2C, minimalI2C, 1.3 * minimalI2C))
    _ = send("remove")
}

if rows.isEmpty || rows.contains("sticker") { try stickerRow() }
if rows.isEmpty || rows.contains("ntag424") { try ntag424Row() }
sim.terminate()
try? FileManager.default.removeItem(at: dir)
