import CNFC
import DoorCore
import Foundation
import TestSupport
import XCTest

/// The real libnfc 1.8.0 (`pn532_uart`) against the built pn532-sim holding
/// an emulated NTAG 424 DNA: activation with RATS/ATS, then APDUs through
/// `nfc_initiator_transceive_bytes` (InDataExchange). The reader's
/// cryptography is DoorCore's; the emulator shares nothing else with it.
final class NTAG424LibnfcTests: XCTestCase {
    static let uid: [UInt8] = [0x04, 0x95, 0x8C, 0xAA, 0x5C, 0x5E, 0x80]

    final class Device {
        var context: OpaquePointer?
        var device: OpaquePointer?

        init(tty: String) throws {
            nfc_init(&context)
            guard let context else { throw NSError(domain: "nfc_init", code: 1) }  // a failure, not a skip
            guard let dev = nfc_open(context, "pn532_uart:\(tty)") else { throw NSError(domain: "nfc_open", code: 1) }
            device = dev
            guard nfc_initiator_init(dev) >= 0, nfc_device_set_property_bool(dev, NP_INFINITE_SELECT, false) >= 0
            else { throw NSError(domain: "nfc_initiator_init", code: 1) }
        }

        deinit {
            if let device { nfc_close(device) }
            if let context { nfc_exit(context) }
        }

        func select() -> nfc_target? {
            var target = nfc_target()
            let modulation = nfc_modulation(nmt: NMT_ISO14443A, nbr: NBR_106)
            guard nfc_initiator_select_passive_target(device, modulation, nil, 0, &target) == 1 else { return nil }
            return target
        }

        /// libnfc's presence check (for an ISO/IEC 14443-4 target on a PN532: R(NAK) through InCommunicateThru).
        func isPresent() -> Bool {
            nfc_initiator_target_is_present(device, nil) == 0
        }

        /// One APDU through InDataExchange; nil on a libnfc error.
        func transceive(_ apdu: [UInt8]) -> [UInt8]? {
            var rx = [UInt8](repeating: 0, count: 264)
            let n = nfc_initiator_transceive_bytes(device, apdu, apdu.count, &rx, rx.count, 500)
            guard n >= 0 else { return nil }
            return Array(rx.prefix(Int(n)))
        }
    }

    func native(_ ins: UInt8, _ body: [UInt8]) -> [UInt8] {
        [0x90, ins, 0, 0] + (body.isEmpty ? [] : [UInt8(body.count)] + body) + [0x00]
    }

    func testActivationATSAndAnEV2SessionThroughLibnfc() throws {
        let sim = try PN532SimProcess()
        XCTAssertEqual(
            try sim.control("insert ntag424 \(Hex.encode(Self.uid))"), "ok inserted NTAG424DNA 04958CAA5C5E80")
        let dev = try Device(tty: sim.tty)
        let target = try XCTUnwrap(dev.select(), "no target")
        let nai = target.nti.nai
        XCTAssertEqual(nai.btSak, 0x20)
        XCTAssertEqual([nai.abtAtqa.0, nai.abtAtqa.1], [0x03, 0x44])
        XCTAssertEqual(nai.szUidLen, 7)
        let uid = withUnsafeBytes(of: nai.abtUid) { Array($0.prefix(7)) }
        XCTAssertEqual(uid, Self.uid)
        XCTAssertEqual(nai.szAtsLen, 5)
        XCTAssertEqual(withUnsafeBytes(of: nai.abtAts) { Array($0.prefix(5)) }, [0x77, 0x77, 0x71, 0x02, 0x80])

        // ISOSelectFile of the NDEF application: one InDataExchange round trip.
        XCTAssertEqual(dev.transceive(Hex.decode("00A4040C07D276000085010100")!), [0x90, 0x00])
        // AuthenticateEV2First with the factory key 0, the reader half from DoorCore.
        let key = [UInt8](repeating: 0, count: 16)
        let rndA = try Crypto.randomBytes(16)
        let r1 = try XCTUnwrap(dev.transceive(native(0x71, [0x00, 0x00])))
        XCTAssertEqual(Array(r1.suffix(2)), [0x91, 0xAF])
        let step = try NTAG424.EV2.readerResponse(key: key, encryptedRndB: Array(r1.dropLast(2)), rndA: rndA)
        let r2 = try XCTUnwrap(dev.transceive(native(0xAF, step.message)))
        XCTAssertEqual(Array(r2.suffix(2)), [0x91, 0x00])
        var session = try NTAG424.EV2.readerFinishFirst(
            key: key, rndA: rndA, rndB: step.rndB, answer: Array(r2.dropLast(2))
        ).session
        // GetCardUID: CommMode.Full answer, MAC checked and decrypted by the reader.
        let body = try session.sealCommand(ins: 0x51, header: [], data: [], mode: .full)
        let r3 = try XCTUnwrap(dev.transceive(native(0x51, body)))
        XCTAssertEqual(Array(r3.suffix(2)), [0x91, 0x00])
        XCTAssertEqual(try session.openResponse(Array(r3.dropLast(2)), status: 0x00, mode: .full), Self.uid)

        // A wrong key: the tag refuses (91AE), and the door's reader sees it.
        let wrong = [UInt8](repeating: 0x11, count: 16)
        let w1 = try XCTUnwrap(dev.transceive(native(0x71, [0x00, 0x00])))
        let wstep = try NTAG424.EV2.readerResponse(key: wrong, encryptedRndB: Array(w1.dropLast(2)), rndA: rndA)
        XCTAssertEqual(dev.transceive(native(0xAF, wstep.message)), [0x91, 0xAE])

        // Six APDUs, six InDataExchange commands on the wire.
        let stats = try sim.control("stats")
        XCTAssertTrue(stats.contains(",40:6,"), stats)

        // The tag leaves: the next exchange fails in libnfc, not with an answer.
        XCTAssertEqual(try sim.control("remove"), "ok removed")
        XCTAssertNil(dev.transceive(native(0x60, [])))
    }

    func testPresenceCheckAndATearMidAuthentication() throws {
        let sim = try PN532SimProcess()
        XCTAssertTrue(try sim.control("insert ntag424 \(Hex.encode(Self.uid))").hasPrefix("ok"))
        let dev = try Device(tty: sim.tty)
        XCTAssertNotNil(dev.select())
        XCTAssertTrue(dev.isPresent())
        XCTAssertEqual(dev.transceive(Hex.decode("00A4040C07D276000085010100")!), [0x90, 0x00])
        // The presence check did not disturb the block numbering.
        XCTAssertTrue(dev.isPresent())
        let r1 = try XCTUnwrap(dev.transceive(native(0x71, [0x00, 0x00])))
        XCTAssertEqual(Array(r1.suffix(2)), [0x91, 0xAF])
        // The tag is torn away after the next exchange: the second half of the
        // authentication reaches it, the answer does not come back.
        XCTAssertEqual(try sim.control("tear-after 1"), "ok tag leaves after 1 exchanges")
        let step = try NTAG424.EV2.readerResponse(
            key: [UInt8](repeating: 0, count: 16), encryptedRndB: Array(r1.dropLast(2)),
            rndA: try Crypto.randomBytes(16))
        _ = dev.transceive(native(0xAF, step.message))
        XCTAssertFalse(dev.isPresent())
        XCTAssertNil(dev.transceive(Hex.decode("00A4040C07D276000085010100")!))
        // Back in the field: a fresh activation, no session survives (GetCardUID needs one).
        XCTAssertTrue(try sim.control("reinsert").hasPrefix("ok inserted NTAG424DNA"), "reinsert")
        XCTAssertNotNil(dev.select())
        XCTAssertEqual(dev.transceive(Hex.decode("00A4040C07D276000085010100")!), [0x90, 0x00])
        XCTAssertEqual(dev.transceive(native(0x51, [])), [0x91, 0xAE])
    }
}
