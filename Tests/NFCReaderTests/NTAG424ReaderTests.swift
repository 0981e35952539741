import DoorCore
import Foundation
import NFCReader
import TestSupport
import XCTest

/// `NFCReader.tapNTAG424` through the real libnfc against pn532-sim. The
/// emulated tag is set up over the air first (as a provisioning door would:
/// NDEF template before authenticating, SDM on, key 0 changed to its
/// diversified key), with raw libnfc and DoorCore's crypto — never with the
/// reader under test.
final class NTAG424ReaderTests: XCTestCase {
    static let uid: [UInt8] = [0x04, 0xDE, 0x5F, 0x1E, 0xAC, 0xC0, 0x40]
    static let master: [UInt8] = Array(0..<16)
    static let zero = [UInt8](repeating: 0, count: 16)
    static let url =
        "choose.url.com/ntag424?e=" + String(repeating: "0", count: 32) + "&c=" + String(repeating: "0", count: 16)

    typealias Device = NTAG424LibnfcTests.Device

    func native(_ ins: UInt8, _ body: [UInt8]) -> [UInt8] {
        [0x90, ins, 0, 0] + (body.isEmpty ? [] : [UInt8(body.count)] + body) + [0x00]
    }

    /// Template, SDM (AN12196 Table 19's settings) and key 0 := the tag's diversified key.
    func provision(_ sim: PN532SimProcess) throws {
        let dev = try Device(tty: sim.tty)
        XCTAssertNotNil(dev.select())
        let record = [0xD1, 0x01, UInt8(Self.url.utf8.count + 1), 0x55, 0x04] + Array(Self.url.utf8)
        let ndef = [0x00, UInt8(record.count)] + record
        XCTAssertEqual(dev.transceive(Hex.decode("00A4040C07D276000085010100")!), [0x90, 0x00])
        XCTAssertEqual(dev.transceive(Hex.decode("00A4000C02E104")!), [0x90, 0x00])
        XCTAssertEqual(dev.transceive([0x00, 0xD6, 0x00, 0x00, UInt8(ndef.count)] + ndef), [0x90, 0x00])
        let rndA = try Crypto.randomBytes(16)
        let r1 = try XCTUnwrap(dev.transceive(native(0x71, [0x00, 0x00])))
        let step = try NTAG424.EV2.readerResponse(key: Self.zero, encryptedRndB: Array(r1.dropLast(2)), rndA: rndA)
        let r2 = try XCTUnwrap(dev.transceive(native(0xAF, step.message)))
        var s = try NTAG424.EV2.readerFinishFirst(
            key: Self.zero, rndA: rndA, rndB: step.rndB, answer: Array(r2.dropLast(2))
        ).session
        let settings = Hex.decode("4000E0C1F121200000430000430000")!
        let cfs = try XCTUnwrap(
            dev.transceive(native(0x5F, try s.sealCommand(ins: 0x5F, header: [0x02], data: settings, mode: .full))))
        XCTAssertEqual(Array(cfs.suffix(2)), [0x91, 0x00])
        _ = try s.openResponse(Array(cfs.dropLast(2)), status: 0, mode: .full)
        let k0 = try NTAG424.tagKey(masterKey: Self.master, uid: Self.uid, keyNumber: 0)
        let data = try NTAG424.changeKeyData(newKey: k0, version: 1, oldKey: nil)
        let ck = try s.sealCommand(ins: 0xC4, header: [0x00], data: data, mode: .full)
        XCTAssertEqual(dev.transceive(native(0xC4, ck)), [0x91, 0x00])
    }

    func key(master: [UInt8]) -> (TagUID) -> [UInt8]? {
        { uid in try? NTAG424.tagKey(masterKey: master, uid: uid.bytes, keyNumber: 0) }
    }

    func testATapReadsTheSUNURLAndProvesTheDiversifiedKey() throws {
        let sim = try PN532SimProcess()
        XCTAssertTrue(try sim.control("insert ntag424 \(Hex.encode(Self.uid))").hasPrefix("ok"))
        try provision(sim)
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        let tap = try XCTUnwrap(try reader.tapNTAG424(key: key(master: Self.master)))
        XCTAssertEqual(tap.uid, TagUID(Self.uid))
        XCTAssertEqual(tap.ats, [0x77, 0x77, 0x71, 0x02, 0x80])
        XCTAssertEqual(Array(tap.version.prefix(3)), [0x04, 0x04, 0x02])
        XCTAssertEqual(tap.proof, .authenticated(cardUID: Self.uid))
        // The NDEF was read before authenticating: its SUN mirror is live, first tap counter 1.
        let uri = try XCTUnwrap(try tap.message?.firstURI())
        XCTAssertTrue(uri.hasPrefix("https://choose.url.com/ntag424?e="), uri)
        let sun = try SUNURL.parse(uri).verify(metaReadKey: Self.zero, fileReadKey: Self.zero)
        XCTAssertEqual(sun.piccData.uid, Self.uid)
        XCTAssertEqual(sun.piccData.counter, 1)
        XCTAssertTrue(sun.macOK)
        // The next tap: a new activation, counter 2.
        let again = try XCTUnwrap(try reader.tapNTAG424(key: { _ in nil }))
        XCTAssertEqual(again.proof, .notTried)
        let second = try SUNURL.parse(try XCTUnwrap(try again.message?.firstURI()))
        XCTAssertEqual(try second.verify(metaReadKey: Self.zero, fileReadKey: Self.zero).piccData.counter, 2)
    }

    func testAnotherSitesKeyOrTheFactoryKeyIsRefused() throws {
        let sim = try PN532SimProcess()
        XCTAssertTrue(try sim.control("insert ntag424 \(Hex.encode(Self.uid))").hasPrefix("ok"))
        try provision(sim)
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        let other = try XCTUnwrap(try reader.tapNTAG424(key: key(master: Array(repeating: 7, count: 16))))
        guard case .refused = other.proof else { return XCTFail("another master key: \(other.proof)") }
        let factory = try XCTUnwrap(try reader.tapNTAG424(key: { _ in Self.zero }))
        guard case .refused = factory.proof else { return XCTFail("factory key: \(factory.proof)") }
        // The right key still works afterwards (a refused attempt leaves the tag usable).
        XCTAssertEqual(try reader.tapNTAG424(key: key(master: Self.master))?.proof, .authenticated(cardUID: Self.uid))
    }

    func testAnNTAG215IsNotANTAG424AndAnEmptyFieldIsNil() throws {
        let sim = try PN532SimProcess()
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        XCTAssertNil(try reader.tapNTAG424(key: { _ in nil }))
        XCTAssertTrue(try sim.control("insert 04A1B2C3D4E5F6 ntag215").hasPrefix("ok"))
        XCTAssertThrowsError(try reader.tapNTAG424(key: { _ in nil })) {
            guard case ReaderError.notNTAG424 = $0 else { return XCTFail("\($0)") }
        }
        // The reader's NTAG21x path is unaffected afterwards (automatic RATS is off again).
        let tag = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        XCTAssertEqual(tag.uid, TagUID([0x04, 0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6]))
    }

    func testDiversifiedKeysDifferPerUIDAndKeyNumber() throws {
        let a = try NTAG424.tagKey(masterKey: Self.master, uid: Self.uid, keyNumber: 0)
        XCTAssertNotEqual(a, try NTAG424.tagKey(masterKey: Self.master, uid: Self.uid, keyNumber: 1))
        var other = Self.uid
        other[6] ^= 1
        XCTAssertNotEqual(a, try NTAG424.tagKey(masterKey: Self.master, uid: other, keyNumber: 0))
        // The documented input: M = UID ‖ KeyNo ‖ "DoorGateway", AN10922 (19 bytes: CMAC(K, 01 ‖ M)).
        XCTAssertEqual(
            a, try Crypto.aesCMAC(key: Self.master, message: [0x01] + Self.uid + [0x00] + Array("DoorGateway".utf8)))
    }

    // MARK: Provisioning (NFCReader.provisionNTAG424)

    static let base = "https://door.example/t"

    func doorKeys(_ uid: [UInt8] = uid) throws -> NTAG424.DoorKeys {
        try NTAG424.DoorKeys(masterKey: Self.master, uid: uid, issue: .legacy)
    }

    func testProvisioningAFactoryTagThenTapping() throws {
        let sim = try PN532SimProcess()
        XCTAssertTrue(try sim.control("insert ntag424 \(Hex.encode(Self.uid))").hasPrefix("ok"))
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        let done = try XCTUnwrap(try reader.provisionNTAG424(masterKey: Self.master, base: Self.base))
        XCTAssertEqual(done, NTAG424Provisioned(uid: TagUID(Self.uid), counter: 1))
        // A tap: the diversified key 0 holds, the factory key no longer does.
        let keys = try doorKeys()
        let tap = try XCTUnwrap(try reader.tapNTAG424(key: { _ in keys[0] }))
        XCTAssertEqual(tap.proof, .authenticated(cardUID: Self.uid))
        let uri = try XCTUnwrap(try tap.message?.firstURI())
        XCTAssertTrue(uri.hasPrefix("https://door.example/t?e="), uri)
        let sun = try SUNURL.parse(uri).verify(metaReadKey: keys[2], fileReadKey: keys[1])
        XCTAssertEqual(sun.piccData.counter, 2)
        XCTAssertTrue(sun.macOK)
        // The zero keys of the AN12196 example no longer verify it. (A wrong meta key may
        // decrypt to plausible PICCData by chance; the MAC never holds.)
        XCTAssertFalse((try? SUNURL.parse(uri).verify(metaReadKey: Self.zero, fileReadKey: Self.zero).macOK) ?? false)
        guard case .refused = try XCTUnwrap(try reader.tapNTAG424(key: { _ in Self.zero })).proof else {
            return XCTFail("the factory key still authenticates")
        }
        // Provisioning again finds everything done and only checks it.
        XCTAssertEqual(try reader.provisionNTAG424(masterKey: Self.master, base: Self.base)?.counter, 4)
        // Another site's master key: the tag is foreign to it.
        XCTAssertThrowsError(try reader.provisionNTAG424(masterKey: Array(repeating: 9, count: 16), base: Self.base)) {
            guard case ReaderError.foreignContent = $0 else { return XCTFail("\($0)") }
        }
    }

    /// The tag leaves the field after each exchange of a provisioning in turn;
    /// put back, the next attempt finishes it, and the tag then holds the door's keys.
    func testATearAtEveryExchangeOfProvisioningIsRecoverable() throws {
        let sim = try PN532SimProcess()
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        XCTAssertTrue(try sim.control("insert ntag424 \(Hex.encode(Self.uid))").hasPrefix("ok"))
        XCTAssertEqual(try sim.control("stats reset"), "ok reset")
        XCTAssertNotNil(try reader.provisionNTAG424(masterKey: Self.master, base: Self.base))
        let stats = try sim.control("stats")
        let total = try XCTUnwrap(
            stats.split(separator: " ").first { $0.hasPrefix("tag_exchanges=") }.flatMap { Int($0.dropFirst(14)) })
        XCTAssertGreaterThan(total, 20, stats)
        let keys = try doorKeys()
        for n in 1..<total {
            XCTAssertTrue(try sim.control("insert ntag424 \(Hex.encode(Self.uid))").hasPrefix("ok"))
            XCTAssertEqual(try sim.control("tear-after \(n)"), "ok tag leaves after \(n) exchanges")
            var first: NTAG424Provisioned?
            do {
                first = try reader.provisionNTAG424(masterKey: Self.master, base: Self.base)
            } catch {
                XCTAssertFalse(error.readerLost && !reader.isOpen, "tear after \(n): \(error)")
            }
            XCTAssertNil(first, "tear after \(n) of \(total): provisioning claimed success")
            XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok inserted NTAG424DNA"), "tear after \(n)")
            let second = try reader.provisionNTAG424(masterKey: Self.master, base: Self.base)
            XCTAssertEqual(second?.uid, TagUID(Self.uid), "tear after \(n): not finished on the second attempt")
            XCTAssertEqual(
                try reader.tapNTAG424(key: { _ in keys[0] })?.proof, .authenticated(cardUID: Self.uid),
                "tear after \(n)")
        }
    }

    func testResetReturnsATagToFactoryAndSurvivesATearAtEveryExchange() throws {
        let sim = try PN532SimProcess()
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        XCTAssertTrue(try sim.control("insert ntag424 \(Hex.encode(Self.uid))").hasPrefix("ok"))
        XCTAssertNotNil(try reader.provisionNTAG424(masterKey: Self.master, base: Self.base))
        XCTAssertEqual(try sim.control("stats reset"), "ok reset")
        XCTAssertEqual(try reader.resetNTAG424(masterKey: Self.master), TagUID(Self.uid))
        let total = try XCTUnwrap(
            try sim.control("stats").split(separator: " ").first { $0.hasPrefix("tag_exchanges=") }
                .flatMap { Int($0.dropFirst(14)) })
        // Factory again: key 0 is zero, the NDEF file is empty, and it provisions afresh (counter from 1).
        let factory = try XCTUnwrap(try reader.tapNTAG424(key: { _ in Self.zero }))
        XCTAssertEqual(factory.proof, .authenticated(cardUID: Self.uid))
        XCTAssertEqual(factory.ndef, [])
        XCTAssertEqual(try reader.provisionNTAG424(masterKey: Self.master, base: Self.base)?.counter, 1)
        for n in 1..<total {
            XCTAssertTrue(try sim.control("insert ntag424 \(Hex.encode(Self.uid))").hasPrefix("ok"))
            XCTAssertNotNil(try reader.provisionNTAG424(masterKey: Self.master, base: Self.base))
            XCTAssertEqual(try sim.control("tear-after \(n)"), "ok tag leaves after \(n) exchanges")
            XCTAssertNil(try? reader.resetNTAG424(masterKey: Self.master), "tear after \(n): reset claimed success")
            XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok inserted NTAG424DNA"), "tear after \(n)")
            XCTAssertEqual(try reader.resetNTAG424(masterKey: Self.master), TagUID(Self.uid), "tear after \(n)")
            XCTAssertEqual(
                try reader.tapNTAG424(key: { _ in Self.zero })?.proof, .authenticated(cardUID: Self.uid),
                "tear after \(n)")
        }
    }
}
