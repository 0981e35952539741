/// An NDEF message: zero or more records (NFC Forum NDEF 1.0 §3). The empty
/// message (what a blank NTAG holds: TLV `03 00`) has no records.
public struct NDEFMessage: Equatable, Sendable, Hashable {
    public var records: [NDEFRecord]
    public init(records: [NDEFRecord]) { self.records = records }

    public var isEmpty: Bool { records.isEmpty }

    /// Decodes a message (NDEF 1.0 §3.2): MB on the first record only, ME on the
    /// last, nothing after it; chunked records are refused. Empty bytes are the
    /// empty message.
    public static func decode(_ bytes: [UInt8]) throws(NDEFError) -> NDEFMessage {
        var records: [NDEFRecord] = []
        var i = 0
        /// A fixed-size header field: missing bytes mean the record is cut short.
        func header(_ n: Int, _ what: String) throws(NDEFError) -> [UInt8] {
            guard n <= bytes.count - i else { throw .truncated("record \(records.count + 1): \(what)") }
            defer { i += n }
            return Array(bytes[i..<i + n])
        }
        /// A variable field whose length the header declared.
        func field(_ n: Int, _ what: String) throws(NDEFError) -> [UInt8] {
            guard n >= 0, n <= bytes.count - i else {
                throw .lengthBeyondData("record \(records.count + 1): \(what) of \(n) bytes, \(bytes.count - i) left")
            }
            defer { i += n }
            return Array(bytes[i..<i + n])
        }
        while i < bytes.count {
            let flags = try header(1, "flags")[0]
            let mb = flags & 0x80 != 0, me = flags & 0x40 != 0, cf = flags & 0x20 != 0
            let sr = flags & 0x10 != 0, il = flags & 0x08 != 0
            let tnf = TNF(rawValue: flags & 0x07)!  // three bits: every value is a case
            guard !cf, tnf != .unchanged else { throw .chunkedRecord }
            guard mb == records.isEmpty else {
                throw .invalidRecord(mb ? "MB set on a record after the first" : "MB not set on the first record")
            }
            let typeLength = Int(try header(1, "type length")[0])
            let payloadLength = try header(sr ? 1 : 4, "payload length").reduce(0) { $0 << 8 | Int($1) }
            let idLength = il ? Int(try header(1, "ID length")[0]) : 0
            let type = try field(typeLength, "type")
            let id = try field(idLength, "ID")
            let payload = try field(payloadLength, "payload")
            switch tnf {
            case .empty where typeLength != 0 || idLength != 0 || payloadLength != 0:
                throw .invalidRecord("an empty record (TNF 0) must have no type, ID or payload")
            case .wellKnown, .media, .absoluteURI, .external:
                if typeLength == 0 { throw .invalidRecord("TNF \(tnf.rawValue) needs a type") }
            case .unknown where typeLength != 0:
                throw .invalidRecord("an unknown-type record (TNF 5) must have no type")
            default: break
            }
            records.append(NDEFRecord(tnf: tnf, type: type, id: id, payload: payload))
            if me {
                guard i == bytes.count else {
                    throw .invalidRecord("\(bytes.count - i) bytes after the record with ME set")
                }
                return NDEFMessage(records: records)
            }
        }
        if records.isEmpty { return NDEFMessage(records: []) }
        throw .truncated("no record with ME set")
    }

    /// Encodes the message: MB on the first record, ME on the last, SR when the
    /// payload is under 256 bytes, IL when there is an ID (NDEF 1.0 §3.2).
    /// Types and IDs longer than 255 bytes cannot be encoded.
    public func encoded() throws(NDEFError) -> [UInt8] {
        var out = [UInt8]()
        for (n, r) in records.enumerated() {
            guard r.type.count <= 255, r.id.count <= 255 else {
                throw .invalidRecord("record \(n + 1): type and ID are at most 255 bytes")
            }
            guard let length = UInt32(exactly: r.payload.count) else {
                throw .invalidRecord("record \(n + 1): payload over 4 GiB")
            }
            var flags = r.tnf.rawValue
            if n == 0 { flags |= 0x80 }
            if n == records.count - 1 { flags |= 0x40 }
            let short = r.payload.count < 256
            if short { flags |= 0x10 }
            if !r.id.isEmpty { flags |= 0x08 }
            out.append(flags)
            out.append(UInt8(r.type.count))
            if short {
                out.append(UInt8(r.payload.count))
            } else {
                out += [
                    UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
                ]
            }
            if !r.id.isEmpty { out.append(UInt8(r.id.count)) }
            out += r.type + r.id + r.payload
        }
        return out
    }

    /// The first URI record's URI, wherever it stands in the message (docs/formats.md §7).
    /// A malformed URI record (reserved code, bad UTF-8) is an error, not skipped.
    public func firstURI() throws(NDEFError) -> String {
        guard !records.isEmpty else { throw .emptyMessage }
        for r in records {
            if let u = try r.uri() { return u }
        }
        throw .noURIRecord
    }

    /// The first well-formed Text record, if any (a sticker's label).
    public func firstText() -> (language: String, text: String)? {
        for r in records {
            if let t = try? r.text() { return t }
        }
        return nil
    }
}
