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
        guard case .lengthBeyondData = err("truncated: length beyond the data") else { return XCTFail() }
        XCTAssertEqual(err("chunked record (CF set)"), .chunkedRecord)
        XCTAssertEqual(err("the URL only inside a Text record's payload (no URI record)"), .noURIRecord)
        XCTAssertEqual(err("a URI record after the Terminator TLV"), .noURIRecord)
    }

    func testStickerTLVsDecodeAndReencodeExactly() throws {
        let all = vectors.tags_v1.map { ($0.url, $0.ndef_tlv) } + vectors.tags_v2.map { ($0.url, $0.ndef_tlv) }
        for (url, tlvHex) in all {
            let tlv = Hex.decode(tlvHex)!
            XCTAssertEqual(try Type2.message(inArea: tlv).firstURI(), url)
            XCTAssertEqual(try Type2.ndefTLV(NDEFMessage(records: [.uri(url)])), tlv)
        }
        for v in vectors.tags_v2 {
            let tlv = try Type2.ndefTLV(NDEFMessage(records: [.uri(v.url)]))
            XCTAssertEqual(tlv.count, v.ndef_bytes)
            XCTAssertEqual(v.ndef_bytes, 134)
            XCTAssertNoThrow(try NTAGType.ntag213.checkFits(tlv))
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
        XCTAssertEqual(try Type2.ndefTLV(message), Hex.decode(c.tlv)!)
        XCTAssertEqual(message.firstText()?.text, "Front door")
        XCTAssertEqual(try message.firstURI(), c.url)
    }

    func testLongPayloadsAndThreeByteLengths() throws {
        let c = vectors.ndef_cases.first { $0.why.hasPrefix("3-byte length") }!
        let tlv = Hex.decode(c.tlv)!
        let message = try Type2.message(inArea: tlv)
        XCTAssertEqual(tlv[0...3], [0x03, 0xFF, 0x01, 0xB9])
        XCTAssertEqual(message.records[0].payload.count, 0x12F)
        XCTAssertEqual(try Type2.ndefTLV(message), tlv)
        let big = NDEFMessage(records: [
            .media(type: "application/octet-stream", payload: Array(repeating: 7, count: 300))
        ])
        let encoded = try big.encoded()
        XCTAssertEqual(encoded[0], 0xC2, "MB, ME, long payload length, TNF media")
        XCTAssertEqual(encoded[2...5], [0x00, 0x00, 0x01, 0x2C])
        XCTAssertEqual(try NDEFMessage.decode(encoded), big)
        XCTAssertEqual(try Type2.ndefTLV(big)[0...3], [0x03, 0xFF, 0x01, UInt8(encoded.count - 256)])
        // 254 bytes still take a 1-byte length; 255 take three.
        for (payload, header) in [(251, [0x03, 0xFE]), (252, [0x03, 0xFF, 0x00, 0xFF])] {
            let m = NDEFMessage(records: [
                NDEFRecord(tnf: .unknown, type: [], payload: Array(repeating: 1, count: payload))
            ])
            let tlv = try Type2.ndefTLV(m)
            XCTAssertEqual(Array(tlv.prefix(header.count)), header.map(UInt8.init))
            XCTAssertEqual(try Type2.message(inArea: tlv), m)
        }
        // A message too long for any TLV length, and types too long for a record.
        let huge = NDEFMessage(records: [
            NDEFRecord(tnf: .unknown, type: [], payload: Array(repeating: 0, count: 0xFFFF))
        ])
        XCTAssertThrowsError(try Type2.ndefTLV(huge)) {
            guard case .oversized = $0 as? NDEFError else { return XCTFail("\($0)") }
        }
        let longType = NDEFMessage(records: [.external(type: String(repeating: "a", count: 256), payload: [])])
        XCTAssertThrowsError(try longType.encoded()) {
            guard case .invalidRecord = $0 as? NDEFError else { return XCTFail("\($0)") }
        }
    }

    func testEveryURIPrefixRoundTrips() throws {
        XCTAssertEqual(URIPrefix.table.count, 0x24, "codes 0x00-0x23")
        XCTAssertNil(URIPrefix.prefix(for: 0x24))
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
        XCTAssertEqual(NDEFRecord.uri("smp://action?idx=1").payload, [0x00] + Array("smp://action?idx=1".utf8))
        XCTAssertEqual(NDEFRecord.uri("urn:epc:id:sgtin:1").payload.prefix(1), [0x1E])
        XCTAssertEqual(NDEFRecord.uri("https://www.example.org").payload, [0x02] + Array("example.org".utf8))
        XCTAssertEqual(NDEFRecord.uri("tel:+4930é").payload, [0x05] + Array("+4930é".utf8))
        XCTAssertThrowsError(try NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [0x04, 0xC3]).uri()) {
            XCTAssertEqual($0 as? NDEFError, .invalidUTF8("URI record"))
        }
        XCTAssertThrowsError(try NDEFRecord(tnf: .wellKnown, type: [0x55], payload: []).uri())
        // A bad URI record is reported, not skipped for a later one.
        let badFirst = NDEFMessage(records: [
            NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [0x30]), .uri("https://a"),
        ])
        XCTAssertThrowsError(try badFirst.firstURI()) { XCTAssertEqual($0 as? NDEFError, .badURICode(0x30)) }
        XCTAssertThrowsError(try NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [0x24, 0x41]).uri()) {
            XCTAssertEqual($0 as? NDEFError, .badURICode(0x24))
        }
    }

    func testTextEncodings() throws {
        XCTAssertEqual(try NDEFRecord.text("Grüße", language: "de").text()?.text, "Grüße")
        let utf16BE = NDEFRecord(
            tnf: .wellKnown, type: [0x54], payload: [0x82] + Array("en".utf8) + [0x00, 0x48, 0x00, 0xE9])
        XCTAssertEqual(try utf16BE.text()?.text, "Hé")
        let utf16LEBOM = NDEFRecord(
            tnf: .wellKnown, type: [0x54], payload: [0x82] + Array("en".utf8) + [0xFF, 0xFE, 0x48, 0x00])
        XCTAssertEqual(try utf16LEBOM.text()?.text, "H")
        let utf16BEBOM = NDEFRecord(
            tnf: .wellKnown, type: [0x54], payload: [0x82] + Array("fr".utf8) + [0xFE, 0xFF, 0xD8, 0x3D, 0xDE, 0x00])
        XCTAssertEqual(try utf16BEBOM.text()?.language, "fr")
        XCTAssertEqual(try utf16BEBOM.text()?.text, "😀")
        let encoded = NDEFRecord.text("Porte", language: "fr")
        XCTAssertEqual(encoded.payload, [0x02] + Array("frPorte".utf8))
        XCTAssertEqual(try encoded.text()?.language, "fr")
        func textError(_ payload: [UInt8]) -> NDEFError? {
            do { _ = try NDEFRecord(tnf: .wellKnown, type: [0x54], payload: payload).text(); return nil } catch {
                return error
            }
        }
        XCTAssertEqual(textError([0x05, 0x65]), .lengthBeyondData("Text language code"))
        XCTAssertEqual(textError([0x00, 0xFF]), .invalidUTF8("Text record"))
        XCTAssertEqual(textError([0x80, 0x00]), .invalidText("odd UTF-16 length"))
        XCTAssertEqual(textError([0x80, 0xDC, 0x00]), .invalidText("invalid UTF-16"))
        XCTAssertEqual(textError([0x40]), .invalidRecord("Text status bit 6 is reserved"))
        XCTAssertNil(try NDEFRecord.uri("https://a").text())
        XCTAssertNil(try NDEFRecord.text("a").uri())
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
        XCTAssertThrowsError(try NDEFMessage(records: []).firstURI()) {
            XCTAssertEqual($0 as? NDEFError, .emptyMessage)
        }
    }

    func testMalformedRecords() throws {
        let uri = try NDEFMessage(records: [.uri("https://a")]).encoded()
        var noMB = uri; noMB[0] &= ~0x80
        var unchanged = uri; unchanged[0] = (unchanged[0] & ~0x07) | 0x06
        var trailing = uri; trailing.append(0)
        for (bytes, name) in [
            (noMB, "no MB"), (unchanged, "TNF unchanged"), (trailing, "data after ME"),
            (Array(uri.dropLast()), "truncated"), ([0x91, 0x01, 0x01, 0x55, 0x00], "no ME"),
        ] {
            XCTAssertThrowsError(try NDEFMessage.decode(bytes), name)
        }
    }

    func testTLVKinds() throws {
        let area: [UInt8] = [
            0x00, 0x01, 0x03, 0xA0, 0x0C, 0x34, 0x02, 0x03, 0x01, 0x02, 0x03, 0xFD, 0x01, 0x09,
            0x42, 0x01, 0x07, 0x03, 0x00, 0xFE, 0x03, 0x05,
        ]
        XCTAssertEqual(
            try Type2.parseTLVs(area),
            [
                .null, .lockControl([0xA0, 0x0C, 0x34]), .memoryControl([1, 2, 3]),
                .proprietary([9]), .other(type: 0x42, value: [7]), .ndef([]), .terminator,
            ])
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
        XCTAssertEqual(Set(vectors.dumps.map(\.type)), ["NTAG213", "NTAG215"])
        for d in vectors.dumps {
            let image = try TagImage(dump: Hex.decode(d.hex)!)
            XCTAssertEqual(image.type.rawValue, d.type)
            XCTAssertEqual(image.bytes.count, d.bytes)
            XCTAssertEqual(image.uid.hex, d.uid)
            XCTAssertEqual(try image.message().firstURI(), d.url)
            XCTAssertFalse(try image.isBlank())
            XCTAssertFalse(image.isLocked)
            XCTAssertEqual(image.lockedPages, [])
            XCTAssertEqual(image.auth0, 0xFF)
            let made = try TagImage.make(
                type: image.type, uid: TagUID(hex: d.uid)!, message: NDEFMessage(records: [.uri(d.url)]))
            XCTAssertEqual(Hex.encode(made.bytes), d.hex)
            XCTAssertEqual(made, image)
        }
    }

    func testBlankImagesSizesAndErrors() throws {
        let uid = TagUID(hex: "04A1B2C3D4E5F6")!
        for t in NTAGType.allCases {
            let blank = try TagImage.make(type: t, uid: uid)
            XCTAssertTrue(try blank.isBlank())
            XCTAssertEqual(try blank.content(), .blank)
            XCTAssertEqual(blank.page(4), [0x03, 0x00, 0xFE, 0x00])
            XCTAssertEqual(blank.page(t.pages), [])
            XCTAssertEqual(try blank.capabilityContainer().dataAreaSize, t.ccDataAreaSize)
            XCTAssertEqual(try TagImage(dump: blank.bytes), blank)
            XCTAssertEqual(NTAGType(versionResponse: t.versionResponse), t)
            XCTAssertEqual(blank.auth0, 0xFF)
        }
        XCTAssertEqual(NTAGType.ntag213.cfg0Page, 0x29)
        XCTAssertEqual(NTAGType.ntag215.pwdPage, 0x85)
        XCTAssertEqual(NTAGType.ntag216.packPage, 0xE6)
        XCTAssertEqual(NTAGType.ntag213.dynamicLockPage, 0x28)
        XCTAssertEqual(NTAGType.ntag213.packPage, 0x2C)
        XCTAssertEqual(NTAGType.ntag215.dynamicLockPage, 0x82)
        XCTAssertEqual(NTAGType.ntag215.cfg1Page, 0x84)
        XCTAssertEqual(NTAGType.ntag216.dynamicLockPage, 0xE2)
        XCTAssertEqual(NTAGType.ntag216.cfg0Page, 0xE3)
        XCTAssertEqual(NTAGType.allCases.map(\.lastUserPage), [39, 129, 225])
        XCTAssertEqual(NTAGType.allCases.map(\.dumpSize), [180, 540, 924])
        XCTAssertEqual(NTAGType.allCases.map(\.userBytes), [144, 504, 888])
        XCTAssertEqual(NTAGType.allCases.map(\.versionResponse.last), [0x03, 0x03, 0x03])
        XCTAssertEqual(NTAGType(versionResponse: [0x00, 0x04, 0x04, 0x02, 0x01, 0x00, 0x11, 0x03]), .ntag215)
        XCTAssertNil(NTAGType(versionResponse: [0x00, 0x04, 0x04, 0x02]))
        // TLV header and Terminator (3 bytes) + record header (3) + 138 fill an NTAG213 exactly.
        let fits = NDEFMessage(records: [NDEFRecord(tnf: .unknown, type: [], payload: Array(repeating: 0, count: 138))])
        XCTAssertEqual(try Type2.ndefTLV(fits).count, 144)
        XCTAssertEqual(try TagImage.make(type: .ntag213, uid: uid, message: fits).message(), fits)
        let tooBig = NDEFMessage(records: [.uri(String(repeating: "x", count: 200))])
        XCTAssertThrowsError(try TagImage.make(type: .ntag213, uid: uid, message: tooBig)) {
            XCTAssertEqual($0 as? NDEFError, .oversized(needed: 208, capacity: 144))
        }
        XCTAssertThrowsError(try NTAGType.ntag213.checkFits(Array(repeating: 0, count: 145)))
        XCTAssertNoThrow(try NTAGType.ntag213.checkFits(Array(repeating: 0, count: 144)))
        XCTAssertEqual(try TagImage.make(type: .ntag215, uid: uid, message: tooBig).message(), tooBig)
        XCTAssertThrowsError(try TagImage.make(type: .ntag213, uid: TagUID(hex: "01020304")!))
        XCTAssertThrowsError(try TagImage(dump: [UInt8](repeating: 0, count: 100))) {
            guard case .badDump = $0 as? NDEFError else { return XCTFail("\($0)") }
        }
        var badBCC0 = try TagImage.make(type: .ntag213, uid: uid).bytes
        badBCC0[3] ^= 1
        XCTAssertThrowsError(try TagImage(dump: badBCC0)) {
            XCTAssertEqual($0 as? NDEFError, .badBCC(index: 0, expected: badBCC0[3] ^ 1, found: badBCC0[3]))
        }
        var badBCC1 = try TagImage.make(type: .ntag216, uid: uid).bytes
        badBCC1[5] ^= 0x10
        XCTAssertThrowsError(try TagImage(dump: badBCC1)) {
            XCTAssertEqual($0 as? NDEFError, .badBCC(index: 1, expected: badBCC1[8] ^ 0x10, found: badBCC1[8]))
        }
        XCTAssertNil(NTAGType(versionResponse: [0, 4, 4, 2, 1, 0, 0x0E, 3]))
    }

    func testLockBytes() throws {
        XCTAssertEqual(StaticLock(0x00, 0x00).lockedPages, [])
        XCTAssertEqual(StaticLock(0x07, 0x00).lockedPages, [], "block-lock bits lock no page")
        XCTAssertEqual(StaticLock(0x08, 0x00).lockedPages, [3])
        XCTAssertEqual(StaticLock(0xF0, 0x00).lockedPages, [4, 5, 6, 7])
        XCTAssertEqual(StaticLock(0x00, 0x81).lockedPages, [8, 15])
        XCTAssertEqual(StaticLock(page2: [0x5E, 0x48, 0xFF, 0xFF])?.lockedPages, Array(3...15))
        XCTAssertNil(StaticLock(page2: [0x5E, 0x48]))
        XCTAssertEqual(NTAGType.ntag213.dynamicallyLockedPages([0x01, 0x00, 0x00]), [16, 17])
        XCTAssertEqual(NTAGType.ntag213.dynamicallyLockedPages([0x00, 0x08, 0x00]), [38, 39])
        XCTAssertEqual(NTAGType.ntag213.dynamicallyLockedPages([0x00, 0xF0, 0x00]), [], "RFUI bits past page 39")
        XCTAssertEqual(NTAGType.ntag215.dynamicallyLockedPages([0x80, 0x00, 0x00]), [128, 129])
        XCTAssertEqual(NTAGType.ntag216.dynamicallyLockedPages([0x00, 0x20, 0x00]), [224, 225])
        XCTAssertEqual(NTAGType.ntag216.dynamicallyLockedPages([0x02, 0x00, 0x00]), Array(32...47))

        let uid = TagUID(hex: "04A1B2C3D4E5F6")!
        var image = try TagImage.make(type: .ntag213, uid: uid)
        XCTAssertFalse(image.isLocked)
        image.bytes[10] = 0x10
        XCTAssertEqual(image.lockedPages, [4])
        XCTAssertTrue(image.isLocked)
        image.bytes[10] = 0
        image.bytes[NTAGType.ntag213.dynamicLockPage * 4] = 0x02
        XCTAssertEqual(image.lockedPages, [18, 19])
        image.bytes[NTAGType.ntag213.dynamicLockPage * 4] = 0
        image.bytes[15] = 0x0F
        XCTAssertTrue(image.isLocked, "CC write access 0xF: read-only")
    }

    func testCapabilityContainer() throws {
        let cc = try CapabilityContainer([0xE1, 0x10, 0x3E, 0x00])
        XCTAssertEqual(cc.dataAreaSize, 496)
        XCTAssertFalse(cc.readOnly)
        XCTAssertEqual(cc.bytes, [0xE1, 0x10, 0x3E, 0x00])
        XCTAssertTrue(try CapabilityContainer([0xE1, 0x10, 0x12, 0x0F]).readOnly)
        XCTAssertTrue(try CapabilityContainer([0xE1, 0x10, 0x12, 0x80]).readOnly)
        XCTAssertEqual(CapabilityContainer(dataAreaSize: 144).bytes, [0xE1, 0x10, 0x12, 0x00])
        for bad: [UInt8] in [[0xE1, 0x10], [0x00, 0x10, 0x12, 0x00], [0xE1, 0x20, 0x12, 0x00]] {
            XCTAssertThrowsError(try CapabilityContainer(bad)) {
                guard case .badCapabilityContainer = $0 as? NDEFError else { return XCTFail("\($0)") }
            }
        }
        // A CC announcing more than user memory: the data area stops at user memory.
        var image = try TagImage.make(type: .ntag213, uid: TagUID(hex: "04A1B2C3D4E5F6")!)
        image.bytes[14] = 0xFF
        XCTAssertEqual(try image.dataArea().count, 144)
        image.bytes[12] = 0x00
        XCTAssertThrowsError(try image.message())
    }

    func testBlankContent() throws {
        XCTAssertEqual(try Type2.content(ofArea: [0x03, 0x00, 0xFE]), .blank)
        XCTAssertEqual(
            try Type2.content(ofArea: [0x00, 0x00, 0xFE, 0x03, 0x04]), .blank, "no NDEF TLV before the Terminator")
        XCTAssertEqual(try Type2.content(ofArea: [UInt8](repeating: 0, count: 144)), .blank)
        XCTAssertEqual(try TagContent(ndefValue: nil), .blank)
        let m = NDEFMessage(records: [.uri("https://example.org/door")])
        XCTAssertEqual(try Type2.content(ofArea: Type2.ndefTLV(m)), .message(m))
        XCTAssertThrowsError(try Type2.content(ofArea: [0x03, 0x02, 0xD1, 0x01])) {
            guard case .truncated = $0 as? NDEFError else { return XCTFail("\($0)") }
        }
    }

    func testTLVErrorsAreDistinguished() {
        func err(_ area: [UInt8]) -> NDEFError? {
            do { _ = try Type2.parseTLVs(area); return nil } catch { return error }
        }
        guard case .truncated = err([0x01]) else { return XCTFail("no length") }
        guard case .truncated = err([0x03, 0xFF, 0x00]) else { return XCTFail("3-byte length cut") }
        guard case .lengthBeyondData = err([0x03, 0x05, 0x00]) else { return XCTFail("value cut") }
        guard case .lengthBeyondData = err([0x03, 0xFF, 0x00, 0x02, 0x00]) else { return XCTFail("value cut") }
        XCTAssertNil(err([0x00, 0x00]))
        XCTAssertEqual(try Type2.parseTLVs([0x03, 0xFF, 0x00, 0x01, 0xAA, 0xFE, 0x99]), [.ndef([0xAA]), .terminator])
        // Only TLVs up to the first NDEF TLV matter for the message, as when reading page by page.
        XCTAssertEqual(try Type2.firstNDEFValue([0x03, 0x00, 0x01, 0x09]), [])
        func recordErr(_ bytes: [UInt8]) -> NDEFError? {
            do { _ = try NDEFMessage.decode(bytes); return nil } catch { return error }
        }
        guard case .truncated = recordErr([0xD1]) else { return XCTFail("header cut") }
        guard case .truncated = recordErr([0xC1, 0x01, 0x00, 0x00]) else { return XCTFail("long length cut") }
        guard case .lengthBeyondData = recordErr([0xD1, 0x01, 0x05, 0x55, 0x00]) else { return XCTFail("payload cut") }
        guard case .lengthBeyondData = recordErr([0xD9, 0x01, 0x00, 0x03, 0x55]) else { return XCTFail("ID cut") }
        XCTAssertEqual(recordErr([0xF1, 0x01, 0x00, 0x55]), .chunkedRecord)
        XCTAssertEqual(
            recordErr([0xD0, 0x01, 0x00, 0x55]),
            .invalidRecord("an empty record (TNF 0) must have no type, ID or payload"))
        XCTAssertEqual(recordErr([0xD1, 0x00, 0x00]), .invalidRecord("TNF 1 needs a type"))
    }

    func testScanAgreesWithTheWholeAreaAtEveryCut() throws {
        let sources =
            vectors.ndef_cases.map { Hex.decode($0.tlv)! }
            + vectors.dumps.map { Array(Hex.decode($0.hex)!.dropFirst(16).prefix(144)) }
        for area in sources {
            let whole: Result<[UInt8]?, NDEFError> = Result { () throws(NDEFError) in try Type2.firstNDEFValue(area) }
            for cut in 0...area.count {
                let result: Type2.Scan
                do {
                    result = try Type2.scan(prefix: Array(area.prefix(cut)), areaSize: area.count)
                } catch {
                    // An error shows as soon as the bytes prove it; the whole area gives the same.
                    XCTAssertEqual(whole.failureValue, error)
                    continue
                }
                switch result {
                case .needMore(let n):
                    XCTAssertGreaterThan(n, 0)
                    XCTAssertLessThanOrEqual(cut + n, area.count)
                case .complete(let value, let end):
                    XCTAssertEqual(try whole.get(), value)
                    XCTAssertLessThanOrEqual(end, cut)
                case .noNDEF:
                    XCTAssertEqual(try whole.get(), nil)
                }
            }
        }
    }
}

extension Result {
    fileprivate var failureValue: Failure? {
        if case .failure(let e) = self { return e }
        return nil
    }
}
