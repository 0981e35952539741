import DoorCore

/// A frame on the ISO/IEC 14443-3 type A air interface at 106 kbit/s, as
/// bytes in transmission order (LSB first inside each byte). `lastBits` is
/// the number of valid bits in the last byte, 0 meaning all 8 (the CIU's
/// TxLastBits / RxLastBits convention, PN532 UM0701-02 §8.6.23.26).
public struct AirFrame: Equatable, Sendable, CustomStringConvertible {
    public var bytes: [UInt8]
    public var lastBits: Int

    public init(_ bytes: [UInt8], lastBits: Int = 0) {
        self.bytes = bytes
        self.lastBits = lastBits
    }

    /// Total bits in the frame.
    public var bitCount: Int { bytes.isEmpty ? 0 : (bytes.count - 1) * 8 + (lastBits == 0 ? 8 : lastBits) }

    /// A 4-bit ACK/NAK answer (NTAG21x data sheet §9.3: ACK = Ah, NAK = 0h/1h/4h/5h).
    public static func nibble(_ value: UInt8) -> AirFrame { AirFrame([value & 0x0F], lastBits: 4) }
    public static let ack = nibble(0x0A)

    /// `bytes` followed by their CRC_A.
    public static func withCRC(_ bytes: [UInt8]) -> AirFrame { AirFrame(bytes + CRC.a(bytes)) }

    public var description: String {
        Hex.encode(bytes) + (lastBits == 0 ? "" : "/\(lastBits)")
    }
}

/// ISO/IEC 14443-3 type A, answered alike by every emulated tag.
enum ISO14443A {
    /// ANTICOLLISION (SEL 20h, no CRC) and SELECT (SEL 70h + 5 bytes + CRC) of
    /// one cascade level: the answer, a SELECT of this tag moving `state` to
    /// `next`; nil for any other frame (the tag falls back to IDLE).
    static func cascade<State>(
        _ b: [UInt8], level: UInt8, uidPart: [UInt8], sak: UInt8, state: inout State, next: State
    ) -> AirFrame? {
        if b == [level, 0x20] { return AirFrame(uidPart) }
        if b.count == 9, b[0] == level, b[1] == 0x70, CRC.isValid(b), Array(b[2...6]) == uidPart {
            state = next
            return .withCRC([sak])
        }
        return nil
    }
}

/// ISO/IEC 14443-3 CRC_A: initial value 6363h, polynomial x^16+x^12+x^5+1
/// processed LSB first, sent low byte first (libnfc `iso14443a_crc`).
public enum CRC {
    public static func a<C: Collection>(_ data: C) -> [UInt8] where C.Element == UInt8 {
        var crc: UInt16 = 0x6363
        for byte in data {
            var b = byte ^ UInt8(crc & 0xFF)
            b ^= b << 4
            crc = (crc >> 8) ^ (UInt16(b) << 8) ^ (UInt16(b) << 3) ^ (UInt16(b) >> 4)
        }
        return [UInt8(crc & 0xFF), UInt8(crc >> 8)]
    }

    /// True when `frame` ends with the CRC_A of the bytes before it.
    public static func isValid(_ frame: [UInt8]) -> Bool {
        frame.count >= 3 && Array(frame.suffix(2)) == a(frame.dropLast(2))
    }
}

/// Odd-parity framing of type A (ISO/IEC 14443-3 §6.2.3.1), as the PN532
/// exposes it when CIU_ManualRCV ParityDisable is set: every data byte is
/// followed on air by its parity bit and the host packs the bit stream
/// itself (libnfc `pn53x_wrap_frame` / `pn53x_unwrap_frame`).
public enum ParityFraming {
    /// Packs data bytes, each followed by its odd parity bit, LSB first.
    public static func wrap(_ data: [UInt8]) -> AirFrame {
        var bits: [Bool] = []
        for byte in data {
            for i in 0..<8 { bits.append(byte >> i & 1 == 1) }
            bits.append(byte.nonzeroBitCount % 2 == 0)
        }
        return pack(bits)
    }

    /// Splits a parity-framed stream into data bytes; nil when a parity bit
    /// is wrong or the stream is not a whole number of 9-bit groups.
    public static func unwrap(_ frame: AirFrame) -> [UInt8]? {
        let bits = unpack(frame)
        guard bits.count % 9 == 0 else { return nil }
        var out: [UInt8] = []
        for g in stride(from: 0, to: bits.count, by: 9) {
            var byte: UInt8 = 0
            for i in 0..<8 where bits[g + i] { byte |= 1 << i }
            guard bits[g + 8] == (byte.nonzeroBitCount % 2 == 0) else { return nil }
            out.append(byte)
        }
        return out
    }

    static func pack(_ bits: [Bool]) -> AirFrame {
        var bytes = [UInt8](repeating: 0, count: (bits.count + 7) / 8)
        for (i, bit) in bits.enumerated() where bit { bytes[i / 8] |= 1 << (i % 8) }
        return AirFrame(bytes, lastBits: bits.count % 8)
    }

    static func unpack(_ frame: AirFrame) -> [Bool] {
        (0..<frame.bitCount).map { frame.bytes[$0 / 8] >> ($0 % 8) & 1 == 1 }
    }
}
