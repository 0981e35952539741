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

public enum Type2 {
    /// Parses the TLVs of a tag's data area, up to and including the Terminator
    /// (anything after it is ignored). The end of the area also ends the list.
    public static func parseTLVs(_ area: [UInt8]) throws(NDEFError) -> [TLV] {
        var tlvs: [TLV] = []
        var i = 0
        while i < area.count {
            let t = area[i]
            i += 1
            switch t {
            case 0x00: tlvs.append(.null); continue
            case 0xFE: tlvs.append(.terminator); return tlvs
            default: break
            }
            guard i < area.count else { throw .truncated("TLV 0x\(Hex.encode([t])) has no length") }
            var length = Int(area[i])
            i += 1
            if length == 0xFF {
                guard i + 2 <= area.count else { throw .truncated("3-byte TLV length") }
                length = Int(area[i]) << 8 | Int(area[i + 1])
                i += 2
            }
            guard length <= area.count - i else {
                throw .truncated("TLV 0x\(Hex.encode([t])) length \(length) beyond the data (\(area.count - i) bytes)")
            }
            let value = Array(area[i..<i + length])
            i += length
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

    /// The first NDEF message TLV's value, or nil when the area has none.
    public static func firstNDEFValue(_ area: [UInt8]) throws(NDEFError) -> [UInt8]? {
        for tlv in try parseTLVs(area) {
            if case .ndef(let v) = tlv { return v }
        }
        return nil
    }

    /// The first NDEF message on the tag (`.noNDEFMessage` when there is none).
    public static func message(inArea area: [UInt8]) throws(NDEFError) -> NDEFMessage {
        guard let value = try firstNDEFValue(area) else { throw .noNDEFMessage }
        return try NDEFMessage.decode(value)
    }

    /// An NDEF TLV holding `message`, followed by the Terminator TLV: what is written.
    public static func ndefTLV(_ message: NDEFMessage) -> [UInt8] {
        let m = message.encoded()
        let length: [UInt8] = m.count < 0xFF ? [UInt8(m.count)] : [0xFF, UInt8(m.count >> 8 & 0xFF), UInt8(m.count & 0xFF)]
        return [0x03] + length + m + [0xFE]
    }

    /// What an incremental reader knows after reading the first bytes of the data area.
    public enum Scan: Equatable, Sendable {
        /// The first NDEF TLV is complete; `end` is the offset just past it.
        case complete(value: [UInt8], end: Int)
        /// At least `bytes` more bytes are needed.
        case needMore(bytes: Int)
        /// A Terminator (or the end of the area) came before any NDEF TLV.
        case noNDEF
    }

    /// Reads only what the NDEF message needs (CC, then TLVs up to its end):
    /// given a prefix of the data area of `areaSize` bytes, says how much more to read.
    public static func scan(prefix: [UInt8], areaSize: Int) throws(NDEFError) -> Scan {
        var i = 0
        while true {
            if i >= areaSize { return .noNDEF }
            guard i < prefix.count else { return .needMore(bytes: i + 1 - prefix.count) }
            let t = prefix[i]
            if t == 0x00 { i += 1; continue }
            if t == 0xFE { return .noNDEF }
            guard i + 1 < prefix.count else { return .needMore(bytes: i + 2 - prefix.count) }
            var length = Int(prefix[i + 1])
            var header = 2
            if length == 0xFF {
                guard i + 3 < prefix.count else { return .needMore(bytes: i + 4 - prefix.count) }
                length = Int(prefix[i + 2]) << 8 | Int(prefix[i + 3])
                header = 4
            }
            let end = i + header + length
            guard end <= areaSize else { throw .truncated("TLV length \(length) beyond the data area (\(areaSize) bytes)") }
            if t == 0x03 {
                guard end <= prefix.count else { return .needMore(bytes: end - prefix.count) }
                return .complete(value: Array(prefix[(i + header)..<end]), end: end)
            }
            i = end
        }
    }
}

/// The capability container in page 3 (T2T 1.0 §2.2.1).
public struct CapabilityContainer: Equatable, Sendable, Hashable {
    public var magic: UInt8
    public var version: UInt8
    /// Size of the data area in bytes (CC byte 2 × 8).
    public var dataAreaSize: Int
    public var access: UInt8

    public init(_ page: [UInt8]) throws(NDEFError) {
        guard page.count >= 4 else { throw .badCapabilityContainer("needs 4 bytes") }
        guard page[0] == 0xE1 else { throw .badCapabilityContainer("magic is 0x\(Hex.encode([page[0]])), not 0xE1 (not NDEF-formatted)") }
        guard page[1] >> 4 == 1 else { throw .badCapabilityContainer("unsupported mapping version \(page[1] >> 4).\(page[1] & 0xF)") }
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
    /// Write access nibble 0x0 = granted; 0xF = read-only.
    public var readOnly: Bool { access & 0x0F != 0 }
}
