import DoorCore
import Foundation
import NFCReader
import TestSupport
import XCTest

/// `NFCReader.pollTap` through the real libnfc against pn532-sim: an NTAG21x
/// is read as a sticker, an NTAG 424 DNA is tapped (NDEF, then EV2 with the
/// key given for its UID), and an ISO-DEP target's presence follows it.
final class TapPollTests: XCTestCase {
    let ntag = TagUID(hex: "04A1B2C3D4E5F6")!
    let dna = TagUID(hex: "04DE5F1EACC040")!

    func testATypeTwoTagAndA424AreEachReadTheirWay() throws {
        let sim = try PN532SimProcess()
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        defer { reader.close() }
        var asked: [TagUID] = []
        XCTAssertNil(
            try reader.pollTap {
                asked.append($0); return nil
            }, "no tag yet")

        let image = try TagImage.make(
            type: .ntag213, uid: ntag, message: NDEFMessage(records: [.uri("https://example.com/")]))
        let file = sim.path("ntag.bin")
        try Data(image.bytes).write(to: URL(fileURLWithPath: file))
        XCTAssertTrue(try sim.control("insert \(ntag.hex) \(file)").hasPrefix("ok"))
        guard
            case .type2(let read) = try XCTUnwrap(
                try reader.pollTap {
                    asked.append($0); return nil
                })
        else {
            return XCTFail("an NTAG213 is read as a Type 2 tag")
        }
        XCTAssertEqual(read.uid, ntag)
        XCTAssertEqual(try read.message?.firstURI(), "https://example.com/")
        XCTAssertEqual(asked, [], "no 424 key is asked for a Type 2 tag")
        _ = try sim.control("remove")

        // A factory 424: the zero key proves it, any other is refused.
        XCTAssertTrue(try sim.control("insert ntag424 \(dna.hex)").hasPrefix("ok"))
        guard
            case .ntag424(let tap) = try XCTUnwrap(
                try reader.pollTap {
                    asked.append($0); return [UInt8](repeating: 0, count: 16)
                })
        else {
            return XCTFail("a 424 is tapped as one")
        }
        XCTAssertEqual(tap.proof, .authenticated(cardUID: dna.bytes))
        XCTAssertEqual(asked, [dna], "the key is asked for the anticollision UID")
        XCTAssertTrue(try reader.isPresentISODep(dna))
        _ = try sim.control("remove")
        XCTAssertFalse(try reader.isPresentISODep(dna))
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
        guard case .ntag424(let refused) = try XCTUnwrap(try reader.pollTap { _ in Array(repeating: 7, count: 16) })
        else {
            return XCTFail("a 424 is tapped as one")
        }
        guard case .refused = refused.proof else { return XCTFail("\(refused.proof)") }
    }

    /// The NDEF file of the factory 424 in the field holds one URI record (raw libnfc,
    /// ISOUpdateBinary: a factory NDEF file has free write access).
    func writeURI(_ sim: PN532SimProcess, _ url: String) throws {
        let dev = try NTAG424LibnfcTests.Device(tty: sim.tty)
        XCTAssertNotNil(dev.select())
        let record = [0xD1, 0x01, UInt8(url.utf8.count + 1), 0x55, 0x04] + Array(url.utf8)
        let file = [0x00, UInt8(record.count)] + record
        XCTAssertEqual(dev.transceive(Hex.decode("00A4040C07D276000085010100")!), [0x90, 0x00])
        XCTAssertEqual(dev.transceive(Hex.decode("00A4000C02E104")!), [0x90, 0x00])
        XCTAssertEqual(dev.transceive([0x00, 0xD6, 0x00, 0x00, UInt8(file.count)] + file), [0x90, 0x00])
    }

    /// The chip's commands since the last `stats reset`, by code (`40:6,60:1`).
    func commands(_ sim: PN532SimProcess) throws -> [String: Int] {
        let line = try sim.control("stats")
        let field = try XCTUnwrap(line.split(separator: " ").first { $0.hasPrefix("commands=") }).dropFirst(9)
        var out: [String: Int] = [:]
        for pair in field.split(separator: ",") {
            let kv = pair.split(separator: ":")
            if kv.count == 2 { out[String(kv[0])] = Int(kv[1]) }
        }
        return out
    }

    /// One field of pn532-sim's `stats` line (`activations=1`).
    func stat(_ sim: PN532SimProcess, _ name: String) throws -> Int {
        let line = try sim.control("stats")
        let field = try XCTUnwrap(line.split(separator: " ").first { $0.hasPrefix(name + "=") }, line)
        return try XCTUnwrap(Int(field.dropFirst(name.count + 1)), line)
    }

    /// Every tap activates its tag once, a sticker as a 424: one InAutoPoll, one WUPA the
    /// tag answered (pn532-sim's `activations`), no InListPassiveTarget — whether the tag
    /// was in the field before the poll or arrived while it ran. (The door polled 20h then
    /// 10h until 2026-12: a sticker did not fit 20h and was halted, woken and activated
    /// again for 10h.)
    func testEachTapActivatesItsTagOnce() throws {
        let sim = try PN532SimProcess()
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        defer { reader.close() }
        let image = try TagImage.make(
            type: .ntag213, uid: ntag, message: NDEFMessage(records: [.uri("https://example.com/")]))
        let file = sim.path("ntag.bin")
        try Data(image.bytes).write(to: URL(fileURLWithPath: file))
        for (what, insert) in [("sticker", "insert \(ntag.hex) \(file)"), ("424", "insert ntag424 \(dna.hex)")] {
            for arrivesDuringThePoll in [false, true] {
                _ = try? sim.control("remove")
                XCTAssertEqual(try sim.control("stats reset"), "ok reset")
                var polled: PolledTap?
                if arrivesDuringThePoll {
                    // The poll is in flight (150 ms) when the tag comes: another pn532-sim
                    // process sends the insert a moment after the poll began.
                    let late = Process()
                    late.executableURL = URL(fileURLWithPath: "/bin/sh")
                    late.arguments = [
                        "-c", "sleep 0.05; exec \"$0\" --control \"$1\" --send \"$2\" > /dev/null",
                        Run.product("pn532-sim").path, sim.socket, insert,
                    ]
                    try late.run()
                    defer { late.waitUntilExit() }
                    let deadline = Date().addingTimeInterval(3)
                    while polled == nil && Date() < deadline {
                        polled = try reader.pollTap { _ in [UInt8](repeating: 0, count: 16) }
                    }
                } else {
                    XCTAssertTrue(try sim.control(insert).hasPrefix("ok"))
                    polled = try reader.pollTap { _ in [UInt8](repeating: 0, count: 16) }
                }
                let tap = try XCTUnwrap(polled, "\(what): no tap")
                switch (what, tap) {
                case ("sticker", .type2(let read)): XCTAssertEqual(try read.message?.firstURI(), "https://example.com/")
                case ("424", .ntag424(let t)): XCTAssertEqual(t.proof, .authenticated(cardUID: dna.bytes))
                default: XCTFail("\(what): \(tap)")
                }
                let during = arrivesDuringThePoll ? " (arriving during the poll)" : ""
                let stats = try sim.control("stats")
                XCTAssertEqual(try stat(sim, "activations"), 1, "\(what)\(during): \(stats)")
                XCTAssertNil(try commands(sim)["4A"], "\(what)\(during): no InListPassiveTarget")
            }
        }
    }

    /// InAutoPoll's answer: a type A target's data (its UID, SAK and ATS) whatever type it
    /// was found by; a target of another type (a DEP target, 40h, whose data is no type A
    /// data) only noted; two targets: the last type A one; bad data an I/O error.
    func testInAutoPollAnswersAreReadByTheirType() throws {
        XCTAssertTrue(try InAutoPollAnswer([0x00]).isEmpty)
        let sticker = [0x01, 0x00, 0x44, 0x00, 0x07] + ntag.bytes
        for type: UInt8 in [0x00, 0x10] {
            let a = try InAutoPollAnswer([0x01, type, UInt8(sticker.count)] + sticker)
            XCTAssertEqual(a.typeA, InAutoPollAnswer.TypeA(uid: ntag, sak: 0x00, ats: nil))
            XCTAssertEqual(a.otherTypes, [])
        }
        let ats: [UInt8] = [0x06, 0x77, 0x77, 0x71, 0x02, 0x80]
        let iso = [0x01, 0x03, 0x44, 0x20, 0x07] + dna.bytes + ats
        XCTAssertEqual(
            try InAutoPollAnswer([0x01, 0x20, UInt8(iso.count)] + iso).typeA,
            InAutoPollAnswer.TypeA(uid: dna, sak: 0x20, ats: ats))
        // DEP (UM0701-02 §7.3.13: Tg, NFCID3t (10), DIDt, BSt, BRt, TO, PPt): not type A data.
        let dep: [UInt8] = [0x01] + Array(repeating: 0x08, count: 10) + [0x00, 0x00, 0x00, 0x0E, 0x32]
        let depOnly = try InAutoPollAnswer([0x01, 0x40, UInt8(dep.count)] + dep)
        XCTAssertNil(depOnly.typeA)
        XCTAssertEqual(depOnly.otherTypes, [0x40])
        XCTAssertFalse(depOnly.isEmpty)
        let both = try InAutoPollAnswer(
            [0x02, 0x40, UInt8(dep.count)] + dep + [0x10, UInt8(sticker.count)] + sticker)
        XCTAssertEqual(both.typeA?.uid, ntag)
        XCTAssertEqual(both.otherTypes, [0x40])
        let bad: [[UInt8]] = [
            [], [0x03], [0x01], [0x01, 0x10, 0x09] + sticker.prefix(9),
            [0x01, 0x10, 0x05, 0x01, 0x00, 0x44, 0x00, 0x07],
        ]
        for bad in bad {
            XCTAssertThrowsError(try InAutoPollAnswer(bad), "\(bad)") {
                guard case ReaderError.io = $0 else { return XCTFail("\($0)") }
            }
        }
    }

    /// The door's 424 tap: one InAutoPoll activates the tag with its ATS, no SetParameters,
    /// no second activation; the NDEF file in one ISOReadBinary once its length is known;
    /// GetVersion only when the tag did not prove the key.
    func testA424TapIsOneActivationAndGetVersionOnlyWithoutTheProof() throws {
        let sim = try PN532SimProcess()
        XCTAssertTrue(try sim.control("insert ntag424 \(dna.hex)").hasPrefix("ok"))
        try writeURI(sim, "example.com/a-door-tag")
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        defer { reader.close() }
        let factory = [UInt8](repeating: 0, count: 16)
        var counts: [[String: Int]] = []
        var taps: [NTAG424Tap] = []
        for key in [factory, factory, [UInt8](repeating: 7, count: 16)] {
            _ = try sim.control("remove")
            XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
            XCTAssertEqual(try sim.control("stats reset"), "ok reset")
            guard case .ntag424(let tap) = try XCTUnwrap(try reader.pollTap { _ in key }) else {
                return XCTFail("a 424 is tapped as one")
            }
            XCTAssertEqual(try tap.message?.firstURI(), "https://example.com/a-door-tag")
            XCTAssertEqual(tap.ats, [0x77, 0x77, 0x71, 0x02, 0x80])
            taps.append(tap)
            counts.append(try commands(sim))
        }
        for c in counts {
            XCTAssertEqual(c["60"], 1, "one InAutoPoll: \(c)")
            XCTAssertNil(c["4A"], "no second activation: \(c)")
            XCTAssertNil(c["12"], "no SetParameters: \(c)")
        }
        XCTAssertEqual(taps[0].proof, .authenticated(cardUID: dna.bytes))
        XCTAssertEqual(taps[1].proof, .authenticated(cardUID: dna.bytes))
        XCTAssertEqual(taps[0].version, [], "the key proved: no GetVersion")
        // Select the application and the file, read, EV2 in two parts, GetCardUID; NLEN alone the first time.
        XCTAssertEqual(counts[0]["40"], 7)
        XCTAssertEqual(counts[1]["40"], 6, "NLEN and the message in one read once the length is known")
        guard case .refused = taps[2].proof else { return XCTFail("another key: \(taps[2].proof)") }
        XCTAssertEqual(Array(taps[2].version.prefix(3)), [0x04, 0x04, 0x02], "refused: GetVersion tells it is a 424")
        XCTAssertEqual(counts[2]["40"], 5 + 3, "no GetCardUID; GetVersion's three parts after the refusal")
    }

    /// A remembered length that no longer fits (the message grew, or shrank) still gives
    /// the whole message and only it: an empty factory file, then the door's template
    /// written by provisioning (read back with a remembered length too short), then the
    /// file emptied by a reset (read with one too long).
    func testAStaleRememberedLengthStillReadsTheWholeMessage() throws {
        let sim = try PN532SimProcess()
        XCTAssertTrue(try sim.control("insert ntag424 \(dna.hex)").hasPrefix("ok"))
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        defer { reader.close() }
        let master = [UInt8](repeating: 0x5A, count: 16)
        func tap(_ key: [UInt8]?) throws -> NTAG424Tap? {
            _ = try sim.control("remove")
            XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok"))
            guard case .ntag424(let t) = try XCTUnwrap(try reader.pollTap { _ in key }) else {
                XCTFail("a 424 is tapped as one")
                return nil
            }
            return t
        }
        XCTAssertEqual(try tap(nil)?.ndef, [], "a factory NDEF file: NLEN 0")
        XCTAssertNotNil(try reader.provisionNTAG424(masterKey: master, base: "https://door.example/t"))
        let key0 = try NTAG424.tagKey(masterKey: master, uid: dna.bytes, keyNumber: 0)
        let provisioned = try XCTUnwrap(try tap(key0))
        XCTAssertEqual(provisioned.proof, .authenticated(cardUID: dna.bytes))
        let uri = try XCTUnwrap(try provisioned.message?.firstURI())
        XCTAssertTrue(uri.hasPrefix("https://door.example/t"), uri)
        XCTAssertGreaterThan(provisioned.ndef.count, 40)
        XCTAssertEqual(try reader.resetNTAG424(masterKey: master), dna)
        let reset = try XCTUnwrap(try tap(nil))
        XCTAssertEqual(reset.ndef, [], "the emptied file, though its length was remembered longer")
        XCTAssertEqual(Array(reset.version.prefix(3)), [0x04, 0x04, 0x02], "no proof: GetVersion identified it")
    }
}
