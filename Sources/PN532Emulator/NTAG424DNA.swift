import DoorCore

/// An NXP NTAG 424 DNA on the air interface: ISO/IEC 14443-3 activation
/// (ATQA 0344, SAK 20 — ISO/IEC 14443-4 compliant, DS §8.1.1), RATS/ATS, and
/// the ISO/IEC 14443-4 block protocol (I-blocks with chaining, R(ACK)/R(NAK),
/// S(DESELECT)) carrying APDUs to `NTAG424Application`. Frames in and out
/// carry their CRC_A, as `NTAG21x`'s do.
public struct NTAG424DNA: Sendable {
    public enum State: Sendable, Equatable {
        case idle, ready1, ready2
        /// Selected at layer 3, waiting for RATS.
        case active
        /// ISO-DEP after the ATS.
        case protocolMode
        case halt
    }

    public var application: NTAG424Application
    public private(set) var state: State = .idle
    public var uid: TagUID { TagUID(application.uid) }

    /// ATQA on air (LSB first; the PN532 reports it as 03 44) and the final SAK (DS §8.1.1).
    public static let atqa: [UInt8] = [0x44, 0x03]
    public static let sak: UInt8 = 0x20
    /// TL 06, T0 77 (FSCI 7 = 128 bytes, TA TB TC present), TA 77, TB 71, TC 02, historical 80 (DS §8.1.1).
    public static let ats: [UInt8] = [0x06, 0x77, 0x77, 0x71, 0x02, 0x80]
    /// The largest frame the tag accepts (FSC, from FSCI 7), CRC included.
    public static let fsc = 128

    /// The reader's largest frame (FSD, from RATS), CRC included.
    private var fsd = 256
    private var blockNumber: UInt8 = 1
    private var incoming: [UInt8] = []
    private var outgoing: [UInt8] = []
    private var lastBlock: [UInt8]?

    public init(uid: [UInt8]) { application = NTAG424Application(uid: uid) }

    public init(application: NTAG424Application) { self.application = application }

    public mutating func powerOff() {
        state = .idle
        application.reset()
        incoming = []
        outgoing = []
    }

    public mutating func receive(_ frame: AirFrame) -> AirFrame? {
        if frame.lastBits == 7 && frame.bytes.count == 1 { return shortFrame(frame.bytes[0]) }
        guard frame.lastBits == 0, !frame.bytes.isEmpty else { return toIdle() }
        let b = frame.bytes
        let uid = application.uid
        switch state {
        case .idle, .halt:
            return nil
        case .ready1:
            let part: [UInt8] = [0x88, uid[0], uid[1], uid[2]]
            return ISO14443A.cascade(
                b, level: 0x93, uidPart: part + [part.reduce(0, ^)], sak: 0x04, state: &state, next: .ready2)
                ?? toIdle()
        case .ready2:
            let part = Array(uid[3..<7])
            return ISO14443A.cascade(
                b, level: 0x95, uidPart: part + [part.reduce(0, ^)], sak: Self.sak, state: &state, next: .active)
                ?? toIdle()
        case .active:
            guard CRC.isValid(b) else { return nil }
            let c = Array(b.dropLast(2))
            if c == [0x50, 0x00] {  // HLTA
                state = .halt
                return nil
            }
            guard c.count == 2, c[0] == 0xE0 else { return toIdle() }  // RATS
            let fsdi = Int(c[1] >> 4)
            fsd = [16, 24, 32, 40, 48, 64, 96, 128, 256][min(fsdi, 8)]
            state = .protocolMode
            blockNumber = 1
            application.reset()
            return .withCRC(Self.ats)
        case .protocolMode:
            guard CRC.isValid(b) else { return nil }  // a corrupted block is not answered
            return block(Array(b.dropLast(2)))
        }
    }

    private mutating func shortFrame(_ code: UInt8) -> AirFrame? {
        let wakes = code == 0x26 ? state == .idle : code == 0x52 ? (state == .idle || state == .halt) : false
        guard wakes else { return toIdle() }
        state = .ready1
        application.reset()
        return AirFrame(Self.atqa)
    }

    private mutating func toIdle() -> AirFrame? {
        state = state == .halt ? .halt : .idle
        return nil
    }

    // MARK: ISO/IEC 14443-4 blocks (§7)

    private mutating func send(_ pcb: UInt8, _ inf: [UInt8] = []) -> AirFrame {
        let block = [pcb] + inf
        lastBlock = block
        return .withCRC(block)
    }

    private mutating func block(_ b: [UInt8]) -> AirFrame? {
        guard let pcb = b.first else { return nil }
        switch pcb & 0xC0 {
        case 0x00:  // I-block: 0 0 0 chaining CID NAD 1 bn
            guard pcb & 0x0E == 0x02 else { return nil }  // no CID, no NAD
            blockNumber = pcb & 0x01
            incoming += b.dropFirst()
            if pcb & 0x10 != 0 { return send(0xA2 | blockNumber) }  // chained: R(ACK)
            let apdu = incoming
            incoming = []
            outgoing = application.process(apdu)
            return nextOutgoing()
        case 0x80:  // R-block: 1 0 1 NAK 0 0 1 bn
            guard pcb & 0x26 == 0x22 else { return nil }
            let bn = pcb & 0x01
            if pcb & 0x10 != 0 {
                // R(NAK): the presence check (or a lost block). Same number: send the last block again.
                if bn == blockNumber, let last = lastBlock { return .withCRC(last) }
                return .withCRC([0xA2 | blockNumber])
            }
            // R(ACK) of our chained block: the next part.
            guard bn != blockNumber, !outgoing.isEmpty else {
                if let last = lastBlock { return .withCRC(last) }
                return nil
            }
            blockNumber = bn
            return nextOutgoing()
        default:  // S-block
            if pcb & 0xF7 == 0xC2 {  // S(DESELECT)
                state = .halt
                application.reset()
                return send(0xC2)
            }
            return nil
        }
    }

    /// The next I-block of the R-APDU, chained when it does not fit the reader's FSD.
    private mutating func nextOutgoing() -> AirFrame {
        let room = fsd - 3
        if outgoing.count > room {
            let part = Array(outgoing.prefix(room))
            outgoing.removeFirst(room)
            return send(0x12 | blockNumber, part)
        }
        let part = outgoing
        outgoing = []
        return send(0x02 | blockNumber, part)
    }

    public var isActive: Bool { state == .active || state == .protocolMode }
}
