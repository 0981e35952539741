import DoorCore
import PN532Emulator
import XCTest

/// The chip state machine, driven with the frames libnfc 1.8.0 sends.
final class PN532ChipTests: XCTestCase {
    static let uid: [UInt8] = [0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6]
    static let wake: [UInt8] = [0x55, 0x55] + [UInt8](repeating: 0, count: 14)

    /// What the host saw after one write: was it ACKed, and the answers.
    struct Reply: Equatable {
        var acked = false
        var answers: [[UInt8]] = []
        var errorFrame = false
    }

    struct Host {
        var chip: PN532Chip
        var timers: [Int] = []

        init(tag: Bool = true) throws {
            chip = PN532Chip()
            if tag { _ = chip.insert(try PN532ChipTests.tag()) }
        }

        mutating func write(_ bytes: [UInt8]) -> Reply { decode(chip.receive(bytes)) }

        /// Sends one command (code first) and returns what came back.
        mutating func command(_ data: [UInt8]) -> Reply { write(Frame.encode(tfi: 0xD4, data)) }

        /// The answer's data after the response code, failing on anything but one answer.
        mutating func answer(_ data: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
            let r = command(data)
            XCTAssertTrue(r.acked, "not ACKed", file: file, line: line)
            guard r.answers.count == 1, let a = r.answers.first, a.first == data[0] + 1 else {
                XCTFail("expected one answer to \(Hex.encode([data[0]])), got \(r)", file: file, line: line)
                return []
            }
            return Array(a.dropFirst())
        }

        mutating func decode(_ effects: [ChipEffect]) -> Reply {
            var reply = Reply()
            var d = FrameDecoder()
            for e in effects {
                switch e {
                case .send(let bytes):
                    if bytes == Frame.applicationError { reply.errorFrame = true; continue }
                    for f in d.feed(bytes) {
                        switch f {
                        case .ack: reply.acked = true
                        case .information(let tfi, let data):
                            XCTAssertEqual(tfi, 0xD5)
                            reply.answers.append(data)
                        default: XCTFail("chip sent \(f)")
                        }
                    }
                case .startTimer(let token, _): timers.append(token)
                case .airTime: break
                }
            }
            return reply
        }

        /// libnfc's opening: wake-up preamble + SAMConfiguration, then Diagnose.
        mutating func open() {
            let r = write(Self.wakeThenSAM)
            XCTAssertEqual(r, Reply(acked: true, answers: [[0x15]]))
        }

        static let wakeThenSAM = PN532ChipTests.wake + Frame.encode(tfi: 0xD4, [0x14, 0x01])
    }

    static func tag(_ type: NTAGType = .ntag213) throws -> NTAG21x {
        var bytes = try TagImage.make(type: type, uid: TagUID(uid)).bytes
        bytes[16..<20] = [0xCA, 0xFE, 0xBA, 0xBE]
        return NTAG21x(image: try TagImage(dump: bytes))
    }

    func testAsleepUntilTheWakeUpPreamble() throws {
        var host = try Host()
        XCTAssertEqual(host.command([0x02]), Reply(), "a chip in LowVBat ignores frames without 55h first")
        host.open()
        XCTAssertEqual(host.answer([0x02]), [0x32, 0x01, 0x06, 0x07])
        XCTAssertEqual(host.answer([0x00, 0x00] + Array("libnfc".utf8)), [0x00] + Array("libnfc".utf8))
    }

    func testPowerDownNeedsAWakeUpAgain() throws {
        var host = try Host()
        host.open()
        XCTAssertEqual(host.answer([0x16, 0xF0]), [0x00])
        XCTAssertEqual(host.command([0x02]), Reply())
        XCTAssertEqual(
            host.write(PN532ChipTests.wake + Frame.encode(tfi: 0xD4, [0x02])).answers, [[0x03, 0x32, 0x01, 0x06, 0x07]])
        // Without the HSU wake-up source enabled the chip stays asleep.
        XCTAssertEqual(host.answer([0x16, 0x20]), [0x00])
        XCTAssertEqual(host.write(PN532ChipTests.wake + Frame.encode(tfi: 0xD4, [0x02])), Reply())
    }

    func testUnknownCommandGetsTheApplicationErrorFrame() throws {
        var host = try Host()
        host.open()
        let r = host.command([0x01])
        XCTAssertTrue(r.acked)
        XCTAssertTrue(r.errorFrame)
        XCTAssertTrue(host.command([0x06, 0x63]).errorFrame, "odd register address list")
    }

    func testNackResendsTheLastAnswer() throws {
        var host = try Host()
        host.open()
        _ = host.answer([0x02])
        XCTAssertEqual(host.write(Frame.nack), Reply(acked: false, answers: [[0x03, 0x32, 0x01, 0x06, 0x07]]))
    }

    func testRegistersReadBackWhatWasWritten() throws {
        var host = try Host()
        host.open()
        XCTAssertEqual(host.answer([0x06, 0x63, 0x02, 0x63, 0x03, 0x63, 0x0D]), [0x80, 0x80, 0x00])
        XCTAssertEqual(host.answer([0x08, 0x63, 0x02, 0x00, 0x63, 0x03, 0x00, 0x63, 0x0D, 0x10]), [])
        XCTAssertEqual(host.answer([0x06, 0x63, 0x02, 0x63, 0x03, 0x63, 0x0D, 0xFF, 0xB0]), [0x00, 0x00, 0x10, 0x00])
    }

    func testWakeUpRestoresThePowerOnRegisters() throws {
        var host = try Host()
        host.open()
        XCTAssertEqual(host.answer([0x08, 0x63, 0x02, 0x03, 0x63, 0x0D, 0x10]), [])
        XCTAssertEqual(host.answer([0x16, 0xF0]), [0x00])
        host.open()
        XCTAssertEqual(host.answer([0x06, 0x63, 0x02, 0x63, 0x03, 0x63, 0x0D]), [0x80, 0x80, 0x00])
    }

    func testActivationLeavesCRCAndParityAsTheHostSetThem() throws {
        var host = try Host()
        host.open()
        XCTAssertEqual(host.answer([0x08, 0x63, 0x02, 0x03, 0x63, 0x03, 0x03, 0x63, 0x0D, 0x10]), [])
        XCTAssertEqual(host.answer([0x4A, 0x01, 0x00]).first, 0x01)
        XCTAssertEqual(host.answer([0x06, 0x63, 0x02, 0x63, 0x03, 0x63, 0x0D]), [0x00, 0x00, 0x10])
    }

    func testInListPassiveTargetAnswersTheNTAG() throws {
        var host = try Host()
        host.open()
        let a = host.answer([0x4A, 0x01, 0x00])
        XCTAssertEqual(a, [0x01, 0x01, 0x00, 0x44, 0x00, 0x07] + Self.uid)
        // A UID given as initiator data selects only that tag.
        XCTAssertEqual(host.answer([0x32, 0x05, 0x00, 0x01, 0x02]), [])
        XCTAssertEqual(host.answer([0x4A, 0x01, 0x00, 1, 2, 3, 4, 5, 6, 7]), [0x00])
        XCTAssertEqual(host.answer([0x4A, 0x01, 0x00] + Self.uid).first, 0x01)
    }

    func testFiniteRetriesWithoutATagAnswerNoTarget() throws {
        var host = try Host(tag: false)
        host.open()
        XCTAssertEqual(host.answer([0x32, 0x05, 0x00, 0x01, 0x02]), [])
        XCTAssertEqual(host.answer([0x4A, 0x01, 0x00]), [0x00])
        XCTAssertEqual(host.answer([0x4A, 0x01, 0x03, 0x00]), [0x00], "no type B tag either")
    }

    func testHungListAbortedByAckAndTheNextCommandGetsItsOwnAnswer() throws {
        var host = try Host(tag: false)
        host.open()
        XCTAssertEqual(host.answer([0x32, 0x05, 0xFF, 0xFF, 0xFF]), [])
        XCTAssertEqual(host.command([0x4A, 0x01, 0x00]), Reply(acked: true, answers: []))
        XCTAssertTrue(host.chip.isBusy)
        // The host gave up; its next command is not even ACKed while the chip still polls.
        XCTAssertEqual(host.command([0x02]), Reply())
        XCTAssertEqual(host.chip.stats.ignoredWhileBusy, 1)
        XCTAssertEqual(host.write(Frame.ack), Reply())
        XCTAssertFalse(host.chip.isBusy)
        XCTAssertEqual(host.answer([0x02]), [0x32, 0x01, 0x06, 0x07])
        XCTAssertEqual(host.chip.stats.aborted, 1)
    }

    func testHungListCompletesWhenATagArrives() throws {
        var host = try Host(tag: false)
        host.open()
        _ = host.answer([0x32, 0x05, 0xFF, 0xFF, 0xFF])
        XCTAssertEqual(host.command([0x4A, 0x01, 0x00]).answers, [])
        let late = host.decode(host.chip.insert(try Self.tag()))
        XCTAssertEqual(late.answers, [[0x4B, 0x01, 0x01, 0x00, 0x44, 0x00, 0x07] + Self.uid])
    }

    func testInDataExchangeReadWriteAndNak() throws {
        var host = try Host()
        host.open()
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]), [0x27], "no target activated yet")
        _ = host.answer([0x4A, 0x01, 0x00])
        let read = host.answer([0x40, 0x01, 0x30, 0x04])
        XCTAssertEqual(read.first, 0x00)
        XCTAssertEqual(Array(read.dropFirst().prefix(4)), [0xCA, 0xFE, 0xBA, 0xBE])
        // MIFARE WRITE (A0h, 16 bytes) as nfc-mfultralight sends it: status 00h.
        XCTAssertEqual(host.answer([0x40, 0x01, 0xA0, 0x05, 1, 2, 3, 4] + [UInt8](repeating: 0, count: 12)), [0x00])
        XCTAssertEqual(host.answer([0x40, 0x01, 0xA2, 0x06, 5, 6, 7, 8]), [0x00])
        XCTAssertEqual(Array(host.chip.tag!.memory[20..<28]), [1, 2, 3, 4, 5, 6, 7, 8])
        // A NAK from the tag is status 14h; the tag is then idle and times out (01h).
        XCTAssertEqual(host.answer([0x40, 0x01, 0xA2, 0x00, 1, 2, 3, 4]), [0x14])
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]), [0x01])
        _ = host.answer([0x4A, 0x01, 0x00])
        host.chip.remove()
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]), [0x01])
    }

    /// libnfc raw mode (nfc-mfultralight `get_ev1_version`): CRC off both ways, the host adds CRC itself.
    func testInCommunicateThruHonoursCRCParityAndBitFraming() throws {
        var host = try Host()
        host.open()
        _ = host.answer([0x4A, 0x01, 0x00])
        _ = host.answer([0x08, 0x63, 0x02, 0x00, 0x63, 0x03, 0x00])
        let version = host.answer([0x42, 0x60, 0xF8, 0x32])
        XCTAssertEqual(version.first, 0x00)
        XCTAssertEqual(
            Array(version.dropFirst()),
            [0x00, 0x04, 0x04, 0x02, 0x01, 0x00, 0x0F, 0x03] + CRC.a([0x00, 0x04, 0x04, 0x02, 0x01, 0x00, 0x0F, 0x03]))
        // A 4-bit ACK comes back as one byte with RxLastBits = 4 in CIU_Control.
        XCTAssertEqual(host.answer([0x42, 0xA2, 0x07, 1, 1, 1, 1] + CRC.a([0xA2, 0x07, 1, 1, 1, 1])), [0x00, 0x0A])
        XCTAssertEqual((host.answer([0x06, 0x63, 0x3C]).first ?? 0) & 0x07, 4)
        // A bad CRC from the host: the tag NAKs with 1h.
        XCTAssertEqual(host.answer([0x42, 0x30, 0x00, 0x00, 0x00]), [0x00, 0x01])
        // CRC on both ways: the chip adds and strips it; a 4-bit answer then fails the CRC check (02h).
        _ = host.answer([0x4A, 0x01, 0x00])
        _ = host.answer([0x08, 0x63, 0x02, 0x80, 0x63, 0x03, 0x80])
        XCTAssertEqual(
            host.answer([0x42, 0x30, 0x04]),
            [0x00, 0xCA, 0xFE, 0xBA, 0xBE] + [UInt8](repeating: 0, count: 8) + [1, 1, 1, 1])
        XCTAssertEqual(host.answer([0x42, 0xA2, 0x07, 2, 2, 2, 2]), [0x02])
        // Bit framing: a 7-bit WUPA with CRC off, after a HLTA.
        _ = host.answer([0x08, 0x63, 0x02, 0x00, 0x63, 0x03, 0x00])
        _ = host.answer([0x42, 0x50, 0x00, 0x57, 0xCD])
        _ = host.answer([0x08, 0x63, 0x3D, 0x07])
        XCTAssertEqual(host.answer([0x42, 0x52]), [0x00, 0x44, 0x00])
        // Parity by the host: the same WUPA is under 9 bits, so it goes as is; the ATQA comes back framed.
        _ = host.answer([0x42, 0x50, 0x00, 0x57, 0xCD])
        _ = host.answer([0x08, 0x63, 0x0D, 0x10])
        let framed = host.answer([0x42, 0x52])
        XCTAssertEqual(framed.first, 0x00)
        XCTAssertEqual(ParityFraming.unwrap(AirFrame(Array(framed.dropFirst()), lastBits: 2)), [0x44, 0x00])
    }

    func testTypeBFramingIsNotHeardByTheTag() throws {
        var host = try Host()
        host.open()
        _ = host.answer([0x4A, 0x01, 0x00])
        _ = host.answer([0x08, 0x63, 0x02, 0x83, 0x63, 0x03, 0x83])
        XCTAssertEqual(host.answer([0x42, 0x06, 0x00]), [0x01])
    }

    func testInAutoPoll() throws {
        var host = try Host()
        host.open()
        let found = host.answer([0x60, 0x01, 0x01, 0x20, 0x10])
        XCTAssertEqual(found, [0x01, 0x10, 0x0C, 0x01, 0x00, 0x44, 0x00, 0x07] + Self.uid)
        host.chip.remove()
        XCTAssertEqual(host.command([0x60, 0x02, 0x01, 0x10]).answers, [])
        XCTAssertEqual(host.timers.count, 1)
        XCTAssertEqual(host.decode(host.chip.timerFired(host.timers[0])).answers, [[0x61, 0x00]])
    }

    func testMuteHangAndUnmute() throws {
        var host = try Host()
        host.open()
        host.chip.muted = true
        XCTAssertEqual(host.command([0x02]), Reply())
        host.chip.unmute()
        host.chip.hung = true
        XCTAssertEqual(host.command([0x02]), Reply(acked: true, answers: []))
        host.chip.unmute()
        XCTAssertEqual(host.answer([0x02]), [0x32, 0x01, 0x06, 0x07])
    }

    /// `nad`: the next answer libnfc checks for a NAD (bit 7 of the status
    /// byte; libnfc 1.8.0 `pn53x_transceive` aborts on it) carries one, once;
    /// answers without such a status byte leave it armed; `unmute` disarms it.
    func testNADMarksTheNextCheckedStatusByteOnce() throws {
        var host = try Host()
        host.open()
        _ = host.answer([0x4A, 0x01, 0x00])
        host.chip.nadArmed = true
        XCTAssertEqual(host.answer([0x02]), [0x32, 0x01, 0x06, 0x07], "GetFirmwareVersion has no status byte")
        XCTAssertEqual(host.answer([0x32, 0x05, 0x00, 0x01, 0x02]), [], "RFConfiguration has none")
        XCTAssertTrue(host.chip.nadArmed)
        let read = host.answer([0x40, 0x01, 0x30, 0x04])
        XCTAssertEqual(read.first, 0x80, "status 00h with the NAD bit")
        XCTAssertEqual(Array(read.dropFirst().prefix(4)), [0xCA, 0xFE, 0xBA, 0xBE], "the data is unchanged")
        XCTAssertFalse(host.chip.nadArmed)
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]).first, 0x00, "once")
        // PowerDown (libnfc sends it from nfc_close) is checked too.
        host.chip.nadArmed = true
        XCTAssertEqual(host.answer([0x16, 0xF0]), [0x80])
        // Armed, then unmuted: nothing is marked.
        var other = try Host()
        other.open()
        _ = other.answer([0x4A, 0x01, 0x00])
        other.chip.nadArmed = true
        other.chip.unmute()
        XCTAssertEqual(other.answer([0x40, 0x01, 0x30, 0x04]).first, 0x00)
    }

    /// `mi-empty`: MI on the next InDataExchange status byte, then the
    /// continuation libnfc sends (40h with the target number alone) gets an
    /// answer without a status byte; once.
    func testMIEmptyAnswersTheContinuationWithoutAStatusByte() throws {
        var host = try Host()
        host.open()
        _ = host.answer([0x4A, 0x01, 0x00])
        host.chip.miEmptyArmed = true
        XCTAssertEqual(host.answer([0x4A, 0x01, 0x00]).first, 0x01, "InListPassiveTarget does not take it")
        let read = host.answer([0x40, 0x01, 0x30, 0x04])
        XCTAssertEqual(read.first, 0x40, "status 00h with MI")
        XCTAssertEqual(Array(read.dropFirst().prefix(4)), [0xCA, 0xFE, 0xBA, 0xBE])
        XCTAssertEqual(host.answer([0x40, 0x01]), [], "the continuation: no status byte")
        XCTAssertFalse(host.chip.miEmptyArmed)
        XCTAssertEqual(host.command([0x40, 0x01]).errorFrame, true, "once: a bare 40h 01h is a syntax error again")
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]).first, 0x00)
    }

    func testTearAfterRemovesTheTagMidSequence() throws {
        var host = try Host()
        host.open()
        _ = host.answer([0x4A, 0x01, 0x00])
        host.chip.tear(after: 2)
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]).first, 0x00)
        XCTAssertEqual(host.answer([0x40, 0x01, 0xA2, 0x04, 9, 9, 9, 9]), [0x00])
        XCTAssertNil(host.chip.tag)
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]), [0x01])
        XCTAssertEqual(Array(host.chip.departedTag!.memory[16..<20]), [9, 9, 9, 9])
        _ = host.chip.reinsert()
        XCTAssertEqual(host.answer([0x4A, 0x01, 0x00]).first, 0x01)
    }

    /// `tear-after N` with no tag in the field arms the next tag: its count
    /// starts as it enters, so a host already polling cannot read it first.
    func testTearArmedWithNoTagCountsFromTheNextArrival() throws {
        var host = try Host()
        host.open()
        host.chip.remove()
        host.chip.tear(after: 6)
        XCTAssertEqual(host.chip.tearNext, 6)
        // InAutoPoll polling for ever: the tag is activated as it enters (5 exchanges).
        XCTAssertEqual(host.command([0x60, 0xFF, 0x01, 0x10]), Reply(acked: true, answers: []))
        let arrived = host.decode(try XCTUnwrap(host.chip.reinsert()))
        XCTAssertEqual(arrived.answers.first.map { Array($0.prefix(2)) }, [0x61, 0x01])
        XCTAssertNil(host.chip.tearNext)
        XCTAssertEqual(host.chip.tearAfter, 1)
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]).first, 0x00)  // the sixth exchange is answered
        XCTAssertNil(host.chip.tag)
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]), [0x01])  // then the tag is gone
        // 0 disarms; a tag entering unarmed has no count.
        host.chip.tear(after: 3)
        host.chip.tear(after: 0)
        XCTAssertNil(host.chip.tearNext)
        _ = host.chip.reinsert()
        XCTAssertNotNil(host.chip.tag)
        XCTAssertNil(host.chip.tearAfter)
    }

    func testStatsCountFramesAndCommands() throws {
        var host = try Host()
        host.open()
        _ = host.answer([0x02])
        let s = host.chip.stats
        XCTAssertEqual(s.framesIn, 2)
        XCTAssertEqual(s.framesOut, 4)
        XCTAssertEqual(s.commands, [0x14: 1, 0x02: 1])
        XCTAssertEqual(s.bytesIn, Host.wakeThenSAM.count + 9)
        XCTAssertTrue(s.summary.contains("commands=02:1,14:1"), s.summary)
    }
}
