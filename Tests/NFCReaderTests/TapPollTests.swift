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
}
