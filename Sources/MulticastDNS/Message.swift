/// Multicast DNS (RFC 6762) for one job: the IPv4 address of a `*.local`
/// host name, asked with a one-shot query. The static binary pins glibc's
/// NSS to `files dns` (Sources/CStaticNSS), so `getaddrinfo` never reaches
/// an `mdns4_minimal` plugin; the transports ask here instead and connect to
/// the address, verifying the broker's certificate against the name.
///
/// This file is the pure part (a query's bytes, an answer's A records);
/// `Resolver.swift` sends and receives.
public enum MulticastDNS {
    public static let group = "224.0.0.251"
    public static let port: UInt16 = 5353

    /// True for a name under `local.` (`broker.local`, `Home-Assistant.LOCAL.`):
    /// the names RFC 6762 §3 gives to multicast DNS.
    public static func isLocalName(_ host: String) -> Bool {
        guard let labels = try? labels(of: host), labels.count >= 2 else { return false }
        return labels.last!.lowercased() == "local"
    }

    /// `host` without a trailing dot (what a certificate names).
    public static func canonical(_ host: String) -> String {
        host.hasSuffix(".") ? String(host.dropLast()) : host
    }

    public enum MessageError: Error, Equatable, CustomStringConvertible {
        case badName(String)
        case truncated
        case notAResponse
        case badPointer
        case nameTooLong

        public var description: String {
            switch self {
            case .badName(let why): return "not a host name: \(why)"
            case .truncated: return "the message ends early"
            case .notAResponse: return "not a response"
            case .badPointer: return "a name's compression pointer leads nowhere"
            case .nameTooLong: return "a name longer than 255 bytes"
            }
        }
    }

    /// The labels of a host name: 1…63 bytes each, 255 bytes in all; ASCII
    /// letters, digits and `-` (what a broker's host name holds).
    static func labels(of host: String) throws(MessageError) -> [String] {
        let name = canonical(host)
        guard !name.isEmpty else { throw .badName("empty") }
        var labels: [String] = []
        var total = 1
        for part in name.split(separator: ".", omittingEmptySubsequences: false) {
            let bytes = Array(part.utf8)
            guard !bytes.isEmpty else { throw .badName("an empty label") }
            guard bytes.count <= 63 else { throw .badName("a label longer than 63 bytes") }
            for b in bytes {
                let ok =
                    (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
                    || b == 0x5F
                guard ok else { throw .badName("byte 0x\(String(b, radix: 16)) in a label") }
            }
            total += bytes.count + 1
            labels.append(String(part))
        }
        guard total <= 255 else { throw .nameTooLong }
        return labels
    }

    /// Resource record types this code asks for or reads.
    public enum RecordType: UInt16, Sendable {
        case a = 1
        case aaaa = 28
    }

    /// A one-shot query (RFC 6762 §5.1): one question, class IN with the
    /// unicast-response bit (QU, §5.4) when `unicastResponse`. Sent from a
    /// port other than 5353, a responder answers it by unicast to that port
    /// (§6.7) whatever the bit says.
    public static func query(
        for host: String, type: RecordType = .a, id: UInt16 = 0, unicastResponse: Bool = true
    ) throws(MessageError) -> [UInt8] {
        var out: [UInt8] = [UInt8(id >> 8), UInt8(id & 0xFF), 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        for label in try labels(of: host) {
            out.append(UInt8(label.utf8.count))
            out += Array(label.utf8)
        }
        out.append(0)
        let klass: UInt16 = unicastResponse ? 0x8001 : 0x0001
        out += [UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xFF), UInt8(klass >> 8), UInt8(klass & 0xFF)]
        return out
    }

    /// One resource record of a response.
    public struct Record: Equatable, Sendable {
        /// The owner name, lower-cased, without the trailing dot.
        public var name: String
        public var type: UInt16
        /// Class without the cache-flush bit (RFC 6762 §10.2).
        public var klass: UInt16
        public var ttl: UInt32
        public var data: [UInt8]
    }

    /// A response: its ID and every answer and additional record
    /// (authority records are skipped, questions are checked and skipped).
    public struct Response: Equatable, Sendable {
        public var id: UInt16
        public var records: [Record]

        /// The IPv4 addresses the response gives `host` (A records, class IN,
        /// name compared without regard to case), in order, without repeats.
        /// A record with a TTL of 0 is a goodbye (§10.1), not an address.
        public func ipv4Addresses(of host: String) -> [String] {
            let wanted = canonical(host).lowercased()
            var out: [String] = []
            for r in records
            where r.name == wanted && r.type == RecordType.a.rawValue && r.klass == 1 && r.data.count == 4 && r.ttl > 0
            {
                let text = r.data.map { String($0) }.joined(separator: ".")
                if !out.contains(text) { out.append(text) }
            }
            return out
        }
    }

    /// Parses a response: the header, the questions, the records. Anything
    /// that does not fit — a query, a truncated record, a pointer loop, a
    /// name over 255 bytes — is an error, never a crash.
    public static func parse(_ message: [UInt8]) throws(MessageError) -> Response {
        var reader = Reader(bytes: message)
        let id = try reader.u16()
        let flags = try reader.u16()
        // QR must be set; opcode 0 (§18.3); the rcode is ignored by mDNS (§18.11).
        guard flags & 0x8000 != 0, flags & 0x7800 == 0 else { throw .notAResponse }
        let questions = Int(try reader.u16())
        let answers = Int(try reader.u16())
        let authorities = Int(try reader.u16())
        let additionals = Int(try reader.u16())
        for _ in 0..<questions {
            _ = try reader.name()
            _ = try reader.u16()
            _ = try reader.u16()
        }
        var records: [Record] = []
        for index in 0..<(answers + authorities + additionals) {
            let name = try reader.name()
            let type = try reader.u16()
            let klass = try reader.u16() & 0x7FFF
            let ttl = (UInt32(try reader.u16()) << 16) | UInt32(try reader.u16())
            let length = Int(try reader.u16())
            let data = try reader.take(length)
            let isAuthority = index >= answers && index < answers + authorities
            if !isAuthority { records.append(Record(name: name, type: type, klass: klass, ttl: ttl, data: data)) }
        }
        return Response(id: id, records: records)
    }

    struct Reader {
        let bytes: [UInt8]
        var at = 0

        mutating func u8() throws(MessageError) -> UInt8 {
            guard at < bytes.count else { throw .truncated }
            defer { at += 1 }
            return bytes[at]
        }

        mutating func u16() throws(MessageError) -> UInt16 {
            let hi = try u8()
            return (UInt16(hi) << 8) | UInt16(try u8())
        }

        mutating func take(_ n: Int) throws(MessageError) -> [UInt8] {
            guard n <= bytes.count - at else { throw .truncated }
            defer { at += n }
            return Array(bytes[at..<at + n])
        }

        /// A name at the cursor, following compression pointers (RFC 1035
        /// §4.1.4); each pointer must point before the label that holds it,
        /// so there are no loops. Lower-cased, labels joined with dots.
        mutating func name() throws(MessageError) -> String {
            var labels: [String] = []
            var position = at
            var jumped = false
            var total = 1
            while true {
                guard position < bytes.count else { throw .truncated }
                let length = bytes[position]
                switch length & 0xC0 {
                case 0x00:
                    if length == 0 {
                        if !jumped { at = position + 1 }
                        return labels.joined(separator: ".")
                    }
                    let start = position + 1
                    guard Int(length) <= bytes.count - start else { throw .truncated }
                    total += Int(length) + 1
                    guard total <= 255 else { throw .nameTooLong }
                    let label = bytes[start..<start + Int(length)].map { b -> Character in
                        let lower = (b >= 0x41 && b <= 0x5A) ? b + 0x20 : b
                        return Character(Unicode.Scalar(lower))
                    }
                    labels.append(String(label))
                    position = start + Int(length)
                case 0xC0:
                    guard position + 1 < bytes.count else { throw .truncated }
                    let target = (Int(length & 0x3F) << 8) | Int(bytes[position + 1])
                    guard target < position else { throw .badPointer }
                    if !jumped { at = position + 2 }
                    jumped = true
                    position = target
                default:
                    throw .badPointer  // 0x40 and 0x80: extended label types, unused
                }
            }
        }
    }
}
