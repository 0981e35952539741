/// PN532 host-link frames (PN532 User Manual UM0701-02 §6.2.1): preamble 00,
/// start code 00 FF, LEN, LCS (LEN + LCS ≡ 0), TFI (D4 host→chip, D5
/// chip→host), data, DCS (TFI + data + DCS ≡ 0), postamble 00. Extended
/// frames carry FF FF LENM LENL LCS instead of LEN LCS.
public enum Frame {
    /// ACK frame (§6.2.1.3): also what the host sends to abort a running command.
    public static let ack: [UInt8] = [0x00, 0x00, 0xFF, 0x00, 0xFF, 0x00]
    /// NACK frame (§6.2.1.4): asks for the last response again.
    public static let nack: [UInt8] = [0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00]
    /// Application-level error frame (§6.2.1.5): the chip's answer to a
    /// command it cannot parse (libnfc `pn53x_error_frame`).
    public static let applicationError: [UInt8] = [0x00, 0x00, 0xFF, 0x01, 0xFF, 0x7F, 0x81, 0x00]

    public static let hostTFI: UInt8 = 0xD4
    public static let chipTFI: UInt8 = 0xD5
    /// Largest TFI+data a normal frame carries (LEN is one byte).
    public static let normalMaxLength = 255
    /// Largest data a PN532 accepts: 264 bytes plus TFI (libnfc
    /// `PN53x_EXTENDED_FRAME__DATA_MAX_LEN`).
    public static let extendedMaxLength = 265

    /// Encodes `payload` (command code first) behind `tfi`; a normal frame
    /// when TFI+payload fits in 255 bytes, an extended frame otherwise.
    public static func encode(tfi: UInt8 = chipTFI, _ payload: [UInt8]) -> [UInt8] {
        let len = payload.count + 1
        var out: [UInt8] = [0x00, 0x00, 0xFF]
        if len <= normalMaxLength {
            out += [UInt8(len), UInt8((256 - len) & 0xFF)]
        } else {
            let m = UInt8(len >> 8), l = UInt8(len & 0xFF)
            out += [0xFF, 0xFF, m, l, 0 &- (m &+ l)]
        }
        out.append(tfi)
        out += payload
        out.append(checksum(tfi, payload))
        out.append(0x00)
        return out
    }

    /// DCS: the byte that makes TFI + data + DCS ≡ 0 (mod 256).
    public static func checksum(_ tfi: UInt8, _ data: [UInt8]) -> UInt8 {
        0 &- data.reduce(tfi, &+)
    }
}

/// What the frame decoder found on the wire.
public enum DecodedFrame: Equatable, Sendable {
    case ack
    case nack
    /// A well-formed information frame: TFI and the data after it.
    case information(tfi: UInt8, data: [UInt8])
    /// A frame that was dropped: bad length or data checksum, or too long.
    case corrupt(String)
}

/// Incremental decoder for the byte stream on the HSU link. Bytes that are
/// not part of a frame (the 0x55 wake-up preamble, padding zeros,
/// postambles, noise) are skipped until the next start code 00 FF, which is
/// how the PN532 itself resynchronises (UM0701-02 §6.2.1).
public struct FrameDecoder: Sendable {
    private var buffer: [UInt8] = []
    /// Bytes discarded while hunting for a start code.
    public private(set) var skippedBytes = 0

    public init() {}

    public mutating func feed(_ bytes: [UInt8]) -> [DecodedFrame] {
        buffer += bytes
        var out: [DecodedFrame] = []
        while let frame = next() { out.append(frame) }
        return out
    }

    /// True when bytes of an unfinished frame are waiting.
    public var hasPartialFrame: Bool { !buffer.isEmpty }

    /// Forgets an unfinished frame (the driver calls this after an idle gap,
    /// as the chip's receiver times out on a frame that stopped midway).
    public mutating func discardPartial() {
        skippedBytes += buffer.count
        buffer.removeAll()
    }

    private mutating func next() -> DecodedFrame? {
        // Hunt for the start code 00 FF.
        var start = 0
        while start + 1 < buffer.count, !(buffer[start] == 0x00 && buffer[start + 1] == 0xFF) { start += 1 }
        guard start + 1 < buffer.count else {
            // Keep a trailing 00: it may be the first half of a start code.
            let keep = buffer.last == 0x00 ? 1 : 0
            skippedBytes += buffer.count - keep
            buffer.removeFirst(buffer.count - keep)
            return nil
        }
        skippedBytes += start
        buffer.removeFirst(start)
        // buffer: 00 FF LEN LCS ...
        guard buffer.count >= 4 else { return nil }
        let len = buffer[2], lcs = buffer[3]
        if len == 0x00 && lcs == 0xFF { buffer.removeFirst(4); return .ack }
        if len == 0xFF && lcs == 0x00 { buffer.removeFirst(4); return .nack }
        var header = 4, length = Int(len)
        if len == 0xFF && lcs == 0xFF {
            guard buffer.count >= 7 else { return nil }
            let m = buffer[4], l = buffer[5]
            guard m &+ l &+ buffer[6] == 0 else { return dropStartCode("extended length checksum mismatch") }
            header = 7
            length = Int(m) << 8 | Int(l)
        } else if len &+ lcs != 0 {
            return dropStartCode("length checksum mismatch")
        }
        guard length >= 1 else { return dropStartCode("zero length") }
        guard length <= Frame.extendedMaxLength else { return dropStartCode("frame of \(length) bytes is too long") }
        guard buffer.count >= header + length + 1 else { return nil }
        let tfi = buffer[header]
        let data = Array(buffer[(header + 1)..<(header + length)])
        let dcs = buffer[header + length]
        buffer.removeFirst(header + length + 1)
        guard Frame.checksum(tfi, data) == dcs else { return .corrupt("data checksum mismatch") }
        return .information(tfi: tfi, data: data)
    }

    /// Skips a start code whose length field is broken and reports it.
    private mutating func dropStartCode(_ why: String) -> DecodedFrame {
        buffer.removeFirst(2)
        skippedBytes += 2
        return .corrupt(why)
    }
}
