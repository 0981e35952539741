import Foundation
import TestSupport
import XCTest

/// Every committed fuzz input (Fuzz/corpus/<target>/: the seeds and the
/// inputs that once broke a parser, named regression-*) replayed through its
/// target by the debug `fuzz-targets` (the same entry points `make fuzz`
/// runs under libFuzzer): each input must run to the end, no trap, no broken
/// invariant. A finding fixed stays fixed.
final class FuzzCorpusTests: XCTestCase {
    static let targets = [
        "ndef", "sticker", "compat", "native", "toml", "control", "reader", "mqtt", "fleet", "natsjwt", "mdns",
        "ntag424", "osdp", "osdpcp",
    ]
    static let fuzz = Fixtures.root.appendingPathComponent("Fuzz")

    func testEveryTargetHasSeedsAndADictionary() throws {
        let dirs = try FileManager.default.contentsOfDirectory(atPath: Self.fuzz.appendingPathComponent("corpus").path)
        XCTAssertEqual(Set(dirs), Set(Self.targets), "Fuzz/corpus has one directory per target")
        for t in Self.targets {
            XCTAssertFalse(try corpus(t).isEmpty, "Fuzz/corpus/\(t) has seeds")
            XCTAssertTrue(
                FileManager.default.fileExists(atPath: Self.fuzz.appendingPathComponent("dict/\(t).dict").path),
                "Fuzz/dict/\(t).dict")
        }
    }

    func testTheCorporaReplayCleanly() throws {
        let replayer = Run.product("fuzz-targets")
        guard FileManager.default.isExecutableFile(atPath: replayer.path) else {
            return XCTFail("\(replayer.path) is missing: build with `swift build --build-tests`")
        }
        for t in Self.targets {
            let files = try corpus(t)
            let r = try Run.process(
                replayer, [t, Self.fuzz.appendingPathComponent("corpus/\(t)").path], timeout: 300)
            // The replayer names each input on stderr before running it: the last one named broke.
            let last = r.stderr.split(separator: "\n").last(where: { $0.hasPrefix("\(t): ") }) ?? "none"
            XCTAssertEqual(r.status, 0, "\(t): the replay died on \(last)\n\(r.stderr.suffix(2000))")
            XCTAssertEqual(r.stdout, "\(t): replayed \(files.count) inputs\n", t)
        }
    }

    func corpus(_ target: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(
            atPath: Self.fuzz.appendingPathComponent("corpus/\(target)").path
        ).filter { !$0.hasPrefix(".") }
    }
}
