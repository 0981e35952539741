import DoorCore
import XCTest

@testable import OSDP

final class SecureChannelTests: XCTestCase {
    let cpRandom: [UInt8] = Array(0xB0...0xB7)
    let pdRandom: [UInt8] = Array(0xA0...0xA7)

    /// SIA OSDP 2.2 Annex E with SCBK-D: the session keys, both cryptograms and RMAC_I.
    func testAnnexESessionKeysCryptogramsAndInitialRMAC() throws {
        XCTAssertEqual(SecureChannel.defaultKey, hex("30 31 32 33 34 35 36 37 38 39 3A 3B 3C 3D 3E 3F"))
        let keys = try SecureChannel.sessionKeys(scbk: SecureChannel.defaultKey, cpRandom: cpRandom)
        XCTAssertEqual(keys.encryption, hex("BF 8D C2 A8 32 9A CB 8C 67 C6 D0 CD 9A 45 16 82"))
        XCTAssertEqual(keys.mac1, hex("5E 86 C6 76 60 3B DE E2 D8 BE AF E1 78 63 73 32"))
        XCTAssertEqual(keys.mac2, hex("6F DA 86 E8 57 77 7E 81 13 20 35 75 82 39 17 2E"))
        XCTAssertEqual(
            try SecureChannel.clientCryptogram(keys, cpRandom: cpRandom, pdRandom: pdRandom),
            hex("FD E5 D2 F4 28 EC 16 31 24 71 EA 3C 02 BD 77 96"))
        let server = try SecureChannel.serverCryptogram(keys, cpRandom: cpRandom, pdRandom: pdRandom)
        XCTAssertEqual(server, hex("26 D3 35 6E 07 76 2D 26 28 01 FC 8E 66 65 A8 91"))
        XCTAssertEqual(
            try SecureChannel.initialRMAC(keys, serverCryptogram: server),
            hex("B2 A3 00 57 EB 98 BA 22 29 EC 1F 87 56 62 B5 24"))
    }

    func testKeysAndRandomsOfTheWrongLengthAreRefused() {
        XCTAssertThrowsError(try SecureChannel.sessionKeys(scbk: [1, 2], cpRandom: cpRandom)) {
            XCTAssertEqual($0 as? SecureChannelError, .badKeyLength(2))
        }
        XCTAssertThrowsError(try SecureChannel.sessionKeys(scbk: SecureChannel.defaultKey, cpRandom: [1])) {
            XCTAssertEqual($0 as? SecureChannelError, .badRandomLength(1))
        }
    }

    /// The MAC is a CBC-MAC with S-MAC1 on every block but the last, S-MAC2 on the last,
    /// 80 00… padding only when the message is not whole blocks. Checked against AES-ECB
    /// steps written out here.
    func testMACChainsBlocksWithBothKeys() throws {
        let keys = try SecureChannel.sessionKeys(scbk: SecureChannel.defaultKey, cpRandom: cpRandom)
        let iv: [UInt8] = Array(100..<116)
        let message: [UInt8] = Array(0..<20)
        let b1 = zip(message[0..<16], iv).map { $0 ^ $1 }
        let c1 = try Crypto.aes128ECB(.encrypt, key: keys.mac1, block: b1)
        let last = Array(message[16..<20]) + [0x80] + [UInt8](repeating: 0, count: 11)
        let expected = try Crypto.aes128ECB(.encrypt, key: keys.mac2, block: zip(last, c1).map { $0 ^ $1 })
        XCTAssertEqual(try SecureChannel.mac(keys, iv: iv, message: message), expected)
        // Exactly one block: no padding block, S-MAC2 straight away.
        let one: [UInt8] = Array(0..<16)
        XCTAssertEqual(
            try SecureChannel.mac(keys, iv: iv, message: one),
            try Crypto.aes128ECB(.encrypt, key: keys.mac2, block: zip(one, iv).map { $0 ^ $1 }))
        // The IV matters: the same message under another chain has another MAC.
        XCTAssertNotEqual(
            try SecureChannel.mac(keys, iv: iv, message: message),
            try SecureChannel.mac(keys, iv: [UInt8](repeating: 0, count: 16), message: message))
    }

    func testDataIsEncryptedWithTheComplementedMACAsIVAndPadded() throws {
        let keys = try SecureChannel.sessionKeys(scbk: SecureChannel.defaultKey, cpRandom: cpRandom)
        let mac: [UInt8] = Array(0..<16)
        let data = hex("00 01 1A 00 AA BB CC C0")
        let sealed = try SecureChannel.encrypt(keys, lastMAC: mac, data: data)
        XCTAssertEqual(sealed.count, 16)
        let manual = try Crypto.aes128CBC(
            .encrypt, key: keys.encryption, iv: mac.map { ~$0 }, data: data + [0x80] + [UInt8](repeating: 0, count: 7))
        XCTAssertEqual(sealed, manual)
        XCTAssertEqual(try SecureChannel.decrypt(keys, lastMAC: mac, data: sealed), data)
        // 16 bytes of data take a whole padding block.
        XCTAssertEqual(try SecureChannel.encrypt(keys, lastMAC: mac, data: Array(0..<16)).count, 32)
        // Wrong IV: the padding does not come out right (or the data is garbage); empty and
        // partial blocks are refused.
        XCTAssertThrowsError(try SecureChannel.decrypt(keys, lastMAC: [UInt8](repeating: 0, count: 16), data: sealed))
        XCTAssertThrowsError(try SecureChannel.decrypt(keys, lastMAC: mac, data: [])) {
            XCTAssertEqual($0 as? SecureChannelError, .badPadding)
        }
        XCTAssertThrowsError(try SecureChannel.decrypt(keys, lastMAC: mac, data: Array(sealed.prefix(15)))) {
            XCTAssertEqual($0 as? SecureChannelError, .badPadding)
        }
        let noMarker = try Crypto.aes128CBC(
            .encrypt, key: keys.encryption, iv: mac.map { ~$0 }, data: [UInt8](repeating: 0, count: 16))
        XCTAssertThrowsError(try SecureChannel.decrypt(keys, lastMAC: mac, data: noMarker)) {
            XCTAssertEqual($0 as? SecureChannelError, .badPadding)
        }
    }

    /// A session's replies: a good one opens, a tampered, replayed or plaintext one does not
    /// (and leaves the chain where it was).
    func testSessionOpensGoodRepliesOnly() throws {
        var reader = TestReader(scbk: Array(repeating: 0x42, count: 16))
        reader.established = true
        let keys = try SecureChannel.sessionKeys(scbk: reader.scbk, cpRandom: cpRandom)
        reader.keys = keys
        let rmac: [UInt8] = Array(50..<66)
        reader.replyMAC = rmac
        var session = SecureSession(keys: keys, initialRMAC: rmac)

        reader.pending = [(0x50, hex("00 01 1A 00 AA BB CC C0"))]
        let poll1 = try session.seal(address: 1, sequence: 1, usesCRC: true, command: .poll)
        XCTAssertEqual(try Frame.parse(poll1).securityBlock?.kind, .scs15)
        let reply1 = try XCTUnwrap(reader.answer(poll1))
        XCTAssertEqual(try Frame.parse(reply1).securityBlock?.kind, .scs18)
        let opened = try session.open(try Frame.parse(reply1))
        XCTAssertEqual(opened.code, 0x50)
        XCTAssertEqual(opened.data, hex("00 01 1A 00 AA BB CC C0"))

        let poll2 = try session.seal(address: 1, sequence: 2, usesCRC: true, command: .poll)
        let reply2 = try XCTUnwrap(reader.answer(poll2))
        // Replay of the first reply (a valid frame, an old MAC): refused.
        XCTAssertThrowsError(try session.open(try Frame.parse(reply1))) {
            XCTAssertEqual($0 as? SecureChannelError, .badMAC)
        }
        // One MAC byte changed: refused.
        var tampered = try Frame.parse(reply2)
        tampered.mac![0] ^= 1
        XCTAssertThrowsError(try session.open(tampered)) { XCTAssertEqual($0 as? SecureChannelError, .badMAC) }
        // A plaintext ACK: a downgrade.
        let plain = try Frame.parse(try Frame(address: 1, isReply: true, sequence: 2, code: 0x40).encoded())
        XCTAssertThrowsError(try session.open(plain)) {
            XCTAssertEqual($0 as? SecureChannelError, .plaintextInSession(code: 0x40))
        }
        // The refusals did not move the chain: the real reply still opens.
        XCTAssertEqual(try session.open(try Frame.parse(reply2)).code, 0x40)

        // Commands with data are encrypted (SCS_17) and the reader reads them back.
        let buz = Command.buzzer(BuzzerCommand(onTime: 1, offTime: 1, count: 1))
        let sealedBuz = try session.seal(address: 1, sequence: 3, usesCRC: true, command: buz)
        let frame = try Frame.parse(sealedBuz)
        XCTAssertEqual(frame.securityBlock?.kind, .scs17)
        XCTAssertNotEqual(frame.data, buz.payload)
        XCTAssertNotNil(reader.answer(sealedBuz))
        XCTAssertEqual(reader.commandErrors, [])
    }
}
