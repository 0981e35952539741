import DoorCore
import PN532Emulator
import XCTest

/// The NTAG21x model on its air interface (NTAG213/215/216 data sheet).
final class NTAG21xTests: XCTestCase {
    static let uid = TagUID([0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66])
    static let nak0 = AirFrame.nibble(0x0)

    /// A blank tag taken through WUPA and anticollision to ACTIVE.
    func activeTag(_ type: NTAGType = .ntag213, edit: (inout [UInt8]) -> Void = { _ in }) throws -> NTAG21x {
        var bytes = try TagImage.make(type: type, uid: Self.uid).bytes
        edit(&bytes)
        var tag = NTAG21x(image: try TagImage(dump: bytes))
        activate(&tag)
        XCTAssertEqual(tag.state, .active)
        return tag
    }

    func activate(_ tag: inout NTAG21x) {
        XCTAssertEqual(tag.receive(AirFrame([0x52], lastBits: 7)), AirFrame([0x44, 0x00]))
        let cl1 = tag.receive(AirFrame([0x93, 0x20]))
        XCTAssertEqual(cl1, AirFrame([0x88, 0x04, 0x11, 0x22, 0x88 ^ 0x04 ^ 0x11 ^ 0x22]))
        XCTAssertEqual(tag.receive(.withCRC([0x93, 0x70] + (cl1?.bytes ?? []))), .withCRC([0x04]))
        let cl2 = tag.receive(AirFrame([0x95, 0x20]))
        XCTAssertEqual(cl2, AirFrame([0x33, 0x44, 0x55, 0x66, 0x33 ^ 0x44 ^ 0x55 ^ 0x66]))
        XCTAssertEqual(tag.receive(.withCRC([0x95, 0x70] + (cl2?.bytes ?? []))), .withCRC([0x00]))
    }

    func send(_ tag: inout NTAG21x, _ bytes: [UInt8]) -> AirFrame? { tag.receive(.withCRC(bytes)) }

    /// Answer payload without its CRC, failing when the CRC is wrong.
    func payload(_ answer: AirFrame?, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        guard let a = answer, a.lastBits == 0, CRC.isValid(a.bytes) else {
            XCTFail("expected data with CRC, got \(String(describing: answer))", file: file, line: line)
            return []
        }
        return Array(a.bytes.dropLast(2))
    }

    func testGetVersionPerType() throws {
        for (type, size) in [(NTAGType.ntag213, UInt8(0x0F)), (.ntag215, 0x11), (.ntag216, 0x13)] {
            var tag = try activeTag(type)
            XCTAssertEqual(payload(send(&tag, [0x60])), [0x00, 0x04, 0x04, 0x02, 0x01, 0x00, size, 0x03])
            XCTAssertEqual(tag.memory.count, type.dumpSize)
        }
    }

    func testReadReturnsFourPagesAndWrapsAtTheEndOfMemory() throws {
        var tag = try activeTag { b in
            b[0x2B * 4..<0x2C * 4] = [1, 2, 3, 4]  // PWD
            b[0x2C * 4..<0x2D * 4] = [5, 6, 0, 0]  // PACK
        }
        let mem = tag.memory
        XCTAssertEqual(payload(send(&tag, [0x30, 0x00])), Array(mem[0..<16]))
        // NTAG213's last page is 2Ch: 2Ch, 00h, 01h, 02h; PWD/PACK read as zeros.
        XCTAssertEqual(payload(send(&tag, [0x30, 0x2C])), [0, 0, 0, 0] + Array(mem[0..<12]))
        XCTAssertEqual(
            payload(send(&tag, [0x30, 0x2A])),
            Array(mem[0xA8..<0xAC]) + [UInt8](repeating: 0, count: 8) + Array(mem[0..<4]))
        XCTAssertEqual(send(&tag, [0x30, 0x2D]), Self.nak0)
        XCTAssertEqual(tag.state, .idle, "a NAK sends the tag back to IDLE")
        XCTAssertNil(send(&tag, [0x30, 0x00]), "an idle tag does not answer until woken")
    }

    func testFastRead() throws {
        var tag = try activeTag()
        XCTAssertEqual(payload(send(&tag, [0x3A, 0x00, 0x2C])).count, 180)
        XCTAssertEqual(payload(send(&tag, [0x3A, 0x04, 0x05])), Array(tag.memory[16..<24]))
        XCTAssertEqual(send(&tag, [0x3A, 0x05, 0x04]), Self.nak0)
    }

    func testWriteAndCompatibilityWrite() throws {
        var tag = try activeTag()
        XCTAssertEqual(send(&tag, [0xA2, 0x04, 0xDE, 0xAD, 0xBE, 0xEF]), .ack)
        XCTAssertEqual(Array(tag.memory[16..<20]), [0xDE, 0xAD, 0xBE, 0xEF])
        XCTAssertEqual(send(&tag, [0xA0, 0x05]), .ack)
        XCTAssertEqual(send(&tag, [1, 2, 3, 4] + [UInt8](repeating: 9, count: 12)), .ack)
        XCTAssertEqual(Array(tag.memory[20..<28]), [1, 2, 3, 4, 0, 0, 0, 0], "only the first 4 bytes are written")
        XCTAssertEqual(send(&tag, [0xA2, 0x00, 1, 2, 3, 4]), Self.nak0, "the serial number is read-only")
        activate(&tag)
        XCTAssertEqual(send(&tag, [0xA2, 0x2D, 1, 2, 3, 4]), Self.nak0, "beyond the last page")
    }

    func testBadCRCIsNakedWithCode1() throws {
        var tag = try activeTag()
        XCTAssertEqual(tag.receive(AirFrame([0x30, 0x00, 0x00, 0x00])), .nibble(0x1))
    }

    func testStaticLockBitsAreOneTimeAndRefuseWrites() throws {
        var tag = try activeTag()
        XCTAssertEqual(send(&tag, [0xA2, 0x02, 0xFF, 0xFF, 0x10, 0x00]), .ack)  // L4
        XCTAssertEqual(
            tag.memory[8], Self.uid.bytes[3] ^ Self.uid.bytes[4] ^ Self.uid.bytes[5] ^ Self.uid.bytes[6],
            "BCC1 is read-only")
        XCTAssertEqual(send(&tag, [0xA2, 0x04, 1, 1, 1, 1]), Self.nak0)
        activate(&tag)
        XCTAssertEqual(send(&tag, [0xA2, 0x05, 1, 1, 1, 1]), .ack)
        XCTAssertEqual(send(&tag, [0xA2, 0x02, 0, 0, 0x00, 0x00]), .ack)
        XCTAssertEqual(tag.memory[10], 0x10, "lock bits cannot be cleared")
        // Block-locking bit BL9-4 freezes L4…L9: setting L5 no longer sticks.
        XCTAssertEqual(send(&tag, [0xA2, 0x02, 0, 0, 0x02, 0x00]), .ack)
        XCTAssertEqual(send(&tag, [0xA2, 0x02, 0, 0, 0x20, 0x00]), .ack)
        XCTAssertEqual(tag.memory[10], 0x12)
        XCTAssertEqual(send(&tag, [0xA2, 0x05, 2, 2, 2, 2]), .ack)
    }

    func testCapabilityContainerIsOneTimeProgrammable() throws {
        var tag = try activeTag()
        let cc = Array(tag.memory[12..<16])
        XCTAssertEqual(send(&tag, [0xA2, 0x03, 0x00, 0x00, 0x00, 0x0F]), .ack)
        XCTAssertEqual(
            Array(tag.memory[12..<16]), cc.enumerated().map { $0.offset == 3 ? $0.element | 0x0F : $0.element })
    }

    func testDynamicLockBits() throws {
        var t213 = try activeTag(.ntag213)
        XCTAssertEqual(send(&t213, [0xA2, 0x28, 0x01, 0x00, 0x00, 0x00]), .ack)  // pages 16–17
        XCTAssertEqual(send(&t213, [0xA2, 0x11, 1, 1, 1, 1]), Self.nak0)
        activate(&t213)
        XCTAssertEqual(send(&t213, [0xA2, 0x12, 1, 1, 1, 1]), .ack)
        XCTAssertEqual(t213.memory[0x28 * 4 + 3], 0xBD, "RFUI byte unchanged")

        var t215 = try activeTag(.ntag215)
        XCTAssertEqual(send(&t215, [0xA2, 0x82, 0x02, 0x00, 0x00, 0x00]), .ack)  // pages 32–47
        XCTAssertEqual(send(&t215, [0xA2, 0x1F, 1, 1, 1, 1]), .ack)
        XCTAssertEqual(send(&t215, [0xA2, 0x20, 1, 1, 1, 1]), Self.nak0)
    }

    /// Tag with PWD 11223344, PACK AABB, AUTH0 = 10h and ACCESS as given.
    func protectedTag(access: UInt8) throws -> NTAG21x {
        try activeTag { b in
            b[0x29 * 4 + 3] = 0x10
            b[0x2A * 4] = access
            b[0x2B * 4..<0x2C * 4] = [0x11, 0x22, 0x33, 0x44]
            b[0x2C * 4..<0x2C * 4 + 2] = [0xAA, 0xBB]
        }
    }

    func testPasswordProtectsWritesAndWithPROTReads() throws {
        var tag = try protectedTag(access: 0x00)
        XCTAssertEqual(payload(send(&tag, [0x30, 0x10])).count, 16, "PROT = 0: reads stay open")
        XCTAssertEqual(send(&tag, [0xA2, 0x10, 1, 2, 3, 4]), Self.nak0)
        activate(&tag)
        XCTAssertEqual(send(&tag, [0xA2, 0x0F, 1, 2, 3, 4]), .ack, "below AUTH0")

        var prot = try protectedTag(access: 0x80)
        XCTAssertEqual(send(&prot, [0x30, 0x10]), Self.nak0)
        activate(&prot)
        // A read starting below AUTH0 shows the protected pages as zeros.
        XCTAssertEqual(Array(payload(send(&prot, [0x30, 0x0E])).suffix(8)), [UInt8](repeating: 0, count: 8))
        XCTAssertEqual(payload(send(&prot, [0x1B, 0x11, 0x22, 0x33, 0x44])), [0xAA, 0xBB])
        XCTAssertEqual(prot.state, .authenticated)
        XCTAssertEqual(payload(send(&prot, [0x30, 0x10])), Array(prot.memory[0x40..<0x50]))
        XCTAssertEqual(send(&prot, [0xA2, 0x10, 1, 2, 3, 4]), .ack)
        XCTAssertEqual(Array(prot.memory[0x40..<0x44]), [1, 2, 3, 4])
        prot.powerOff()
        activate(&prot)
        XCTAssertEqual(send(&prot, [0x30, 0x10]), Self.nak0, "authentication ends with the field")
    }

    func testAuthLimitLocksThePasswordForGood() throws {
        var tag = try protectedTag(access: 0x01)  // AUTHLIM 1: 2 attempts
        XCTAssertEqual(send(&tag, [0x1B, 0, 0, 0, 0]), Self.nak0)
        activate(&tag)
        XCTAssertEqual(send(&tag, [0x1B, 0, 0, 0, 1]), Self.nak0)
        XCTAssertTrue(tag.isPermanentlyLocked)
        tag.powerOff()
        activate(&tag)
        XCTAssertEqual(send(&tag, [0x1B, 0x11, 0x22, 0x33, 0x44]), .nibble(0x4), "even the right password fails now")

        var unlimited = try protectedTag(access: 0x00)
        for _ in 0..<10 {
            XCTAssertEqual(send(&unlimited, [0x1B, 0, 0, 0, 0]), Self.nak0)
            activate(&unlimited)
        }
        XCTAssertEqual(payload(send(&unlimited, [0x1B, 0x11, 0x22, 0x33, 0x44])), [0xAA, 0xBB])
    }

    func testSuccessfulAuthenticationResetsTheFailureCount() throws {
        var tag = try protectedTag(access: 0x01)
        XCTAssertEqual(send(&tag, [0x1B, 0, 0, 0, 0]), Self.nak0)
        activate(&tag)
        XCTAssertEqual(payload(send(&tag, [0x1B, 0x11, 0x22, 0x33, 0x44])), [0xAA, 0xBB])
        XCTAssertEqual(tag.failedAuthentications, 0)
    }

    func testConfigurationLock() throws {
        var tag = try activeTag { b in b[0x2A * 4] = 0x40 }  // CFGLCK
        XCTAssertEqual(send(&tag, [0xA2, 0x29, 0x04, 0x00, 0x00, 0x10]), Self.nak0)
        activate(&tag)
        XCTAssertEqual(send(&tag, [0xA2, 0x2B, 9, 9, 9, 9]), .ack, "PWD stays writable")
    }

    func testSignatureAndCounter() throws {
        var tag = try activeTag { b in b[0x2A * 4] = 0x10 }  // NFC_CNT_EN
        XCTAssertEqual(payload(send(&tag, [0x3C, 0x00])).count, 32)
        XCTAssertEqual(payload(send(&tag, [0x39, 0x02])), [0, 0, 0])
        _ = send(&tag, [0x30, 0x04])
        _ = send(&tag, [0x30, 0x08])
        XCTAssertEqual(payload(send(&tag, [0x39, 0x02])), [1, 0, 0], "counted once per field")
        XCTAssertEqual(send(&tag, [0x39, 0x00]), Self.nak0)
    }

    func testHaltAndWakeUp() throws {
        var tag = try activeTag()
        XCTAssertNil(send(&tag, [0x50, 0x00]))
        XCTAssertEqual(tag.state, .halt)
        XCTAssertNil(tag.receive(AirFrame([0x26], lastBits: 7)), "REQA does not wake a halted tag")
        XCTAssertEqual(tag.receive(AirFrame([0x52], lastBits: 7)), AirFrame([0x44, 0x00]))
    }
}
