import Foundation
import TestSupport
import XCTest

/// Black-box: `gateway ctl tag sun-verify` on AN12196's SUN examples (Tables 3, 5, 6).
final class SUNVerifyCLITests: XCTestCase {
    var dir: URL!
    var zeroHex: String!
    var zeroRaw: String!
    var otherKey: String!

    let nxpURL = "https://choose.url.com/ntag424?e=EF963FF7828658A599F3041510671E88&c=94EED9EE65337086"
    let encURL =
        "https://sdm.nfcdeveloper.com/tag?picc_data=FD91EC264309878BE6345CBE53BADF40&enc=CEE9A53E3E463EF1F459635736738962&cmac=ECC1E7F6C6C73BF6"

    override func setUpWithError() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("sun-verify-\(getpid())-\(name.hashValue)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        zeroHex = try write(
            "zero.hex",
            Data("# K_SDMMetaRead = K_SDMFileRead (AN12196 example)\n\(String(repeating: "0", count: 32))\n".utf8))
        zeroRaw = try write("zero.bin", Data(count: 16))
        otherKey = try write("other.hex", Data("000000000000000000000000000000aa".utf8))
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: dir)
    }

    func write(_ name: String, _ data: Data) throws -> String {
        let url = dir.appendingPathComponent(name)
        try data.write(to: url)
        return url.path
    }

    func verify(_ url: String, meta: String? = nil, file: String? = nil, json: Bool = true) throws -> ProcessResult {
        var args: [String] = [
            "tag", "sun-verify", url, "--meta-key-file", meta ?? zeroHex!, "--file-key-file", file ?? zeroHex!,
        ]
        if json { args.append("--json") }
        return try Run.gatewayctl(args)
    }

    func testAN12196Table3And5URLInEveryLayoutWithEmptyMACInput() throws {
        let r = try verify(nxpURL)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, #"{"uid":"04DE5F1EACC040","counter":61,"mac_ok":true}"# + "\n")
        // The boltcard layout and lower-case hex, with a raw 16-byte key file.
        let p = try verify(
            "lnurlw://card.example/ln?p=ef963ff7828658a599f3041510671e88&c=94eed9ee65337086", meta: zeroRaw,
            file: zeroRaw)
        XCTAssertEqual(p.status, 0, p.stderr)
        XCTAssertEqual(p.stdout, #"{"uid":"04DE5F1EACC040","counter":61,"mac_ok":true}"# + "\n")
        let text = try verify(nxpURL, json: false)
        XCTAssertEqual(text.status, 0)
        XCTAssertEqual(text.stdout, "uid:     04DE5F1EACC040\ncounter: 61\nmac:     ok\n")
    }

    func testAN12196Table6MACOverEncryptedFileData() throws {
        let r = try verify(encURL)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(
            r.stdout,
            #"{"uid":"04958CAA5C5E80","counter":8,"mac_ok":true,"file_data":"78787878787878787878787878787878"}"# + "\n"
        )
    }

    func testAMACThatDoesNotHoldExitsOne() throws {
        let flipped = try verify(nxpURL.replacingOccurrences(of: "c=94EED9EE65337086", with: "c=94EED9EE65337087"))
        XCTAssertEqual(flipped.status, 1)
        XCTAssertEqual(flipped.stdout, #"{"uid":"04DE5F1EACC040","counter":61,"mac_ok":false}"# + "\n")
        // The right meta key but another file key: PICCData decrypts, the MAC does not hold.
        let wrongFileKey = try verify(nxpURL, file: otherKey)
        XCTAssertEqual(wrongFileKey.status, 1)
        XCTAssertTrue(wrongFileKey.stdout.contains(#""mac_ok":false"#), wrongFileKey.stdout)
        // The enc layout with an altered enc: the MAC covers it.
        let alteredEnc = try verify(encURL.replacingOccurrences(of: "enc=CEE9", with: "enc=CEE8"))
        XCTAssertEqual(alteredEnc.status, 1)
        XCTAssertFalse(alteredEnc.stdout.contains("file_data"), alteredEnc.stdout)
    }

    func testBadInputIsAClearErrorNeverASuccess() throws {
        let cases: [(String, String)] = [
            ("https://a/", "no query"),
            ("https://a/?e=EF963FF7828658A599F3041510671E88", "missing parameter c"),
            ("https://a/?e=EF963FF78286&c=94EED9EE65337086", "32 hex digits"),
            ("https://a/?e=EF963FF7828658A599F3041510671E88EF963FF7828658A5&c=94EED9EE65337086", "LRP"),
            ("https://a/?x=1", "no e=, p= or picc_data="),
        ]
        for (url, message) in cases {
            let r = try verify(url, json: false)
            XCTAssertEqual(r.status, 2, url)
            XCTAssertTrue(r.stderr.contains(message), "\(url): \(r.stderr)")
            XCTAssertEqual(r.stdout, "", url)
        }
        // The wrong meta key: PICCData does not decrypt to PICCData.
        let wrongMeta = try verify(nxpURL, meta: otherKey)
        XCTAssertEqual(wrongMeta.status, 2)
        XCTAssertTrue(wrongMeta.stdout.hasPrefix(#"{"error":"PICCData: "#), wrongMeta.stdout)
    }

    func testKeyFileErrorsAreUsageErrorsAndNeverEchoTheKey() throws {
        let short = try write("short.hex", Data("00112233".utf8))
        let secretish = try write("bad.hex", Data("zz0102030405060708090a0b0c0d0e0f".utf8))
        for (meta, file) in [
            (short, zeroHex!), (zeroHex!, secretish), (dir.appendingPathComponent("missing").path, zeroHex!),
        ] {
            let r = try verify(nxpURL, meta: meta, file: file)
            XCTAssertEqual(r.status, 64, r.stderr)
            XCTAssertEqual(r.stdout, "")
            XCTAssertFalse(r.stderr.contains("0102030405060708"), r.stderr)
            XCTAssertTrue(r.stderr.contains("key"), r.stderr)
        }
        let missing = try Run.gatewayctl(["tag", "sun-verify", nxpURL, "--meta-key-file", zeroHex!])
        XCTAssertEqual(missing.status, 64)
    }
}
