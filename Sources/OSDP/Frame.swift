/// OSDP v2.2 (IEC 60839-11-5) packet framing: the bytes on the RS-485 line.
///
///     [0xFF mark] SOM(0x53) ADDR LEN_LSB LEN_MSB CTRL [SCB] CODE DATA… [MAC×4] CRC_LSB CRC_MSB | CKSUM
///
/// - ADDR: 0…126 (0x7F is the broadcast address); a reply sets bit 7.
/// - LEN: the whole packet from SOM through the CRC or checksum (the mark is not counted).
/// - CTRL: bits 0–1 the sequence number (0 restarts the link, then 1, 2, 3, 1, …), bit 2 a
///   CRC-16 follows (else a one-byte checksum), bit 3 a security control block follows;
///   bits 4–7 are reserved (a frame with any set is refused).
/// - SCB: its own length (≥ 2, the length byte included), its type (SCS_11…SCS_18) and data.
/// - MAC: the first 4 bytes of the packet's MAC, present for SCS_15…SCS_18 (SecureChannel).
///
/// Nothing here allocates more than the frame it parses, and every malformed input is a
/// `FrameError`, never a trap: these bytes come from whoever is on the wire.
public enum OSDP {
    public static let mark: UInt8 = 0xFF
    public static let startOfMessage: UInt8 = 0x53
    public static let broadcastAddress: UInt8 = 0x7F
    /// The header: SOM, ADDR, LEN ×2, CTRL.
    public static let headerLength = 5
    /// The longest packet this side accepts or builds (libosdp's default buffer is 256; the
    /// spec allows up to 1440 bytes when both ends agree through osdp_ACURXSIZE).
    public static let maximumPacketLength = 1440
}

/// Why bytes are not an OSDP frame. Each case names what was wrong so a log line tells.
public enum FrameError: Error, Equatable, Sendable {
    /// Fewer bytes than the header or than the length field promises (keep reading).
    case truncated(needed: Int, have: Int)
    case badStartOfMessage(UInt8)
    /// The length field is under the smallest possible packet or over `maximumPacketLength`.
    case badLength(Int)
    /// More bytes than the length field says (a frame is parsed alone).
    case trailingBytes(Int)
    case badCRC(expected: UInt16, found: UInt16)
    case badChecksum(expected: UInt8, found: UInt8)
    /// The security control block's own length is under 2 or runs past the packet.
    case badSecurityBlock(length: Int)
    /// The security block's type is not SCS_11…SCS_18.
    case unknownSecurityBlockType(UInt8)
    /// An SCS_15…18 packet too short for the code and the 4-byte MAC.
    case missingMAC
    /// A command (bit 7 of the address clear) where a reply was expected, or the reverse.
    case wrongDirection
    /// The packet has no command or reply code.
    case missingCode
    /// Bits 4-7 of the control byte are reserved and must be 0.
    case reservedControlBits(UInt8)
    /// The sequence number of a packet this side builds is not 0…3.
    case badSequence(UInt8)
    /// An address over 0x7F for a packet this side builds.
    case badAddress(UInt8)
    /// A packet this side would build is longer than `maximumPacketLength`.
    case tooLong(Int)
}

/// The security control block of a frame (SCS_11…SCS_18) and its data bytes.
public struct SecurityBlock: Equatable, Sendable {
    public enum Kind: UInt8, Sendable {
        case scs11 = 0x11, scs12 = 0x12, scs13 = 0x13, scs14 = 0x14
        case scs15 = 0x15, scs16 = 0x16, scs17 = 0x17, scs18 = 0x18
        /// Packets of these kinds carry a 4-byte MAC before the CRC.
        public var hasMAC: Bool { rawValue >= 0x15 }
        /// SCS_17/18: the data after the code is encrypted.
        public var isEncrypted: Bool { self == .scs17 || self == .scs18 }
    }
    public var kind: Kind
    public var data: [UInt8]
    public init(_ kind: Kind, data: [UInt8] = []) {
        self.kind = kind
        self.data = data
    }
    /// The bytes on the wire: length (data + 2), type, data.
    public var encoded: [UInt8] { [UInt8(data.count + 2), kind.rawValue] + data }
}

/// One parsed OSDP packet. `data` is as on the wire (still encrypted for SCS_17/18);
/// `macInput` is the packet from SOM up to the MAC, what the MAC covers.
public struct Frame: Equatable, Sendable {
    /// 0…127, without the reply bit.
    public var address: UInt8
    public var isReply: Bool
    public var sequence: UInt8
    public var usesCRC: Bool
    public var securityBlock: SecurityBlock?
    public var code: UInt8
    public var data: [UInt8]
    /// The 4 MAC bytes of an SCS_15…18 packet.
    public var mac: [UInt8]?
    /// The bytes the MAC covers (SOM through the data), kept from parsing.
    public var macInput: [UInt8]

    public init(
        address: UInt8, isReply: Bool, sequence: UInt8, usesCRC: Bool = true, securityBlock: SecurityBlock? = nil,
        code: UInt8, data: [UInt8] = [], mac: [UInt8]? = nil
    ) {
        self.address = address
        self.isReply = isReply
        self.sequence = sequence
        self.usesCRC = usesCRC
        self.securityBlock = securityBlock
        self.code = code
        self.data = data
        self.mac = mac
        self.macInput = []
    }

    /// The packet's bytes up to (not including) the MAC and the check bytes, with the length
    /// field already counting `macLength` and the CRC or checksum: what the MAC is computed on.
    public func encodedBody(macLength: Int) throws -> [UInt8] {
        guard sequence <= 3 else { throw FrameError.badSequence(sequence) }
        guard address <= 0x7F else { throw FrameError.badAddress(address) }
        let scb = securityBlock?.encoded ?? []
        let total = OSDP.headerLength + scb.count + 1 + data.count + macLength + (usesCRC ? 2 : 1)
        guard total <= OSDP.maximumPacketLength else { throw FrameError.tooLong(total) }
        var control = sequence
        if usesCRC { control |= 0x04 }
        if securityBlock != nil { control |= 0x08 }
        var out: [UInt8] = [
            OSDP.startOfMessage, address | (isReply ? 0x80 : 0), UInt8(total & 0xFF), UInt8(total >> 8), control,
        ]
        out += scb
        out.append(code)
        out += data
        return out
    }

    /// The whole packet (without the mark byte): body, MAC if any, CRC or checksum.
    public func encoded() throws -> [UInt8] {
        var out = try encodedBody(macLength: mac?.count ?? 0)
        if let mac { out += mac }
        OSDP.appendCheck(to: &out, crc: usesCRC)
        return out
    }

    /// Parses exactly one packet (no mark byte, no trailing bytes).
    public static func parse(_ bytes: [UInt8]) throws -> Frame {
        guard bytes.count >= OSDP.headerLength else {
            throw FrameError.truncated(needed: OSDP.headerLength, have: bytes.count)
        }
        guard bytes[0] == OSDP.startOfMessage else { throw FrameError.badStartOfMessage(bytes[0]) }
        let length = Int(bytes[2]) | Int(bytes[3]) << 8
        let control = bytes[4]
        guard control & 0xF0 == 0 else { throw FrameError.reservedControlBits(control) }
        let usesCRC = control & 0x04 != 0
        let checkLength = usesCRC ? 2 : 1
        guard length >= OSDP.headerLength + 1 + checkLength, length <= OSDP.maximumPacketLength else {
            throw FrameError.badLength(length)
        }
        guard bytes.count >= length else { throw FrameError.truncated(needed: length, have: bytes.count) }
        guard bytes.count == length else { throw FrameError.trailingBytes(bytes.count - length) }
        let bodyEnd = length - checkLength
        if usesCRC {
            let found = UInt16(bytes[bodyEnd]) | UInt16(bytes[bodyEnd + 1]) << 8
            let expected = OSDP.crc16(bytes[0..<bodyEnd])
            guard found == expected else { throw FrameError.badCRC(expected: expected, found: found) }
        } else {
            let expected = OSDP.checksum(bytes[0..<bodyEnd])
            guard bytes[bodyEnd] == expected else {
                throw FrameError.badChecksum(expected: expected, found: bytes[bodyEnd])
            }
        }
        var position = OSDP.headerLength
        var block: SecurityBlock?
        if control & 0x08 != 0 {
            guard position < bodyEnd else { throw FrameError.badSecurityBlock(length: 0) }
            let blockLength = Int(bytes[position])
            guard blockLength >= 2, position + blockLength <= bodyEnd else {
                throw FrameError.badSecurityBlock(length: blockLength)
            }
            guard let kind = SecurityBlock.Kind(rawValue: bytes[position + 1]) else {
                throw FrameError.unknownSecurityBlockType(bytes[position + 1])
            }
            block = SecurityBlock(kind, data: Array(bytes[(position + 2)..<(position + blockLength)]))
            position += blockLength
        }
        var dataEnd = bodyEnd
        var mac: [UInt8]?
        if let block, block.kind.hasMAC {
            guard bodyEnd - position >= 1 + 4 else { throw FrameError.missingMAC }
            dataEnd = bodyEnd - 4
            mac = Array(bytes[dataEnd..<bodyEnd])
        }
        guard position < dataEnd else { throw FrameError.missingCode }
        var frame = Frame(
            address: bytes[1] & 0x7F, isReply: bytes[1] & 0x80 != 0, sequence: control & 0x03, usesCRC: usesCRC,
            securityBlock: block, code: bytes[position], data: Array(bytes[(position + 1)..<dataEnd]), mac: mac)
        frame.macInput = Array(bytes[0..<dataEnd])
        return frame
    }
}

extension OSDP {
    /// OSDP's CRC-16: CRC-CCITT (polynomial 0x1021, MSB first, no reflection) started at
    /// 0x1D0F (the "AUG-CCITT" variant), sent least significant byte first.
    public static func crc16<C: Collection>(_ bytes: C) -> UInt16 where C.Element == UInt8 {
        var crc: UInt16 = 0x1D0F
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 {
                crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }

    /// The one-byte checksum: the two's complement of the sum of the bytes.
    public static func checksum<C: Collection>(_ bytes: C) -> UInt8 where C.Element == UInt8 {
        var sum: UInt8 = 0
        for byte in bytes { sum &+= byte }
        return 0 &- sum
    }

    static func appendCheck(to out: inout [UInt8], crc: Bool) {
        if crc {
            let value = crc16(out)
            out += [UInt8(value & 0xFF), UInt8(value >> 8)]
        } else {
            out.append(checksum(out))
        }
    }
}

/// Cuts a byte stream into packets: skips noise up to a SOM (and the optional 0xFF mark),
/// waits for the length the header promises, and hands out each packet's bytes (without
/// the mark). A bad length drops that SOM and resynchronises on the next one; the caller
/// parses what it gets with `Frame.parse` (a CRC error is then that packet's error).
public struct FrameAssembler: Sendable {
    private var buffer: [UInt8] = []
    /// Bytes dropped while looking for a start of message (noise on the line).
    public private(set) var skipped = 0

    public init() {}

    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        buffer += bytes
    }

    public mutating func reset() { buffer.removeAll() }

    /// The next complete packet, or nil until more bytes arrive.
    public mutating func next() -> [UInt8]? {
        while true {
            guard let som = buffer.firstIndex(of: OSDP.startOfMessage) else {
                skipped += buffer.filter { $0 != OSDP.mark }.count
                buffer.removeAll()
                return nil
            }
            if som > 0 {
                skipped += buffer[0..<som].filter { $0 != OSDP.mark }.count
                buffer.removeFirst(som)
            }
            guard buffer.count >= OSDP.headerLength else { return nil }
            let length = Int(buffer[2]) | Int(buffer[3]) << 8
            guard length >= OSDP.headerLength + 2, length <= OSDP.maximumPacketLength else {
                buffer.removeFirst()
                skipped += 1
                continue
            }
            guard buffer.count >= length else { return nil }
            let packet = Array(buffer[0..<length])
            buffer.removeFirst(length)
            return packet
        }
    }
}
