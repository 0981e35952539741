import DoorCore
import Foundation
import NFCReader
import TestSupport
import XCTest

/// The reader adapter through the real libnfc 1.8.0 against the built
/// pn532-sim on a pseudo-terminal.
final class ReaderTests: XCTestCase {
    let vectors = CompatVectors.load()

    /// A reader open on a fresh emulator.
    func open(_ sim: PN532SimProcess) throws -> NFCReader {
        let reader = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        try reader.open()
        return reader
    }

    /// Puts an image (a tag with `message`, or blank) on the emulator's reader.
    func insert(
        _ sim: PN532SimProcess, type: NTAGType = .ntag213, uid: TagUID, message: NDEFMessage? = nil,
        edit: (inout [UInt8]) -> Void = { _ in }
    )
        throws
    {
        var bytes = try TagImage.make(type: type, uid: uid, message: message).bytes
        edit(&bytes)
        let file = sim.path("image-\(UUID().uuidString.prefix(6)).bin")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        _ = try? sim.control("remove")
        let answer = try sim.control("insert \(uid.hex) \(file)")
        XCTAssertTrue(answer.hasPrefix("ok"), answer)
    }

    func uri(_ s: String) -> NDEFMessage { NDEFMessage(records: [.uri(s)]) }

    func testReadsV1AndV2StickersAndAMultiRecordMessage() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        XCTAssertNil(try reader.poll(), "no tag yet")
        for v in vectors.tags_v2 {
            let uid = try XCTUnwrap(TagUID(hex: v.uid))
            try insert(sim, uid: uid, message: uri(v.url))
            let tag = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2), identify: true))
            XCTAssertEqual(tag.uid, uid)
            XCTAssertEqual(tag.type, .ntag213)
            XCTAssertEqual(try tag.message?.firstURI(), v.url)
            // Only the pages the message needs: 16 bytes, then up to the TLV's end.
            XCTAssertEqual(tag.ndef.map { $0.count + 2 }, v.ndef_bytes - 1)
            XCTAssertLessThanOrEqual(tag.bytesRead, 16 + ((v.ndef_bytes - 12 + 3) / 4) * 4)
        }
        for v in vectors.tags_v1 {
            let uid = TagUID([0x04, 1, 2, 3, 4, 5, UInt8(v.idx)])
            try insert(sim, uid: uid, message: uri(v.url))
            let tag = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
            XCTAssertEqual(try tag.message?.firstURI(), v.url)
        }
        let multi = try XCTUnwrap(vectors.ndef_cases.first { $0.why.contains("Text + URI") })
        let message = try Type2.message(inArea: try XCTUnwrap(Hex.decode(multi.tlv)) + [0xFE])
        try insert(sim, type: .ntag215, uid: TagUID([0x04, 9, 9, 9, 9, 9, 9]), message: message)
        let tag = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2), identify: true))
        XCTAssertEqual(tag.type, .ntag215)
        XCTAssertEqual(tag.message, message)
        XCTAssertEqual(tag.message?.records.count, 3)
    }

    func testWriteAndVerifyOnEachNTAGType() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        for (i, type) in NTAGType.allCases.enumerated() {
            let uid = TagUID([0x04, 0x10, 0x20, 0x30, 0x40, 0x50, UInt8(i)])
            try insert(sim, type: type, uid: uid)
            let tag = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
            XCTAssertEqual(tag.content, .blank)
            // Fill most of the tag: a long URL on the big ones.
            let url =
                vectors.tags_v2[0].url
                + (type == .ntag213 ? "" : "&pad=" + String(repeating: "x", count: type.ndefCapacity - 200))
            let report = try reader.write(uri(url), to: uid, options: WriteOptions())
            XCTAssertEqual(report.type, type)
            let image = try TagImage(dump: try sim.dump())
            XCTAssertEqual(try image.message().firstURI(), url, "\(type)")
        }
    }

    func testTooSmallLockedAndForeignTagsAreRefusedAndLeftUnchanged() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        let uid = TagUID([0x04, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0x01])

        try insert(sim, uid: uid)
        _ = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        let before = try sim.dump()
        let huge = uri("https://example.com/" + String(repeating: "a", count: 200))
        XCTAssertThrowsError(try reader.write(huge, to: uid, options: WriteOptions())) { error in
            guard case ReaderError.tooSmall(let needed, let capacity)? = error as? ReaderError else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(capacity, 144)
            XCTAssertGreaterThan(needed, 144)
        }
        XCTAssertEqual(try sim.dump(), before, "a refused write leaves the tag unchanged")

        // Static lock bits on pages 4–7 (page 2 byte 2).
        try insert(sim, uid: uid) { $0[10] = 0xF0 }
        _ = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        XCTAssertThrowsError(try reader.write(uri("smp://action?idx=0&ts=1&sig=00"), to: uid, options: WriteOptions()))
        { error in
            guard case ReaderError.readOnly? = error as? ReaderError else { return XCTFail("\(error)") }
        }
        // A read-only capability container.
        try insert(sim, uid: uid) { $0[15] = 0x0F }
        _ = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        XCTAssertThrowsError(try reader.write(uri("smp://action?idx=0&ts=1&sig=00"), to: uid, options: WriteOptions()))
        { error in
            guard case ReaderError.readOnly? = error as? ReaderError else { return XCTFail("\(error)") }
        }

        // Foreign content: refused, then written with overwrite.
        try insert(sim, uid: uid, message: uri("https://bank.example/card"))
        _ = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        let foreign = try sim.dump()
        XCTAssertThrowsError(try reader.write(uri("smp://action?idx=0&ts=1&sig=00"), to: uid, options: WriteOptions()))
        { error in
            guard case ReaderError.foreignContent? = error as? ReaderError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try sim.dump(), foreign)
        try reader.write(uri("smp://action?idx=0&ts=1&sig=00"), to: uid, options: WriteOptions(overwrite: true))
        XCTAssertEqual(try TagImage(dump: try sim.dump()).message().firstURI(), "smp://action?idx=0&ts=1&sig=00")
    }

    func testPasswordProtectionAndTapsSendNoPasswordAuth() throws {
        let sim = try PN532SimProcess(["--trace"])
        let reader = try open(sim)
        let uid = TagUID([0x04, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06])
        let key = [UInt8](repeating: 0x5A, count: 32)
        let password = NTAGPassword.derive(deviceKey: key, uid: uid)
        try insert(sim, uid: uid)
        _ = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        let first = try reader.write(
            uri("smp://action?idx=0&ts=1&sig=00"), to: uid,
            options: WriteOptions(password: password, protect: true, authLimit: 3))
        XCTAssertTrue(first.protected)
        let image = try sim.dump()
        let cfg0 = NTAGType.ntag213.cfg0Page * 4
        XCTAssertEqual(image[cfg0 + 3], 4, "AUTH0 = first user page")
        XCTAssertEqual(image[cfg0 + 4], 0x40 | 3, "ACCESS: PROT 0, CFGLCK 1, AUTHLIM 3")

        XCTAssertThrowsError(try reader.write(uri("smp://action?idx=0&ts=2&sig=00"), to: uid, options: WriteOptions()))
        { error in
            guard case ReaderError.authenticationFailed? = error as? ReaderError else { return XCTFail("\(error)") }
        }
        let wrong = NTAGPassword.derive(deviceKey: [UInt8](repeating: 1, count: 32), uid: uid)
        _ = try? sim.control("reinsert")
        _ = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        XCTAssertThrowsError(
            try reader.write(uri("smp://action?idx=0&ts=2&sig=00"), to: uid, options: WriteOptions(password: wrong)))
        _ = try? sim.control("reinsert")
        _ = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        try reader.write(uri("smp://action?idx=0&ts=3&sig=00"), to: uid, options: WriteOptions(password: password))
        XCTAssertEqual(try TagImage(dump: try sim.dump()).message().firstURI(), "smp://action?idx=0&ts=3&sig=00")

        // A tap of the protected tag, watched on the wire: no PWD_AUTH (InDataExchange 40 01 1B).
        let taps = NFCReader(connstring: "pn532_uart:\(sim.tty)")
        reader.close()
        try taps.open()
        _ = try? sim.control("reinsert")
        let tag = try XCTUnwrap(try taps.waitForTag(timeout: .seconds(2)))
        XCTAssertEqual(try tag.message?.firstURI(), "smp://action?idx=0&ts=3&sig=00", "reads stay open (PROT = 0)")
        _ = try? sim.control("remove")
        XCTAssertEqual(taps.passwordAuthentications, 0)
        taps.close()
        sim.process.terminate()
        sim.process.waitUntilExit()
        let trace = sim.stderrText
        let auths = trace.components(separatedBy: "\n").filter { $0.contains("host>") && $0.contains("d4 40 01 1b") }
        XCTAssertEqual(auths.count, 3, "PWD_AUTH only in the writes (protect, wrong password, right password)")
    }

    /// The tag torn away after each possible number of exchanges during a
    /// write: an error every time, never "written", until the write needs
    /// no more exchanges than the tag allows.
    func testTearAtEveryExchangeIsAnErrorNeverWritten() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        let uid = TagUID([0x04, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22])
        let message = uri(vectors.tags_v2[0].url)
        var n = 0
        while true {
            try insert(sim, uid: uid)
            _ = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
            XCTAssertTrue(try sim.control("tear-after \(n)").hasPrefix("ok"))
            do {
                try reader.write(message, to: uid, options: WriteOptions())
                break
            } catch {
                XCTAssertEqual(error, .tagLost, "exchange \(n)")
                // Whatever was left, it is never a complete different sticker.
                let left = try TagImage(dump: try sim.dump())
                if let m = try? left.message(), !m.isEmpty {
                    XCTAssertEqual(m, message, "a torn write left a half message at \(n)")
                }
            }
            n += 1
            XCTAssertLessThan(n, 60, "a write needs fewer exchanges than this")
            if n >= 60 { break }
        }
        XCTAssertGreaterThan(n, 5, "the write took several exchanges, each torn once")
    }

    /// The link's hangup is seen as such (an I/O error or no reader), not
    /// waited out as a timeout; how long either takes is reader-bench's to
    /// measure, not a unit test's to bound.
    func testKilledEmulatorIsAHangupNotATimeoutThenRecovers() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        XCTAssertNil(try reader.poll())
        kill(sim.process.processIdentifier, SIGKILL)
        sim.process.waitUntilExit()
        XCTAssertThrowsError(try reader.poll()) { error in
            let e = error as? ReaderError
            XCTAssertTrue(e?.readerLost ?? false, "\(error)")
            if case .timeout? = e { XCTFail("a dead link is noticed, not timed out: \(error)") }
        }
        XCTAssertNotEqual(reader.health, .ok)
        XCTAssertThrowsError(try reader.open(), "nothing behind the link")
        // The emulator is back on the same path: the same reader reopens and reads.
        let again = try PN532SimProcess(directory: sim.dir)
        try reader.open()
        XCTAssertEqual(reader.health, .ok)
        try insert(again, uid: TagUID([0x04, 1, 1, 1, 1, 1, 1]), message: uri("smp://action?idx=0&ts=1&sig=00"))
        XCTAssertNotNil(try reader.waitForTag(timeout: .seconds(2)))
    }

    func testHungEmulatorTimesOutAndTheNextCommandGetsItsOwnAnswer() throws {
        let sim = try PN532SimProcess()
        let reader = try open(sim)
        let uid = TagUID([0x04, 2, 2, 2, 2, 2, 2])
        try insert(sim, uid: uid, message: uri("smp://action?idx=1&ts=1&sig=00"))
        XCTAssertTrue(try sim.control("hang").hasPrefix("ok"))
        XCTAssertThrowsError(try reader.poll()) { error in
            guard case ReaderError.timeout? = error as? ReaderError else { return XCTFail("\(error)") }
        }
        XCTAssertTrue(try sim.control("unmute").hasPrefix("ok"))
        // The daemon reopens after a reader-level error; the first command after it gets its own answer.
        try reader.open()
        let tag = try XCTUnwrap(try reader.waitForTag(timeout: .seconds(2)))
        XCTAssertEqual(tag.uid, uid)
        XCTAssertEqual(try tag.message?.firstURI(), "smp://action?idx=1&ts=1&sig=00")
        XCTAssertTrue(try reader.isPresent(uid))
    }
}
