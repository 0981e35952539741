/// NFC Forum Type 2 Tag TLV blocks (T2T 1.0 §2.3).
public enum TLV: Equatable, Sendable, Hashable {
    case null
    case lockControl([UInt8])
    case memoryControl([UInt8])
    case ndef([UInt8])
    case proprietary([UInt8])
    /// A TLV type this gateway does not know; skipped, as the spec asks.
    case other(type: UInt8, value: [UInt8])
    case terminator
}

/// What a tag's data area holds, as the door sees it. docs/design.md: "blank" = no
/// NDEF TLV, or an empty NDEF message.
public enum TagContent: Equatable, Sendable {
    case blank
    case message(NDEFMessage)

    /// From the first NDEF TLV's value (nil when the area has no NDEF TLV).
    public init(ndefValue: [UInt8]?) throws(NDEFError) {
        guard let ndefValue else { self = .blank; return }
        let message = try NDEFMessage.decode(ndefValue)
        self = message.isEmpty ? .blank : .message(message)
    }
}

/// Type 2 Tag data area codec. NTAG21x have no Memory Control areas inside
/// user memory (data sheet §8.5: the dynamic lock bytes follow it), so TLVs are
/// read as one contiguous run from page 4.
public enum Type2 {
    /// Parses every TLV of a data area, up to and including the Terminator
    /// (anything after it is ignored). The end of the area also ends the list.
    /// Lengths: one byte, or 0xFF then two bytes big-endian (T2T 1.0 §2.3).
    public static func parseTLVs(_ area: [UInt8]) throws(NDEFError) -> [TLV] {
        var tlvs: [TLV] = []
        var i = 0
        while i < area.count {
            let t = area[i]
            switch t {
            case 0x00: tlvs.append(.null); i += 1; continue
            case 0xFE: tlvs.append(.terminator); return tlvs
            default: break
            }
            guard case .known(let header, let length) = try lengthField(area, at: i, areaSize: area.count) else {
                throw .truncated("TLV at offset \(i)")  // not reached: the whole area is given
            }
            let value = Array(area[(i + header)..<(i + header + length)])
            i += header + length
            switch t {
            case 0x01: tlvs.append(.lockControl(value))
            case 0x02: tlvs.append(.memoryControl(value))
            case 0x03: tlvs.append(.ndef(value))
            case 0xFD: tlvs.append(.proprietary(value))
            default: tlvs.append(.other(type: t, value: value))
            }
        }
        return tlvs
    }

    /// The first NDEF message TLV's value, or nil when a Terminator or the end
    /// of the area comes first. TLVs after it are not looked at, so this agrees
    /// with `scan` reading the same area page by page.
    public static func firstNDEFValue(_ area: [UInt8]) throws(NDEFError) -> [UInt8]? {
        switch try scan(prefix: area, areaSize: area.count) {
        case .complete(let value, _): return value
        case .noNDEF: return nil
        case .needMore(let n): throw .truncated("\(n) more bytes needed")  // not reached: the whole area is given
        }
    }

    /// The first NDEF message on the tag (`.noNDEFMessage` when there is none).
    public static func message(inArea area: [UInt8]) throws(NDEFError) -> NDEFMessage {
        guard let value = try firstNDEFValue(area) else { throw .noNDEFMessage }
        return try NDEFMessage.decode(value)
    }

    /// Blank or a message (docs/design.md "blank").
    public static func content(ofArea area: [UInt8]) throws(NDEFError) -> TagContent {
        try TagContent(ndefValue: firstNDEFValue(area))
    }

    /// The NDEF TLV holding `message`, then the Terminator TLV: what is written
    /// from page 4. The length takes 3 bytes (FF hi lo) from 0xFF on; 0xFFFE is
    /// the largest a TLV can say (T2T 1.0 §2.3).
    public static func ndefTLV(_ message: NDEFMessage) throws(NDEFError) -> [UInt8] {
        let m = try message.encoded()
        guard m.count <= 0xFFFE else { throw .oversized(needed: m.count + 5, capacity: 0xFFFE + 5) }
        let length: [UInt8] = m.count < 0xFF ? [UInt8(m.count)] : [0xFF, UInt8(m.count >> 8), UInt8(m.count & 0xFF)]
        return [0x03] + length + m + [0xFE]
    }

    /// What an incremental reader knows after reading the first bytes of the data area.
    public enum Scan: Equatable, Sendable {
        /// The first NDEF TLV is complete; `end` is the offset just past it.
        case complete(value: [UInt8], end: Int)
        /// At least `bytes` more bytes of the area are needed to go on.
        case needMore(bytes: Int)
        /// A Terminator (or the end of the area) came before any NDEF TLV.
        case noNDEF
    }

    /// For a reader that fetches only what the NDEF message needs (the CC, then
    /// TLVs up to the end of the message): given the first bytes of a data area
    /// of `areaSize` bytes (from the CC, bounded by user memory), says whether
    /// the first NDEF TLV is complete, how much more to read, or that there is
    /// none. A length running past the area is an error, not a request for more.
    public static func scan(prefix: [UInt8], areaSize: Int) throws(NDEFError) -> Scan {
        let bytes = Array(prefix.prefix(areaSize))
        var i = 0
        while i < areaSize {
            guard i < bytes.count else { return .needMore(bytes: i + 1 - bytes.count) }
            switch bytes[i] {
            case 0x00: i += 1; continue
            case 0xFE: return .noNDEF
            default: break
            }
            let header: Int, length: Int
            switch try lengthField(bytes, at: i, areaSize: areaSize) {
            case .known(let h, let l): (header, length) = (h, l)
            case .needs(let end): return .needMore(bytes: end - bytes.count)
            }
            let end = i + header + length
            if bytes[i] == 0x03 {
                guard end <= bytes.count else { return .needMore(bytes: end - bytes.count) }
                return .complete(value: Array(bytes[(i + header)..<end]), end: end)
            }
            i = end
        }
        return .noNDEF
    }

    private enum LengthField {
        /// Header size (type and length bytes) and value length, within the area.
        case known(header: Int, length: Int)
        /// `bytes` must reach `end` before the length is known.
        case needs(end: Int)
    }

    /// The length of the TLV at `i` (not NULL or Terminator), checked against
    /// the area; `bytes` may be a prefix of it.
    private static func lengthField(_ bytes: [UInt8], at i: Int, areaSize: Int) throws(NDEFError) -> LengthField {
        // Named only when it is refused: this runs for every TLV of every read.
        func type() -> String { "TLV 0x\(Hex.encode([bytes[i]])) at offset \(i)" }
        guard i + 2 <= areaSize else { throw .truncated("\(type()) has no length") }
        guard i + 2 <= bytes.count else { return .needs(end: i + 2) }
        var header = 2, length = Int(bytes[i + 1])
        if length == 0xFF {
            guard i + 4 <= areaSize else { throw .truncated("\(type()): 3-byte length cut short") }
            guard i + 4 <= bytes.count else { return .needs(end: i + 4) }
            header = 4
            length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
        }
        guard i + header + length <= areaSize else {
            throw .lengthBeyondData("\(type()) says \(length) bytes, \(areaSize - i - header) left in the data area")
        }
        return .known(header: header, length: length)
    }
}

/// The capability container in page 3 (T2T 1.0 §2.2.1): magic 0xE1, mapping
/// version, data area size / 8, access conditions.
public struct CapabilityContainer: Equatable, Sendable, Hashable {
    public var magic: UInt8
    public var version: UInt8
    /// Size of the data area in bytes (CC byte 2 × 8).
    public var dataAreaSize: Int
    public var access: UInt8

    public init(_ page: [UInt8]) throws(NDEFError) {
        guard page.count >= 4 else { throw .badCapabilityContainer("needs 4 bytes") }
        guard page[0] == 0xE1 else {
            throw .badCapabilityContainer("magic is 0x\(Hex.encode([page[0]])), not 0xE1 (not NDEF-formatted)")
        }
        guard page[1] >> 4 == 1 else {
            throw .badCapabilityContainer("unsupported mapping version \(page[1] >> 4).\(page[1] & 0xF)")
        }
        magic = page[0]
        version = page[1]
        dataAreaSize = Int(page[2]) * 8
        access = page[3]
    }

    public init(dataAreaSize: Int, access: UInt8 = 0x00) {
        magic = 0xE1
        version = 0x10
        self.dataAreaSize = dataAreaSize
        self.access = access
    }

    public var bytes: [UInt8] { [magic, version, UInt8(dataAreaSize / 8), access] }

    /// Anything but 0x00 (read and write granted) is treated as read-only: the
    /// low nibble 0xF means no write access, and other values are proprietary
    /// or reserved (T2T 1.0 §2.2.1), so the gateway never writes such a tag.
    public var readOnly: Bool { access != 0x00 }
}
