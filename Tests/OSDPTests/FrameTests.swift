import DoorCore
import XCTest

@testable import OSDP

func hex(_ text: String) -> [UInt8] { Hex.decode(text.filter { !$0.isWhitespace })! }

final class FrameTests: XCTestCase {
    /// SIA OSDP 2.2 Annex E: the CRC and checksum examples (osdp_COMSET broadcast, osdp_ID).
    func testAnnexECRCAndChecksumVectors() throws {
        XCTAssertEqual(OSDP.crc16(hex("53 7F 0D 00 04 6E 00 80 25 00 00")), 0x386E)
        XCTAssertEqual(OSDP.crc16(hex("53 00 09 00 04 61 00")), 0x66C0)
        XCTAssertEqual(OSDP.checksum(hex("53 7F 0C 00 00 6E 00 80 25 00 00")), 0x0F)
        XCTAssertEqual(OSDP.checksum(hex("53 00 08 00 00 61 00")), 0x44)
    }

    /// Our builder gives Annex E's packets byte for byte, and parses them back.
    func testBuildsAndParsesTheAnnexEPackets() throws {
        let id = Frame(address: 0, isReply: false, sequence: 0, usesCRC: true, code: 0x61, data: [0x00])
        XCTAssertEqual(try id.encoded(), hex("53 00 09 00 04 61 00 C0 66"))
        let comset = Frame(
            address: 0x7F, isReply: false, sequence: 0, usesCRC: false, code: 0x6E, data: hex("00 80 25 00 00"))
        XCTAssertEqual(try comset.encoded(), hex("53 7F 0C 00 00 6E 00 80 25 00 00 0F"))
        XCTAssertEqual(Command.comset(address: 0, baudRate: 9600).payload, hex("00 80 25 00 00"))

        let parsed = try Frame.parse(hex("53 00 09 00 04 61 00 C0 66"))
        XCTAssertEqual(parsed.address, 0)
        XCTAssertFalse(parsed.isReply)
        XCTAssertEqual(parsed.code, 0x61)
        XCTAssertEqual(parsed.data, [0x00])
        XCTAssertTrue(parsed.usesCRC)
        XCTAssertNil(parsed.securityBlock)
        let sum = try Frame.parse(hex("53 7F 0C 00 00 6E 00 80 25 00 00 0F"))
        XCTAssertFalse(sum.usesCRC)
        XCTAssertEqual(sum.address, 0x7F)
    }

    func testReplyBitSequenceAndSecurityBlockRoundTrip() throws {
        let frame = Frame(
            address: 5, isReply: true, sequence: 3, securityBlock: SecurityBlock(.scs12, data: [1]), code: 0x76,
            data: Array(0..<32))
        let bytes = try frame.encoded()
        XCTAssertEqual(bytes[1], 0x85)
        XCTAssertEqual(bytes[4], 0x0F)  // sequence 3, CRC, SCB
        XCTAssertEqual(Array(bytes[5...7]), [3, 0x12, 1])
        XCTAssertEqual(Int(bytes[2]) | Int(bytes[3]) << 8, bytes.count)
        let back = try Frame.parse(bytes)
        XCTAssertEqual(back.address, 5)
        XCTAssertTrue(back.isReply)
        XCTAssertEqual(back.sequence, 3)
        XCTAssertEqual(back.securityBlock, SecurityBlock(.scs12, data: [1]))
        XCTAssertEqual(back.data, Array(0..<32))
        XCTAssertNil(back.mac)
    }

    /// Every way a frame can be wrong is its own error, and none traps.
    func testMalformedFramesAreClearErrors() throws {
        let good = hex("53 00 09 00 04 61 00 C0 66")
        func error(_ bytes: [UInt8]) -> FrameError? {
            do {
                _ = try Frame.parse(bytes)
                return nil
            } catch { return error as? FrameError }
        }
        XCTAssertEqual(error([]), .truncated(needed: 5, have: 0))
        XCTAssertEqual(error(Array(good.prefix(4))), .truncated(needed: 5, have: 4))
        XCTAssertEqual(error(Array(good.prefix(8))), .truncated(needed: 9, have: 8))
        XCTAssertEqual(error(good + [0]), .trailingBytes(1))
        var som = good
        som[0] = 0x54
        XCTAssertEqual(error(som), .badStartOfMessage(0x54))
        var crc = good
        crc[6] = 0x01
        if case .badCRC = error(crc) {} else { XCTFail("a changed byte must fail the CRC") }
        var sum = hex("53 00 08 00 00 61 00 44")
        XCTAssertNil(error(sum))
        sum[7] = 0x45
        XCTAssertEqual(error(sum), .badChecksum(expected: 0x44, found: 0x45))
        XCTAssertEqual(error(hex("53 00 05 00 04")), .badLength(5))
        // Reserved control bits (a fuzz finding: the frame parsed, then encoded to other bytes).
        XCTAssertEqual(error(sealed(hex("53 81 00 00 84 40"))), .reservedControlBits(0x84))
        XCTAssertEqual(error(hex("53 00 FF FF 04")), .badLength(0xFFFF))
        // A security block whose length runs past the packet, or under 2, or of an unknown type.
        XCTAssertEqual(error(sealed(hex("53 00 00 00 0C 09 11 61"))), .badSecurityBlock(length: 9))
        XCTAssertEqual(error(sealed(hex("53 00 00 00 0C 01 11 61"))), .badSecurityBlock(length: 1))
        XCTAssertEqual(error(sealed(hex("53 00 00 00 0C 02 19 61"))), .unknownSecurityBlockType(0x19))
        // SCS_15 with a code but no room for the MAC; a packet with no code at all.
        XCTAssertEqual(error(sealed(hex("53 00 00 00 0C 02 15 60 01 02"))), .missingMAC)
        XCTAssertEqual(error(sealed(hex("53 00 00 00 0C 02 11"))), .missingCode)
    }

    func testBuilderRefusesWhatCannotBeSent() {
        XCTAssertThrowsError(try Frame(address: 0, isReply: false, sequence: 4, code: 0x60).encoded()) {
            XCTAssertEqual($0 as? FrameError, .badSequence(4))
        }
        XCTAssertThrowsError(try Frame(address: 0x80, isReply: false, sequence: 0, code: 0x60).encoded()) {
            XCTAssertEqual($0 as? FrameError, .badAddress(0x80))
        }
        XCTAssertThrowsError(
            try Frame(address: 0, isReply: false, sequence: 0, code: 0x60, data: Array(repeating: 0, count: 1500))
                .encoded()
        ) { XCTAssertEqual($0 as? FrameError, .tooLong(1508)) }
    }

    /// The assembler skips noise and the mark, resynchronises after a bogus length, and
    /// waits for the rest of a split packet.
    func testAssemblerFindsPacketsInAStream() {
        let a = hex("53 00 09 00 04 61 00 C0 66")
        let b = hex("53 7F 0C 00 00 6E 00 80 25 00 00 0F")
        var assembler = FrameAssembler()
        assembler.append([0x00, 0x17, 0xFF] + a + [0xFF] + b.prefix(6))
        XCTAssertEqual(assembler.next(), a)
        XCTAssertNil(assembler.next())
        assembler.append(b.dropFirst(6))
        XCTAssertEqual(assembler.next(), b)
        XCTAssertNil(assembler.next())
        XCTAssertEqual(assembler.skipped, 2)
        // A SOM with an impossible length is dropped, the real packet behind it is found.
        assembler.append([0x53, 0x00, 0x01, 0x00, 0x04] + a)
        XCTAssertEqual(assembler.next(), a)
    }

    /// Fills in the length and a good CRC so the parser gets past them to the part under test.
    func sealed(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        let total = out.count + 2
        out[2] = UInt8(total & 0xFF)
        out[3] = UInt8(total >> 8)
        OSDP.appendCheck(to: &out, crc: true)
        return out
    }
}

final class MessageTests: XCTestCase {
    func testCommandsEncodeAsTheSpecLaysThemOut() throws {
        XCTAssertEqual(Command.poll.code, 0x60)
        XCTAssertEqual(Command.poll.payload, [])
        XCTAssertEqual(Command.id.payload, [0x00])
        XCTAssertEqual(Command.capabilities.code, 0x62)
        XCTAssertEqual(Command.capabilities.payload, [0x00])
        let led = LEDCommand(
            reader: 0, led: 1,
            temporary: .init(control: 2, onTime: 5, offTime: 5, onColor: .green, offColor: .black, timer: 0x0123),
            permanent: .init(control: 1, onTime: 1, offTime: 0, onColor: .red, offColor: .black))
        XCTAssertEqual(Command.led(led).code, 0x69)
        XCTAssertEqual(Command.led(led).payload, hex("00 01 02 05 05 02 00 23 01 01 01 00 01 00"))
        let buz = BuzzerCommand(onTime: 3, offTime: 1, count: 2)
        XCTAssertEqual(Command.buzzer(buz).code, 0x6A)
        XCTAssertEqual(Command.buzzer(buz).payload, hex("00 02 03 01 02"))
        XCTAssertEqual(Command.challenge(random: Array(0xB0...0xB7)).payload, Array(0xB0...0xB7))
        XCTAssertEqual(Command.keyset(key: Array(repeating: 7, count: 16)).payload.prefix(2), [1, 16])
    }

    func testRepliesDecode() throws {
        XCTAssertEqual(try Reply.decode(code: 0x40, data: []), .ack)
        XCTAssertEqual(try Reply.decode(code: 0x41, data: [6]), .nak(code: 6, detail: []))
        XCTAssertEqual(
            try Reply.decode(code: 0x45, data: hex("5C 26 23 19 02 78 56 34 12 03 02 01")),
            .identity(
                DeviceIdentity(
                    vendor: [0x5C, 0x26, 0x23], model: 0x19, version: 2, serialNumber: 0x1234_5678,
                    firmware: [3, 2, 1])))
        XCTAssertEqual(
            try Reply.decode(code: 0x46, data: hex("09 01 01 08 01 00")),
            .capabilities([
                Capability(function: 9, compliance: 1, items: 1), Capability(function: 8, compliance: 1, items: 0),
            ]))
        XCTAssertEqual(try Reply.decode(code: 0x48, data: [1, 0]), .localStatus(tamper: 1, power: 0))
        // 26 Wiegand bits in 4 bytes.
        XCTAssertEqual(
            try Reply.decode(code: 0x50, data: hex("00 01 1A 00 AA BB CC C0")),
            .cardRaw(CardRead(reader: 0, format: 1, bitCount: 26, bits: hex("AA BB CC C0"))))
        XCTAssertEqual(
            try Reply.decode(code: 0x51, data: hex("00 00 03 31 32 33")),
            .cardFormatted(reader: 0, direction: 0, characters: Array("123".utf8)))
        XCTAssertEqual(
            try Reply.decode(code: 0x53, data: hex("00 03 31 32 0D")), .keypad(reader: 0, keys: [0x31, 0x32, 0x0D]))
        XCTAssertEqual(try Reply.decode(code: 0x54, data: hex("02 00 C2 01 00")), .com(address: 2, baudRate: 115_200))
        XCTAssertEqual(try Reply.decode(code: 0x79, data: []), .busy)
        XCTAssertEqual(try Reply.decode(code: 0x78, data: Array(0..<16)), .initialRMAC(Array(0..<16)))
        XCTAssertEqual(
            try Reply.decode(code: 0x76, data: Array(0..<32)),
            .clientCryptogram(clientUID: Array(0..<8), random: Array(8..<16), cryptogram: Array(16..<32)))
        XCTAssertEqual(try Reply.decode(code: 0x90, data: [1, 2]), .other(code: 0x90, data: [1, 2]))
    }

    /// A reply whose length does not fit its code is an error, whatever the length.
    func testRepliesWithTheWrongLengthAreErrors() {
        let cases: [(UInt8, [UInt8])] = [
            (0x40, [0]), (0x41, []), (0x45, Array(repeating: 0, count: 11)), (0x46, [9, 1]), (0x48, [0]),
            (0x50, [0, 1, 26]), (0x50, hex("00 01 1A 00 AA BB CC")), (0x50, hex("00 01 1A 00 AA BB CC C0 00")),
            (0x50, hex("00 01 FF FF")), (0x51, hex("00 00 04 31 32 33")), (0x53, hex("00 02 31")), (0x53, [0]),
            (0x54, [1, 2, 3, 4]), (0x79, [0]), (0x76, Array(repeating: 0, count: 31)),
            (0x78, Array(repeating: 0, count: 17)),
        ]
        for (code, data) in cases {
            XCTAssertThrowsError(try Reply.decode(code: code, data: data), "code \(code) \(data)") {
                XCTAssertEqual($0 as? MessageError, .badLength(code: code, length: data.count))
            }
        }
    }
}
