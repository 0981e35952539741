import DoorCore
import TestSupport
import XCTest

/// At least 100 000 random and mutated inputs per parser; none may trap (a
/// trap kills the test run). Where an input decodes, re-encoding must give
/// an equivalent value. Seeds are fixed so a failure reproduces.
final class PropertyTests: XCTestCase {
    static let iterations = 100_000
    let vectors = CompatVectors.load()

    /// Half the inputs are mutations of the seeds, half random bytes.
    func inputs(seeds: [[UInt8]], seed: UInt64, maxRandomLength: Int = 200, _ body: ([UInt8]) -> Void) {
        var rng = SeededRandom(seed: seed)
        for n in 0..<Self.iterations {
            if n % 2 == 0, !seeds.isEmpty {
                body(rng.mutate(seeds[Int.random(in: 0..<seeds.count, using: &rng)]))
            } else {
                let length = Int.random(in: 0...maxRandomLength, using: &rng)
                body((0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) })
            }
        }
    }

    func testTLVAndNDEFParsersNeverTrap() {
        var seeds = vectors.ndef_cases.map { Hex.decode($0.tlv)! }
        seeds += vectors.tags_v2.map { Hex.decode($0.ndef_tlv)! }
        var decoded = 0
        inputs(seeds: seeds, seed: 1) { area in
            _ = try? Type2.scan(prefix: area, areaSize: 144)
            guard let message = try? Type2.message(inArea: area) else { return }
            decoded += 1
            _ = try? message.firstURI()
            for r in message.records { _ = try? r.uri(); _ = try? r.text() }
            XCTAssertEqual(try? NDEFMessage.decode(message.encoded()), message)
        }
        XCTAssertGreaterThan(decoded, 1000, "mutations should often still decode")
    }

    func testDumpParserNeverTraps() {
        let seeds = vectors.dumps.map { Hex.decode($0.hex)! }
        var parsed = 0
        // Random bytes only meet the size check; NDEFPropertyTests flips bytes in place.
        inputs(seeds: seeds, seed: 2) { bytes in
            guard let image = try? TagImage(dump: bytes) else { return }
            parsed += 1
            _ = image.uid
            _ = image.isLocked
            _ = try? image.isBlank()
            _ = try? image.message().firstURI()
        }
        XCTAssertGreaterThan(parsed, 100)
    }

    func testStickerURLAndShareLinkParsersNeverTrap() {
        let seeds =
            (vectors.tags_v1.map(\.url) + vectors.tags_v2.map(\.url) + vectors.sticker_cases.map(\.url)
            + vectors.share.map(\.link)).map { Array($0.utf8) }
        var parsedURLs = 0
        inputs(seeds: seeds, seed: 3) { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            if let url = try? StickerURL.parse(text) {
                parsedURLs += 1
                XCTAssertEqual(try? StickerURL.parse(url.text), url)
            }
            if let link = try? ShareLink.parse(text) {
                XCTAssertEqual(try? ShareLink.parse(link.text), link)
            }
        }
        XCTAssertGreaterThan(parsedURLs, 100)
    }

    func testCommandClassifierNeverTraps() {
        let seeds =
            vectors.otp_cases.map { Array($0.message.utf8) }
            + [
                Array(
                    #"{"action": 1, "ts": 5, "nonce": "00112233445566778899aabbccddeeff", "device": "d", "mac": "00"}"#
                        .utf8),
                Array(#"{"TT_ID":"x"}"#.utf8), Array(#"[1,2.5e3,-0,"\u00e9\ud83d\ude00",{"a":null}]"#.utf8),
            ]
        let judge = CommandJudge(deviceID: "d")
        let key = Hex.decode(vectors.otp_cases[0].key)!
        let now = WallClock(unixSeconds: Int64(vectors.otp_cases[0].now), synchronised: true)
        var replay = ReplayGuard(capacity: 64)
        inputs(seeds: seeds, seed: 4) { bytes in
            _ = judge.judgeCompat(payload: bytes, retained: false, key: key, now: now, replay: &replay)
            _ = judge.judgeNative(
                payload: bytes, retained: false, key: Array(repeating: 1, count: 32), now: now, replay: &replay)
            if let v = try? JSONValue.parse(bytes) {
                XCTAssertEqual(try? JSONValue.parse(v.serialized), v)
            }
        }
    }
}
