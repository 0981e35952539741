/// Hexadecimal text <-> bytes. Decoding accepts either case and rejects odd
/// lengths and non-hex characters (returns nil; never traps).
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode<C: Collection>(_ bytes: C, uppercase: Bool = false) -> String
    where C.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            var hi = digits[Int(b >> 4)], lo = digits[Int(b & 0x0F)]
            if uppercase {
                if hi >= 0x61 { hi -= 0x20 }
                if lo >= 0x61 { lo -= 0x20 }
            }
            out.append(hi)
            out.append(lo)
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    @inline(__always)
    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }
}
