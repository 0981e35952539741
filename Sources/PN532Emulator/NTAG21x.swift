import DoorCore

/// An NXP NTAG213/215/216 on the air interface (NTAG213/215/216 data sheet
/// rev. 3.2, referred to as "DS" below): the ISO/IEC 14443-3 state machine
/// (§9), its commands (§10) and memory access rules (§8.5–8.8). It sees raw
/// air frames (CRC included) and answers with air frames, so the chip model
/// in front of it decides what the CIU does with CRC, parity and bit framing.
///
/// Memory is a dump image (docs/formats.md §6): pages from page 0, PWD and PACK
/// included (they read back as zeros on air, §8.8.1).
public struct NTAG21x: Sendable {
    /// ISO/IEC 14443-3 states (DS §9, Figure 7).
    public enum State: Sendable, Equatable { case idle, ready1, ready2, active, authenticated, halt }

    public private(set) var type: NTAGType
    /// The whole memory, `type.pages` × 4 bytes, secrets included.
    public private(set) var memory: [UInt8]
    public private(set) var state: State = .idle
    /// Negative PWD_AUTH attempts (DS §8.8.3: kept in non-volatile memory,
    /// reset by a successful authentication).
    public private(set) var failedAuthentications = 0
    /// The 24-bit NFC counter (DS §8.7).
    public private(set) var nfcCounter: UInt32 = 0
    /// READ_SIG answer (DS §10.9). Not a valid NXP signature.
    public var signature: [UInt8]

    private var counterBumpedThisField = false
    private var compatibilityWritePage: Int?

    public init(image: TagImage) {
        type = image.type
        memory = image.bytes
        let uid = image.uid.bytes
        signature = (0..<32).map { uid[$0 % uid.count] ^ UInt8($0) }
    }

    public var uid: TagUID { TagUID([memory[0], memory[1], memory[2], memory[4], memory[5], memory[6], memory[7]]) }

    /// ATQA and SAK of every NTAG21x (DS §9.4, Table 13).
    public static let atqa: [UInt8] = [0x44, 0x00]
    public static let sak: UInt8 = 0x00

    // MARK: Configuration pages (DS §8.5.7)

    private var lastPage: Int { type.pages - 1 }
    private var auth0: Int { Int(memory[type.cfg0Page * 4 + 3]) }
    private var access: UInt8 { memory[type.cfg1Page * 4] }
    private var readProtected: Bool { access & 0x80 != 0 }  // PROT
    private var configLocked: Bool { access & 0x40 != 0 }  // CFGLCK
    private var counterEnabled: Bool { access & 0x10 != 0 }  // NFC_CNT_EN
    private var counterProtected: Bool { access & 0x08 != 0 }  // NFC_CNT_PWD_PROT
    /// AUTHLIM: 0 disables the limit, else 2^AUTHLIM attempts (DS §8.8.3).
    private var authLimit: Int? { access & 0x07 == 0 ? nil : 1 << Int(access & 0x07) }
    private var authenticated: Bool { state == .authenticated }
    public var isPermanentlyLocked: Bool { authLimit.map { failedAuthentications >= $0 } ?? false }

    /// The field went away: the tag loses its volatile state (DS §9.1).
    public mutating func powerOff() {
        state = .idle
        compatibilityWritePage = nil
        counterBumpedThisField = false
    }

    // MARK: Air interface

    public mutating func receive(_ frame: AirFrame) -> AirFrame? {
        if frame.lastBits == 7 && frame.bytes.count == 1 { return shortFrame(frame.bytes[0]) }
        guard frame.lastBits == 0, !frame.bytes.isEmpty else { return toIdle() }
        let b = frame.bytes
        switch state {
        case .idle, .halt:
            return nil
        case .ready1:
            return ISO14443A.cascade(
                b, level: 0x93, uidPart: [0x88, memory[0], memory[1], memory[2], memory[3]],
                sak: 0x04, state: &state, next: .ready2) ?? toIdle()
        case .ready2:
            return ISO14443A.cascade(
                b, level: 0x95, uidPart: Array(memory[4...8]), sak: Self.sak, state: &state, next: .active) ?? toIdle()
        case .active, .authenticated:
            guard CRC.isValid(b) else { return nak(0x1) }
            return command(Array(b.dropLast(2)))
        }
    }

    /// REQA (26h) wakes an idle tag, WUPA (52h) also a halted one (ISO/IEC 14443-3 §6.3).
    private mutating func shortFrame(_ code: UInt8) -> AirFrame? {
        let wakes = code == 0x26 ? state == .idle : code == 0x52 ? (state == .idle || state == .halt) : false
        guard wakes else { return toIdle() }
        state = .ready1
        compatibilityWritePage = nil
        return AirFrame(Self.atqa)
    }

    private mutating func toIdle() -> AirFrame? {
        state = state == .halt ? .halt : .idle
        compatibilityWritePage = nil
        return nil
    }

    /// A NAK sends the tag back to IDLE, dropping authentication (DS §9.3, §10).
    private mutating func nak(_ code: UInt8) -> AirFrame {
        state = .idle
        compatibilityWritePage = nil
        return .nibble(code)
    }

    private mutating func command(_ c: [UInt8]) -> AirFrame? {
        if let page = compatibilityWritePage {
            compatibilityWritePage = nil
            guard c.count == 16 else { return nak(0x0) }
            return write(page, Array(c[0..<4]))
        }
        switch (c.first, c.count) {
        case (0x60, 1): return .withCRC(type.versionResponse)  // GET_VERSION, DS §10.1
        case (0x30, 2): return read(Int(c[1]))  // READ, DS §10.2
        case (0x3A, 3): return fastRead(Int(c[1]), Int(c[2]))  // FAST_READ, DS §10.3
        case (0xA2, 6): return write(Int(c[1]), Array(c[2...5]))  // WRITE, DS §10.4
        case (0xA0, 2):  // COMPATIBILITY_WRITE part 1, DS §10.5
            let page = Int(c[1])
            if let refusal = writeRefusal(page) { return nak(refusal) }
            compatibilityWritePage = page
            return .ack
        case (0x39, 2): return readCounter(c[1])  // READ_CNT, DS §10.6
        case (0x1B, 5): return passwordAuth(Array(c[1...4]))  // PWD_AUTH, DS §10.7
        case (0x3C, 2): return c[1] == 0x00 ? .withCRC(signature) : nak(0x0)  // READ_SIG, DS §10.8
        case (0x50, 2) where c[1] == 0x00:  // HLTA, ISO/IEC 14443-3 §6.4.3
            state = .halt
            return nil
        default: return nak(0x0)
        }
    }

    // MARK: Memory access

    /// Read-protected: PROT set, page at or above AUTH0, not authenticated (DS §8.8.2).
    private func readBlocked(_ page: Int) -> Bool { readProtected && page >= auth0 && !authenticated }

    /// The 4 bytes of `page` as the air sees them: PWD and PACK read as zeros.
    private func visiblePage(_ page: Int) -> [UInt8] {
        if page == type.pwdPage || page == type.packPage || readBlocked(page) { return [0, 0, 0, 0] }
        return Array(memory[(page * 4)..<(page * 4 + 4)])
    }

    private mutating func bumpCounterOnFirstRead() {
        guard counterEnabled, !counterBumpedThisField else { return }
        counterBumpedThisField = true
        if nfcCounter < 0xFF_FFFF { nfcCounter += 1 }
    }

    /// READ: 4 pages from `start`, rolling over to page 0 after the last
    /// page (DS §10.2). A start in the read-protected area is NAKed; pages of
    /// it reached by the roll-over read as zeros.
    private mutating func read(_ start: Int) -> AirFrame {
        guard start <= lastPage else { return nak(0x0) }
        guard !readBlocked(start) else { return nak(0x0) }
        bumpCounterOnFirstRead()
        let data = (0..<4).flatMap { visiblePage((start + $0) % type.pages) }
        return .withCRC(data)
    }

    /// FAST_READ: pages `start`…`end`, no roll-over (DS §10.3).
    private mutating func fastRead(_ start: Int, _ end: Int) -> AirFrame {
        guard start <= end, end <= lastPage, !readBlocked(start) else { return nak(0x0) }
        bumpCounterOnFirstRead()
        return .withCRC((start...end).flatMap(visiblePage))
    }

    private mutating func readCounter(_ address: UInt8) -> AirFrame {
        guard address == 0x02, counterEnabled, !(counterProtected && !authenticated) else { return nak(0x0) }
        return .withCRC([UInt8(nfcCounter & 0xFF), UInt8(nfcCounter >> 8 & 0xFF), UInt8(nfcCounter >> 16 & 0xFF)])
    }

    private mutating func passwordAuth(_ pwd: [UInt8]) -> AirFrame {
        guard !isPermanentlyLocked else { return nak(0x4) }
        let p = type.pwdPage * 4
        guard Array(memory[p..<(p + 4)]) == pwd else {
            if authLimit != nil { failedAuthentications += 1 }
            return nak(0x0)
        }
        failedAuthentications = 0
        state = .authenticated
        let k = type.packPage * 4
        return .withCRC(Array(memory[k..<(k + 2)]))
    }

    /// Why a write to `page` is refused, as the NAK code (DS §10.4), or nil.
    private func writeRefusal(_ page: Int) -> UInt8? {
        guard page >= 2, page <= lastPage else { return 0x0 }  // pages 0–1: serial number, read-only
        if page >= auth0 && !authenticated { return 0x0 }  // write access needs PWD_AUTH (DS §8.8.2)
        if isLockedByLockBits(page) { return 0x0 }
        if (page == type.cfg0Page || page == type.cfg1Page) && configLocked { return 0x0 }
        return nil
    }

    /// Static lock bits (page 2 bytes 2–3, DS §8.5.2) for pages 3–15, dynamic
    /// lock bits (DS §8.5.3) for pages 16 to the last user page.
    private func isLockedByLockBits(_ page: Int) -> Bool {
        let lock0 = memory[10], lock1 = memory[11]
        switch page {
        case 3: return lock0 & 0x08 != 0  // L-CC
        case 4...7: return lock0 >> page & 1 != 0  // L4…L7
        case 8...15: return lock1 >> (page - 8) & 1 != 0  // L8…L15
        case 16...type.lastUserPage:
            let d = type.dynamicLockPage * 4
            let bits = Int(memory[d]) | Int(memory[d + 1]) << 8
            let bit = (page - 16) / dynamicLockGranularity
            return bits >> bit & 1 != 0
        default: return false
        }
    }

    /// Pages covered by one dynamic lock bit: 2 on NTAG213, 16 on NTAG215/216 (DS Tables 6–8).
    private var dynamicLockGranularity: Int { type == .ntag213 ? 2 : 16 }

    private mutating func write(_ page: Int, _ data: [UInt8]) -> AirFrame {
        if let refusal = writeRefusal(page) { return nak(refusal) }
        let o = page * 4
        switch page {
        case 2:
            // Bytes 0–1 (BCC1, internal) are read-only; lock bits are OTP
            // and the block-locking bits freeze their group (DS §8.5.2).
            let lock0 = memory[10]
            var frozen0: UInt8 = 0, frozen1: UInt8 = 0
            if lock0 & 0x01 != 0 { frozen0 |= 0x08 }  // BL-CC freezes L-CC
            if lock0 & 0x02 != 0 { frozen0 |= 0xF0; frozen1 |= 0x03 }  // BL9-4
            if lock0 & 0x04 != 0 { frozen1 |= 0xFC }  // BL15-10
            memory[o + 2] |= data[2] & ~frozen0
            memory[o + 3] |= data[3] & ~frozen1
        case 3:
            for i in 0..<4 { memory[o + i] |= data[i] }  // CC is OTP (DS §8.5.6)
        case type.dynamicLockPage:
            for i in 0..<3 { memory[o + i] |= data[i] }  // byte 3 is RFUI
        default:
            memory.replaceSubrange(o..<(o + 4), with: data)
        }
        return .ack
    }
}
