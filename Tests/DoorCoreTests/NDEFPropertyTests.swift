import DoorCore
import TestSupport
import XCTest

/// Seeded random and mutated inputs straight into the record parser, the
/// incremental scan and the dump parser (PropertyTests.swift covers the TLV
/// path). None may trap; what decodes must survive re-encoding.
final class NDEFPropertyTests: XCTestCase {
    let vectors = CompatVectors.load()

    /// Encoded messages: every vector's NDEF TLV value, plus records of every TNF with IDs and long payloads.
    var messageSeeds: [[UInt8]] {
        var seeds = (vectors.ndef_cases.map(\.tlv) + vectors.tags_v2.map(\.ndef_tlv)).compactMap {
            try? Type2.firstNDEFValue(Hex.decode($0)!)
        }
        let records: [NDEFRecord] = [
            NDEFRecord(tnf: .empty, type: [], payload: []),
            NDEFRecord(tnf: .wellKnown, type: [0x55], id: [7], payload: [0x04] + Array("example.org".utf8)),
            NDEFRecord(tnf: .absoluteURI, type: Array("urn:x".utf8), payload: [1]),
            .external(type: "doorgateway.example:tag", payload: Array(repeating: 0x5A, count: 260)),
            NDEFRecord(tnf: .unknown, type: [], payload: [0xFF]),
            NDEFRecord(tnf: .reserved, type: [1], payload: []),
        ]
        seeds.append(try! NDEFMessage(records: records).encoded())
        return seeds
    }

    func testRecordParserOnMutatedMessages() {
        var rng = SeededRandom(seed: 0x4E44_4546)
        let seeds = messageSeeds
        var decoded = 0
        for n in 0..<100_000 {
            let bytes =
                n % 4 == 3
                ? (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                : rng.mutate(seeds[Int.random(in: 0..<seeds.count, using: &rng)])
            guard let message = try? NDEFMessage.decode(bytes) else { continue }
            decoded += 1
            _ = try? message.firstURI()
            _ = message.firstText()
            guard let again = try? message.encoded() else {
                return XCTFail("a decoded message must encode: \(Hex.encode(bytes))")
            }
            XCTAssertEqual(try? NDEFMessage.decode(again), message, Hex.encode(bytes))
            XCTAssertEqual(try? Type2.message(inArea: Type2.ndefTLV(message)), message, Hex.encode(bytes))
        }
        XCTAssertGreaterThan(decoded, 5_000, "mutations should often still decode")
    }

    /// Reading a mutated area in random steps gives what parsing it whole gives.
    func testScanMatchesWholeAreaOnMutatedAreas() {
        var rng = SeededRandom(seed: 0x5343_414E)
        let seeds = vectors.ndef_cases.map { Hex.decode($0.tlv)! } + vectors.tags_v1.map { Hex.decode($0.ndef_tlv)! }
        var complete = 0
        for _ in 0..<20_000 {
            let area = rng.mutate(seeds[Int.random(in: 0..<seeds.count, using: &rng)])
            let whole = Result { () throws(NDEFError) in try Type2.firstNDEFValue(area) }
            var have = 0
            while true {
                let step: Type2.Scan
                do {
                    step = try Type2.scan(prefix: Array(area.prefix(have)), areaSize: area.count)
                } catch {
                    guard case .failure(let e) = whole else { return XCTFail("scan failed alone: \(Hex.encode(area))") }
                    XCTAssertEqual(e, error)
                    break
                }
                if case .needMore(let n) = step {
                    XCTAssertGreaterThan(n, 0)
                    have += Int.random(in: n...(n + 16), using: &rng)
                    continue
                }
                guard case .success(let expected) = whole else {
                    return XCTFail("only the whole area failed: \(Hex.encode(area))")
                }
                if case .complete(let value, _) = step {
                    complete += 1
                    XCTAssertEqual(expected, value, Hex.encode(area))
                } else {
                    XCTAssertNil(expected, Hex.encode(area))
                }
                break
            }
        }
        XCTAssertGreaterThan(complete, 1_000)
    }

    /// Dumps with bytes flipped in place (the size kept, so the parser gets past
    /// the size check): parsed ones rebuild from their UID and message.
    func testDumpParserOnFlippedDumps() throws {
        var rng = SeededRandom(seed: 0x44_554D50)
        let seeds = vectors.dumps.map { Hex.decode($0.hex)! }
        var rebuilt = 0
        for _ in 0..<20_000 {
            var bytes = seeds[Int.random(in: 0..<seeds.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                // Mostly the first pages: UID, locks, CC and the start of the TLVs.
                let limit = Bool.random(using: &rng) ? 48 : bytes.count
                bytes[Int.random(in: 0..<limit, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            guard let image = try? TagImage(dump: bytes) else { continue }
            _ = image.lockedPages
            _ = image.isLocked
            guard case .message(let message)? = try? image.content() else { continue }
            guard let made = try? TagImage.make(type: image.type, uid: image.uid, message: message) else {
                // Only when a changed CC let a message run past the factory data area.
                XCTAssertGreaterThan(try Type2.ndefTLV(message).count, image.type.ndefCapacity)
                continue
            }
            XCTAssertEqual(try made.message(), message)
            XCTAssertEqual(try TagImage(dump: made.bytes), made)
            rebuilt += 1
        }
        XCTAssertGreaterThan(rebuilt, 1_000)
    }
}
