import DoorCore
import XCTest

/// The Wiegand decoder (issue 35) on edge sequences as a reader puts them on
/// the wires — 50 µs low pulses, 2 ms apart — with ESPHome's `wiegand`
/// component's frame formats (its parity ranges, its 26/34/37-bit tag
/// values, its "0123456789*#" keys) and the Arduino Wiegand library's (which
/// esp-rfid uses: 8-bit keys with the high nibble inverted) as vectors.
final class WiegandDecoderTests: XCTestCase {
    typealias Edge = (line: WiegandDecoder.Line, low: Bool, at: UInt64)

    /// The edges of `bits` (first sent first) from `start`: each bit a 50 µs
    /// low pulse on D0 (0) or D1 (1), one every `period`.
    static func edges(_ bits: String, start: UInt64 = 1_000_000_000, period: UInt64 = 2_000_000) -> [Edge] {
        bits.filter { $0 != " " }.enumerated().flatMap { i, b -> [Edge] in
            let line: WiegandDecoder.Line = b == "1" ? .d1 : .d0
            let t = start + UInt64(i) * period
            return [(line, true, t), (line, false, t + 50_000)]
        }
    }

    func decode(_ edges: [Edge], gap: Duration = .milliseconds(50)) -> [WiegandDecoder.Frame] {
        var d = WiegandDecoder(frameGap: gap)
        return edges.flatMap { d.edge($0.line, low: $0.low, at: $0.at) } + d.end()
    }

    /// A recorded burst, edge by edge: key 5 from a 4-bit keypad (0101).
    func testARecordedFourBitKeyBurst() {
        let recorded: [Edge] = [
            (.d0, true, 5_000_000_000), (.d0, false, 5_000_050_000),
            (.d1, true, 5_002_000_000), (.d1, false, 5_002_050_000),
            (.d0, true, 5_004_000_000), (.d0, false, 5_004_050_000),
            (.d1, true, 5_006_000_000), (.d1, false, 5_006_050_000),
        ]
        XCTAssertEqual(decode(recorded), [.key(.digit(5))])
    }

    /// ESPHome's 26-bit tag: `(value >> 1) & 0xffffff` with even parity over
    /// the first 13 bits and odd over the last 13; facility 18, card 12345 is
    /// its tag 1191993 (0x123039).
    func testA26BitCardAndItsParity() {
        let frame = "0 00010010 0011000000111001 1"
        guard case .card(let card)? = decode(Self.edges(frame)).first else { return XCTFail("no card") }
        XCTAssertEqual(card.description, "26:18:12345")
        XCTAssertEqual((card.value! >> 1) & 0xFF_FFFF, 1_191_993)
        XCTAssertEqual(decode(Self.edges("1 00010010 0011000000111001 1")), [.invalid(bits: 26, reason: "parity")])
        XCTAssertEqual(decode(Self.edges("0 00010010 0011000000111001 0")), [.invalid(bits: 26, reason: "parity")])
    }

    /// 34 and 37 bits (ESPHome: tag `(value >> 1) & 0xffffffff` and
    /// `& 0x7ffffffff`, parity over 17/17 and 19/19 bits, sharing bit 18 at 37).
    func test34And37BitCards() {
        for card in [
            CardNumber(format: .h10306, facility: 0x1234, number: 0x5678)!,
            CardNumber(format: .h10304, facility: 300, number: 400_000)!,
        ] {
            let bits = card.bitString.map { $0 ? "1" : "0" }.joined()
            XCTAssertEqual(decode(Self.edges(bits)), [.card(card)])
        }
        let c34 = CardNumber(format: .h10306, facility: 0x1234, number: 0x5678)!
        XCTAssertEqual((c34.value! >> 1) & 0xFFFF_FFFF, 0x1234_5678)
    }

    /// Keys: 4-bit (ESPHome's table: 10 `*`, 11 `#`) and 8-bit bursts (the
    /// Arduino library: high nibble = low nibble inverted), each press its
    /// own frame; the PIN "2580#" as a keypad sends it.
    func testFourAndEightBitKeysAndAPINEntry() {
        XCTAssertEqual(decode(Self.edges("1010")), [.key(.clear)])
        XCTAssertEqual(decode(Self.edges("1011")), [.key(.enter)])
        XCTAssertEqual(decode(Self.edges("1100")), [.invalid(bits: 4, reason: "key value 12")])
        XCTAssertEqual(decode(Self.edges("1010 0101")), [.key(.digit(5))], "0xA5")
        XCTAssertEqual(decode(Self.edges("0100 1011")), [.key(.enter)], "0x4B")
        XCTAssertEqual(decode(Self.edges("1010 0100")), [.invalid(bits: 8, reason: "key nibbles do not match")])
        var edges: [Edge] = []
        for (i, nibble) in ["0010", "0101", "1000", "0000", "1011"].enumerated() {
            edges += Self.edges(nibble, start: 1_000_000_000 + UInt64(i) * 300_000_000)
        }
        XCTAssertEqual(
            decode(edges), [.key(.digit(2)), .key(.digit(5)), .key(.digit(8)), .key(.digit(0)), .key(.enter)])
    }

    /// The frame ends on the gap: two 4-bit keys 30 ms apart are two frames
    /// with a 25 ms gap and one 8-bit frame (not a key) with 100 ms.
    func testTheFrameGapSeparatesFrames() {
        let edges = Self.edges("0001") + Self.edges("0010", start: 1_000_000_000 + 6_000_000 + 30_000_000)
        XCTAssertEqual(decode(edges, gap: .milliseconds(25)), [.key(.digit(1)), .key(.digit(2))])
        XCTAssertEqual(
            decode(edges, gap: .milliseconds(100)), [.invalid(bits: 8, reason: "key nibbles do not match")])
        XCTAssertEqual(WiegandDecoder(frameGap: .milliseconds(5)).frameGap, .milliseconds(25))
        XCTAssertEqual(WiegandDecoder(frameGap: .seconds(1)).frameGap, .milliseconds(100))
        // The slowest reader: 2 ms between bits is inside any gap the door takes.
        XCTAssertEqual(decode(Self.edges("0101", period: 20_000_000), gap: .milliseconds(25)), [.key(.digit(5))])
    }

    func testNoiseIsDroppedAndSaidSo() {
        XCTAssertEqual(decode(Self.edges("101")), [.invalid(bits: 3, reason: "too short for a card")])
        let both: [Edge] = [
            (.d0, true, 1_000), (.d1, true, 2_000), (.d0, false, 50_000), (.d1, false, 51_000),
        ]
        XCTAssertEqual(decode(both), [.invalid(bits: 2, reason: "both lines low at once")])
        // A reader that sends a 32-bit UID without parity: raw bits.
        let uid = String(repeating: "10", count: 16)
        guard case .card(let raw)? = decode(Self.edges(uid)).first else { return XCTFail("no card") }
        XCTAssertEqual(raw.bitCount, 32)
        XCTAssertEqual(raw.description, "raw:32:aaaaaaaa")
        XCTAssertEqual(decode([]), [])
    }

    /// Falling edges only (what the reader asks the kernel for): the same frames.
    func testPulsesAloneDecodeTheSameAndOverlapsAreCollisions() {
        var d = WiegandDecoder(frameGap: .milliseconds(25))
        let falling = Self.edges("0 00010010 0011000000111001 1").filter(\.low)
        let frames = falling.flatMap { d.pulse($0.line, at: $0.at) } + d.end()
        XCTAssertEqual(frames, [.card(CardNumber(format: .h10301, facility: 18, number: 12345)!)])
        var c = WiegandDecoder()
        XCTAssertEqual(
            c.pulse(.d0, at: 1_000_000) + c.pulse(.d1, at: 1_040_000) + c.end(),
            [.invalid(bits: 2, reason: "both lines low at once")])
    }

    /// `[[readers]] bits` and `keypad_burst` set: a frame of another card length or the other
    /// burst size is dropped and said so; unset, every length decodes (the tests above).
    func testAReaderSetToOneFormatDropsTheOthers() {
        func decode(_ bits: String, cardBits: Int?, keypadBurst: Int?) -> [WiegandDecoder.Frame] {
            var d = WiegandDecoder(cardBits: cardBits, keypadBurst: keypadBurst)
            return Self.edges(bits).flatMap { d.edge($0.line, low: $0.low, at: $0.at) } + d.end()
        }
        let card26 = "0 00010010 0011000000111001 1"
        let c34 = CardNumber(format: .h10306, facility: 0x1234, number: 0x5678)!
        let bits34 = String((0..<34).map { c34.value! >> (33 - UInt64($0)) & 1 == 1 ? "1" : "0" })
        XCTAssertEqual(
            decode(card26, cardBits: 26, keypadBurst: 4),
            [.card(CardNumber(format: .h10301, facility: 18, number: 12345)!)])
        XCTAssertEqual(decode(bits34, cardBits: nil, keypadBurst: nil), [.card(c34)])
        XCTAssertEqual(
            decode(bits34, cardBits: 37, keypadBurst: nil),
            [.invalid(bits: 34, reason: "the reader is set to 37-bit cards")])
        // Longer than set: cut at the set length (its card ends there), nothing of it a card here.
        XCTAssertEqual(
            decode(bits34, cardBits: 26, keypadBurst: nil),
            [.invalid(bits: 26, reason: "parity"), .invalid(bits: 8, reason: "key nibbles do not match")])
        XCTAssertEqual(
            decode(String(repeating: "10", count: 16), cardBits: 26, keypadBurst: nil),
            [.invalid(bits: 26, reason: "parity"), .invalid(bits: 6, reason: "too short for a card")], "no raw bits")
        XCTAssertEqual(
            decode(String(repeating: "10", count: 15), cardBits: 34, keypadBurst: nil),
            [.invalid(bits: 30, reason: "the reader is set to 34-bit cards")], "no raw bits either")
        XCTAssertEqual(decode("0101", cardBits: 26, keypadBurst: 4), [.key(.digit(5))])
        XCTAssertEqual(decode("1010 0101", cardBits: 26, keypadBurst: nil), [.key(.digit(5))])
        XCTAssertEqual(
            decode("1010 0101", cardBits: 26, keypadBurst: 4),
            [.invalid(bits: 8, reason: "the keypad is set to 4-bit bursts")])
        XCTAssertEqual(
            decode("0101", cardBits: nil, keypadBurst: 8),
            [.invalid(bits: 4, reason: "the keypad is set to 8-bit bursts")])
    }

    /// Set to 26-bit cards, the card is decoded at its 26th bit — the door acts without waiting
    /// out the frame gap (Wiegand last bit → relay, issue 35's bench); a key burst still waits.
    func testASetCardLengthEndsTheFrameAtItsLastBit() {
        var d = WiegandDecoder(frameGap: .milliseconds(100), cardBits: 26)
        let falling = Self.edges("0 00010010 0011000000111001 1").filter(\.low)
        var frames: [WiegandDecoder.Frame] = []
        for edge in falling.dropLast() { frames += d.pulse(edge.line, at: edge.at) }
        XCTAssertEqual(frames, [])
        XCTAssertTrue(d.inFrame)
        XCTAssertEqual(
            d.pulse(falling.last!.line, at: falling.last!.at),
            [.card(CardNumber(format: .h10301, facility: 18, number: 12345)!)], "at the last bit")
        XCTAssertFalse(d.inFrame)
        XCTAssertEqual(d.end(), [])
        // A key: nothing until the gap.
        let key = Self.edges("0101", start: 2_000_000_000).filter(\.low)
        XCTAssertEqual(key.flatMap { d.pulse($0.line, at: $0.at) }, [])
        XCTAssertEqual(d.end(), [.key(.digit(5))])
        // Unset: the card waits for the gap as before.
        var any = WiegandDecoder(frameGap: .milliseconds(100))
        XCTAssertEqual(falling.flatMap { any.pulse($0.line, at: $0.at) }, [])
        XCTAssertEqual(any.end(), [.card(CardNumber(format: .h10301, facility: 18, number: 12345)!)])
    }
}
