import PN532Emulator
import XCTest

/// PN532 host-link framing (UM0701-02 §6.2.1) and the air-side codecs.
final class FrameCodecTests: XCTestCase {
    func testNormalFrameMatchesTheUserManualLayout() {
        // GetFirmwareVersion answer: D5 03 32 01 06 07, DCS = -(D5+03+32+01+06+07) = E8.
        XCTAssertEqual(
            Frame.encode([0x03, 0x32, 0x01, 0x06, 0x07]),
            [0x00, 0x00, 0xFF, 0x06, 0xFA, 0xD5, 0x03, 0x32, 0x01, 0x06, 0x07, 0xE8, 0x00])
        // What libnfc's pn53x_build_frame sends for GetFirmwareVersion.
        XCTAssertEqual(Frame.encode(tfi: 0xD4, [0x02]), [0x00, 0x00, 0xFF, 0x02, 0xFE, 0xD4, 0x02, 0x2A, 0x00])
    }

    func testExtendedFrameAbove255Bytes() {
        let payload = (0..<260).map { UInt8($0 & 0xFF) }
        let f = Frame.encode(payload)
        // LEN 261 (01 05), LCS = -(01 + 05) = FA.
        XCTAssertEqual(Array(f[0..<9]), [0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x01, 0x05, 0xFA, 0xD5])
        XCTAssertEqual(f.count, payload.count + 11)
        var d = FrameDecoder()
        XCTAssertEqual(d.feed(f), [.information(tfi: 0xD5, data: payload)])
        // Past the chip's 264 data bytes the frame is refused.
        guard case .corrupt = d.feed(Frame.encode([UInt8](repeating: 0, count: 300))).first else {
            return XCTFail("an oversized frame was accepted")
        }
        // The largest normal frame stays normal.
        XCTAssertEqual(Frame.encode([UInt8](repeating: 1, count: 254))[3], 0xFF)
        XCTAssertEqual(Frame.encode([UInt8](repeating: 1, count: 254))[4], 0x01)
    }

    func testAckNackAndInformationFrames() {
        var d = FrameDecoder()
        XCTAssertEqual(d.feed(Frame.ack), [.ack])
        XCTAssertEqual(d.feed(Frame.nack), [.nack])
        XCTAssertEqual(
            d.feed(Frame.encode(tfi: 0xD4, [0x4A, 0x01, 0x00])), [.information(tfi: 0xD4, data: [0x4A, 0x01, 0x00])])
    }

    func testWakeUpPreambleAndGarbageAreSkipped() {
        var d = FrameDecoder()
        let wake: [UInt8] = [0x55, 0x55] + [UInt8](repeating: 0, count: 14)
        let frames = d.feed(wake + [0x12, 0x34] + Frame.encode(tfi: 0xD4, [0x14, 0x01]))
        XCTAssertEqual(frames, [.information(tfi: 0xD4, data: [0x14, 0x01])])
        XCTAssertGreaterThan(d.skippedBytes, 0)
    }

    func testFrameSplitAcrossReads() {
        var d = FrameDecoder()
        let f = Frame.encode(tfi: 0xD4, [0x40, 0x01, 0x30, 0x04])
        for b in f.dropLast(2) { XCTAssertEqual(d.feed([b]), []) }
        XCTAssertEqual(d.feed(Array(f.suffix(2))), [.information(tfi: 0xD4, data: [0x40, 0x01, 0x30, 0x04])])
    }

    func testBadLengthChecksumResynchronisesOnTheNextFrame() {
        var d = FrameDecoder()
        var broken = Frame.encode(tfi: 0xD4, [0x02])
        broken[4] ^= 0x01  // LCS
        let good = Frame.encode(tfi: 0xD4, [0x04])
        let out = d.feed(broken + good)
        XCTAssertEqual(out.count, 2)
        guard case .corrupt = out[0] else { return XCTFail("expected a corrupt frame first, got \(out)") }
        XCTAssertEqual(out[1], .information(tfi: 0xD4, data: [0x04]))
    }

    func testBadDataChecksumIsDropped() {
        var d = FrameDecoder()
        var f = Frame.encode(tfi: 0xD4, [0x02])
        f[f.count - 2] ^= 0xFF  // DCS
        guard case .corrupt = d.feed(f).first else { return XCTFail("a frame with a bad DCS was accepted") }
        XCTAssertEqual(d.feed(Frame.ack), [.ack])
    }

    func testDiscardPartialDropsAnUnfinishedFrame() {
        var d = FrameDecoder()
        let f = Frame.encode(tfi: 0xD4, [0x02])
        XCTAssertEqual(d.feed(Array(f.prefix(6))), [])
        XCTAssertTrue(d.hasPartialFrame)
        d.discardPartial()
        XCTAssertEqual(d.feed(Frame.encode(tfi: 0xD4, [0x04])), [.information(tfi: 0xD4, data: [0x04])])
    }

    func testRandomNoiseNeverTrapsAndNeverHidesALaterFrame() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var d = FrameDecoder()
            let noise = (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = d.feed(noise)
            d.discardPartial()
            XCTAssertEqual(d.feed(Frame.encode(tfi: 0xD4, [0x02])), [.information(tfi: 0xD4, data: [0x02])])
        }
    }

    func testCRCAVectors() {
        // Values every ISO 14443-A trace shows: READ 0, GET_VERSION, HLTA.
        XCTAssertEqual(CRC.a([0x30, 0x00]), [0x02, 0xA8])
        XCTAssertEqual(CRC.a([0x60]), [0xF8, 0x32])
        XCTAssertEqual(CRC.a([0x50, 0x00]), [0x57, 0xCD])
        XCTAssertTrue(CRC.isValid([0x30, 0x00, 0x02, 0xA8]))
        XCTAssertFalse(CRC.isValid([0x30, 0x00, 0x02, 0xA9]))
        XCTAssertFalse(CRC.isValid([0x02, 0xA8]))
    }

    func testParityFraming() {
        // One byte: 8 data bits then its odd parity bit.
        XCTAssertEqual(ParityFraming.wrap([0x01]), AirFrame([0x01, 0x00], lastBits: 1))
        XCTAssertEqual(ParityFraming.wrap([0x00]), AirFrame([0x00, 0x01], lastBits: 1))
        let data: [UInt8] = [0x93, 0x20, 0xFF, 0x00, 0x5A, 0xA5, 0x12, 0x34, 0x56]
        let wrapped = ParityFraming.wrap(data)
        XCTAssertEqual(wrapped.bitCount, data.count * 9)
        XCTAssertEqual(ParityFraming.unwrap(wrapped), data)
        var broken = wrapped
        broken.bytes[1] ^= 0x01  // the first parity bit
        XCTAssertNil(ParityFraming.unwrap(broken))
    }
}
