import DoorCore
import TestSupport
import XCTest

final class NDEFTests: XCTestCase {
    let vectors = CompatVectors.load()

    func testNDEFCases() {
        for c in vectors.ndef_cases {
            let area = Hex.decode(c.tlv)!
            do {
                let uri = try Type2.message(inArea: area).firstURI()
                XCTAssertNil(c.error, "\(c.why): expected an error, got \(uri)")
                XCTAssertEqual(uri, c.url, c.why)
            } catch {
                XCTAssertEqual(c.error, true, "\(c.why): \(error)")
            }
        }
    }

    func testNDEFCaseErrorsAreTheRightOnes() {
        func err(_ why: String) -> NDEFError? {
            let c = vectors.ndef_cases.first { $0.why == why }!
            do { _ = try Type2.message(inArea: Hex.decode(c.tlv)!).firstURI(); return nil } catch { return error }
        }
        guard case .truncated = err("truncated: length beyond the data") else { return XCTFail() }
        XCTAssertEqual(err("chunked record (CF set)"), .chunkedRecord)
        XCTAssertEqual(err("the URL only inside a Text record's payload (no URI record)"), .noURIRecord)
        XCTAssertEqual(err("a URI record after the Terminator TLV"), .noURIRecord)
    }

    func testStickerTLVsDecodeAndReencodeExactly() throws {
        let all = vectors.tags_v1.map { ($0.url, $0.ndef_tlv) } + vectors.tags_v2.map { ($0.url, $0.ndef_tlv) }
        for (url, tlvHex) in all {
            let tlv = Hex.decode(tlvHex)!
            XCTAssertEqual(try Type2.message(inArea: tlv).firstURI(), url)
            XCTAssertEqual(Type2.ndefTLV(NDEFMessage(records: [.uri(url)])), tlv)
        }
        for v in vectors.tags_v2 {
            XCTAssertEqual(Type2.ndefTLV(NDEFMessage(records: [.uri(v.url)])).count, v.ndef_bytes)
            XCTAssertLessThanOrEqual(v.ndef_bytes, NTAGType.ntag213.userBytes)
        }
    }

    func testMultiRecordMessageRoundTrips() throws {
        let c = vectors.ndef_cases.first { $0.why.hasPrefix("Text + URI + External") }!
        let message = try Type2.message(inArea: Hex.decode(c.tlv)!)
        XCTAssertEqual(message.records.count, 3)
        XCTAssertEqual(try message.records[0].text()?.text, "Front door")
        XCTAssertEqual(try message.records[0].text()?.language, "en")
        XCTAssertEqual(message.records[2].tnf, .external)
        XCTAssertEqual(String(decoding: message.records[2].type, as: UTF8.self), "doorgateway.example:tag")
        XCTAssertEqual(Type2.ndefTLV(message), Hex.decode(c.tlv)!)
        XCTAssertEqual(message.firstText(), "Front door")
    }

    func testLongPayloadsAndThreeByteLengths() throws {
        let c = vectors.ndef_cases.first { $0.why.hasPrefix("3-byte length") }!
        let tlv = Hex.decode(c.tlv)!
        let message = try Type2.message(inArea: tlv)
        XCTAssertEqual(Type2.ndefTLV(message), tlv)
        let big = NDEFMessage(records: [.media(type: "application/octet-stream", payload: Array(repeating: 7, count: 300))])
        XCTAssertEqual(try NDEFMessage.decode(big.encoded()), big)
        XCTAssertEqual(Type2.ndefTLV(big)[1], 0xFF)
    }

    func testEveryURIPrefixRoundTrips() throws {
        for (code, prefix) in URIPrefix.table.enumerated() {
            let uri = prefix + "example/\(code)"
            let record = NDEFRecord.uri(uri)
            XCTAssertEqual(try record.uri(), uri)
            if code > 0 {
                // The chosen code's prefix is the longest one matching.
                let chosen = URIPrefix.table[Int(record.payload[0])]
                XCTAssertTrue(uri.hasPrefix(chosen))
                XCTAssertGreaterThanOrEqual(chosen.count, prefix.count)
            }
            let raw = NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [UInt8(code)] + Array("x".utf8))
            XCTAssertEqual(try raw.uri(), prefix + "x")
        }
        XCTAssertEqual(NDEFRecord.uri("https://example.org/door").payload[0], 0x04)
        XCTAssertEqual(NDEFRecord.uri("smp://action?idx=1").payload[0], 0x00)
        XCTAssertThrowsError(try NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [0x24, 0x41]).uri()) {
            XCTAssertEqual($0 as? NDEFError, .badURICode(0x24))
        }
    }

    func testTextEncodings() throws {
        XCTAssertEqual(try NDEFRecord.text("Grüße", language: "de").text()?.text, "Grüße")
        let utf16BE = NDEFRecord(tnf: .wellKnown, type: [0x54], payload: [0x82] + Array("en".utf8) + [0x00, 0x48, 0x00, 0xE9])
        XCTAssertEqual(try utf16BE.text()?.text, "Hé")
        let utf16LEBOM = NDEFRecord(tnf: .wellKnown, type: [0x54], payload: [0x82] + Array("en".utf8) + [0xFF, 0xFE, 0x48, 0x00])
        XCTAssertEqual(try utf16LEBOM.text()?.text, "H")
        XCTAssertThrowsError(try NDEFRecord(tnf: .wellKnown, type: [0x54], payload: [0x05, 0x65]).text())
        XCTAssertThrowsError(try NDEFRecord(tnf: .wellKnown, type: [0x54], payload: [0x00, 0xFF]).text())
    }

    func testEveryTNFAndIDRoundTrip() throws {
        let records: [NDEFRecord] = [
            NDEFRecord(tnf: .empty, type: [], payload: []),
            NDEFRecord(tnf: .wellKnown, type: Array("U".utf8), id: [1, 2], payload: [0, 0x61]),
            .media(type: "text/plain", payload: Array("hi".utf8)),
            NDEFRecord(tnf: .absoluteURI, type: Array("https://example.org/t".utf8), payload: []),
            .external(type: "doorgateway.example:tag", payload: [1, 2]),
            NDEFRecord(tnf: .unknown, type: [], payload: [9]),
            NDEFRecord(tnf: .reserved, type: [1], payload: []),
        ]
        let m = NDEFMessage(records: records)
        XCTAssertEqual(try NDEFMessage.decode(m.encoded()), m)
        XCTAssertEqual(try NDEFMessage.decode([]), NDEFMessage(records: []))
        XCTAssertThrowsError(try NDEFMessage(records: []).firstURI()) { XCTAssertEqual($0 as? NDEFError, .emptyMessage) }
    }

    func testMalformedRecords() {
        let uri = NDEFMessage(records: [.uri("https://a")]).encoded()
        var noMB = uri; noMB[0] &= ~0x80
        var unchanged = uri; unchanged[0] = (unchanged[0] & ~0x07) | 0x06
        var trailing = uri; trailing.append(0)
        for (bytes, name) in [(noMB, "no MB"), (unchanged, "TNF unchanged"), (trailing, "data after ME"),
                              (Array(uri.dropLast()), "truncated"), ([0x91, 0x01, 0x01, 0x55, 0x00], "no ME")] {
            XCTAssertThrowsError(try NDEFMessage.decode(bytes), name)
        }
    }

    func testTLVKinds() throws {
        let area: [UInt8] = [0x00, 0x01, 0x03, 0xA0, 0x0C, 0x34, 0x02, 0x03, 0x01, 0x02, 0x03, 0xFD, 0x01, 0x09,
                             0x42, 0x01, 0x07, 0x03, 0x00, 0xFE, 0x03, 0x05]
        XCTAssertEqual(try Type2.parseTLVs(area), [.null, .lockControl([0xA0, 0x0C, 0x34]), .memoryControl([1, 2, 3]),
                                                   .proprietary([9]), .other(type: 0x42, value: [7]), .ndef([]), .terminator])
        XCTAssertNil(try Type2.firstNDEFValue([0x00, 0xFE, 0x03, 0x00]))
        XCTAssertThrowsError(try Type2.message(inArea: [0xFE])) { XCTAssertEqual($0 as? NDEFError, .noNDEFMessage) }
        XCTAssertThrowsError(try Type2.parseTLVs([0x03, 0xFF, 0x01]))
    }

    func testIncrementalScanReadsOnlyWhatTheMessageNeeds() throws {
        let tlv = Hex.decode(vectors.tags_v2[0].ndef_tlv)!
        let area = tlv + Array(repeating: 0, count: 144 - tlv.count)
        // Read 16 bytes at a time (one READ) until the scan is complete.
        var have = 0
        var reads = 0
        while true {
            switch try Type2.scan(prefix: Array(area.prefix(have)), areaSize: 144) {
            case .complete(let value, let end):
                XCTAssertEqual(value, Array(tlv[2..<(tlv.count - 1)]))
                XCTAssertEqual(end, tlv.count - 1)
                XCTAssertEqual(reads, (tlv.count - 1 + 15) / 16)
                XCTAssertEqual(try Type2.scan(prefix: [0x00, 0x00, 0xFE], areaSize: 144), .noNDEF)
                XCTAssertEqual(try Type2.scan(prefix: [0x01, 0x03], areaSize: 144), .needMore(bytes: 4))
                XCTAssertEqual(try Type2.scan(prefix: [0x03], areaSize: 144), .needMore(bytes: 1))
                XCTAssertThrowsError(try Type2.scan(prefix: [0x03, 0xFF, 0x10, 0x00], areaSize: 144))
                return
            case .needMore(let n):
                XCTAssertGreaterThan(n, 0)
                have += 16
                reads += 1
            case .noNDEF:
                return XCTFail("no NDEF found")
            }
        }
    }

    func testDumpsParseAndAreReproducedFromUIDAndMessage() throws {
        for d in vectors.dumps {
            let image = try TagImage(dump: Hex.decode(d.hex)!)
            XCTAssertEqual(image.type.rawValue, d.type)
            XCTAssertEqual(image.bytes.count, d.bytes)
            XCTAssertEqual(image.uid.hex, d.uid)
            XCTAssertEqual(try image.message().firstURI(), d.url)
            XCTAssertFalse(try image.isBlank())
            XCTAssertFalse(image.isLocked)
            let made = try TagImage(type: image.type, uid: TagUID(hex: d.uid)!, message: NDEFMessage(records: [.uri(d.url)]))
            XCTAssertEqual(Hex.encode(made.bytes), d.hex)
        }
    }

    func testBlankImagesSizesAndErrors() throws {
        let uid = TagUID(hex: "04A1B2C3D4E5F6")!
        for t in NTAGType.allCases {
            let blank = try TagImage(type: t, uid: uid)
            XCTAssertTrue(try blank.isBlank())
            XCTAssertEqual(try blank.capabilityContainer().dataAreaSize, t.ccDataAreaSize)
            XCTAssertEqual(try TagImage(dump: blank.bytes), blank)
            XCTAssertEqual(NTAGType(versionResponse: t.versionResponse), t)
            XCTAssertEqual(blank.auth0, 0xFF)
        }
        XCTAssertEqual(NTAGType.ntag213.cfg0Page, 0x29)
        XCTAssertEqual(NTAGType.ntag215.pwdPage, 0x85)
        XCTAssertEqual(NTAGType.ntag216.packPage, 0xE6)
        let tooBig = NDEFMessage(records: [.uri(String(repeating: "x", count: 200))])
        XCTAssertThrowsError(try TagImage(type: .ntag213, uid: uid, message: tooBig)) {
            guard case .oversized = $0 as? NDEFError else { return XCTFail("\($0)") }
        }
        XCTAssertNoThrow(try TagImage(type: .ntag215, uid: uid, message: tooBig))
        XCTAssertThrowsError(try TagImage(dump: [UInt8](repeating: 0, count: 100)))
        var badBCC = try TagImage(type: .ntag213, uid: uid).bytes
        badBCC[3] ^= 1
        XCTAssertThrowsError(try TagImage(dump: badBCC))
        XCTAssertNil(NTAGType(versionResponse: [0, 4, 4, 2, 1, 0, 0x0E, 3]))
    }
}
