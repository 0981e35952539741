import DoorCore
import PN532Emulator
import XCTest

private func h(_ s: String) -> [UInt8] {
    guard let b = Hex.decode(s.filter { !$0.isWhitespace }) else { fatalError("bad hex in test: \(s)") }
    return b
}

private let zeroKey = [UInt8](repeating: 0, count: 16)

/// The emulated NTAG 424 DNA, driven with APDUs. The reader's side is
/// DoorCore's crypto core (`NTAG424.EV2`, `Session.sealCommand` /
/// `openResponse`); where AN12196 prints an exchange, the tag must answer it
/// byte for byte — that, not the agreement of two halves of the same core,
/// is what pins the emulator.
final class NTAG424DNATests: XCTestCase {
    static let anUID = h("04958CAA5C5E80")
    static let selectApp = h("00A4040C07D276000085010100")
    static let rndA14 = h("13C5DB8A5930439FC3DEF9A4C675360F")
    static let rndB14 = h("B9E2FC789B64BF237CCCAA20EC7E6E48")

    /// A factory tag with the application selected.
    func factoryTag(uid: [UInt8] = anUID) -> NTAG424Application {
        var tag = NTAG424Application(uid: uid)
        XCTAssertEqual(tag.process(Self.selectApp), h("9000"))
        return tag
    }

    /// Native command APDU: 90 INS 00 00 [Lc data] 00.
    func native(_ ins: UInt8, _ body: [UInt8]) -> [UInt8] {
        [0x90, ins, 0, 0] + (body.isEmpty ? [] : [UInt8(body.count)] + body) + [0x00]
    }

    /// AuthenticateEV2First as the door runs it, with DoorCore's reader half.
    func authenticate(
        _ tag: inout NTAG424Application, key: [UInt8] = zeroKey, keyNumber: UInt8 = 0, rndA: [UInt8]? = nil
    ) throws -> NTAG424.Session {
        let a = try rndA ?? Crypto.randomBytes(16)
        let r1 = tag.process(native(0x71, [keyNumber, 0x00]))
        XCTAssertEqual(Array(r1.suffix(2)), h("91AF"))
        let step = try NTAG424.EV2.readerResponse(key: key, encryptedRndB: Array(r1.dropLast(2)), rndA: a)
        let r2 = tag.process(native(0xAF, step.message))
        guard r2.suffix(2) == [0x91, 0x00] else { throw NTAG424.Failure.authenticationFailed }
        return try NTAG424.EV2.readerFinishFirst(
            key: key, keyNumber: keyNumber, rndA: a, rndB: step.rndB, answer: Array(r2.dropLast(2))
        ).session
    }

    /// One secure-messaging exchange from the reader's side; returns the opened data.
    func exchange(
        _ tag: inout NTAG424Application, _ session: inout NTAG424.Session, ins: UInt8, header: [UInt8],
        data: [UInt8] = [], mode: NTAG424.CommMode, responseMode: NTAG424.CommMode? = nil
    ) throws -> [UInt8] {
        let body = try session.sealCommand(ins: ins, header: header, data: data, mode: mode)
        let r = tag.process(native(ins, body))
        XCTAssertEqual(r.suffix(2).first, 0x91)
        guard r.last == 0x00 else { throw NTAG424.Failure.crypto("status 91\(Hex.encode([r.last!]))") }
        return try session.openResponse(Array(r.dropLast(2)), status: 0x00, mode: responseMode ?? mode)
    }

    // MARK: AN12196 exchanges, tag side

    func testAN12196Table14AuthenticateEV2FirstByteForByte() {
        var tag = factoryTag()
        tag.scriptedRandom = [Self.rndB14, h("9D00C4DF")]
        XCTAssertEqual(tag.process(h("9071000002000000")), h("A04C124213C186F22399D33AC2A3021591AF"))
        XCTAssertEqual(
            tag.process(h("90AF00002035C3E05A752E0144BAC0DE51C1F22C56B34408A23D8AEA266CAB947EA8E0118D00")),
            h("3FA64DB5446D1F34CD6EA311167F5E4985B89690C04A05F17FA7AB2F081206639100"))
        XCTAssertEqual(tag.session?.encKey, h("1309C877509E5A215007FF0ED19CA564"))
        XCTAssertEqual(tag.session?.macKey, h("4C6626F5E72EA694202139295C7A7FC7"))
        XCTAssertEqual(tag.session?.commandCounter, 0)
    }

    func testAN12196Table19ChangeFileSettingsByteForByteThenTheSUNMirror() throws {
        var tag = factoryTag(uid: h("04DE5F1EACC040"))
        // AN §6.7's template, written before authenticating (AN Table 17): NLEN, URI record,
        // "https://" + "choose.url.com/ntag424?e=" + 32 placeholders + "&c=" + 16 placeholders.
        let url =
            "choose.url.com/ntag424?e=" + String(repeating: "0", count: 32) + "&c=" + String(repeating: "0", count: 16)
        let record = [0xD1, 0x01, UInt8(url.utf8.count + 1), 0x55, 0x04] + Array(url.utf8)
        let ndef = [0x00, UInt8(record.count)] + record
        XCTAssertEqual(tag.process(h("00A4000C02E104")), h("9000"))
        XCTAssertEqual(tag.process(h("00D60000") + [UInt8(ndef.count)] + ndef), h("9000"))
        XCTAssertEqual(Array("choose.url.com/ntag424?e=".utf8), Array(ndef[7..<32]))
        // AN Table 14's session, then one MACed command to bring CmdCtr to 1 (AN's was a WriteData).
        tag.scriptedRandom = [Self.rndB14, h("9D00C4DF")]
        var session = try authenticate(&tag, rndA: Self.rndA14)
        XCTAssertEqual(session.ti, h("9D00C4DF"))
        let settings = try exchange(&tag, &session, ins: 0xF5, header: [0x02], mode: .mac)
        XCTAssertEqual(settings, h("00 00 E0EE 000100"))  // factory NDEF file (AN §6.4)
        XCTAssertEqual(session.commandCounter, 1)
        // AN Table 19, exactly: SDM on, PICCData at 0x20, MAC at 0x43 with an empty input.
        XCTAssertEqual(
            tag.process(h("905F0000190261B6D97903566E84C3AE5274467E89EAD799B7C1A0EF7A0400")),
            h("57BFF87B1241E93D9100"))
        // The tag at a door: a new activation, read without a key. Counter 61 and
        // padding DA5CF60941 as in AN Tables 3 and 5.
        tag.reset()
        tag.sdmReadCounter = 60
        tag.scriptedRandom = [h("DA5CF60941")]
        XCTAssertEqual(tag.process(Self.selectApp), h("9000"))
        XCTAssertEqual(tag.process(h("00A4000C02E104")), h("9000"))
        let read = tag.process(h("00B0000000"))
        XCTAssertEqual(Array(read.suffix(2)), h("9000"))
        let text = String(decoding: read[7..<(7 + url.utf8.count)], as: UTF8.self)
        XCTAssertEqual(text, "choose.url.com/ntag424?e=EF963FF7828658A599F3041510671E88&c=94EED9EE65337086")
        // A chunked read in the same run sees the same counter and padding.
        XCTAssertEqual(tag.process(h("00B0002010")), Array(read[32..<48]) + h("9000"))
        XCTAssertEqual(tag.sdmReadCounter, 61)
        // Another command in between: the next read is a new tap, counter 62, and the door verifies it.
        XCTAssertEqual(tag.process(h("00A4000C02E104")), h("9000"))
        let again = tag.process(h("00B0000000"))
        let next = try SUNURL.parse("https://" + String(decoding: again[7..<(7 + url.utf8.count)], as: UTF8.self))
        let verdict = try next.verify(metaReadKey: zeroKey, fileReadKey: zeroKey)
        XCTAssertEqual(verdict.piccData.counter, 62)
        XCTAssertEqual(verdict.piccData.uid, h("04DE5F1EACC040"))
        XCTAssertTrue(verdict.macOK)
    }

    func testSDMCounterDoesNotMoveWhileAuthenticatedAndReadsRefuse6982() throws {
        var tag = factoryTag()
        var session = try authenticate(&tag)
        let sdm = h("40 00E0 C1 F121 200000 430000 430000")
        _ = try exchange(&tag, &session, ins: 0x5F, header: [0x02], data: sdm, mode: .full, responseMode: .mac)
        XCTAssertEqual(tag.sdmReadCounter, 0, "enabling SDM resets the counter")
        XCTAssertEqual(tag.process(h("00A4000C02E104")), h("9000"))
        XCTAssertEqual(tag.process(h("00B0000010")), h("6982"), "ISOReadBinary answers 6982 while authenticated")
        // An authenticated ReadData sees the file as stored, and the counter stays.
        let raw = try exchange(&tag, &session, ins: 0xAD, header: h("02 000000 100000"), mode: .plain)
        XCTAssertEqual(raw, [UInt8](repeating: 0, count: 16))
        XCTAssertEqual(tag.sdmReadCounter, 0)
        // GetFileCounters (Full, SDMCtrRet key 1): not with key 0's session.
        XCTAssertThrowsError(try exchange(&tag, &session, ins: 0xF6, header: [0x02], mode: .mac, responseMode: .full))
    }

    // MARK: Keys

    func testChangeKeyBothFormsAndTheNewKeyAuthenticates() throws {
        var tag = factoryTag()
        var session = try authenticate(&tag)
        let k2 = h("F3847D627727ED3BC9C4CC050489B966"), k0 = h("5004BF991F408672B1EF00F08F9E8647")
        // Another key: (new ⊕ old) ‖ version ‖ CRC32NK; the answer carries a MAC.
        let d2 = try NTAG424.changeKeyData(newKey: k2, version: 1, oldKey: zeroKey)
        XCTAssertEqual(try exchange(&tag, &session, ins: 0xC4, header: [0x02], data: d2, mode: .full), [])
        XCTAssertEqual(tag.keys[2], k2)
        // The session's own key: new ‖ version, a bare 9100, the session ends.
        let d0 = try NTAG424.changeKeyData(newKey: k0, version: 1, oldKey: nil)
        let body0 = try session.sealCommand(ins: 0xC4, header: [0x00], data: d0, mode: .full)
        XCTAssertEqual(tag.process(native(0xC4, body0)), h("9100"))
        XCTAssertNil(tag.session)
        XCTAssertEqual(tag.keys[0], k0)
        // The old key no longer authenticates; the new one does.
        XCTAssertThrowsError(try authenticate(&tag))
        var s2 = try authenticate(&tag, key: k0)
        XCTAssertEqual(try exchange(&tag, &s2, ins: 0x51, header: [], mode: .full), Self.anUID)
        // Key 2 with its new value, and its session may not change keys (AppMasterKey only).
        var s3 = try authenticate(&tag, key: k2, keyNumber: 2)
        XCTAssertThrowsError(
            try exchange(
                &tag, &s3, ins: 0xC4, header: [0x04],
                data: try NTAG424.changeKeyData(newKey: k0, version: 1, oldKey: zeroKey), mode: .full))
        XCTAssertEqual(tag.keys[4], zeroKey)
    }

    /// `ntag424-fault`: a tag that acknowledges ChangeKey exactly as a real
    /// one does (a MAC'd answer, a bare 9100 that ends the session for key 0)
    /// but keeps its factory keys; one whose GetCardUID names another UID.
    func testAFaultyTagAcknowledgesChangeKeyButKeepsItsKeysOrLiesAboutItsUID() throws {
        var tag = factoryTag()
        tag.fault = .keepsKeys
        var session = try authenticate(&tag)
        let k2 = h("F3847D627727ED3BC9C4CC050489B966"), k0 = h("5004BF991F408672B1EF00F08F9E8647")
        let d2 = try NTAG424.changeKeyData(newKey: k2, version: 1, oldKey: zeroKey)
        XCTAssertEqual(try exchange(&tag, &session, ins: 0xC4, header: [0x02], data: d2, mode: .full), [])
        let d0 = try NTAG424.changeKeyData(newKey: k0, version: 1, oldKey: nil)
        let body0 = try session.sealCommand(ins: 0xC4, header: [0x00], data: d0, mode: .full)
        XCTAssertEqual(tag.process(native(0xC4, body0)), h("9100"), "acknowledged as a real tag does")
        XCTAssertNil(tag.session)
        XCTAssertEqual(tag.keys, Array(repeating: zeroKey, count: 5), "but nothing changed")
        XCTAssertEqual(tag.keyVersions, [0, 0, 0, 0, 0])
        XCTAssertThrowsError(try authenticate(&tag, key: k0))
        var s1 = try authenticate(&tag)

        let other = h("04111111111111")
        tag.fault = .cardUID(other)
        XCTAssertEqual(try exchange(&tag, &s1, ins: 0x51, header: [], mode: .full), other)
        tag.fault = nil
        XCTAssertEqual(try exchange(&tag, &s1, ins: 0x51, header: [], mode: .full), Self.anUID)

        XCTAssertEqual(try ControlCommand.parse("ntag424-fault keeps-keys"), .ntag424Fault(.keepsKeys))
        XCTAssertEqual(
            try ControlCommand.parse("ntag424-fault card-uid 04111111111111"), .ntag424Fault(.cardUID(other)))
        XCTAssertEqual(try ControlCommand.parse("ntag424-fault off"), .ntag424Fault(nil))
        XCTAssertThrowsError(try ControlCommand.parse("ntag424-fault"))
        XCTAssertThrowsError(try ControlCommand.parse("ntag424-fault card-uid 0411"))
        XCTAssertThrowsError(try ControlCommand.parse("ntag424-fault keeps-keys extra"))
        // On the chip: the tag in the field, else the one reinsert brings back; none, none.
        var chip = PN532Chip()
        XCTAssertFalse(chip.setNTAG424Fault(.keepsKeys))
        _ = chip.insert(NTAG424DNA(uid: Self.anUID))
        XCTAssertTrue(chip.setNTAG424Fault(.keepsKeys))
        XCTAssertEqual(chip.dna?.application.fault, .keepsKeys)
        chip.remove()
        XCTAssertTrue(chip.setNTAG424Fault(.cardUID(other)))
        _ = chip.reinsert()
        XCTAssertEqual(chip.dna?.application.fault, .cardUID(other))
    }

    func testAWrongCRCInChangeKeyIsRefused() throws {
        var tag = factoryTag()
        let session = try authenticate(&tag)
        var data = try NTAG424.changeKeyData(newKey: h("F3847D627727ED3BC9C4CC050489B966"), version: 1, oldKey: zeroKey)
        data[20] ^= 0x01
        let body = try session.sealCommand(ins: 0xC4, header: [0x02], data: data, mode: .full)
        XCTAssertEqual(tag.process(native(0xC4, body)), h("911E"))
        XCTAssertEqual(tag.keys[2], zeroKey)
        XCTAssertNil(tag.session, "an integrity error ends the session")
    }

    // MARK: Secure messaging

    func testTamperedOrReplayedCommandsAreIntegrityErrors() throws {
        var tag = factoryTag()
        var session = try authenticate(&tag)
        var body = try session.sealCommand(ins: 0x51, header: [], data: [], mode: .full)
        body[0] ^= 0x80
        XCTAssertEqual(tag.process(native(0x51, body)), h("911E"))
        XCTAssertNil(tag.session)
        // A replay of a good command after it ran: CmdCtr has moved on.
        session = try authenticate(&tag)
        let good = try session.sealCommand(ins: 0x51, header: [], data: [], mode: .full)
        XCTAssertEqual(tag.process(native(0x51, good)).suffix(2), h("9100"))
        XCTAssertEqual(tag.process(native(0x51, good)), h("911E"))
        // Without a session, GetCardUID is refused.
        XCTAssertEqual(tag.process(native(0x51, [])), h("91AE"))
    }

    func testWriteAndReadDataInCommModeFullOnTheProprietaryFile() throws {
        var tag = factoryTag()
        // File 03: Full, RW key 3 (factory 3023).
        var session = try authenticate(&tag, keyNumber: 3)
        let payload = Array("door secret 0123456789".utf8)
        XCTAssertEqual(
            try exchange(
                &tag, &session, ins: 0x8D, header: [0x03, 0x00, 0x00, 0x00, UInt8(payload.count), 0, 0], data: payload,
                mode: .full, responseMode: .mac), [])
        XCTAssertEqual(Array(tag.files[2].data.prefix(payload.count)), payload)
        let back = try exchange(
            &tag, &session, ins: 0xAD, header: [0x03, 0, 0, 0, UInt8(payload.count), 0, 0], mode: .mac,
            responseMode: .full)
        XCTAssertEqual(back, payload)
        // Unauthenticated, file 03 is not readable at all.
        tag.reset()
        _ = tag.process(Self.selectApp)
        XCTAssertEqual(tag.process(native(0xAD, [0x03, 0, 0, 0, 4, 0, 0])), h("919D"))
    }

    func testGetVersionInThreeFrames() {
        var tag = factoryTag()
        XCTAssertEqual(tag.process(h("9060000000")), h("0404023000110591AF"))
        XCTAssertEqual(tag.process(h("90AF000000")), h("0404020102110591AF"))
        let last = tag.process(h("90AF000000"))
        XCTAssertEqual(Array(last.prefix(7)), Self.anUID)
        XCTAssertEqual(Array(last.suffix(2)), h("9100"))
        XCTAssertEqual(tag.process(h("90AF000000")), h("91CA"), "nothing left to continue")
    }

    func testChangeFileSettingsRefusesOffsetsOutsideTheFile() throws {
        var tag = factoryTag()
        var session = try authenticate(&tag)
        // PICCData at 0xF0: 32 characters do not fit a 256-byte file.
        let bad = h("40 00E0 C1 F121 F00000 430000 430000")
        XCTAssertThrowsError(try exchange(&tag, &session, ins: 0x5F, header: [0x02], data: bad, mode: .full))
        XCTAssertNil(tag.files[1].sdm)
    }

    // MARK: Air interface and the PN532

    func testAirActivationRATSAndIBlocksThroughThePN532() throws {
        var host = try PN532ChipTests.Host(tag: false)
        host.open()
        _ = host.answer([0x12, 0x14])  // SetParameters: fAutomaticRATS, as libnfc's pn53x_init
        _ = host.chip.insert(NTAG424DNA(uid: Self.anUID))
        let listed = host.answer([0x4A, 0x01, 0x00])
        XCTAssertEqual(listed, [0x01, 0x01, 0x03, 0x44, 0x20, 0x07] + Self.anUID + NTAG424DNA.ats)
        XCTAssertEqual(host.answer([0x40, 0x01] + Self.selectApp), h("00 9000"))
        let version = host.answer([0x40, 0x01] + h("9060000000"))
        XCTAssertEqual(version, h("00 0404023000110591AF"))
        // A command longer than the tag's FSC goes out chained, and the answer comes back whole.
        let ndef = [UInt8](repeating: 0x41, count: 200)
        XCTAssertEqual(host.answer([0x40, 0x01] + h("00A4000C02E104")), h("00 9000"))
        XCTAssertEqual(host.answer([0x40, 0x01] + h("00D60000") + [UInt8(ndef.count)] + ndef), h("00 9000"))
        XCTAssertEqual(host.answer([0x40, 0x01] + h("00B00000C8")), [0x00] + ndef + h("9000"))
        // Gone from the field: InDataExchange times out (status 01).
        host.chip.remove()
        XCTAssertEqual(host.answer([0x40, 0x01] + h("9060000000")), [0x01])
    }

    /// InAutoPoll's generic type A (00h, UM0701-02 §7.3.13) activates whatever is in the
    /// field once: a 424 with RATS (its SAK says ISO/IEC 14443-4) and its ATS in the target
    /// data, a sticker without. 20h then 10h activate a sticker twice (pn532-sim's
    /// `activations`). The type byte of the answer is not asserted: a real chip reports
    /// the type it found.
    func testInAutoPollGenericTypeActivatesEachTagOnce() throws {
        var host = try PN532ChipTests.Host(tag: false)
        host.open()
        _ = host.answer([0x12, 0x14])  // fAutomaticRATS on
        _ = host.chip.insert(NTAG424DNA(uid: Self.anUID))
        host.chip.resetStats()
        let target = [0x01, 0x03, 0x44, 0x20, 0x07] + Self.anUID
        let dna = host.answer([0x60, 0x01, 0x01, 0x00])
        XCTAssertEqual(dna.first, 0x01)
        XCTAssertEqual(Array(dna.dropFirst(2)), [UInt8(target.count + 6)] + target + NTAG424DNA.ats)
        XCTAssertEqual(host.chip.stats.activations, 1)
        XCTAssertEqual(host.answer([0x40, 0x01] + Self.selectApp), h("00 9000"), "ISO-DEP without another activation")

        host.chip.remove()
        _ = host.chip.insert(try PN532ChipTests.tag())
        host.chip.resetStats()
        let sticker = [0x01, 0x00, 0x44, 0x00, 0x07] + PN532ChipTests.uid
        let found = host.answer([0x60, 0x01, 0x01, 0x00])
        XCTAssertEqual(found.first, 0x01)
        XCTAssertEqual(Array(found.dropFirst(2)), [UInt8(sticker.count)] + sticker)
        XCTAssertEqual(host.chip.stats.activations, 1)
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]).first, 0x00, "the sticker reads")
        host.chip.resetStats()
        XCTAssertEqual(host.answer([0x60, 0x01, 0x01, 0x20, 0x10]), [0x01, 0x10, UInt8(sticker.count)] + sticker)
        XCTAssertEqual(host.chip.stats.activations, 2, "20h's activation, then 10h's")
    }

    /// InAutoPoll's types (UM0701-02 §7.3.13) as libnfc pairs them with fAutomaticRATS:
    /// 20h (ISO/IEC 14443-4 type A) activates a 424 with RATS and hands back its ATS; 10h
    /// (MIFARE) sends no RATS even with fAutomaticRATS on; an NTAG21x does not fit 20h and
    /// is found by 10h, woken again after the halt; an arriving tag costs its air time.
    func testInAutoPollFindsA424WithItsATSAndAStickerByTheMIFAREType() throws {
        var host = try PN532ChipTests.Host(tag: false)
        host.open()
        _ = host.answer([0x12, 0x14])  // fAutomaticRATS on
        _ = host.chip.insert(NTAG424DNA(uid: Self.anUID))
        let target = [0x01, 0x03, 0x44, 0x20, 0x07] + Self.anUID
        XCTAssertEqual(
            host.answer([0x60, 0x01, 0x01, 0x20, 0x10]),
            [0x01, 0x20, UInt8(target.count + 6)] + target + NTAG424DNA.ats)
        XCTAssertEqual(host.answer([0x40, 0x01] + Self.selectApp), h("00 9000"), "ISO-DEP without another activation")
        XCTAssertEqual(host.answer([0x60, 0x01, 0x01, 0x10]), [0x01, 0x10, UInt8(target.count)] + target)
        XCTAssertEqual(host.answer([0x40, 0x01] + Self.selectApp), [0x01], "no RATS: the 424 is at layer 3")
        _ = host.answer([0x12, 0x04])  // fAutomaticRATS off: 20h still takes the 424, without its ATS
        XCTAssertEqual(host.answer([0x60, 0x01, 0x01, 0x20, 0x10]), [0x01, 0x20, UInt8(target.count)] + target)

        _ = host.answer([0x12, 0x14])
        host.chip.remove()
        _ = host.chip.insert(try PN532ChipTests.tag())
        host.chip.resetStats()
        let sticker = [0x01, 0x00, 0x44, 0x00, 0x07] + PN532ChipTests.uid
        XCTAssertEqual(host.answer([0x60, 0x01, 0x01, 0x20, 0x10]), [0x01, 0x10, UInt8(sticker.count)] + sticker)
        // 20h's activation, its HLTA, 10h's activation (and the HLTA to the 424's old Tg 1).
        XCTAssertGreaterThanOrEqual(host.chip.stats.tagExchanges, 5 + 1 + 5)
        XCTAssertEqual(host.answer([0x40, 0x01, 0x30, 0x04]).first, 0x00, "the sticker reads")

        // Polling when the 424 arrives: answered at once with its ATS, after the activation's air time.
        host.chip.remove()
        XCTAssertEqual(
            host.command([0x60, 0xFF, 0x01, 0x20, 0x10]), PN532ChipTests.Reply(acked: true, answers: []))
        let arrival = host.chip.insert(NTAG424DNA(uid: Self.anUID))
        guard case .airTime(let us)? = arrival.first else { return XCTFail("no air time first: \(arrival)") }
        XCTAssertGreaterThan(us, 3000)
        XCTAssertEqual(
            host.decode(arrival).answers, [[0x61, 0x01, 0x20, UInt8(target.count + 6)] + target + NTAG424DNA.ats])
    }

    func testWithoutAutomaticRATSTheTagStaysAtLayer3() throws {
        var host = try PN532ChipTests.Host(tag: false)
        host.open()
        _ = host.chip.insert(NTAG424DNA(uid: Self.anUID))
        XCTAssertEqual(host.answer([0x4A, 0x01, 0x00]), [0x01, 0x01, 0x03, 0x44, 0x20, 0x07] + Self.anUID)
    }

    func testANewActivationDropsTheSession() throws {
        var air = NTAG424DNA(uid: Self.anUID)
        XCTAssertEqual(air.application.process(Self.selectApp), h("9000"))
        _ = try authenticate(&air.application)
        XCTAssertNotNil(air.application.session)
        XCTAssertEqual(air.receive(AirFrame([0x52], lastBits: 7)), AirFrame(NTAG424DNA.atqa))
        XCTAssertNil(air.application.session)
    }

    func testControlLineInsertsAnNTAG424() throws {
        XCTAssertEqual(
            try ControlCommand.parse("insert ntag424 04958CAA5C5E80"), .insertNTAG424(uid: TagUID(Self.anUID)))
        XCTAssertEqual(try ControlCommand.parse("insert NTAG424"), .insertNTAG424(uid: nil))
        XCTAssertThrowsError(try ControlCommand.parse("insert ntag424 0495"))
        XCTAssertThrowsError(try ControlCommand.parse("insert ntag424 04958CAA5C5E80 extra"))
    }

    func testAuthenticateEV2NonFirstKeepsTIAndCmdCtr() throws {
        var tag = factoryTag()
        var first = try authenticate(&tag)
        _ = try exchange(&tag, &first, ins: 0x51, header: [], mode: .full)
        XCTAssertEqual(first.commandCounter, 1)
        let rndA = try Crypto.randomBytes(16)
        let r1 = tag.process(native(0x77, [0x00]))
        XCTAssertEqual(Array(r1.suffix(2)), h("91AF"))
        let step = try NTAG424.EV2.readerResponse(key: zeroKey, encryptedRndB: Array(r1.dropLast(2)), rndA: rndA)
        let r2 = tag.process(native(0xAF, step.message))
        XCTAssertEqual(r2.count, 16 + 2, "NonFirst answers E(K, RndA') only")
        var next = try NTAG424.EV2.readerFinishNonFirst(
            key: zeroKey, rndA: rndA, rndB: step.rndB, answer: Array(r2.dropLast(2)), previous: first)
        XCTAssertEqual(next.ti, first.ti)
        XCTAssertEqual(tag.session?.commandCounter, 1)
        XCTAssertNotEqual(next.macKey, first.macKey)
        XCTAssertEqual(try exchange(&tag, &next, ins: 0x51, header: [], mode: .full), Self.anUID)
        // Without a session NonFirst is refused.
        var fresh = factoryTag()
        XCTAssertEqual(fresh.process(native(0x77, [0x00])), h("91AE"))
    }

    func testAnAnswerLargerThanTheReadersFSDIsChained() throws {
        var air = NTAG424DNA(uid: Self.anUID)
        var ndef = [UInt8](repeating: 0, count: 100)
        for i in ndef.indices { ndef[i] = UInt8(i) }
        air.application.setFileData(2, ndef)
        func send(_ bytes: [UInt8]) -> [UInt8]? {
            guard let a = air.receive(.withCRC(bytes)) else { return nil }
            XCTAssertTrue(CRC.isValid(a.bytes))
            return Array(a.bytes.dropLast(2))
        }
        // Activation by hand: WUPA, both cascade levels, then RATS with FSDI 5 (64-byte frames).
        XCTAssertEqual(air.receive(AirFrame([0x52], lastBits: 7)), AirFrame(NTAG424DNA.atqa))
        let cl1 = try XCTUnwrap(air.receive(AirFrame([0x93, 0x20])))
        XCTAssertEqual(send([0x93, 0x70] + cl1.bytes), [0x04])
        let cl2 = try XCTUnwrap(air.receive(AirFrame([0x95, 0x20])))
        XCTAssertEqual(send([0x95, 0x70] + cl2.bytes), [0x20])
        XCTAssertEqual(send([0xE0, 0x50]), NTAG424DNA.ats)
        XCTAssertEqual(send([0x02] + Self.selectApp), [0x02, 0x90, 0x00])
        XCTAssertEqual(send([0x03] + h("00A4000C02E104")), [0x03, 0x90, 0x00])
        // 100 bytes + SW do not fit 64-byte frames: I-blocks with the chaining bit, each fetched with R(ACK).
        var got: [UInt8] = []
        var block = try XCTUnwrap(send([0x02] + h("00B0000064")))
        var bn: UInt8 = 0
        while block[0] & 0x10 != 0 {
            XCTAssertEqual(block[0] & 0x01, bn)
            XCTAssertLessThanOrEqual(block.count + 2, 64)
            got += block.dropFirst()
            bn ^= 1
            block = try XCTUnwrap(send([0xA2 | bn]))
        }
        got += block.dropFirst()
        XCTAssertEqual(got, ndef + h("9000"))
        // R(NAK) with the current block number: the last block again; S(DESELECT) ends the session.
        XCTAssertEqual(send([0xB2 | bn]), block)
        XCTAssertEqual(send([0xC2]), [0xC2])
        XCTAssertEqual(air.state, .halt)
    }

    func testSDMReadCounterLimitRefusesFurtherReads() throws {
        var tag = factoryTag()
        var session = try authenticate(&tag)
        // UID + counter + limit mirrored as plain ASCII (SDMMetaRead E): UID at 0x10, counter at 0x20, limit 2.
        let sdm = h("40 00E0 E1 FFEF 100000 200000 020000")
        _ = try exchange(&tag, &session, ins: 0x5F, header: [0x02], data: sdm, mode: .full)
        XCTAssertEqual(tag.files[1].sdm?.counterLimit, 2)
        for expected in ["000001", "000002"] {
            tag.reset()
            XCTAssertEqual(tag.process(Self.selectApp), h("9000"))
            XCTAssertEqual(tag.process(h("00A4000C02E104")), h("9000"))
            let r = tag.process(h("00B0000030"))
            XCTAssertEqual(Array(r.suffix(2)), h("9000"))
            XCTAssertEqual(String(decoding: r[0x10..<0x1E], as: UTF8.self), Hex.encode(Self.anUID, uppercase: true))
            XCTAssertEqual(String(decoding: r[0x20..<0x26], as: UTF8.self), expected, "plain counter, MSB first")
        }
        tag.reset()
        XCTAssertEqual(tag.process(Self.selectApp), h("9000"))
        XCTAssertEqual(tag.process(h("00A4000C02E104")), h("9000"))
        XCTAssertEqual(tag.process(h("00B0000030")), h("6982"))
        XCTAssertEqual(tag.process(native(0xAD, h("02 000000 100000"))), h("919D"))
        XCTAssertEqual(tag.sdmReadCounter, 2)
    }

    /// AN12196 §6.12–6.16 against the tag: Tables 20, 22, 24, 26 and 27, each
    /// C-APDU as printed and each R-APDU compared byte for byte. Between Table 22
    /// (CmdCtr 0 → 1) and Table 26 (CmdCtr 2) AN runs ISOSelectFile, NonFirst and a
    /// plain WriteData; here only the plain WriteData advances CmdCtr, which
    /// lands on AN's 2.
    func testAN12196Tables20To27KeyChangesByteForByte() throws {
        var tag = factoryTag()
        let rndB20 = try NTAG424.cbc(.decrypt, key: zeroKey, h("B875CEB0E66A6C5CD00898DC371F92D1"))
        tag.scriptedRandom = [rndB20, h("7614281A")]
        XCTAssertEqual(tag.process(h("9071000002030000")), h("B875CEB0E66A6C5CD00898DC371F92D191AF"))
        XCTAssertEqual(
            tag.process(h("90AF000020FF0306E47DFBC50087C4D8A78E88E62DE1E8BE457AA477C707E2F0874916A8B100")),
            h("0CC9A8094A8EEA683ECAAC5C7BF20584206D0608D477110FC6B3D5D3F65C3A6A9100"))
        // Table 22: WriteData in CommMode.Full on file 03 (RW key 3).
        XCTAssertEqual(
            tag.process(h("908D00001F030000000A00006B5E6804909962FC4E3FF5522CF0F8436C0C53315B9C73AA00")),
            h("C26D236E4A7C046D9100"))
        XCTAssertEqual(tag.session?.commandCounter, 1)
        // ISOSelectFile of the NDEF file, then Table 24: NonFirst with key 0.
        XCTAssertEqual(tag.process(h("00A4000C02E104")), h("9000"))
        let rndB24 = try NTAG424.cbc(.decrypt, key: zeroKey, h("A6A2B3C572D06C097BB8DB70463E22DC"))
        tag.scriptedRandom = [rndB24]
        XCTAssertEqual(tag.process(h("90770000010000")), h("A6A2B3C572D06C097BB8DB70463E22DC91AF"))
        let step = try NTAG424.EV2.readerResponse(
            key: zeroKey, encryptedRndB: h("A6A2B3C572D06C097BB8DB70463E22DC"),
            rndA: h("60BE759EDA560250AC57CDDC11743CF6"))
        XCTAssertEqual(Array(tag.process(native(0xAF, step.message)).suffix(2)), h("9100"))
        XCTAssertEqual(tag.session?.encKey, h("4CF3CB41A22583A61E89B158D252FC53"))
        XCTAssertEqual(tag.session?.ti, h("7614281A"))
        // A plain WriteData to the NDEF file (free write access): CmdCtr 1 → 2.
        XCTAssertEqual(tag.process(native(0x8D, h("02 000000 020000 0000"))), h("9100"))
        XCTAssertEqual(tag.session?.commandCounter, 2)
        // Table 26: ChangeKey 2 (the CRC form).
        XCTAssertEqual(
            tag.process(
                h("90C4000029022CF362B7BF4311FF3BE1DAA295E8C68DE09050560D19B9E16C2393AE9CD1FAC75D0CE20BCD1D06E600")),
            h("203BB55D1089D5879100"))
        XCTAssertEqual(tag.keys[2], h("F3847D627727ED3BC9C4CC050489B966"))
        XCTAssertEqual(tag.keyVersions[2], 1)
        // Table 27: ChangeKey 0, the session's own key: a bare 9100.
        XCTAssertEqual(
            tag.process(
                h("90C400002900C0EB4DEEFEDDF0B513A03A95A75491818580503190D4D05053FF75668A01D6FDA6610234BDED643200")),
            h("9100"))
        XCTAssertEqual(tag.keys[0], h("5004BF991F408672B1EF00F08F9E8647"))
        XCTAssertNil(tag.session)
    }
}
