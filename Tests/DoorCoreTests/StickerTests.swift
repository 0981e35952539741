import DoorCore
import TestSupport
import XCTest

final class StickerTests: XCTestCase {
    let vectors = CompatVectors.load()

    func secret(_ hex: String, action: Int, origin: SecretOrigin, id: Int64 = 1) -> StickerSecret {
        StickerSecret(id: id, action: action, key: Hex.decode(hex)!, origin: origin)
    }

    func testV1VectorsAreProducedAndVerifyWithImportedSecrets() {
        for v in vectors.tags_v1 {
            let key = Hex.decode(v.secret)!
            XCTAssertEqual(StickerSigner.signV1(action: v.idx, timestamp: Int64(v.ts), key: key).text, v.url)
            let verdict = StickerJudge.judge(
                v.url, uid: nil, secrets: [secret(v.secret, action: v.idx, origin: .imported)],
                actionCount: 4)
            XCTAssertEqual(verdict.reason, .validV1, v.url)
            XCTAssertEqual(verdict.secretID, 1)
        }
    }

    func testV2VectorsAreProducedAndBoundToTheirUID() {
        for v in vectors.tags_v2 {
            let uid = TagUID(hex: v.uid)!
            let key = Hex.decode(v.secret)!
            XCTAssertEqual(StickerSigner.signV2(action: v.idx, timestamp: Int64(v.ts), key: key, uid: uid).text, v.url)
            for origin in SecretOrigin.allCases {
                let s = [secret(v.secret, action: v.idx, origin: origin)]
                XCTAssertEqual(StickerJudge.judge(v.url, uid: uid, secrets: s, actionCount: 4).reason, .validV2)
                var other = uid.bytes
                other[6] ^= 1
                XCTAssertEqual(
                    StickerJudge.judge(v.url, uid: TagUID(other), secrets: s, actionCount: 4).reason, .uidMismatch)
                XCTAssertEqual(StickerJudge.judge(v.url, uid: nil, secrets: s, actionCount: 4).outcome, .undecided)
            }
        }
    }

    func testBadTagsAreRejectedForTheirReason() {
        for v in vectors.bad_tags {
            let parsed = try! StickerURL.parse(v.url)
            // The secret belongs to the action the tag claims (so "idx changed" is judged by signature).
            let s = [secret(v.secret, action: parsed.action, origin: .imported)]
            let verdict = StickerJudge.judge(v.url, uid: v.uid.flatMap(TagUID.init(hex:)), secrets: s, actionCount: 4)
            switch v.why {
            case "sig by another secret", "idx changed after signing":
                XCTAssertEqual(verdict.reason, .badSignature, v.why)
            case "v2 bound to another uid":
                XCTAssertEqual(verdict.reason, .uidMismatch, v.why)
            default:
                XCTFail("unexpected vector \(v.why)")
            }
            XCTAssertTrue(verdict.countsTowardLockout)
        }
    }

    func testStickerCases() {
        for c in vectors.sticker_cases {
            let origin = SecretOrigin(rawValue: c.origin)!
            let action = (try? StickerURL.parse(c.url).action) ?? 1
            let verdict = StickerJudge.judge(
                c.url, uid: c.uid.flatMap(TagUID.init(hex:)),
                secrets: [secret(c.secret, action: action, origin: origin)], actionCount: 4)
            XCTAssertEqual(verdict.isValid, c.accept, "\(c.why): \(verdict)")
            switch c.why {
            case "leading zero in idx", "percent-encoded idx", "parameters reordered", "extra parameter":
                XCTAssertEqual(verdict.reason, .malformed, c.why)
            case "v1 sticker with a gateway-generated secret", "v2 sticker with u removed (downgrade)":
                XCTAssertEqual(verdict.reason, .v1NotAllowed, c.why)
            case "uppercase signature hex", "v1 sticker with an imported secret":
                XCTAssertEqual(verdict.reason, .validV1, c.why)
            case "v2 sticker, matching UID":
                XCTAssertEqual(verdict.reason, .validV2, c.why)
            default:
                XCTFail("unexpected vector \(c.why)")
            }
        }
    }

    func testParsedFieldsAndCanonicalTextRoundTrip() throws {
        for v in vectors.tags_v2 {
            let url = try StickerURL.parse(v.url)
            XCTAssertEqual(url.action, v.idx)
            XCTAssertEqual(url.timestamp, Int64(v.ts))
            XCTAssertEqual(url.version, .v2)
            XCTAssertEqual(url.text, v.url)
        }
    }

    func testParseErrors() {
        let sig = String(repeating: "a", count: 64)
        func reason(_ s: String) -> StickerParseError? {
            do { _ = try StickerURL.parse(s); return nil } catch { return error }
        }
        XCTAssertEqual(reason("https://example.org/door"), .notOurs)
        XCTAssertEqual(reason(""), .notOurs)
        XCTAssertNil(reason("smp://action?idx=0&ts=0&sig=\(sig)"))
        for bad in [
            "smp://action?idx=+1&ts=1&sig=\(sig)", "smp://action?idx=1&ts=-1&sig=\(sig)",
            "smp://action?idx=1&ts=1&sig=\(sig.dropLast())", "smp://action?idx=1&ts=1&sig=\(sig)&u=",
            "smp://action?idx=1&ts=1&sig=\(sig)&u=AAAAAAAAAAAAAAAAAAAAA=", "smp://action?idx=1&ts=1",
            "smp://action?idx=1&ts=1&sig=\(sig)&", "smp://Action?idx=1&ts=1&sig=\(sig)",
            "smp://action?idx=1&ts=9999999999999&sig=\(sig)", "smp://action?idx=1&&ts=1&sig=\(sig)",
            "SMP://action?idx=1&ts=1&sig=\(sig)", "smp://action?idx=1&ts=1&sig=\(sig)&u=AAAAAAAAAAAAAAAAAAAAAB",
        ] {
            guard case .malformed = reason(bad) else { return XCTFail("accepted or not-ours: \(bad)") }
        }
    }

    func testSecretsOfOtherActionsAndInactiveSecretsNeverVerify() {
        let v = vectors.tags_v1[0]
        XCTAssertEqual(
            StickerJudge.judge(
                v.url, uid: nil, secrets: [secret(v.secret, action: v.idx + 1, origin: .imported)],
                actionCount: 4
            ).reason, .noSecret)
        var inactive = secret(v.secret, action: v.idx, origin: .imported)
        inactive.active = false
        XCTAssertEqual(StickerJudge.judge(v.url, uid: nil, secrets: [inactive], actionCount: 4).reason, .noSecret)
        XCTAssertEqual(
            StickerJudge.judge(
                v.url, uid: nil, secrets: [secret(v.secret, action: v.idx, origin: .imported)],
                actionCount: v.idx
            ).reason, .unknownAction)
        // Several secrets: the one that verifies is named.
        let other = secret(String(repeating: "11", count: 32), action: v.idx, origin: .imported, id: 7)
        let imp = secret(v.secret, action: v.idx, origin: .imported, id: 9)
        XCTAssertEqual(StickerJudge.judge(v.url, uid: nil, secrets: [other, imp], actionCount: 4).secretID, 9)
    }

    /// Finding H1: a v2 sticker with `&u=…` cut off is a v1 sticker signed
    /// with a gateway-generated key. When the same key is also held as
    /// imported (a share link of it imported back, or two origins of one key
    /// in any order), the generated one decides: denied, and the verdict names it.
    func testAV2StickerWithUCutOffIsDeniedWhenAnyVerifyingSecretIsGenerated() throws {
        for v in vectors.tags_v2 {
            let url = try StickerURL.parse(v.url)
            var copy = url
            copy.uidBinding = nil
            XCTAssertFalse(copy.text.contains("&u="))
            let gen = secret(v.secret, action: v.idx, origin: .generated, id: 8)
            let imp = secret(v.secret, action: v.idx, origin: .imported, id: 9)
            for secrets in [[gen, imp], [imp, gen], [gen]] {
                let verdict = StickerJudge.judge(copy.text, uid: nil, secrets: secrets, actionCount: 4)
                XCTAssertEqual(verdict.reason, .v1NotAllowed, "\(secrets.map(\.origin))")
                XCTAssertEqual(verdict.secretID, 8, "the generated secret is named")
                XCTAssertFalse(verdict.isValid)
                XCTAssertTrue(verdict.countsTowardLockout)
                // The sticker itself, with its UID, stays valid.
                let uid = TagUID(hex: v.uid)!
                XCTAssertEqual(StickerJudge.judge(v.url, uid: uid, secrets: secrets, actionCount: 4).reason, .validV2)
            }
            // Only an imported key: the phone's v1 stickers, as docs/formats.md §1 says.
            XCTAssertEqual(StickerJudge.judge(copy.text, uid: nil, secrets: [imp], actionCount: 4).reason, .validV1)
        }
    }

    func testNotOursDoesNotCountTowardLockout() {
        let verdict = StickerJudge.judge("https://example.org", uid: nil, secrets: [], actionCount: 4)
        XCTAssertEqual(verdict.reason, .notOurs)
        XCTAssertFalse(verdict.countsTowardLockout)
    }

    func testShareLinks() throws {
        for v in vectors.share {
            let link = try ShareLink.parse(v.link)
            XCTAssertEqual(link, ShareLink(action: v.idx, key: Hex.decode(v.key)!, label: v.label))
            XCTAssertEqual(link.text, v.link)
        }
        XCTAssertEqual(
            try ShareLink.parse("smpshare://secret?idx=0&key=\(String(repeating: "ab", count: 32))").label, nil)
        for bad in [
            "smpshare://secret?idx=0&key=abc",
            "smpshare://secret?idx=0&key=\(String(repeating: "ab", count: 32))&label=%4",
            "smpshare://secret?idx=0&key=\(String(repeating: "ab", count: 32))&label=%ff",
            "smpshare://secret?idx=0&key=\(String(repeating: "ab", count: 32))&label=a b",
            "smpshare://secret?idx=00&key=\(String(repeating: "ab", count: 32))", "smp://action?idx=1",
            "smpshare://secret?idx=0&idx=0&key=\(String(repeating: "ab", count: 32))",
        ] {
            XCTAssertThrowsError(try ShareLink.parse(bad), bad)
        }
    }

    func testCryptoPrimitives() throws {
        // RFC 4231 test case 2.
        XCTAssertEqual(
            Hex.encode(Crypto.hmacSHA256(key: Array("Jefe".utf8), message: "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        XCTAssertEqual(
            Hex.encode(Crypto.sha256([])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(Crypto.hmacSHA256(key: [], message: []).count, 32)
        // FIPS-197 appendix C.1.
        let key = Hex.decode("000102030405060708090a0b0c0d0e0f")!
        let plain = Hex.decode("00112233445566778899aabbccddeeff")!
        let cipher = try Crypto.aes128ECB(.encrypt, key: key, block: plain)
        XCTAssertEqual(Hex.encode(cipher), "69c4e0d86a7b0430d8cdb78070b4c55a")
        XCTAssertEqual(try Crypto.aes128ECB(.decrypt, key: key, block: cipher), plain)
        XCTAssertThrowsError(try Crypto.aes128ECB(.decrypt, key: [1], block: plain))
        XCTAssertThrowsError(try Crypto.aes128ECB(.decrypt, key: key, block: [1, 2]))
        let r1 = try Crypto.randomBytes(32), r2 = try Crypto.randomBytes(32)
        XCTAssertEqual(r1.count, 32)
        XCTAssertNotEqual(r1, r2)
        XCTAssertTrue(Crypto.constantTimeEqual([1, 2], [1, 2]))
        XCTAssertFalse(Crypto.constantTimeEqual([1, 2], [1, 3]))
        XCTAssertFalse(Crypto.constantTimeEqual([1, 2], [1]))
        XCTAssertTrue(Crypto.constantTimeEqual([], []))
    }

    func testBase64URL() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            XCTAssertEqual(Base64URL.decode(Base64URL.encode(bytes)), bytes)
        }
        XCTAssertEqual(Base64URL.encode(Array("\u{FB}\u{FF}".utf8)), "w7vDvw")
        XCTAssertNil(Base64URL.decode("A"))
        XCTAssertNil(Base64URL.decode("AB="))
        XCTAssertNil(Base64URL.decode("AB+/"))
        XCTAssertNil(Base64URL.decode("AB"))  // non-zero trailing bits
    }
}
