import DoorCore
import Foundation
import TestSupport
import XCTest

private func h(_ s: String) -> [UInt8] {
    guard let b = Hex.decode(s.filter { !$0.isWhitespace }) else { fatalError("bad hex in test: \(s)") }
    return b
}

private let zeroKey = [UInt8](repeating: 0, count: 16)

/// The crypto core of NTAG 424 DNA against published values: RFC 4493 for
/// AES-CMAC, NXP AN12196 rev. 1.8 (table numbers in the names) for SUN, EV2
/// authentication, secure messaging and ChangeKey, AN10922 §2.2.1 for key
/// diversification. The reader and the emulator both run this core, so these
/// vectors are what keep a shared bug out.
final class NTAG424CryptoTests: XCTestCase {
    // MARK: RFC 4493 §4

    let rfcKey = h("2b7e151628aed2a6abf7158809cf4f3c")
    let rfcMessage = h(
        """
        6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
        30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710
        """)

    func testRFC4493Subkeys() throws {
        let (k1, k2) = try Crypto.cmacSubkeys(key: rfcKey)
        XCTAssertEqual(k1, h("fbeed618357133667c85e08f7236a8de"))
        XCTAssertEqual(k2, h("f7ddac306ae266ccf90bc11ee46d513b"))
    }

    func testRFC4493Examples1To4() throws {
        XCTAssertEqual(try Crypto.aesCMAC(key: rfcKey, message: []), h("bb1d6929e95937287fa37d129b756746"))
        XCTAssertEqual(
            try Crypto.aesCMAC(key: rfcKey, message: Array(rfcMessage[0..<16])), h("070a16b46b4d4144f79bdd9dd04a287c"))
        XCTAssertEqual(
            try Crypto.aesCMAC(key: rfcKey, message: Array(rfcMessage[0..<40])), h("dfa66747de9ae63030ca32611497c827"))
        XCTAssertEqual(try Crypto.aesCMAC(key: rfcKey, message: rfcMessage), h("51f0bebf7e3b9d92fc49741779363cfe"))
    }

    func testCBCRefusesPartialBlocksAndRoundTrips() throws {
        XCTAssertThrowsError(try Crypto.aes128CBC(.encrypt, key: rfcKey, iv: zeroKey, data: [1, 2, 3]))
        XCTAssertThrowsError(try Crypto.aes128CBC(.encrypt, key: [1], iv: zeroKey, data: zeroKey))
        let c = try Crypto.aes128CBC(.encrypt, key: rfcKey, iv: zeroKey, data: rfcMessage)
        // NIST SP 800-38A F.2.1 (CBC-AES128, its IV is 000102…0f).
        let nist = try Crypto.aes128CBC(
            .encrypt, key: rfcKey, iv: h("000102030405060708090a0b0c0d0e0f"), data: rfcMessage)
        XCTAssertEqual(Array(nist[0..<16]), h("7649abac8119b246cee98e9b12e9197d"))
        XCTAssertEqual(Array(nist[48..<64]), h("3ff1caa1681fac09120eca307586e1a7"))
        XCTAssertEqual(try Crypto.aes128CBC(.decrypt, key: rfcKey, iv: zeroKey, data: c), rfcMessage)
    }

    func testMACtTakesTheOddBytes() {
        XCTAssertEqual(
            NTAG424.truncated(h("E194C7EE12D9F7EE8A65C8331B704386")), h("94EED9EE65337086"))  // AN T5
    }

    func testPaddingAlwaysAddedAndStrictlyRemoved() throws {
        XCTAssertEqual(NTAG424.pad([]).count, 16)
        XCTAssertEqual(NTAG424.pad(zeroKey).count, 32)
        XCTAssertEqual(try NTAG424.unpad(NTAG424.pad([1, 0, 2])), [1, 0, 2])
        XCTAssertThrowsError(try NTAG424.unpad(zeroKey))
        XCTAssertThrowsError(try NTAG424.unpad([0x80] + [UInt8](repeating: 0, count: 16)))
    }

    // MARK: SUN (AN12196 Tables 2–6)

    func testAN12196Table2SDMSessionKeys() throws {
        let k = h("5ACE7E50AB65D5D51FD5BF5A16B8205B"), uid = h("04C767F2066180")
        XCTAssertEqual(
            try NTAG424.sdmSessionENCKey(fileReadKey: k, uid: uid, counter: 1), h("66DA61797E23DECA5D8ECA13BBADF7A9"))
        XCTAssertEqual(
            try NTAG424.sdmSessionMACKey(fileReadKey: k, uid: uid, counter: 1), h("3A3E8110E05311F7A3FCF0D969BF2B48"))
    }

    func testAN12196Tables3And5PICCDataAndEmptyInputSDMMAC() throws {
        let picc = try NTAG424.decryptPICCData(metaReadKey: zeroKey, encrypted: h("EF963FF7828658A599F3041510671E88"))
        XCTAssertEqual(picc.tag, 0xC7)
        XCTAssertEqual(picc.uid, h("04DE5F1EACC040"))
        XCTAssertEqual(picc.counter, 61)
        XCTAssertEqual(
            picc.block(random: h("DA5CF60941")), h("C704DE5F1EACC0403D0000DA5CF60941"))
        let ks = try NTAG424.sdmSessionMACKey(fileReadKey: zeroKey, uid: picc.uid, counter: picc.counter)
        XCTAssertEqual(ks, h("3FB5F6E3A807A03D5E3570ACE393776F"))
        XCTAssertEqual(try NTAG424.cmac(key: ks, []), h("E194C7EE12D9F7EE8A65C8331B704386"))
        XCTAssertEqual(
            try NTAG424.sdmMAC(fileReadKey: zeroKey, uid: picc.uid, counter: picc.counter, input: []),
            h("94EED9EE65337086"))
    }

    func testAN12196Table4SDMEncryptedFileData() throws {
        let picc = try NTAG424.decryptPICCData(metaReadKey: zeroKey, encrypted: h("FDE4AFA99B5C820A2C1BB0F1C792D0EB"))
        XCTAssertEqual(picc.block(random: h("851ECB67D4")), h("C704958CAA5C5E80010000851ECB67D4"))
        let ke = try NTAG424.sdmSessionENCKey(fileReadKey: zeroKey, uid: picc.uid, counter: 1)
        XCTAssertEqual(ke, h("8097D73344D53F963B09E23E03B62336"))
        XCTAssertEqual(try NTAG424.sdmFileDataIV(sessionENCKey: ke, counter: 1), h("7B3F3CFC39D3B7FF5868636E38AF7C3A"))
        XCTAssertEqual(
            try NTAG424.sdmFileData(
                .decrypt, fileReadKey: zeroKey, uid: picc.uid, counter: 1, data: h("94592FDE69FA06E8E3B6CA686A22842B")),
            Array("xxxxxxxxxxxxxxxx".utf8))
    }

    func testAN12196Table6MACOverEncryptedDataAndItsURL() throws {
        let url = try SUNURL.parse(
            "https://example.com/?picc_data=FD91EC264309878BE6345CBE53BADF40&enc=CEE9A53E3E463EF1F459635736738962&cmac=ECC1E7F6C6C73BF6"
        )
        XCTAssertEqual(url.macInput, Array("CEE9A53E3E463EF1F459635736738962&cmac=".utf8))
        let picc = try NTAG424.decryptPICCData(metaReadKey: zeroKey, encrypted: url.encryptedPICCData)
        XCTAssertEqual(picc.block(random: h("A243C86DFC")), h("C704958CAA5C5E80080000A243C86DFC"))
        let ks = try NTAG424.sdmSessionMACKey(fileReadKey: zeroKey, uid: picc.uid, counter: picc.counter)
        XCTAssertEqual(ks, h("3ED0920E5E6A0320D823D5987FEAFBB1"))
        XCTAssertEqual(try NTAG424.cmac(key: ks, url.macInput), h("81EC45C175E72FF6FAC61BC7AB3BAEF6"))
        let v = try url.verify(metaReadKey: zeroKey, fileReadKey: zeroKey)
        XCTAssertTrue(v.macOK)
        XCTAssertEqual(v.piccData.counter, 8)
        XCTAssertEqual(v.fileData, Array("xxxxxxxxxxxxxxxx".utf8))
    }

    func testSUNURLLayoutsAndRefusals() throws {
        let e = try SUNURL.parse("https://choose.url.com/ntag424?e=EF963FF7828658A599F3041510671E88&c=94EED9EE65337086")
        XCTAssertEqual(e.layout, .e)
        XCTAssertEqual(e.macInput, [])
        XCTAssertTrue(try e.verify(metaReadKey: zeroKey, fileReadKey: zeroKey).macOK)
        let p = try SUNURL.parse("lnurlw://x.y/ln?p=ef963ff7828658a599f3041510671e88&c=94eed9ee65337086")
        XCTAssertEqual(p.layout, .p)
        XCTAssertTrue(try p.verify(metaReadKey: zeroKey, fileReadKey: zeroKey).macOK)
        // One flipped MAC bit, or the wrong file key: the MAC does not hold.
        let bad = try SUNURL.parse("https://a/?e=EF963FF7828658A599F3041510671E88&c=94EED9EE65337087")
        XCTAssertFalse(try bad.verify(metaReadKey: zeroKey, fileReadKey: zeroKey).macOK)
        var other = zeroKey
        other[15] = 1
        XCTAssertFalse(try e.verify(metaReadKey: zeroKey, fileReadKey: other).macOK)
        // The wrong meta key decrypts to something that is not PICCData.
        XCTAssertThrowsError(try e.verify(metaReadKey: other, fileReadKey: zeroKey))
        for text in [
            "https://a/", "https://a/?c=94EED9EE65337086", "https://a/?e=EF96&c=94EED9EE65337086",
            "https://a/?e=EF963FF7828658A599F3041510671E88",
            "https://a/?e=zz963FF7828658A599F3041510671E88&c=94EED9EE65337086",
            "https://a/?e=EF963FF7828658A599F3041510671E88EF963FF7828658A5&c=94EED9EE65337086",
            "https://a/?e=EF963FF7828658A599F3041510671E88&e=EF963FF7828658A599F3041510671E88&c=94EED9EE65337086",
        ] {
            XCTAssertThrowsError(try SUNURL.parse(text), text)
        }
        XCTAssertThrowsError(
            try NTAG424.decryptPICCData(metaReadKey: zeroKey, encrypted: [UInt8](repeating: 0, count: 24))
        ) {
            XCTAssertTrue("\($0)".contains("LRP"), "\($0)")
        }
    }

    // MARK: EV2 authentication (AN12196 Tables 14, 20, 24)

    func testAN12196Table14AuthenticateEV2FirstWithKey0() throws {
        let rndB = h("B9E2FC789B64BF237CCCAA20EC7E6E48"), rndA = h("13C5DB8A5930439FC3DEF9A4C675360F")
        // Tag side: > 9071000002 00 0000 < E(K,RndB) 91AF
        let challenge = try NTAG424.EV2.tagChallenge(key: zeroKey, rndB: rndB)
        XCTAssertEqual(challenge, h("A04C124213C186F22399D33AC2A30215"))
        // Reader side: > 90AF000020 E(K, RndA ‖ RndB') 00
        let step2 = try NTAG424.EV2.readerResponse(key: zeroKey, encryptedRndB: challenge, rndA: rndA)
        XCTAssertEqual(step2.rndB, rndB)
        XCTAssertEqual(
            step2.message, h("35C3E05A752E0144BAC0DE51C1F22C56B34408A23D8AEA266CAB947EA8E0118D"))
        XCTAssertEqual(try NTAG424.EV2.tagVerify(key: zeroKey, rndB: rndB, message: step2.message), rndA)
        // < E(K, TI ‖ RndA' ‖ PDcap2 ‖ PCDcap2) 9100
        let answer = try NTAG424.EV2.tagAnswerFirst(key: zeroKey, ti: h("9D00C4DF"), rndA: rndA)
        XCTAssertEqual(answer, h("3FA64DB5446D1F34CD6EA311167F5E4985B89690C04A05F17FA7AB2F08120663"))
        let done = try NTAG424.EV2.readerFinishFirst(key: zeroKey, rndA: rndA, rndB: rndB, answer: answer)
        XCTAssertEqual(done.session.ti, h("9D00C4DF"))
        XCTAssertEqual(done.session.commandCounter, 0)
        XCTAssertEqual(done.pdCap2, [0, 0, 0, 0, 0, 0])
        XCTAssertEqual(done.session.encKey, h("1309C877509E5A215007FF0ED19CA564"))
        XCTAssertEqual(done.session.macKey, h("4C6626F5E72EA694202139295C7A7FC7"))
    }

    func testEV2RefusesATagWithoutTheKeyAndAReaderWithoutIt() throws {
        let rndB = h("B9E2FC789B64BF237CCCAA20EC7E6E48"), rndA = h("13C5DB8A5930439FC3DEF9A4C675360F")
        var wrong = zeroKey
        wrong[0] = 1
        // A tag with another key: its answer does not carry RndA'.
        let forged = try NTAG424.EV2.tagAnswerFirst(key: wrong, ti: h("9D00C4DF"), rndA: rndA)
        XCTAssertThrowsError(try NTAG424.EV2.readerFinishFirst(key: zeroKey, rndA: rndA, rndB: rndB, answer: forged)) {
            XCTAssertEqual($0 as? NTAG424.Failure, .authenticationFailed)
        }
        // A reader with another key: the tag does not find RndB'.
        let challenge = try NTAG424.EV2.tagChallenge(key: zeroKey, rndB: rndB)
        let step2 = try NTAG424.EV2.readerResponse(key: wrong, encryptedRndB: challenge, rndA: rndA)
        XCTAssertThrowsError(try NTAG424.EV2.tagVerify(key: zeroKey, rndB: rndB, message: step2.message))
    }

    func testAN12196Table20AuthenticateEV2FirstWithKey3() throws {
        let challenge = h("B875CEB0E66A6C5CD00898DC371F92D1"), rndA = h("B98F4C50CF1C2E084FD150E33992B048")
        let step2 = try NTAG424.EV2.readerResponse(key: zeroKey, encryptedRndB: challenge, rndA: rndA)
        XCTAssertEqual(step2.message, h("FF0306E47DFBC50087C4D8A78E88E62DE1E8BE457AA477C707E2F0874916A8B1"))
        let done = try NTAG424.EV2.readerFinishFirst(
            key: zeroKey, keyNumber: 3, rndA: rndA, rndB: step2.rndB,
            answer: h("0CC9A8094A8EEA683ECAAC5C7BF20584206D0608D477110FC6B3D5D3F65C3A6A"))
        XCTAssertEqual(done.session.ti, h("7614281A"))
        XCTAssertEqual(done.session.encKey, h("7A93D6571E4B180FCA6AC90C9A7488D4"))
        XCTAssertEqual(done.session.macKey, h("FC4AF159B62E549B5812394CAB1918CC"))
    }

    func testAN12196Table24AuthenticateEV2NonFirstKeepsTIAndCounter() throws {
        let challenge = h("A6A2B3C572D06C097BB8DB70463E22DC"), rndA = h("60BE759EDA560250AC57CDDC11743CF6")
        let step2 = try NTAG424.EV2.readerResponse(key: zeroKey, encryptedRndB: challenge, rndA: rndA)
        let previous = NTAG424.Session(encKey: zeroKey, macKey: zeroKey, ti: h("7614281A"), commandCounter: 2)
        let answer = try NTAG424.EV2.tagAnswerNonFirst(key: zeroKey, rndA: rndA)
        let s = try NTAG424.EV2.readerFinishNonFirst(
            key: zeroKey, rndA: rndA, rndB: step2.rndB, answer: answer, previous: previous)
        XCTAssertEqual(s.encKey, h("4CF3CB41A22583A61E89B158D252FC53"))
        XCTAssertEqual(s.macKey, h("5529860B2FC5FB6154B7F28361D30BF9"))
        XCTAssertEqual(s.ti, previous.ti)
        XCTAssertEqual(s.commandCounter, 2)
    }

    // MARK: Secure messaging (AN12196 Tables 8, 18, 19, 22, 26, 27, 29)

    var table14Session: NTAG424.Session {
        NTAG424.Session(
            encKey: h("1309C877509E5A215007FF0ED19CA564"), macKey: h("4C6626F5E72EA694202139295C7A7FC7"),
            ti: h("9D00C4DF"))
    }

    func testAN12196Table8GetFileSettingsInMACMode() throws {
        var s = NTAG424.Session(encKey: zeroKey, macKey: h("8248134A386E86EB7FAF54A52E536CB6"), ti: h("7A21085E"))
        XCTAssertEqual(
            try s.sealCommand(ins: 0xF5, header: [0x02], data: [], mode: .mac), h("02 6597A457C8CD442C"))
        let settings = h("0040EEEE000100D1FE001F00004400004400002000006A0000")
        var tag = s
        XCTAssertEqual(
            try tag.openCommand(ins: 0xF5, body: h("02 6597A457C8CD442C"), headerLength: 1, mode: .mac), [0x02])
        XCTAssertEqual(try tag.sealResponse(settings, status: 0x00, mode: .mac), settings + h("2A474282E7A47986"))
        XCTAssertEqual(try s.openResponse(settings + h("2A474282E7A47986"), status: 0x00, mode: .mac), settings)
        XCTAssertEqual(s.commandCounter, 1)
        var replay = s
        XCTAssertThrowsError(try replay.openResponse(settings + h("2A474282E7A47986"), status: 0x00, mode: .mac))
    }

    func testAN12196Table18WriteDataFullIVAndResponseMAC() throws {
        var s = table14Session
        XCTAssertEqual(try s.commandIV(), h("D2CB7277A17841A06654A48188C1F8F5"))
        XCTAssertEqual(try s.openResponse(h("FC222E5F7A542452"), status: 0x00, mode: .full), [])
    }

    func testAN12196Table19ChangeFileSettingsFull() throws {
        var s = table14Session
        s.commandCounter = 1
        XCTAssertEqual(try s.commandIV(), h("3E27082AB2ACC1EF55C57547934E9962"))
        let settings = h("40 00E0 C1 F121 200000 430000 430000")
        let body = try s.sealCommand(ins: 0x5F, header: [0x02], data: settings, mode: .full)
        XCTAssertEqual(body, h("02 61B6D97903566E84C3AE5274467E89EA D799B7C1A0EF7A04"))
        let tag = s
        XCTAssertEqual(try tag.openCommand(ins: 0x5F, body: body, headerLength: 1, mode: .full), [0x02] + settings)
        var tampered = body
        tampered[3] ^= 1
        XCTAssertThrowsError(try tag.openCommand(ins: 0x5F, body: tampered, headerLength: 1, mode: .full))
        XCTAssertEqual(try s.openResponse(h("57BFF87B1241E93D"), status: 0x00, mode: .full), [])
    }

    func testAN12196Table22WriteDataFullInTheKey3Session() throws {
        var s = NTAG424.Session(
            encKey: h("7A93D6571E4B180FCA6AC90C9A7488D4"), macKey: h("FC4AF159B62E549B5812394CAB1918CC"),
            ti: h("7614281A"), keyNumber: 3)
        let body = h("03 000000 0A0000 6B5E6804909962FC4E3FF5522CF0F843 6C0C53315B9C73AA")
        let plain = try s.openCommand(ins: 0x8D, body: body, headerLength: 7, mode: .full)
        XCTAssertEqual(Array(plain[0..<7]), h("03 000000 0A0000"))
        XCTAssertEqual(plain.count, 7 + 10)
        XCTAssertEqual(
            try s.sealCommand(ins: 0x8D, header: Array(plain[0..<7]), data: Array(plain[7...]), mode: .full), body)
        XCTAssertEqual(try s.openResponse(h("C26D236E4A7C046D"), status: 0x00, mode: .full), [])
    }

    func testCRC32NKOfTable26NewKey() {
        XCTAssertEqual(NTAG424.crc32NK(h("F3847D627727ED3BC9C4CC050489B966")), h("789DFADC"))
        // The IEEE CRC-32 of "123456789" is CBF43926; without the final complement: 340BC6D9, sent LSB first.
        XCTAssertEqual(NTAG424.crc32NK(Array("123456789".utf8)), h("D9C60B34"))
    }

    var table24Session: NTAG424.Session {
        NTAG424.Session(
            encKey: h("4CF3CB41A22583A61E89B158D252FC53"), macKey: h("5529860B2FC5FB6154B7F28361D30BF9"),
            ti: h("7614281A"), commandCounter: 2)
    }

    func testAN12196Table26ChangeKeyOfAnotherKeyWithCRC() throws {
        var s = table24Session
        XCTAssertEqual(try s.commandIV(), h("307EDE1814707F30CFE603DD6CA62353"))
        let data = try NTAG424.changeKeyData(newKey: h("F3847D627727ED3BC9C4CC050489B966"), version: 1, oldKey: zeroKey)
        let body = try s.sealCommand(ins: 0xC4, header: [0x02], data: data, mode: .full)
        XCTAssertEqual(
            body, h("02 2CF362B7BF4311FF3BE1DAA295E8C68DE09050560D19B9E16C2393AE9CD1FAC7 5D0CE20BCD1D06E6"))
        let opened = try s.openCommand(ins: 0xC4, body: body, headerLength: 1, mode: .full)
        XCTAssertEqual(
            NTAG424.newKey(fromChangeKeyData: Array(opened.dropFirst()), oldKey: zeroKey)?.key,
            h("F3847D627727ED3BC9C4CC050489B966"))
        // The wrong old key breaks the CRC: the tag refuses.
        XCTAssertNil(
            NTAG424.newKey(fromChangeKeyData: Array(opened.dropFirst()), oldKey: h("01") + zeroKey.dropFirst()))
        XCTAssertEqual(try s.openResponse(h("203BB55D1089D587"), status: 0x00, mode: .full), [])
    }

    func testAN12196Table27ChangeKeyOfTheAuthenticatedKey() throws {
        var s = table24Session
        s.commandCounter = 3
        XCTAssertEqual(try s.commandIV(), h("01602D579423B2797BE8B478B0B4D27B"))
        let data = try NTAG424.changeKeyData(newKey: h("5004BF991F408672B1EF00F08F9E8647"), version: 1, oldKey: nil)
        XCTAssertEqual(
            try s.sealCommand(ins: 0xC4, header: [0x00], data: data, mode: .full),
            h("00 C0EB4DEEFEDDF0B513A03A95A75491818580503190D4D05053FF75668A01D6FD A6610234BDED6432"))
    }

    func testAN12196Table29GetCardUIDFullResponse() throws {
        var s = NTAG424.Session(
            encKey: h("2B4D963C014DC36F24F69A50A394F875"), macKey: h("379D32130CE61705DD5FD8C36B95D764"),
            ti: h("DF055522"))
        XCTAssertEqual(try s.sealCommand(ins: 0x51, header: [], data: [], mode: .full), h("8E2C155ADDA99BE3"))
        var tag = s
        XCTAssertEqual(
            try tag.sealResponse(h("04958CAA5C5E80"), status: 0x00, mode: .full),
            h("70756055688505B52A5E26E59E329CD6 595F672298EA41B7"))
        XCTAssertEqual(
            try s.openResponse(h("70756055688505B52A5E26E59E329CD6 595F672298EA41B7"), status: 0x00, mode: .full),
            h("04958CAA5C5E80"))
    }

    // MARK: AN10922 §2.2.1

    func testAN10922DiversificationVector() throws {
        let master = h("00112233445566778899AABBCCDDEEFF")
        let (k1, k2) = try Crypto.cmacSubkeys(key: master)
        XCTAssertEqual(k1, h("FBC9F75C9413C041DFEE452D3F0706D1"))
        XCTAssertEqual(k2, h("F793EEB928278083BFDC8A5A7E0E0D25"))
        let m = h("04782E21801D80 3042F5 4E585020416275")
        XCTAssertEqual(try NTAG424.diversifyAN10922(masterKey: master, input: m), h("A8DD63A3B89D54B37CA802473FDA9175"))
        // With M of 16…31 bytes, D is the CMAC input's own padding: the result is CMAC(K, 01 ‖ M).
        XCTAssertEqual(
            try NTAG424.diversifyAN10922(masterKey: master, input: m),
            try Crypto.aesCMAC(key: master, message: [0x01] + m))
        // A short M still pads to 32 bytes, so it differs from CMAC(K, 01 ‖ M).
        let short = h("04782E21801D80")
        XCTAssertNotEqual(
            try NTAG424.diversifyAN10922(masterKey: master, input: short),
            try Crypto.aesCMAC(key: master, message: [0x01] + short))
        XCTAssertThrowsError(try NTAG424.diversifyAN10922(masterKey: master, input: []))
        XCTAssertThrowsError(try NTAG424.diversifyAN10922(masterKey: master, input: [UInt8](repeating: 1, count: 32)))
    }

    // MARK: The fuzz seeds (Fuzz/corpus/ntag424) reach past verification

    func testTheNTAG424FuzzSeedsAreTheVectors() throws {
        let dir = Fixtures.root.appendingPathComponent("Fuzz/corpus/ntag424")
        func url(_ name: String) throws -> SUNURL {
            let bytes = Array(try Data(contentsOf: dir.appendingPathComponent("seed-sun-\(name)")))
            XCTAssertEqual(bytes.first, 0x00)
            return try SUNURL.parse(String(decoding: bytes.dropFirst(), as: UTF8.self))
        }
        for name in ["e", "p", "enc"] {
            XCTAssertTrue(try url(name).verify(metaReadKey: zeroKey, fileReadKey: zeroKey).macOK, name)
        }
        XCTAssertFalse(try url("bad-mac").verify(metaReadKey: zeroKey, fileReadKey: zeroKey).macOK)
        XCTAssertThrowsError(try url("lrp"))
    }

    // MARK: What provisioning writes

    func testSUNTemplateReproducesAN12196Section67AndTable19() throws {
        let t = try NTAG424.SUNTemplate(base: "https://choose.url.com/ntag424")
        XCTAssertEqual(t.piccDataOffset, 0x20)
        XCTAssertEqual(t.macOffset, 0x43)
        XCTAssertEqual(t.settings, h("40 00E0 C1 F121 200000 430000 430000"))
        let url =
            "choose.url.com/ntag424?e=" + String(repeating: "0", count: 32) + "&c=" + String(repeating: "0", count: 16)
        XCTAssertEqual(
            t.file,
            [0x00, UInt8(url.utf8.count + 5), 0xD1, 0x01, UInt8(url.utf8.count + 1), 0x55, 0x04] + Array(url.utf8))
        XCTAssertEqual(Array(t.file[t.piccDataOffset..<(t.piccDataOffset + 32)]), [UInt8](repeating: 0x30, count: 32))
        XCTAssertEqual(Array(t.file[(t.macOffset - 3)..<t.macOffset]), Array("&c=".utf8))
        // A base with a query gets &e=; one too long for the 256-byte file is refused.
        XCTAssertTrue(
            String(decoding: try NTAG424.SUNTemplate(base: "http://x/?d=1").file, as: UTF8.self).contains("x/?d=1&e=0"))
        XCTAssertThrowsError(try NTAG424.SUNTemplate(base: "https://" + String(repeating: "a", count: 200)))
    }

    func testDoorKeysDiversifyAllButTheMetaReadKey() throws {
        let master = h("00112233445566778899AABBCCDDEEFF")
        let a = try NTAG424.DoorKeys(masterKey: master, uid: h("04DE5F1EACC040"), issue: .legacy)
        let b = try NTAG424.DoorKeys(masterKey: master, uid: h("04DE5F1EACC041"), issue: .legacy)
        XCTAssertEqual(a[2], b[2], "K_SDMMetaRead is the site's")
        for n in [0, 1, 3, 4] { XCTAssertNotEqual(a[n], b[n], "key \(n)") }
        XCTAssertEqual(Set(a.keys).count, 5)
        XCTAssertEqual(a[2], try NTAG424.diversifyAN10922(masterKey: master, input: Array("DoorGateway SDM meta".utf8)))
    }

    /// docs/ntag424.md "Re-issuing a tag": keys 0, 1, 3 and 4 depend on the
    /// issue's salt (a chip that took one issue's keys holds nothing of the
    /// next), key 2 stays the site's; versions step 2…255 and never repeat the last.
    func testASaltedIssueGivesKeysOfItsOwn() throws {
        let master = h("00112233445566778899AABBCCDDEEFF")
        let uid = h("04DE5F1EACC040")
        let legacy = try NTAG424.DoorKeys(masterKey: master, uid: uid, issue: .legacy)
        let s1 = NTAG424.KeyIssue(salt: Array(repeating: 1, count: 16), version: 2)
        let s2 = NTAG424.KeyIssue(salt: Array(repeating: 2, count: 16), version: 3)
        let a = try NTAG424.DoorKeys(masterKey: master, uid: uid, issue: s1)
        let b = try NTAG424.DoorKeys(masterKey: master, uid: uid, issue: s2)
        for n in [0, 1, 3, 4] {
            XCTAssertNotEqual(a[n], legacy[n], "key \(n)")
            XCTAssertNotEqual(a[n], b[n], "key \(n)")
        }
        XCTAssertEqual(a[2], legacy[2])
        XCTAssertEqual(b[2], legacy[2])
        // The documented derivation: AN10922 of the master with salt ‖ "DoorGateway key", then per UID and key.
        let issueKey = try NTAG424.diversifyAN10922(masterKey: master, input: s1.salt! + Array("DoorGateway key".utf8))
        XCTAssertEqual(a[0], try NTAG424.tagKey(masterKey: issueKey, uid: uid, keyNumber: 0))
        XCTAssertEqual(legacy[0], try NTAG424.tagKey(masterKey: master, uid: uid, keyNumber: 0))
        // Versions: the first issue 2, then one up, 255 wraps to 2; 0 and 1 never for a salted issue.
        XCTAssertEqual(NTAG424.KeyIssue.next(after: nil, salt: []).version, 2)
        XCTAssertEqual(NTAG424.KeyIssue.next(after: .legacy, salt: []).version, 2)
        XCTAssertEqual(NTAG424.KeyIssue.next(after: s2, salt: []).version, 4)
        XCTAssertEqual(NTAG424.KeyIssue.next(after: .init(salt: s1.salt, version: 255), salt: []).version, 2)
        XCTAssertTrue(s1.isWellFormed)
        XCTAssertTrue(NTAG424.KeyIssue.legacy.isWellFormed)
        XCTAssertFalse(NTAG424.KeyIssue(salt: [1], version: 2).isWellFormed)
        XCTAssertFalse(NTAG424.KeyIssue(salt: s1.salt, version: 1).isWellFormed)
        XCTAssertFalse(NTAG424.KeyIssue(salt: nil, version: 2).isWellFormed)
    }
}
