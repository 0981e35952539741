/// Why NDEF or Type 2 tag bytes could not be decoded or encoded. Never a trap.
public enum NDEFError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes end inside a header: a TLV's type or length, a record's header fields.
    case truncated(String)
    /// A declared length (TLV value, record type/ID/payload) runs past the bytes present.
    case lengthBeyondData(String)
    /// A record with CF set, or a TNF "unchanged" middle chunk (NDEF 1.0 §2.3.3).
    case chunkedRecord
    case invalidRecord(String)
    /// No NDEF Message TLV before the Terminator (or the end of the data area).
    case noNDEFMessage
    case emptyMessage
    case noURIRecord
    /// URI identifier code above 0x23 (RTD-URI 1.0 §3.2.2: reserved).
    case badURICode(UInt8)
    case invalidUTF8(String)
    /// UTF-16 Text that does not decode (odd length, lone surrogate).
    case invalidText(String)
    case oversized(needed: Int, capacity: Int)
    case badCapabilityContainer(String)
    /// Not 180/540/924 bytes, or otherwise not an NTAG21x image.
    case badDump(String)
    /// A UID check byte of a dump does not match (BCC0 in page 0, BCC1 in page 2).
    case badBCC(index: Int, expected: UInt8, found: UInt8)

    public var description: String {
        switch self {
        case .truncated(let w): return "truncated: \(w)"
        case .lengthBeyondData(let w): return "length beyond the data: \(w)"
        case .chunkedRecord: return "chunked NDEF records (CF set) are not supported"
        case .invalidRecord(let w): return "invalid NDEF record: \(w)"
        case .noNDEFMessage: return "no NDEF message TLV on the tag"
        case .emptyMessage: return "the NDEF message is empty"
        case .noURIRecord: return "no URI record in the NDEF message"
        case .badURICode(let c): return "URI identifier code 0x\(Hex.encode([c])) is reserved"
        case .invalidUTF8(let w): return "invalid UTF-8: \(w)"
        case .invalidText(let w): return "invalid text: \(w)"
        case .oversized(let n, let c): return "the message needs \(n) bytes but the tag holds \(c)"
        case .badCapabilityContainer(let w): return "bad capability container: \(w)"
        case .badDump(let w): return "not a tag dump: \(w)"
        case .badBCC(let n, let e, let f):
            return "not a tag dump: UID check byte BCC\(n) is 0x\(Hex.encode([f])), the UID gives 0x\(Hex.encode([e]))"
        }
    }
}
