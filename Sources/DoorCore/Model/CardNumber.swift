/// A card number as an outdoor reader sends it (issue 35): the bits of one
/// Wiegand frame — parity bits included — and how many there are. A Wiegand
/// reader sends them on its D0/D1 lines; an OSDP reader in a RAW card-data
/// reply (format 1, "P/data/P"). The door keys its registry on these bits
/// (`registryKey`), so a card enrolled by facility and number, or by the raw
/// bits a reader showed in the audit log, is the same row.
///
/// The formats the door names (`WiegandFormat`): H10301 26-bit (8-bit
/// facility, 16-bit number), H10306 34-bit (16 + 16), H10304 37-bit (16 + 19),
/// each framed by a leading even and a trailing odd parity bit over its halves
/// (ESPHome's `wiegand` component checks the same ranges). Any other length is
/// kept as raw bits.
public struct CardNumber: Hashable, Sendable, CustomStringConvertible {
    /// The bits, most significant (first sent) first, packed into bytes; the
    /// unused low bits of the last byte are zero.
    public let bits: [UInt8]
    public let bitCount: Int
    /// An osdp_FMT card number (issue 35): `bits` are its ASCII characters as the reader sent
    /// them (`init(formatted:)`), keyed apart from every bit frame (key tag `CB`, `fmt:` in text).
    public let isFormatted: Bool

    /// The longest frame the door keys (an OSDP RAW reply may carry more: refused).
    public static let maxBits = 256

    /// nil when `bitCount` is not 1…256, `bits` is not exactly the bytes it
    /// needs, or a bit past `bitCount` is set.
    public init?(bits: [UInt8], bitCount: Int) {
        guard (1...Self.maxBits).contains(bitCount), bits.count == (bitCount + 7) / 8 else { return nil }
        let spare = bits.count * 8 - bitCount
        if spare > 0, bits[bits.count - 1] & UInt8((1 << spare) - 1) != 0 { return nil }
        self.bits = bits
        self.bitCount = bitCount
        isFormatted = false
    }

    /// The longest osdp_FMT card number the door keys (it fits a 34-byte registry key).
    public static let maxFormattedCharacters = 32

    /// An osdp_FMT card number: 1…32 printable ASCII characters, no space (`!`…`~`), as the
    /// reader sent them; nil for anything else (a control character, a byte past ASCII).
    public init?(formatted characters: [UInt8]) {
        guard (1...Self.maxFormattedCharacters).contains(characters.count),
            characters.allSatisfy({ (0x21...0x7E).contains($0) })
        else { return nil }
        bits = characters
        bitCount = characters.count * 8
        isFormatted = true
    }

    /// From a bit string, first sent first.
    public init?(bitString: [Bool]) {
        var bytes = [UInt8](repeating: 0, count: (bitString.count + 7) / 8)
        for (i, bit) in bitString.enumerated() where bit { bytes[i / 8] |= 0x80 >> UInt8(i % 8) }
        self.init(bits: bytes, bitCount: bitString.count)
    }

    /// The card as `format` frames it, parity computed; nil when the facility
    /// or the number does not fit the format's fields.
    public init?(format: WiegandFormat, facility: UInt64, number: UInt64) {
        guard facility < (1 << UInt64(format.facilityBits)), number < (1 << UInt64(format.numberBits)) else {
            return nil
        }
        let payload = (facility << UInt64(format.numberBits)) | number
        let inner = format.facilityBits + format.numberBits
        var string = [false] + (0..<inner).map { payload >> UInt64(inner - 1 - $0) & 1 == 1 } + [false]
        string[0] = format.evenRange.filter { string[$0] }.count % 2 == 1
        string[format.bitCount - 1] = format.oddRange.filter { string[$0] }.count % 2 == 0
        self.init(bitString: string)
    }

    /// Bit `i` (0: the first sent).
    public func bit(_ i: Int) -> Bool { bits[i / 8] & (0x80 >> UInt8(i % 8)) != 0 }

    public var bitString: [Bool] { (0..<bitCount).map(bit) }

    /// The bits as one number (at most 64 of them; nil beyond).
    public var value: UInt64? {
        guard bitCount <= 64 else { return nil }
        return (0..<bitCount).reduce(UInt64(0)) { $0 << 1 | (bit($1) ? 1 : 0) }
    }

    /// The named format this frame has, with its parity holding; nil for
    /// another length or a parity that does not hold.
    public var format: WiegandFormat? {
        guard let f = WiegandFormat(bitCount: bitCount) else { return nil }
        let string = bitString
        guard f.evenRange.filter({ string[$0] }).count % 2 == 0, f.oddRange.filter({ string[$0] }).count % 2 == 1
        else { return nil }
        return f
    }

    /// The facility code and card number of a named format (nil otherwise).
    public var fields: (facility: UInt64, number: UInt64)? {
        guard let f = format, let v = value else { return nil }
        let payload = (v >> 1) & ((1 << UInt64(f.facilityBits + f.numberBits)) - 1)
        return (payload >> UInt64(f.numberBits), payload & ((1 << UInt64(f.numberBits)) - 1))
    }

    /// `26:123:4567` for a named format, else `raw:34:0123456789` (the bit
    /// count and the bits in hex, as packed): what the audit log and
    /// `gatewayctl tags list` show, and what `tags enroll-card` takes back.
    public var description: String {
        if isFormatted { return "fmt:" + String(decoding: bits, as: UTF8.self) }
        if let f = format, let fl = fields { return "\(f.bitCount):\(fl.facility):\(fl.number)" }
        return "raw:\(bitCount):\(Hex.encode(bits))"
    }

    /// Parses `description`'s forms: `26:FACILITY:NUMBER` (also 34, 37) or
    /// `raw:BITS:HEX`. nil for anything else.
    public init?(text: String) {
        if text.hasPrefix("fmt:") {
            self.init(formatted: Array(text.utf8.dropFirst(4)))
            return
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { return nil }
        if parts[0] == "raw" {
            guard let count = Int(parts[1]), let bytes = Hex.decode(parts[2]) else { return nil }
            self.init(bits: bytes, bitCount: count)
            return
        }
        guard let count = Int(parts[0]), let format = WiegandFormat(bitCount: count),
            parts[1].allSatisfy(\.isASCII), parts[2].allSatisfy(\.isASCII),
            let facility = UInt64(parts[1]), let number = UInt64(parts[2])
        else { return nil }
        self.init(format: format, facility: facility, number: number)
    }

    // MARK: The registry key

    /// The first byte of every card key. A card key is 18 bytes (up to 128
    /// bits) or 34 (up to 256): never an NFC UID's 4, 7 or 10, so a card and
    /// a tag never share a registry row, a revocation or a lockout.
    static let keyTag: UInt8 = 0xCA
    /// The first byte of an osdp_FMT card's key: `CB`, the character count minus one, the
    /// characters padded with zeros to 16 (or 32) bytes — never a bit frame's key.
    static let formattedKeyTag: UInt8 = 0xCB

    /// The registry's key for this card (`issued_tag.uid`, audit rows,
    /// revocations, lockouts): `CA`, the bit count minus one, then the bits
    /// padded with zeros to 16 (or 32) bytes.
    public var registryKey: TagUID {
        if isFormatted {
            let width = bits.count <= 16 ? 16 : 32
            return TagUID(
                [Self.formattedKeyTag, UInt8(bits.count - 1)] + bits + [UInt8](repeating: 0, count: width - bits.count))
        }
        let width = bitCount <= 128 ? 16 : 32
        return TagUID([Self.keyTag, UInt8(bitCount - 1)] + bits + [UInt8](repeating: 0, count: width - bits.count))
    }

    /// The card a registry key names; nil when `key` is not a card key.
    public init?(registryKey key: TagUID) {
        let b = key.bytes
        guard b.count == 18 || b.count == 34 else { return nil }
        if b[0] == Self.formattedKeyTag {
            let count = Int(b[1]) + 1
            guard count <= Self.maxFormattedCharacters, (count <= 16) == (b.count == 18),
                b[(2 + count)...].allSatisfy({ $0 == 0 })
            else { return nil }
            self.init(formatted: Array(b[2..<(2 + count)]))
            return
        }
        guard b[0] == Self.keyTag else { return nil }
        let count = Int(b[1]) + 1
        guard (count <= 128) == (b.count == 18) else { return nil }
        let used = (count + 7) / 8
        guard b[(2 + used)...].allSatisfy({ $0 == 0 }) else { return nil }
        self.init(bits: Array(b[2..<(2 + used)]), bitCount: count)
    }
}

/// The Wiegand card formats the door names by facility and number.
public enum WiegandFormat: Int, Sendable, CaseIterable {
    /// H10301: even parity, 8-bit facility, 16-bit number, odd parity.
    case h10301 = 26
    /// H10306: even parity, 16-bit facility, 16-bit number, odd parity.
    case h10306 = 34
    /// H10304: even parity, 16-bit facility, 19-bit number, odd parity.
    case h10304 = 37

    public init?(bitCount: Int) { self.init(rawValue: bitCount) }
    public var bitCount: Int { rawValue }
    public var facilityBits: Int {
        switch self {
        case .h10301: return 8
        case .h10306, .h10304: return 16
        }
    }
    public var numberBits: Int {
        switch self {
        case .h10301, .h10306: return 16
        case .h10304: return 19
        }
    }
    /// The bits (0: first sent) the leading parity bit makes even, itself included.
    var evenRange: ClosedRange<Int> {
        switch self {
        case .h10301: return 0...12
        case .h10306: return 0...16
        case .h10304: return 0...18
        }
    }
    /// The bits the trailing parity bit makes odd, itself included.
    var oddRange: ClosedRange<Int> {
        switch self {
        case .h10301: return 13...25
        case .h10306: return 17...33
        case .h10304: return 18...36
        }
    }
}
