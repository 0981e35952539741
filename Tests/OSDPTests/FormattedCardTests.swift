import DoorCore
import XCTest

@testable import OSDP

/// osdp_FMT (issue 35): a card number as ASCII characters, decoded in the pure core into the
/// door's card number (`CardData`, `CardNumber(formatted:)`). libosdp 3.2.9's peripheral device
/// does not send osdp_FMT (its CardFormat.ASCII read is dropped: "OSDP_CARD_FMT_ASCII is
/// deprecated. Ignoring"), so these are recorded frames and TestReader's replies; the daemon's
/// path is OSDPReaderServiceTests' `fmt-card` (pd.py's plaintext reply in place of an ACK).
final class FormattedCardTests: XCTestCase {
    let scbk: [UInt8] = Array(0x60...0x6F)

    /// A plaintext osdp_FMT reply as it crosses the wire (address 1, sequence 1, CRC), card
    /// number "12345678": the frame, the reply, the card number and its key.
    func testARecordedFMTFrameIsACardNumber() throws {
        let frame = try Frame.parse(hex("53 81 13 00 05 51 00 00 08 31 32 33 34 35 36 37 38 F9 F9"))
        let reply = try Reply.decode(code: frame.code, data: frame.data)
        XCTAssertEqual(reply, .cardFormatted(reader: 0, direction: 0, characters: Array("12345678".utf8)))
        let event = ControlPanel.Event.cardFormatted(reader: 0, characters: Array("12345678".utf8))
        let number = try XCTUnwrap(event.cardNumber)
        XCTAssertEqual(number.description, "fmt:12345678")
        XCTAssertEqual(number.registryKey.bytes.first, 0xCB)
        XCTAssertEqual(number.registryKey.card, number)
        XCTAssertEqual(CardNumber(text: "fmt:12345678"), number, "gatewayctl tags enroll-card fmt:12345678")
    }

    /// The same bytes as a RAW frame are another card: an FMT number never opens for RAW bits,
    /// nor the other way round.
    func testAnFMTNumberAndRAWBitsOfTheSameBytesAreTwoCards() throws {
        let chars = Array("12345678".utf8)
        let fmt = try XCTUnwrap(CardData.number(formatted: chars))
        let raw = try XCTUnwrap(
            CardData.number(raw: CardRead(reader: 0, format: 0, bitCount: UInt16(chars.count * 8), bits: chars)))
        XCTAssertNotEqual(fmt, raw)
        XCTAssertNotEqual(fmt.registryKey, raw.registryKey)
        XCTAssertEqual(raw.registryKey.bytes.first, 0xCA)
    }

    /// What the door cannot key is nil (dropped, nothing opens): empty, too long, a space, a
    /// control character, a byte past ASCII.
    func testFMTCharactersTheDoorCannotKeyAreRefused() {
        for bad: [UInt8] in [[], Array(repeating: 0x31, count: 33), Array("12 34".utf8), [0x31, 0x0A], [0x31, 0xC3]] {
            XCTAssertNil(CardData.number(formatted: bad), "\(bad)")
            XCTAssertNil(ControlPanel.Event.cardFormatted(reader: 0, characters: bad).cardNumber)
        }
        XCTAssertNotNil(CardData.number(formatted: Array(repeating: 0x39, count: 32)), "32 characters fit")
        XCTAssertNil(CardNumber(text: "fmt:"))
        XCTAssertNil(CardNumber(text: "fmt:12 34"))
    }

    /// osdp_FMT inside Secure Channel (MAC'd and encrypted by TestReader, written from the
    /// spec): reported as a formatted card, its number the door's.
    func testAnFMTReplyInsideSecureChannelIsReported() throws {
        var cp = ControlPanel(.init(address: 1, security: .required(scbk: scbk))) { _ in Array(0xB0...0xB7) }
        var reader = TestReader(scbk: scbk)
        var now: UInt64 = 0
        var events: [ControlPanel.Event] = []
        reader.pending = []
        for step in 0..<10 {
            let out = step == 0 ? cp.start(now: now) : cp.tick(now: max(now, cp.nextDeadline))
            now = max(now, cp.nextDeadline)
            events += out.events
            if cp.isSecure, reader.pending.isEmpty, !events.contains(where: { $0.cardNumber != nil }),
                step == 6
            {
                reader.pending = [(0x51, [0, 0, 4] + Array("0042".utf8))]
            }
            if let bytes = out.send, let reply = reader.answer(bytes) {
                now += 5
                events += cp.received(reply, now: now).events
            }
        }
        XCTAssertTrue(cp.isSecure)
        XCTAssertEqual(reader.commandErrors, [])
        let cards = events.compactMap(\.cardNumber)
        XCTAssertEqual(cards.map(\.description), ["fmt:0042"], "\(events)")
    }
}
