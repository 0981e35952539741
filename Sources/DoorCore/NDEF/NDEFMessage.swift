/// An NDEF message: one or more records (NFC Forum NDEF 1.0).
public struct NDEFMessage: Equatable, Sendable, Hashable {
    public var records: [NDEFRecord]
    public init(records: [NDEFRecord]) { self.records = records }

    /// Largest payload accepted when decoding: more than any NTAG21x holds.
    static let maximumPayload = 65_535

    /// Decodes a message; an empty byte string is the empty message.
    public static func decode(_ bytes: [UInt8]) throws(NDEFError) -> NDEFMessage {
        var records: [NDEFRecord] = []
        var i = 0
        while i < bytes.count {
            let header = bytes[i]
            let mb = header & 0x80 != 0, me = header & 0x40 != 0, cf = header & 0x20 != 0
            let sr = header & 0x10 != 0, il = header & 0x08 != 0
            guard let tnf = TNF(rawValue: header & 0x07) else { throw .invalidRecord("TNF") }
            guard !cf else { throw .chunkedRecord }
            guard tnf != .unchanged else { throw .chunkedRecord }
            guard mb == records.isEmpty else { throw .invalidRecord(mb ? "MB set on a record after the first" : "MB not set on the first record") }
            i += 1
            func take(_ n: Int, _ what: String) throws(NDEFError) -> ArraySlice<UInt8> {
                guard n >= 0, n <= bytes.count - i else { throw .truncated(what) }
                defer { i += n }
                return bytes[i..<i + n]
            }
            let typeLength = Int(try take(1, "type length").first!)
            let payloadLength: Int
            if sr {
                payloadLength = Int(try take(1, "payload length").first!)
            } else {
                let l = try take(4, "payload length")
                payloadLength = l.reduce(0) { $0 << 8 | Int($1) }
            }
            guard payloadLength <= maximumPayload else { throw .truncated("payload length \(payloadLength) beyond the data") }
            let idLength = il ? Int(try take(1, "ID length").first!) : 0
            let type = Array(try take(typeLength, "type"))
            let id = Array(try take(idLength, "ID"))
            let payload = Array(try take(payloadLength, "payload"))
            switch tnf {
            case .empty where typeLength != 0 || idLength != 0 || payloadLength != 0:
                throw .invalidRecord("an empty record must have no type, ID or payload")
            case .wellKnown, .media, .absoluteURI, .external:
                if typeLength == 0 { throw .invalidRecord("missing type") }
            case .unknown where typeLength != 0:
                throw .invalidRecord("an unknown-type record must have no type")
            default: break
            }
            records.append(NDEFRecord(tnf: tnf, type: type, id: id, payload: payload))
            if me {
                guard i == bytes.count else { throw .invalidRecord("data after the record with ME set") }
                return NDEFMessage(records: records)
            }
        }
        if records.isEmpty { return NDEFMessage(records: []) }
        throw .truncated("no record with ME set")
    }

    /// Encodes the message: MB on the first record, ME on the last, SR when the payload fits a byte.
    public func encoded() -> [UInt8] {
        var out = [UInt8]()
        for (n, r) in records.enumerated() {
            var header = r.tnf.rawValue
            if n == 0 { header |= 0x80 }
            if n == records.count - 1 { header |= 0x40 }
            let short = r.payload.count < 256
            if short { header |= 0x10 }
            if !r.id.isEmpty { header |= 0x08 }
            out.append(header)
            out.append(UInt8(truncatingIfNeeded: r.type.count))
            if short {
                out.append(UInt8(r.payload.count))
            } else {
                let l = UInt32(truncatingIfNeeded: r.payload.count)
                out += [UInt8(l >> 24), UInt8(l >> 16 & 0xFF), UInt8(l >> 8 & 0xFF), UInt8(l & 0xFF)]
            }
            if !r.id.isEmpty { out.append(UInt8(truncatingIfNeeded: r.id.count)) }
            out += r.type + r.id + r.payload
        }
        return out
    }

    /// The first URI record's URI, wherever it stands in the message (COMPAT §7).
    public func firstURI() throws(NDEFError) -> String {
        guard !records.isEmpty else { throw .emptyMessage }
        for r in records where r.isURI {
            if let u = try r.uri() { return u }
        }
        throw .noURIRecord
    }

    /// The first Text record's text, if any.
    public func firstText() -> String? {
        for r in records where r.isText {
            if let t = try? r.text() { return t.text }
        }
        return nil
    }
}
