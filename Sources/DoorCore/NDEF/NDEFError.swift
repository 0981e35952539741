/// Why NDEF or Type 2 tag bytes could not be decoded. Never a trap.
public enum NDEFError: Error, Equatable, Sendable, CustomStringConvertible {
    case truncated(String)
    case chunkedRecord
    case invalidRecord(String)
    case noNDEFMessage
    case emptyMessage
    case noURIRecord
    case badURICode(UInt8)
    case invalidText(String)
    case oversized(needed: Int, capacity: Int)
    case badCapabilityContainer(String)
    case badDump(String)

    public var description: String {
        switch self {
        case .truncated(let w): return "truncated: \(w)"
        case .chunkedRecord: return "chunked NDEF records (CF set) are not supported"
        case .invalidRecord(let w): return "invalid NDEF record: \(w)"
        case .noNDEFMessage: return "no NDEF message TLV on the tag"
        case .emptyMessage: return "the NDEF message is empty"
        case .noURIRecord: return "no URI record in the NDEF message"
        case .badURICode(let c): return "URI identifier code 0x\(Hex.encode([c])) is reserved"
        case .invalidText(let w): return "invalid text: \(w)"
        case .oversized(let n, let c): return "the message needs \(n) bytes but the tag holds \(c)"
        case .badCapabilityContainer(let w): return "bad capability container: \(w)"
        case .badDump(let w): return "not a tag dump: \(w)"
        }
    }
}
