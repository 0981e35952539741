import DoorCore

/// What the chip model asks its driver to do.
public enum ChipEffect: Equatable, Sendable {
    /// Write these bytes to the host link.
    case send([UInt8])
    /// The command just answered kept the RF interface busy this long
    /// (the driver waits it out when RF timing is on).
    case airTime(microseconds: Int)
    /// Call `timerFired(token)` after this long (InAutoPoll's polling period).
    case startTimer(token: Int, milliseconds: Int)
}

/// Counters kept since start or the last `stats reset`.
public struct ChipStats: Equatable, Sendable {
    public var bytesIn = 0, bytesOut = 0
    public var framesIn = 0, framesOut = 0
    public var acksIn = 0, nacksIn = 0, corruptIn = 0
    public var acksOut = 0, errorFramesOut = 0
    /// Commands that arrived while another was still running (not ACKed).
    public var ignoredWhileBusy = 0
    /// Running commands aborted by an ACK from the host.
    public var aborted = 0
    public var tagExchanges = 0
    /// Activations the chip ran that a tag answered (its WUPA, the first frame of each:
    /// InListPassiveTarget, InAutoPoll, InSelect), whether or not they ended selected.
    public var activations = 0
    /// Modelled air time of those exchanges (µs; 106 kbit/s, the same figure `--rf-timing` waits out).
    public var airMicroseconds = 0
    /// Command codes received, with how often each came.
    public var commands: [UInt8: Int] = [:]

    public init() {}

    /// One line of `key=value` fields, commands as `4A:3,40:12` in code order.
    public var summary: String {
        let cmds = commands.keys.sorted().map { "\(Hex.encode([$0], uppercase: true)):\(commands[$0]!)" }
        return "rx_frames=\(framesIn) rx_bytes=\(bytesIn) tx_frames=\(framesOut) tx_bytes=\(bytesOut)"
            + " rx_acks=\(acksIn) rx_nacks=\(nacksIn) rx_corrupt=\(corruptIn) tx_acks=\(acksOut)"
            + " tx_error_frames=\(errorFramesOut) ignored_busy=\(ignoredWhileBusy) aborted=\(aborted)"
            + " tag_exchanges=\(tagExchanges) activations=\(activations) air_us=\(airMicroseconds) commands=\(cmds.isEmpty ? "-" : cmds.joined(separator: ","))"
    }
}

/// A PN532 on its HSU link with an antenna field that may hold one
/// NTAG21x. I/O-free: bytes from the host and control events go in,
/// `ChipEffect`s come out (DEVELOPERS.md "Conventions" §1). Command set and status codes from
/// the PN532 User Manual UM0701-02 §7; libnfc 1.8.0 `pn53x.c` shows which
/// commands and registers a host really uses.
public struct PN532Chip: Sendable {
    /// Power state (UM0701-02 §3.1.3.2 and §7.2.11 PowerDown).
    public enum Power: Equatable, Sendable {
        /// After reset (PN532 C106): asleep until woken on HSU.
        case lowVBat
        /// After PowerDown; woken by 55h on HSU only when its WakeUpEnable bit 4 (HSU) was set.
        case powerDown(hsuWakeUp: Bool)
        case normal
    }

    /// A command accepted (ACKed) that has not answered yet.
    enum Pending: Equatable, Sendable {
        /// InListPassiveTarget waiting for a tag (MxRtyPassiveActivation = FFh).
        case listPassive(maxTargets: Int, uid: [UInt8]?)
        /// InAutoPoll waiting for a tag; finite polling ends at the timer.
        case autoPoll(types: [UInt8], timerToken: Int?)
        /// A command that never answers (`hang`, or target mode waiting for an initiator).
        case forever(command: UInt8)

        var command: UInt8 {
            switch self {
            case .listPassive: return 0x4A
            case .autoPoll: return 0x60
            case .forever(let c): return c
            }
        }
    }

    public private(set) var power: Power = .lowVBat
    public private(set) var registers = Registers()
    public private(set) var rfOn = false
    /// MxRtyATR, MxRtyPSL, MxRtyPassiveActivation (RFConfiguration item 05h); power-on defaults.
    public private(set) var maxRetries: (atr: UInt8, psl: UInt8, passiveActivation: UInt8) = (0xFF, 0x01, 0xFF)
    public private(set) var parameters: UInt8 = 0
    public private(set) var samMode: UInt8 = 0x01
    public private(set) var stats = ChipStats()
    /// The tag in the antenna field.
    public private(set) var tag: NTAG21x?
    /// The last tag that left the field (removed or torn away), kept for `reinsert` and `dump`.
    public private(set) var departedTag: NTAG21x?
    /// An NTAG 424 DNA in the antenna field (instead of `tag`).
    public private(set) var dna: NTAG424DNA?
    /// The NTAG 424 DNA that last left the field (when the last tag to leave was one).
    public private(set) var departedDNA: NTAG424DNA?
    /// Whether any tag is in the field.
    public var hasTag: Bool { tag != nil || dna != nil }
    /// The chip stops answering altogether.
    public var muted = false
    /// The chip ACKs commands but never answers them.
    public var hung = false
    /// `nad`: the next answer whose status byte libnfc checks for a NAD
    /// (bit 7) carries one. No PN532 sends it to an initiator without NAD
    /// framing, and libnfc 1.8.0 `pn53x_transceive` calls `abort()` on it
    /// after PowerDown, InDataExchange, InCommunicateThru, InJumpForPSL,
    /// InPSL, InATR, InSelect and InJumpForDEP (and target commands).
    public var nadArmed = false
    /// `mi-empty`: the next InDataExchange answer has MI (bit 6, more
    /// information) set in its status byte, and the host's continuation
    /// (InDataExchange with the target number alone) is answered with no
    /// status byte at all. libnfc 1.8.0 `pn53x_transceive` then copies
    /// `res2 - 1` = -1 bytes (`memcpy` of SIZE_MAX): SIGSEGV.
    public var miEmptyArmed = false
    /// The continuation `mi-empty` answers empty is expected next.
    private var miContinuation = false
    /// Answer codes of those commands (the command code + 1).
    static let nadCheckedAnswers: Set<UInt8> = [0x17, 0x41, 0x43, 0x47, 0x4F, 0x51, 0x55, 0x57]
    /// Tag exchanges left before the tag leaves the field (`tear-after N`).
    public private(set) var tearAfter: Int?
    /// `tear-after N` given with no tag in the field: the next tag to enter
    /// leaves after N exchanges, counted from its arrival (its activation
    /// included), so a host polling all the while cannot read it first.
    public private(set) var tearNext: Int?

    private var decoder = FrameDecoder()
    private var pending: Pending?
    /// Tg 1 is activated (true) or deselected (false); nil when no target.
    private var target: Bool?
    /// Tg 1 was activated with RATS/ATS: InDataExchange speaks ISO/IEC 14443-4 to it.
    private var isoDep = false
    /// The PCD's ISO/IEC 14443-4 block number (§7.5.3.2: starts at 0 after activation).
    private var pcdBlockNumber: UInt8 = 0
    private var lastResponse: [UInt8]?
    private var lastStatus: UInt8 = 0
    private var timerCounter = 0
    private var airMicroseconds = 0
    /// PowerDown's WakeUpEnable byte: bit 7 I2C, bit 5 SPI, bit 4 HSU.
    private var wakeUpEnable: UInt8 = 0

    public init(tag: NTAG21x? = nil) { self.tag = tag }

    public var isBusy: Bool { pending != nil }

    // MARK: Events from the driver

    /// Bytes from the host.
    public mutating func receive(_ bytes: [UInt8]) -> [ChipEffect] {
        stats.bytesIn += bytes.count
        var input = bytes[...]
        switch power {
        case .normal:
            break
        case .lowVBat, .powerDown(hsuWakeUp: true):
            // Asleep: everything up to the first 55h is lost; the chip wakes on it.
            guard let wake = input.firstIndex(of: 0x55) else { return [] }
            power = .normal
            // Woken up, the CIU starts from its power-on settings: what libnfc
            // assumes of a device it has just opened (CRC and parity on).
            registers = Registers()
            input = input[(wake + 1)...]
        case .powerDown(hsuWakeUp: false):
            return []
        }
        var effects: [ChipEffect] = []
        for frame in decoder.feed(Array(input)) { effects += handle(frame) }
        return effects
    }

    /// The PN532's I2C or SPI host interfaces.
    public enum Bus: Sendable { case i2c, spi }

    /// The host addressed the chip on I2C (its address, the chip holding SCL
    /// while it wakes) or selected it on SPI (NSS low): from LowVBat, and from
    /// PowerDown when WakeUpEnable allows that interface, it wakes as HSU's
    /// 55h wakes it (UM0701-02 §3.1.3.2, §7.2.11). Returns whether it woke.
    public mutating func busWakeUp(_ bus: Bus) -> Bool {
        switch power {
        case .normal: return false
        case .lowVBat: break
        case .powerDown:
            guard wakeUpEnable & (bus == .i2c ? 0x80 : 0x20) != 0 else { return false }
        }
        power = .normal
        registers = Registers()
        return true
    }

    /// Asleep (LowVBat or PowerDown): on SPI its MISO floats high.
    public var isAsleep: Bool { power != .normal }

    /// The host link was quiet for a while: an unfinished frame is dropped.
    public mutating func linkIdle() {
        if decoder.hasPartialFrame { decoder.discardPartial() }
    }

    public mutating func insert(_ newTag: NTAG21x) -> [ChipEffect] {
        if let old = tag { departedTag = old; departedDNA = nil }
        if var old = dna {
            old.powerOff()
            departedDNA = old
            departedTag = nil
            dna = nil
        }
        tag = newTag
        tearAfter = tearNext
        tearNext = nil
        return tagArrived()
    }

    /// An NTAG 424 DNA enters the field (any other tag leaves it).
    public mutating func insert(_ newTag: NTAG424DNA) -> [ChipEffect] {
        if var old = tag {
            old.powerOff()
            departedTag = old
            departedDNA = nil
            tag = nil
        }
        if let old = dna { departedDNA = old; departedTag = nil }
        dna = newTag
        tearAfter = tearNext
        tearNext = nil
        return tagArrived()
    }

    /// Puts the last departed tag back, with its memory and counters.
    public mutating func reinsert() -> [ChipEffect]? {
        if let d = departedDNA {
            departedDNA = nil
            return insert(d)
        }
        guard let t = departedTag else { return nil }
        departedTag = nil
        return insert(t)
    }

    public mutating func remove() {
        if var d = dna {
            d.powerOff()
            departedDNA = d
            departedTag = nil
            dna = nil
            tearAfter = nil
            return
        }
        guard var t = tag else { return }
        t.powerOff()
        departedTag = t
        departedDNA = nil
        tag = nil
        tearAfter = nil
    }

    /// The NTAG 424 DNA in the field, else the one that left it last.
    public var currentOrDepartedDNA: NTAG424DNA? { dna ?? departedDNA }

    /// `ntag424-fault`: the NTAG 424 DNA in the field (else the one that
    /// left it last, which `reinsert` brings back) lies from now on; false
    /// when there is none.
    public mutating func setNTAG424Fault(_ fault: NTAG424Application.Fault?) -> Bool {
        if dna != nil {
            dna!.application.fault = fault
            return true
        }
        guard departedDNA != nil else { return false }
        departedDNA!.application.fault = fault
        return true
    }

    /// `tear-after N`: the tag leaves the field after `n` more exchanges (0:
    /// now). With no tag in the field, the next tag to enter leaves after `n`
    /// exchanges (`tearNext`; 0 disarms it).
    public mutating func tear(after n: Int) {
        guard hasTag else {
            tearNext = n > 0 ? n : nil
            return
        }
        if n <= 0 { remove() } else { tearAfter = n }
    }

    /// `unmute`: answers again; a command left hanging by `hang` is dropped.
    public mutating func unmute() {
        muted = false
        hung = false
        nadArmed = false
        miEmptyArmed = false
        miContinuation = false
        if case .forever = pending { pending = nil }
    }

    public mutating func resetStats() { stats = ChipStats() }

    public mutating func timerFired(_ token: Int) -> [ChipEffect] {
        guard case .autoPoll(_, let t) = pending, t == token else { return [] }
        pending = nil
        return respond(0x61, [0x00])
    }

    // MARK: Frames

    private mutating func handle(_ frame: DecodedFrame) -> [ChipEffect] {
        stats.framesIn += 1
        switch frame {
        case .ack:
            stats.acksIn += 1
            // An ACK from the host aborts the running command (UM0701-02 §6.2.1.3).
            if pending != nil {
                pending = nil
                stats.aborted += 1
            }
            return []
        case .nack:
            stats.nacksIn += 1
            guard !muted, pending == nil, let last = lastResponse else { return [] }
            return [send(last)]
        case .corrupt:
            stats.corruptIn += 1
            return []
        case .information(let tfi, let data):
            guard tfi == Frame.hostTFI, let code = data.first else { return [] }
            stats.commands[code, default: 0] += 1
            if muted { return [] }
            if pending != nil {
                stats.ignoredWhileBusy += 1
                return []
            }
            stats.acksOut += 1
            var effects = [send(Frame.ack, isResponse: false)]
            if hung {
                pending = .forever(command: code)
                return effects
            }
            airMicroseconds = 0
            effects += execute(code, Array(data.dropFirst()))
            if airMicroseconds > 0 { effects.insert(.airTime(microseconds: airMicroseconds), at: 1) }
            return effects
        }
    }

    private mutating func send(_ bytes: [UInt8], isResponse: Bool = true) -> ChipEffect {
        stats.framesOut += 1
        stats.bytesOut += bytes.count
        if isResponse { lastResponse = bytes }
        return .send(bytes)
    }

    private mutating func respond(_ code: UInt8, _ data: [UInt8]) -> [ChipEffect] {
        if muted { return [] }
        return [send(Frame.encode([code] + data))]
    }

    private mutating func syntaxError() -> [ChipEffect] {
        stats.errorFramesOut += 1
        return [send(Frame.applicationError)]
    }

    /// Commands carrying a status byte first record it for GetGeneralStatus.
    private mutating func status(_ code: UInt8, _ s: UInt8, _ data: [UInt8] = []) -> [ChipEffect] {
        lastStatus = s
        if nadArmed && Self.nadCheckedAnswers.contains(code) && !muted {
            nadArmed = false
            return respond(code, [s | 0x80] + data)
        }
        if miEmptyArmed && code == 0x41 && !muted {
            miEmptyArmed = false
            miContinuation = true
            return respond(code, [s | 0x40] + data)
        }
        return respond(code, [s] + data)
    }

    // MARK: Commands (UM0701-02 §7)

    private mutating func execute(_ code: UInt8, _ p: [UInt8]) -> [ChipEffect] {
        switch code {
        case 0x00: return diagnose(p)
        case 0x02: return respond(0x03, [0x32, 0x01, 0x06, 0x07])  // GetFirmwareVersion: PN532 v1.6, ISO A+B+18092
        case 0x04: return generalStatus()
        case 0x06: return readRegisters(p)
        case 0x08: return writeRegisters(p)
        case 0x0C: return respond(0x0D, [0xFF, 0xFF, 0x00])  // ReadGPIO
        case 0x0E: return respond(0x0F, [])  // WriteGPIO
        case 0x10:  // SetSerialBaudRate: accepted, the pty has no baud rate
            return p.count == 1 ? respond(0x11, []) : syntaxError()
        case 0x12:
            guard p.count == 1 else { return syntaxError() }
            parameters = p[0]
            return respond(0x13, [])
        case 0x14: return samConfiguration(p)
        case 0x16: return powerDown(p)
        case 0x32: return rfConfiguration(p)
        case 0x40: return inDataExchange(p)
        case 0x42: return inCommunicateThru(p)
        case 0x44: return deselectOrRelease(0x45, p, release: false)
        case 0x46, 0x56: return status(code + 1, 0x01)  // InJumpForPSL / InJumpForDEP: no DEP target answers
        case 0x4A: return inListPassiveTarget(p)
        case 0x4E, 0x50: return status(code + 1, 0x27)  // InPSL / InATR: no DEP target activated
        case 0x52: return deselectOrRelease(0x53, p, release: true)
        case 0x54: return inSelect(p)
        case 0x58, 0x8C:  // RFRegulationTest, TgInitAsTarget: run until the host aborts (no initiator ever comes)
            pending = .forever(command: code)
            return []
        case 0x60: return inAutoPoll(p)
        case 0x8A: return respond(0x8B, [0x00])  // TgGetTargetStatus: not a target
        case 0x86, 0x88, 0x8E, 0x90, 0x92, 0x94: return status(code + 1, 0x25)  // target commands outside target mode
        default: return syntaxError()
        }
    }

    private mutating func diagnose(_ p: [UInt8]) -> [ChipEffect] {
        guard let test = p.first else { return syntaxError() }
        switch test {
        case 0x00: return respond(0x01, p)  // communication line test: echo
        case 0x01, 0x02, 0x07: return respond(0x01, [0x00])  // ROM, RAM, antenna self-tests pass
        case 0x04: return respond(0x01, [0x00])  // polling test: no failures
        case 0x05: return respond(0x01, [0x00])  // echo-back test started (its frames are not emulated)
        case 0x06:  // attention request / card presence
            let present =
                target == true
                && (tag?.state == .active || tag?.state == .authenticated || dna?.isActive == true)
            return respond(0x01, [present ? 0x00 : 0x01])
        default: return syntaxError()
        }
    }

    private mutating func generalStatus() -> [ChipEffect] {
        var out: [UInt8] = [lastStatus, rfOn ? 0x01 : 0x00, target == nil ? 0 : 1]
        if target != nil { out += [0x01, 0x00, 0x00, 0x00] }  // Tg 1, 106 kbit/s both ways, type A
        out.append(0x00)  // SAM status
        return respond(0x05, out)
    }

    private mutating func readRegisters(_ p: [UInt8]) -> [ChipEffect] {
        guard !p.isEmpty, p.count % 2 == 0 else { return syntaxError() }
        let values = stride(from: 0, to: p.count, by: 2).map { registers[UInt16(p[$0]) << 8 | UInt16(p[$0 + 1])] }
        return respond(0x07, values)
    }

    private mutating func writeRegisters(_ p: [UInt8]) -> [ChipEffect] {
        guard !p.isEmpty, p.count % 3 == 0 else { return syntaxError() }
        for i in stride(from: 0, to: p.count, by: 3) {
            registers[UInt16(p[i]) << 8 | UInt16(p[i + 1])] = p[i + 2]
        }
        return respond(0x09, [])
    }

    private mutating func samConfiguration(_ p: [UInt8]) -> [ChipEffect] {
        guard (1...3).contains(p.count), (1...4).contains(p[0]) else { return syntaxError() }
        samMode = p[0]
        return respond(0x15, [])
    }

    private mutating func powerDown(_ p: [UInt8]) -> [ChipEffect] {
        guard (1...2).contains(p.count) else { return syntaxError() }
        let effects = status(0x17, 0x00)
        setField(false)
        power = .powerDown(hsuWakeUp: p[0] & 0x10 != 0)
        wakeUpEnable = p[0]
        return effects
    }

    private mutating func rfConfiguration(_ p: [UInt8]) -> [ChipEffect] {
        guard let item = p.first else { return syntaxError() }
        let lengths: [UInt8: Int] = [0x01: 1, 0x02: 3, 0x04: 1, 0x05: 3, 0x0A: 11, 0x0B: 8, 0x0C: 3, 0x0D: 9]
        guard let n = lengths[item], p.count == n + 1 else { return syntaxError() }
        switch item {
        case 0x01: setField(p[1] & 0x01 != 0)
        case 0x05: maxRetries = (p[1], p[2], p[3])
        default: break  // timings, MaxRtyCOM and analog settings do not change the emulation
        }
        return respond(0x33, [])
    }

    // MARK: RF

    private mutating func setField(_ on: Bool) {
        if rfOn && !on {
            tag?.powerOff()
            dna?.powerOff()
            if target != nil { target = false }
        }
        rfOn = on
    }

    /// One frame to the tag and its answer, counting toward `tear-after`.
    private mutating func exchange(_ frame: AirFrame) -> AirFrame? {
        guard rfOn, hasTag else { return nil }
        stats.tagExchanges += 1
        let answer: AirFrame?
        if var d = dna {
            answer = d.receive(frame)
            dna = d
        } else {
            var t = tag!
            answer = t.receive(frame)
            tag = t
        }
        // Air time at 106 kbit/s: 9 bits a byte (parity) at 9.44 µs a bit, plus
        // the frame delay time (~86 µs) and, after WRITE, the EEPROM's 4.1 ms.
        let before = airMicroseconds
        airMicroseconds += (frame.bitCount + (answer?.bitCount ?? 0)) * 85 / 8 + 86
        // (An NTAG 424's frames are ISO-DEP blocks: A2 there is an R(ACK), not WRITE.)
        if dna == nil && (frame.bytes.first == 0xA2 || frame.bytes.first == 0xA0) { airMicroseconds += 4100 }
        stats.airMicroseconds += airMicroseconds - before
        if let n = tearAfter {
            if n <= 1 { remove() } else { tearAfter = n - 1 }
        }
        return answer
    }

    /// Activation of a 106 kbit/s type A target: WUPA, then anticollision and
    /// select over both cascade levels (ISO/IEC 14443-3 §6.4), and RATS to an
    /// ISO/IEC 14443-4 target when `rats` (fAutomaticRATS, where the command sends
    /// it). Returns the target data (SENS_RES as the PN532 reports it, SEL_RES,
    /// NFCID1, then the ATS when RATS was sent).
    private mutating func activate(uid wanted: [UInt8]?, rats: Bool) -> [UInt8]? {
        guard let atqa = exchange(AirFrame([0x52], lastBits: 7)), atqa.bytes.count == 2 else { return nil }
        stats.activations += 1
        guard let cl1 = exchange(AirFrame([0x93, 0x20])), cl1.bytes.count == 5,
            case let sel1 = [0x93, 0x70] + cl1.bytes, let sak1 = exchange(.withCRC(sel1)),
            sak1.bytes.count == 3, sak1.bytes[0] & 0x04 != 0,
            let cl2 = exchange(AirFrame([0x95, 0x20])), cl2.bytes.count == 5,
            case let sel2 = [0x95, 0x70] + cl2.bytes, let sak2 = exchange(.withCRC(sel2)),
            sak2.bytes.count == 3
        else { return nil }
        let uid = Array(cl1.bytes[1...3] + cl2.bytes[0...3])
        if let wanted, !wanted.isEmpty, wanted != uid { return nil }
        isoDep = false
        var ats: [UInt8] = []
        // An ISO/IEC 14443-4 target gets RATS (FSDI 8 = 256 bytes, CID 0) and its
        // ATS joins the target data.
        if sak2.bytes[0] & 0x20 != 0 && rats {
            guard let answer = exchange(.withCRC([0xE0, 0x80])), CRC.isValid(answer.bytes) else { return nil }
            ats = Array(answer.bytes.dropLast(2))
            guard let tl = ats.first, Int(tl) == ats.count else { return nil }
            isoDep = true
            pcdBlockNumber = 0
        }
        return [atqa.bytes[1], atqa.bytes[0], sak2.bytes[0], UInt8(uid.count)] + uid + ats
    }

    /// Drops the current target the way the firmware does before a new
    /// activation or on InDeselect/InRelease: HLTA to the selected tag.
    private mutating func haltTarget() {
        guard target == true else { return }
        // An ISO-DEP target is deselected with S(DESELECT) (ISO/IEC 14443-4 §8), others halted.
        _ = exchange(.withCRC(isoDep ? [0xC2] : [0x50, 0x00]))
        isoDep = false
    }

    private mutating func inListPassiveTarget(_ p: [UInt8]) -> [ChipEffect] {
        guard p.count >= 2, (1...2).contains(p[0]), p[1] <= 4 else { return syntaxError() }
        guard p[1] == 0x00 else {
            // FeliCa, type B and Jewel: no such target is ever in the field.
            if maxRetries.passiveActivation == 0xFF {
                pending = .forever(command: 0x4A)
                return []
            }
            return respond(0x4B, [0x00])
        }
        let uid = p.count > 2 ? Array(p[2...]) : nil
        haltTarget()
        target = nil
        setField(true)
        registers.selectTypeA106()
        let tries = maxRetries.passiveActivation == 0xFF ? 1 : Int(maxRetries.passiveActivation) + 1
        for _ in 0..<tries {
            if let data = activate(uid: uid, rats: automaticRATS) {
                target = true
                return respond(0x4B, [0x01, 0x01] + data)
            }
        }
        if maxRetries.passiveActivation == 0xFF {
            pending = .listPassive(maxTargets: Int(p[0]), uid: uid)
            return []
        }
        return respond(0x4B, [0x00])
    }

    private mutating func inAutoPoll(_ p: [UInt8]) -> [ChipEffect] {
        guard p.count >= 3, p.count <= 17, p[1] >= 1 else { return syntaxError() }
        let types = Array(p[2...])
        if let found = autoPollFind(types) { return respond(0x61, found) }
        if p[0] == 0xFF {
            pending = .autoPoll(types: types, timerToken: nil)
            return []
        }
        timerCounter += 1
        pending = .autoPoll(types: types, timerToken: timerCounter)
        // Each poll tries every type for Period × 150 ms (UM0701-02 §7.3.13).
        return [.startTimer(token: timerCounter, milliseconds: Int(p[0]) * types.count * Int(p[1]) * 150)]
    }

    /// fAutomaticRATS (SetParameters bit 4).
    private var automaticRATS: Bool { parameters & 0x10 != 0 }

    /// InAutoPoll's search, each type in the order given an attempt of its own (as
    /// libnfc's `nfc-poll` notes describe the PN532: ISO/IEC 14443-4 targets first, then
    /// ISO/IEC 14443-3): 20h (passive 106 kbit/s ISO/IEC 14443-4 type A) takes only a
    /// target whose SAK has bit 5 set and sends it RATS when fAutomaticRATS is on
    /// (libnfc polls 20h only then), its ATS in the target data; 10h (MIFARE card)
    /// takes any type A target and sends no RATS, fAutomaticRATS or not; 00h (generic
    /// passive 106 kbit/s) takes any, with RATS as InListPassiveTarget sends it. A target
    /// that does not fit an attempt is halted (HLTA) and woken again (WUPA) by the next.
    /// The answer: NbTg 1, the type that found it, the target data's length, the data.
    private mutating func autoPollFind(_ types: [UInt8]) -> [UInt8]? {
        guard hasTag else { return nil }
        for type in types where type == 0x00 || type == 0x10 || type == 0x20 {
            haltTarget()
            target = nil
            setField(true)
            registers.selectTypeA106()
            guard let data = activate(uid: nil, rats: type != 0x10 && automaticRATS) else { continue }
            target = true
            if type == 0x20 && data[2] & 0x20 == 0 { continue }  // not ISO/IEC 14443-4: halted by the next attempt
            let targetData = [0x01] + data
            return [0x01, type, UInt8(targetData.count)] + targetData
        }
        if target == true { haltTarget() }
        target = nil
        return nil
    }

    /// A tag entered the field: a command waiting for one answers, after the air
    /// time of the activation it ran (`airTime` first, as a command's).
    private mutating func tagArrived() -> [ChipEffect] {
        airMicroseconds = 0
        let effects = answerWaitingCommand()
        guard airMicroseconds > 0, !effects.isEmpty else { return effects }
        return [.airTime(microseconds: airMicroseconds)] + effects
    }

    private mutating func answerWaitingCommand() -> [ChipEffect] {
        switch pending {
        case .listPassive(_, let uid):
            haltTarget()
            setField(true)
            registers.selectTypeA106()
            guard let data = activate(uid: uid, rats: automaticRATS) else { return [] }
            pending = nil
            target = true
            return respond(0x4B, [0x01, 0x01] + data)
        case .autoPoll(let types, _):
            guard let found = autoPollFind(types) else { return [] }
            pending = nil
            return respond(0x61, found)
        default:
            return []
        }
    }

    private mutating func deselectOrRelease(_ answer: UInt8, _ p: [UInt8], release: Bool) -> [ChipEffect] {
        guard p.count == 1 else { return syntaxError() }
        guard p[0] == 0x00 || (p[0] == 0x01 && target != nil) else { return status(answer, 0x27) }
        haltTarget()
        if target != nil { target = release ? nil : false }
        return status(answer, 0x00)
    }

    private mutating func inSelect(_ p: [UInt8]) -> [ChipEffect] {
        guard p.count == 1 else { return syntaxError() }
        guard p[0] == 0x01, target != nil else { return status(0x55, 0x27) }
        haltTarget()
        registers.selectTypeA106()
        guard activate(uid: nil, rats: automaticRATS) != nil else { return status(0x55, 0x01) }
        target = true
        return status(0x55, 0x00)
    }

    /// InDataExchange to the MIFARE-family target: the firmware adds and
    /// checks CRC_A itself, turns a 4-bit ACK into status 00h and a NAK into
    /// 14h, and runs MIFARE WRITE (A0h + 16 bytes) as its two-part exchange.
    private mutating func inDataExchange(_ p: [UInt8]) -> [ChipEffect] {
        guard p.count >= 1 else { return syntaxError() }
        if miContinuation {
            miContinuation = false
            if p.count == 1 { return respond(0x41, []) }  // `mi-empty`: no status byte
        }
        guard p[0] & 0x3F == 0x01, target == true else { return status(0x41, 0x27) }
        let data = Array(p.dropFirst())
        guard !data.isEmpty else { return syntaxError() }
        if isoDep { return isoDepExchange(data) }
        if data[0] == 0xA0 && data.count == 18 {
            let first = exchange(.withCRC(Array(data[0...1])))
            guard first == .ack else { return dataExchangeStatus(first) }
            return dataExchangeStatus(exchange(.withCRC(Array(data[2...]))))
        }
        return dataExchangeStatus(exchange(.withCRC(data)))
    }

    /// InDataExchange to an ISO/IEC 14443-4 target: the firmware wraps the APDU
    /// in I-blocks (chained beyond the tag's FSC), collects a chained answer
    /// with R(ACK)s and hands back the bare R-APDU (UM0701-02 §7.3.8).
    private mutating func isoDepExchange(_ apdu: [UInt8]) -> [ChipEffect] {
        let room = NTAG424DNA.fsc - 3
        var rest = apdu[...]
        var answer: AirFrame?
        repeat {
            let part = rest.prefix(room)
            rest = rest.dropFirst(part.count)
            let chained: UInt8 = rest.isEmpty ? 0 : 0x10
            answer = exchange(.withCRC([0x02 | chained | pcdBlockNumber] + part))
            guard let a = answer, a.lastBits == 0, CRC.isValid(a.bytes) else { return status(0x41, 0x01) }
            pcdBlockNumber ^= 1
            if !rest.isEmpty {
                guard a.bytes[0] & 0xF6 == 0xA2 else { return status(0x41, 0x29) }  // R(ACK) expected
            }
        } while !rest.isEmpty
        var response: [UInt8] = []
        while let a = answer {
            guard a.lastBits == 0, CRC.isValid(a.bytes), a.bytes[0] & 0xE2 == 0x02 else { return status(0x41, 0x29) }
            response += a.bytes[1..<(a.bytes.count - 2)]
            guard a.bytes[0] & 0x10 != 0 else { break }
            answer = exchange(.withCRC([0xA2 | pcdBlockNumber]))
            if answer == nil { return status(0x41, 0x01) }
            pcdBlockNumber ^= 1
        }
        guard response.count <= 262 else { return status(0x41, 0x09) }
        return status(0x41, 0x00, response)
    }

    private mutating func dataExchangeStatus(_ answer: AirFrame?) -> [ChipEffect] {
        guard let answer else { return status(0x41, 0x01) }  // time out: the target has not answered
        if answer.lastBits == 4 { return status(0x41, answer == .ack ? 0x00 : 0x14) }
        guard answer.lastBits == 0, CRC.isValid(answer.bytes) else { return status(0x41, 0x02) }
        let payload = Array(answer.bytes.dropLast(2))
        guard payload.count <= 262 else { return status(0x41, 0x09) }  // larger than the chip's buffer
        return status(0x41, 0x00, payload)
    }

    /// InCommunicateThru: the frame goes out exactly as the CIU registers
    /// say — TxCRCEn / RxCRCEn (TxMode/RxMode bit 7), ParityDisable
    /// (ManualRCV bit 4, host packs data+parity bits), TxLastBits (BitFraming)
    /// — and RxLastBits of the answer is left in CIU_Control, where libnfc
    /// `pn53x_initiator_transceive_bits` reads it.
    private mutating func inCommunicateThru(_ p: [UInt8]) -> [ChipEffect] {
        registers.setRxLastBits(0)
        guard !p.isEmpty else { return status(0x43, 0x01) }  // nothing sent, nothing heard
        var out: AirFrame
        if registers.parityDisabled {
            let raw = AirFrame(p, lastBits: registers.txLastBits)
            if raw.bitCount < 9 {
                out = raw
            } else {
                guard let bytes = ParityFraming.unwrap(raw) else { return timeoutAfterNoise(raw) }
                out = AirFrame(bytes)
            }
        } else {
            out = AirFrame(p, lastBits: registers.txLastBits)
        }
        if registers.txCRC { out = AirFrame(out.bytes + CRC.a(out.bytes)) }
        // A type A tag does not hear type B or higher-speed framing.
        let answer = registers.isTypeA106 ? exchange(out) : nil
        guard var a = answer else { return status(0x43, 0x01) }
        if registers.rxCRC {
            guard a.lastBits == 0, CRC.isValid(a.bytes) else { return status(0x43, 0x02) }
            a = AirFrame(Array(a.bytes.dropLast(2)))
        }
        if registers.parityDisabled && a.bitCount >= 9 && a.lastBits == 0 { a = ParityFraming.wrap(a.bytes) }
        guard a.bytes.count <= 262 else { return status(0x43, 0x09) }
        registers.setRxLastBits(a.lastBits)
        return status(0x43, 0x00, a.bytes)
    }

    /// A frame with broken parity reaches the tag as noise: no answer.
    private mutating func timeoutAfterNoise(_ raw: AirFrame) -> [ChipEffect] {
        if rfOn, tag != nil {
            stats.tagExchanges += 1
            airMicroseconds += raw.bitCount * 85 / 8 + 86
            stats.airMicroseconds += raw.bitCount * 85 / 8 + 86
        }
        return status(0x43, 0x01)
    }
}
