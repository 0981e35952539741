import DoorCore
import Foundation
import TestSupport
import XCTest

/// Black-box: the built binary, run as `gateway ctl …`, whole outputs and exit codes.
final class InspectCLITests: XCTestCase {
    let vectors = CompatVectors.load()

    func testTagInspectWholeOutputForAV2Sticker() throws {
        let v = vectors.tags_v2[0]
        let r = try Run.gatewayctl([
            "tag", "inspect", v.url, "--secret", v.secret, "--origin", "generated", "--uid", v.uid,
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(
            r.stdout,
            """
            source:  url
            uid:     04F11AE6510705
            url:     \(v.url)
            version: v2
            idx:     1
            ts:      1758686540 (2025-09-24T04:02:20Z)
            sig:     eeaa6b04b4a2a004c1e52585799713f461eafa81573a7a23e255963a3ce13e69
            u:       Kxpen2V3lbY5yg2NFWxRgA
            verdict: valid — valid_v2: valid v2 sticker (bound to this tag's UID) (secret #1)

            """)
    }

    func testTagInspectExitCodesOverTheStickerCases() throws {
        for c in vectors.sticker_cases {
            var args = ["tag", "inspect", c.url, "--secret", c.secret, "--origin", c.origin]
            if let uid = c.uid { args += ["--uid", uid] }
            let r = try Run.gatewayctl(args)
            XCTAssertEqual(r.status, c.accept ? 0 : 1, "\(c.why): \(r.stdout)")
        }
        for v in vectors.bad_tags {
            var args = ["tag", "inspect", v.url, "--secret", v.secret]
            if let uid = v.uid { args += ["--uid", uid] }
            XCTAssertEqual(try Run.gatewayctl(args).status, 1, v.why)
        }
    }

    func testTagInspectCannotDecideWithoutSecretOrUID() throws {
        let v = vectors.tags_v2[1]
        XCTAssertEqual(try Run.gatewayctl(["tag", "inspect", v.url]).status, 2)
        XCTAssertEqual(try Run.gatewayctl(["tag", "inspect", v.url, "--secret", v.secret]).status, 2)
        XCTAssertEqual(try Run.gatewayctl(["tag", "inspect", v.url, "--secret", v.secret, "--uid", v.uid]).status, 0)
    }

    func testTagInspectReadsTLVHexAndDumpFilesAndSecretFiles() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("inspect-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let d = vectors.dumps[1]
        let dump = dir.appendingPathComponent("tag.mfd")
        try Data(Hex.decode(d.hex)!).write(to: dump)
        let secretFile = dir.appendingPathComponent("secret")
        let secret = vectors.tags_v2.first { $0.uid == d.uid }!.secret
        try Data("# test secret\n\(secret)\n".utf8).write(to: secretFile)
        let r = try Run.gatewayctl(["tag", "inspect", dump.path, "--secret-file", secretFile.path, "--json"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(
            r.stdout.hasPrefix(
                #"{"source":"dump NTAG215","uid":"04B3527F791D06","records":[{"tnf":"wellKnown","type":"U","uri":"smp://action?idx=2"#
            ), r.stdout)
        XCTAssertFalse(r.stdout.contains("\\/"), "JSON must not escape '/'")
        let tlv = vectors.tags_v1[0]
        XCTAssertEqual(try Run.gatewayctl(["tag", "inspect", tlv.ndef_tlv, "--secret", tlv.secret]).status, 0)
        let noURI = vectors.ndef_cases.first { $0.why.contains("only inside a Text") }!
        let bad = try Run.gatewayctl(["tag", "inspect", noURI.tlv, "--secret", tlv.secret])
        XCTAssertEqual(bad.status, 1)
        XCTAssertTrue(bad.stdout.contains("no URI record"), bad.stdout)
    }

    func testTagInspectUsageErrorsKeepTheParserCode() throws {
        let r = try Run.gatewayctl(["tag", "inspect", vectors.tags_v1[0].url, "--secret", "abc"])
        XCTAssertEqual(r.status, 64)
        XCTAssertTrue(r.stderr.contains("64 hex digits"), r.stderr)
        XCTAssertEqual(try Run.gatewayctl(["tag", "inspect", "x", "--origin", "stolen"]).status, 64)
        XCTAssertEqual(try Run.gatewayctl(["tag", "inspect", "/nonexistent"]).status, 1)
    }

    func testOTPInspectOverTheVectorCases() throws {
        for c in vectors.otp_cases {
            let r = try Run.gatewayctl([
                "otp", "inspect", c.message, "--key", c.key, "--now", "\(c.now)",
                "--tolerance", "\(c.tolerance)",
            ])
            XCTAssertEqual(r.status, c.accept ? 0 : 1, "\(c.why): \(r.stdout)")
        }
        for v in vectors.otp where v.bad_checksum == true {
            let msg = #"{"command": 1, "otp-auth": "\#(v.otp_auth)"}"#
            let r = try Run.gatewayctl(["otp", "inspect", msg, "--key", v.key, "--now", "\(v.ts)"])
            XCTAssertEqual(r.status, 1)
            XCTAssertTrue(r.stdout.contains("checksum:  bad"), r.stdout)
        }
    }

    func testOTPInspectWholeOutputAndReportsAndKeyFile() throws {
        let v = vectors.otp[0]
        let r = try Run.gatewayctl(["otp", "inspect", v.message!, "--key", v.key, "--now", "\(v.ts + 2)"])
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(
            r.stdout,
            """
            command:   1 → action 0
            timestamp: 1757216934 (2025-09-07T03:48:54Z)
            now:       1757216936 (2025-09-07T03:48:56Z)
            skew:      2 s (window ±5 s)
            checksum:  ok
            verdict:   accepted

            """)
        XCTAssertEqual(try Run.gatewayctl(["otp", "inspect", #"{"command": 5}"#, "--key", v.key]).status, 0)
        let report = try Run.gatewayctl([
            "otp", "inspect", #"{"TT_ID":"door","event_timestamp":1}"#, "--key", v.key, "--json",
        ])
        XCTAssertEqual(report.status, 1)
        XCTAssertTrue(report.stdout.contains(#""reason":"device_report""#))
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("otpkey-\(getpid())")
        try Data((v.key + "\n").utf8).write(to: keyFile)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        XCTAssertEqual(
            try Run.gatewayctl(["otp", "inspect", v.message!, "--key-file", keyFile.path, "--now", "\(v.ts)"]).status, 0
        )
        XCTAssertEqual(try Run.gatewayctl(["otp", "inspect", v.message!]).status, 64)
        XCTAssertEqual(
            try Run.gatewayctl(["otp", "inspect", v.message!, "--key", v.key, "--tolerance", "31"]).status, 64)
    }
}
