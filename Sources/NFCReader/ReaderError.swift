import DoorCore

/// Everything that can go wrong between the gateway and a tag.
public enum ReaderError: Error, Equatable, CustomStringConvertible {
    /// The reader could not be opened or stopped answering.
    case noReader(String)
    /// The tag left the field (or stopped answering) in the middle.
    case tagLost
    /// The tag refused a command (NAK): a locked or protected page.
    case nak(String)
    case tooSmall(needed: Int, capacity: Int)
    case readOnly(String)
    case authenticationFailed(String)
    /// The tag holds something that is neither blank nor one of our stickers.
    case foreignContent(String)
    /// The tag in the field is not the one the caller meant.
    case wrongTag(expected: TagUID, found: TagUID?)
    case notNTAG(String)
    /// The tag in the field is not an NTAG 424 DNA (no ISO-DEP, another GetVersion, a refused select).
    case notNTAG424(String)
    /// An NTAG 424 DNA answered a command with an error status (91xx / 6xxx).
    case status(String)
    /// A tag the door just provisioned does not prove the keys it was given
    /// (its SUN read or its new key 0): the tag's fault, not the reader's.
    case notVerified(String)
    /// Bad bytes from the chip or the tag, or a read-back that did not match.
    case io(String)
    case timeout(String)

    public var description: String {
        switch self {
        case .noReader(let m): return "no reader: \(m)"
        case .tagLost: return "the tag left the reader"
        case .nak(let m): return "the tag refused: \(m)"
        case .tooSmall(let n, let c): return "the tag is too small: the message needs \(n) bytes, it holds \(c)"
        case .readOnly(let m): return "the tag is read-only: \(m)"
        case .authenticationFailed(let m): return "password authentication failed: \(m)"
        case .foreignContent(let m): return "the tag holds foreign content (\(m)); overwrite only when told to"
        case .wrongTag(let e, let f): return "expected tag \(e.hex), found \(f?.hex ?? "none")"
        case .notNTAG(let m): return "not an NTAG213/215/216: \(m)"
        case .notNTAG424(let m): return "not an NTAG 424 DNA: \(m)"
        case .status(let m): return "the tag answered \(m)"
        case .notVerified(let m): return "not verified: \(m)"
        case .io(let m): return "reader I/O: \(m)"
        case .timeout(let m): return "reader timeout: \(m)"
        }
    }

    /// Whether the reader itself is in doubt (close and reopen it), as opposed
    /// to the tag.
    public var readerLost: Bool {
        switch self {
        case .noReader, .io, .timeout: return true
        default: return false
        }
    }
}
