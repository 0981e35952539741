import DoorCore
import XCTest

final class FleetTests: XCTestCase {
    let seed = Array(repeating: UInt8(7), count: 32)
    var publicKey: [UInt8] { try! Crypto.Ed25519.publicKey(seed: seed) }
    let uidA = TagUID(hex: "04A1B2C3D4E5F6")!
    let uidB = TagUID(hex: "04112233445566")!

    func document(version: Int64 = 1, site: String = "acme-hq") -> FleetDocument {
        FleetDocument(
            site: site, version: version, origin: "front-door/root", issued: 1_800_000_000, revokedUIDs: [uidB],
            revokedSignatures: [[0xAB, 0xCD]],
            tags: [FleetDocument.Tag(uid: uidA, action: 1, label: "alice", validUntil: nil)])
    }

    func judge(_ bytes: [UInt8], applied: FleetRules.Applied? = nil, site: String = "acme-hq") -> FleetRules.Verdict {
        FleetRules.judge(bytes, sitePublicKey: publicKey, siteID: site, applied: applied)
    }

    // MARK: Ed25519

    func testEd25519MatchesRFC8032Vectors() throws {
        let cases = [
            (
                "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
                "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
            ),
            (
                "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
                "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
            ),
        ]
        for (sk, pk, msg, sig) in cases {
            let seed = Hex.decode(sk)!, message = Hex.decode(msg)!
            XCTAssertEqual(Hex.encode(try Crypto.Ed25519.publicKey(seed: seed)), pk)
            XCTAssertEqual(Hex.encode(try Crypto.Ed25519.sign(seed: seed, message: message)), sig)
            XCTAssertTrue(
                Crypto.Ed25519.verify(publicKey: Hex.decode(pk)!, signature: Hex.decode(sig)!, message: message))
            var bad = Hex.decode(sig)!
            bad[5] ^= 1
            XCTAssertFalse(Crypto.Ed25519.verify(publicKey: Hex.decode(pk)!, signature: bad, message: message))
        }
    }

    func testEd25519RejectsWrongLengthsWithoutTrapping() {
        XCTAssertThrowsError(try Crypto.Ed25519.sign(seed: [1, 2, 3], message: []))
        XCTAssertFalse(Crypto.Ed25519.verify(publicKey: [1], signature: [UInt8](repeating: 0, count: 64), message: []))
        XCTAssertFalse(Crypto.Ed25519.verify(publicKey: publicKey, signature: [0], message: []))
        XCTAssertFalse(
            Crypto.Ed25519.verify(
                publicKey: publicKey, signature: [UInt8](repeating: 0, count: 64), message: Array("x".utf8)))
    }

    // MARK: Documents

    func testSignedDocumentRoundTripsAndIsApplied() throws {
        let doc = document()
        let bytes = try doc.signed(seed: seed)
        guard case .apply(let accepted) = judge(bytes) else { return XCTFail("\(judge(bytes))") }
        XCTAssertEqual(accepted.document, doc)
        XCTAssertEqual(accepted.digest, Crypto.sha256(doc.bodyBytes))
    }

    func testForgedSignatureIsRefused() throws {
        let other = try Crypto.Ed25519.generateSeed()
        XCTAssertEqual(judge(try document().signed(seed: other)), .refuse(.badSignature))
        // The site's signature on one body, another body swapped in.
        let (_, sig) = try FleetDocument.openEnvelope(try document().signed(seed: seed))
        var evil = document()
        evil.revokedUIDs.append(uidA)
        XCTAssertEqual(judge(FleetDocument.envelope(body: evil.bodyBytes, signature: sig)), .refuse(.badSignature))
    }

    func testAnotherSitesDocumentIsRefused() throws {
        let bytes = try document(site: "other-site").signed(seed: seed)
        XCTAssertEqual(judge(bytes), .refuse(.wrongSite("other-site")))
    }

    func testVersionsOnlyGoForward() throws {
        let v3 = try document(version: 3).signed(seed: seed)
        guard case .apply(let a3) = judge(v3) else { return XCTFail() }
        let applied = FleetRules.Applied(site: "acme-hq", version: 3, digest: a3.digest)
        XCTAssertEqual(judge(v3, applied: applied), .alreadyApplied)
        XCTAssertEqual(
            judge(try document(version: 2).signed(seed: seed), applied: applied),
            .refuse(.stale(version: 2, applied: 3)))
        // Same version, other content: refused, not silently taken.
        var other = document(version: 3)
        other.origin = "back-door/root"
        XCTAssertEqual(judge(try other.signed(seed: seed), applied: applied), .refuse(.stale(version: 3, applied: 3)))
        guard case .apply = judge(try document(version: 4).signed(seed: seed), applied: applied) else {
            return XCTFail()
        }
        // What was applied under another site ID does not hold this one back.
        let elsewhere = FleetRules.Applied(site: "old-site", version: 99, digest: [])
        guard case .apply = judge(v3, applied: elsewhere) else { return XCTFail() }
    }

    func testGarbageAndTruncatedDocumentsAreMalformedNeverATrap() throws {
        let good = try document().signed(seed: seed)
        for cut in stride(from: 0, to: good.count, by: 7) {
            guard case .refuse(let e) = judge(Array(good.prefix(cut))) else { return XCTFail("prefix \(cut) accepted") }
            XCTAssertEqual(e.reason, "malformed")
        }
        let samples = [
            "", "null", "[]", "{}", "{\"fleet\":2,\"body\":\"e30\",\"sig\":\"\"}",
            "{\"fleet\":1,\"body\":5,\"sig\":\"x\"}",
            String(repeating: "[", count: 10_000), "{\"fleet\":1,\"body\":\"!!\",\"sig\":\"AA\"}",
        ]
        for s in samples {
            guard case .refuse(let e) = judge(Array(s.utf8)) else { return XCTFail(s) }
            XCTAssertEqual(e.reason, "malformed", s)
        }
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var b = good
            for _ in 0..<3 {
                b[Int.random(in: 0..<b.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            if case .apply = judge(b) { XCTAssertEqual(b, good) }
        }
    }

    func testASignedButMalformedBodyIsRefused() throws {
        let bodies = [
            "{}", "[1]",
            "{\"site\":\"acme-hq\",\"version\":0,\"origin\":\"x\",\"issued\":1,\"revocations\":{\"uids\":[],\"signatures\":[]},\"tags\":[]}",
            "{\"site\":\"acme-hq\",\"version\":1,\"origin\":\"x\",\"issued\":1,\"revocations\":{\"uids\":[\"zz\"],\"signatures\":[]},\"tags\":[]}",
            "{\"site\":\"acme-hq\",\"version\":1,\"origin\":\"x\",\"issued\":1,\"revocations\":{\"uids\":[],\"signatures\":[]},\"tags\":[{\"uid\":\"04A1B2C3D4E5F6\",\"action\":999}]}",
        ]
        for body in bodies {
            let b = Array(body.utf8)
            let sig = try Crypto.Ed25519.sign(seed: seed, message: FleetDocument.signingContext + b)
            guard case .refuse(.malformed) = judge(FleetDocument.envelope(body: b, signature: sig)) else {
                return XCTFail(body)
            }
        }
    }

    // MARK: Changes

    func testChangesAreAdditiveAndRespectLocalState() {
        let uidC = TagUID(hex: "04CCCCCCCCCCCC")!, uidD = TagUID(hex: "04DDDDDDDDDDDD")!
        var doc = document()
        doc.tags += [
            FleetDocument.Tag(uid: uidB, action: 1),  // revoked by the same document
            FleetDocument.Tag(uid: uidC, action: 7),  // action not defined here
            FleetDocument.Tag(uid: uidD, action: 1),  // pending here
        ]
        let local = FleetRules.Local(
            revokedUIDs: [], revokedSignatures: [[0xAB, 0xCD]], tags: [uidD: (.pending, 1, "", nil)])
        let c = FleetRules.changes(doc, to: local, actions: [0, 1])
        XCTAssertEqual(c.revokeUIDs, [uidB])
        XCTAssertEqual(c.revokeSignatures, [])
        XCTAssertEqual(c.upsertTags.map(\.uid), [uidA])
        XCTAssertEqual(c.skipped.map(\.uid), [uidC, uidD])
        // Applying it again changes nothing.
        let after = FleetRules.Local(
            revokedUIDs: [uidB], revokedSignatures: [[0xAB, 0xCD]],
            tags: [uidA: (.active, 1, "alice", nil), uidD: (.pending, 1, "", nil)])
        XCTAssertTrue(FleetRules.changes(doc, to: after, actions: [0, 1]).isEmpty)
        // A tag revoked here is never revived by a document.
        let revokedHere = FleetRules.Local(revokedUIDs: [uidA], tags: [uidA: (.revoked, 1, "alice", nil)])
        XCTAssertFalse(
            FleetRules.changes(doc, to: revokedHere, actions: [0, 1]).upsertTags.contains { $0.uid == uidA })
    }

    /// A door's own `tags expire` is not undone by a push that still carries
    /// a later expiry (or none); an earlier one from the fleet is taken.
    func testExpiryOnlyComesSoonerThroughTheFleet() {
        func merged(local: Int64?, pushed: Int64?) -> Int64?? {
            var doc = document()
            doc.tags = [FleetDocument.Tag(uid: uidA, action: 1, label: "alice", validUntil: pushed)]
            let here = FleetRules.Local(tags: [uidA: (.active, 1, "alice", local)])
            let c = FleetRules.changes(doc, to: here, actions: [0, 1])
            return c.upsertTags.first.map { .some($0.validUntil) } ?? .none
        }
        XCTAssertEqual(merged(local: 100, pushed: 200), .none, "the later date does not replace ours")
        XCTAssertEqual(merged(local: 100, pushed: nil), .none, "nor does 'never'")
        XCTAssertEqual(merged(local: 200, pushed: 100), .some(100))
        XCTAssertEqual(merged(local: nil, pushed: 100), .some(100))
        XCTAssertEqual(merged(local: nil, pushed: nil), .none)
    }

    func testSnapshotCarriesActiveTagsAndEveryRevocation() throws {
        let local = FleetRules.Local(
            revokedUIDs: [uidB], revokedSignatures: [[1, 2]],
            tags: [uidA: (.active, 1, "alice", 5), uidB: (.revoked, 1, "bob", nil)])
        let doc = FleetRules.snapshot(local, site: "acme-hq", version: 9, origin: "front-door", now: 100)
        XCTAssertEqual(doc.tags, [FleetDocument.Tag(uid: uidA, action: 1, label: "alice", validUntil: 5)])
        XCTAssertEqual(doc.revokedUIDs, [uidB])
        XCTAssertEqual(try FleetDocument.parseBody(doc.bodyBytes), doc)
    }

    // MARK: Secrets (site box)

    func testHKDFAndX25519MatchTheirRFCVectors() throws {
        let okm = try Crypto.SiteBox.hkdfSHA256(
            ikm: [UInt8](repeating: 0x0b, count: 22), salt: Array(0...12), info: Array(0xf0...0xf9), length: 42)
        XCTAssertEqual(
            Hex.encode(okm), "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        let alice = Hex.decode("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")!
        let bob = Hex.decode("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")!
        XCTAssertEqual(
            Hex.encode(try Crypto.SiteBox.publicKey(privateKey: alice)),
            "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        let bobPublic = try Crypto.SiteBox.publicKey(privateKey: bob)
        XCTAssertEqual(Hex.encode(bobPublic), "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let plain = Array("the secret".utf8)
        let sealed = try Crypto.SiteBox.seal(plain, to: bobPublic, context: [1, 2])
        XCTAssertFalse(sealed.ciphertext.starts(with: plain))
        XCTAssertEqual(try Crypto.SiteBox.open(sealed, boxPrivateKey: bob, context: [1, 2]), plain)
        XCTAssertThrowsError(try Crypto.SiteBox.open(sealed, boxPrivateKey: alice, context: [1, 2]), "wrong key")
        XCTAssertThrowsError(try Crypto.SiteBox.open(sealed, boxPrivateKey: bob, context: [1, 3]), "wrong context")
        var tampered = sealed
        tampered.ciphertext[0] ^= 1
        XCTAssertThrowsError(try Crypto.SiteBox.open(tampered, boxPrivateKey: bob, context: [1, 2]), "altered")
        XCTAssertThrowsError(
            try Crypto.SiteBox.open(
                Crypto.SiteBox.Sealed(
                    ephemeralPublicKey: [UInt8](repeating: 0, count: 32), nonce: sealed.nonce,
                    ciphertext: sealed.ciphertext), boxPrivateKey: bob, context: [1, 2]), "low-order key")
    }

    func testSealedSecretsTravelSignedAndOpenOnlyWithTheBoxKey() throws {
        let box = try Crypto.SiteBox.generatePrivateKey()
        let boxPublic = try Crypto.SiteBox.publicKey(privateKey: box)
        let secretKey = [UInt8](repeating: 0x5A, count: 32), otp = [UInt8](repeating: 0x11, count: 16)
        let plain = FleetSecrets(
            secrets: [
                .init(action: 0, key: secretKey, label: "main", origin: .generated),
                .init(action: 9, key: [UInt8](repeating: 1, count: 32), origin: .imported),
            ],
            compatTimestampKey: otp, nativeCommandKey: nil)
        var doc = document(version: 4)
        doc.sealedSecrets = try plain.seal(to: boxPublic, site: doc.site, version: doc.version)
        let bytes = try doc.signed(seed: seed)
        XCTAssertFalse(String(decoding: bytes, as: UTF8.self).contains(Hex.encode(secretKey)), "never in clear")
        XCTAssertFalse(String(decoding: try FleetDocument.openEnvelope(bytes).body, as: UTF8.self).contains("5a5a5a"))
        guard case .apply(let accepted) = judge(bytes) else { return XCTFail() }
        let opened = try XCTUnwrap(try FleetSecrets.open(accepted.document, boxPrivateKey: box))
        XCTAssertEqual(opened, plain)
        XCTAssertThrowsError(
            try FleetSecrets.open(accepted.document, boxPrivateKey: try Crypto.SiteBox.generatePrivateKey()))
        // A sealed part moved into another version does not open (the version is the AEAD's data).
        var moved = document(version: 5)
        moved.sealedSecrets = doc.sealedSecrets
        XCTAssertThrowsError(try FleetSecrets.open(moved, boxPrivateKey: box))

        let local = FleetRules.Local(
            secretKeys: [], compatTimestampKey: nil, nativeCommandKey: [UInt8](repeating: 2, count: 32))
        let c = FleetRules.changes(accepted.document, to: local, actions: [0, 1], secrets: opened)
        XCTAssertEqual(
            c.addSecrets, [FleetSecrets.Secret(action: 0, key: secretKey, label: "main", origin: .generated)],
            "action 9 is not here; the origin travels with the key")
        XCTAssertEqual(c.setCompatTimestampKey, otp)
        XCTAssertNil(c.setNativeCommandKey, "absent from the document: kept")
        XCTAssertFalse(c.summary.contains("5a5a"), c.summary)
        let held = FleetRules.Local(secretKeys: [secretKey], compatTimestampKey: otp)
        XCTAssertTrue(FleetRules.changes(accepted.document, to: held, actions: [0], secrets: opened).addSecrets.isEmpty)
    }

    /// Review H1: a key a gateway generated is v2-only at every door the
    /// fleet reaches. A door holding it as imported (a share link imported
    /// before the fix) makes it generated; a document never makes a
    /// generated key imported; a key listed twice in one document is
    /// generated if either entry says so.
    func testAGeneratedKeyIsNeverImportedThroughTheFleet() {
        let k = [UInt8](repeating: 0x5A, count: 32), phone = [UInt8](repeating: 0x77, count: 32)
        let doc = document(version: 4)
        let generated = FleetSecrets(secrets: [.init(action: 0, key: k, origin: .generated)])
        let importedHere = FleetRules.Local(secretKeys: [k, phone], importedKeys: [k, phone])
        let c = FleetRules.changes(doc, to: importedHere, actions: [0], secrets: generated)
        XCTAssertEqual(c.addSecrets, [])
        XCTAssertEqual(c.restrictSecrets, [k])
        XCTAssertTrue(c.summary.hasSuffix(", 1 secrets made v2-only"), c.summary)
        XCTAssertFalse(c.summary.contains("5a5a"))
        // Not for an action this door does not define; not when it is already generated here.
        XCTAssertEqual(FleetRules.changes(doc, to: importedHere, actions: [1], secrets: generated).restrictSecrets, [])
        func secretChanges(_ c: FleetRules.Changes) -> Int { c.addSecrets.count + c.restrictSecrets.count }
        let generatedHere = FleetRules.Local(secretKeys: [k])
        XCTAssertEqual(secretChanges(FleetRules.changes(doc, to: generatedHere, actions: [0], secrets: generated)), 0)
        // A document calling it imported changes nothing where it is generated.
        let imported = FleetSecrets(secrets: [.init(action: 0, key: k, origin: .imported)])
        XCTAssertEqual(secretChanges(FleetRules.changes(doc, to: generatedHere, actions: [0], secrets: imported)), 0)
        // Listed twice (imported first): added once, generated.
        let twice = FleetSecrets(
            secrets: [
                .init(action: 0, key: k, label: "copy", origin: .imported),
                .init(action: 0, key: k, origin: .generated),
            ])
        XCTAssertEqual(
            FleetRules.changes(doc, to: FleetRules.Local(), actions: [0], secrets: twice).addSecrets,
            [.init(action: 0, key: k, label: "copy", origin: .generated)])
        XCTAssertEqual(
            FleetRules.changes(doc, to: importedHere, actions: [0], secrets: twice).restrictSecrets, [k])
    }
}

/// What `fleet push` shows before signing (FleetDiff, docs/security.md "H2").
final class FleetDiffTests: XCTestCase {
    func uid(_ i: Int) -> TagUID { TagUID([0x04, 0, 0, 0, 0, UInt8(i >> 8), UInt8(i & 0xFF)]) }

    /// "Every UID revoked" cannot hide in a long list: the count comes
    /// first, each revoked issued tag is named, the list is cut with how many more.
    func testAMassRevocationIsCountedNamedAndCut() {
        let tags = (0..<30).map { FleetDocument.Tag(uid: uid($0), action: 0, label: "t\($0)") }
        let old = FleetDocument(site: "s", version: 4, origin: "a/x", issued: 0, tags: tags)
        let new = FleetDocument(site: "s", version: 5, origin: "b/y", issued: 0, revokedUIDs: tags.map(\.uid))
        let d = FleetDiff.between(old, new)
        XCTAssertEqual(d.addedUIDs.count, 30)
        XCTAssertEqual(d.droppedTags.count, 30)
        let lines = d.lines(limit: 3)
        XCTAssertEqual(
            lines,
            [
                "revoked UIDs: 30 (+30)",
                "  + 04000000000000 (issued until now: action 0 \"t0\")",
                "  + 04000000000001 (issued until now: action 0 \"t1\")",
                "  + 04000000000002 (issued until now: action 0 \"t2\")",
                "  + … and 27 more",
                "revoked signatures: 0 (no change)",
                "issued tags: 0 (-30)",
                "  - 04000000000000 action 0 \"t0\", valid until never (revoked)",
                "  - 04000000000001 action 0 \"t1\", valid until never (revoked)",
                "  - 04000000000002 action 0 \"t2\", valid until never (revoked)",
                "  - … and 27 more",
                "secrets: not carried (push --secrets carries them); doors keep the ones they hold",
            ])
        XCTAssertFalse(d.isEmpty)
        XCTAssertTrue(FleetDiff.between(new, new).isEmpty)
    }

    /// Imported keys and a rotated remote key are named (by fingerprint, never their bytes).
    func testSecretsAddedAndKeysRotatedAreNamedByFingerprint() {
        let doc = FleetDocument(site: "s", version: 2, origin: "a/x", issued: 0)
        let before = FleetSecrets(compatTimestampKey: [UInt8](repeating: 1, count: 16), compatTimestampGeneration: 1)
        let key = [UInt8](repeating: 0x66, count: 32)
        let after = FleetSecrets(
            secrets: [FleetSecrets.Secret(action: 0, key: key, label: "phone", origin: .imported)],
            compatTimestampKey: [UInt8](repeating: 2, count: 16), nativeCommandKey: [UInt8](repeating: 3, count: 32),
            compatTimestampGeneration: 2, nativeCommandGeneration: 1)
        let lines = FleetDiff.between(doc, oldSecrets: before, doc, newSecrets: after).lines()
        XCTAssertEqual(
            Array(lines.suffix(4)),
            [
                "secrets: 1 sealed to the site box (+1)",
                "  + action 0 imported \"phone\" key \(FleetDiff.fingerprint(key))",
                "otp key (COMPAT §3): ROTATED \(FleetDiff.fingerprint(before.compatTimestampKey!)) generation 1 → "
                    + "\(FleetDiff.fingerprint(after.compatTimestampKey!)) generation 2 "
                    + "(every door holding an older generation rotates to it)",
                "command key (COMPAT §5): added \(FleetDiff.fingerprint(after.nativeCommandKey!)) generation 1 "
                    + "(doors that hold none or an older generation take it; the others keep theirs)",
            ])
        XCTAssertFalse(lines.joined().contains("6666"), "no key bytes")
    }

    /// Control characters (ESC, CSI), DEL and bidirectional overrides are
    /// shown escaped; other text as it is.
    func testLabelsCannotDriveTheTerminal() {
        XCTAssertEqual(
            FleetDiff.printable("a\u{1B}[2Kb\u{9B}c\u{7F}\u{202E}d\"\\é"), #"a\u{1b}[2Kb\u{9b}c\u{7f}\u{202e}d\"\\é"#)
        XCTAssertEqual(FleetDiff.printable("Zoë’s door"), "Zoë’s door")
    }
}

/// Issue 24 M1 (docs/security.md "M1"): tombstones and key generations in
/// the document, the rules and the summary.
final class FleetRemovalRulesTests: XCTestCase {
    let seed = Array(repeating: UInt8(7), count: 32)
    let leaked = [UInt8](repeating: 0x5A, count: 32)
    let other = [UInt8](repeating: 0x6B, count: 32)

    /// Tombstones round-trip signed; a body without them is what builds
    /// before M1 signed (no new field), and parses as carrying none; a
    /// tombstone that is not a SHA-256 makes the body malformed.
    func testTombstonesTravelSignedAndABodyWithoutThemIsUnchanged() throws {
        let plain = FleetDocument(site: "s", version: 2, origin: "a/x", issued: 1)
        XCTAssertFalse(String(decoding: plain.bodyBytes, as: UTF8.self).contains("tombstone"))
        XCTAssertEqual(try FleetDocument.parseBody(plain.bodyBytes).secretTombstones, [])
        var doc = plain
        doc.secretTombstones = [FleetDocument.tombstone(of: leaked)]
        XCTAssertEqual(FleetDocument.tombstone(of: leaked), Crypto.sha256(leaked))
        XCTAssertFalse(String(decoding: doc.bodyBytes, as: UTF8.self).contains(Hex.encode(leaked)), "never the key")
        guard
            case .apply(let accepted) = FleetRules.judge(
                try doc.signed(seed: seed), sitePublicKey: try Crypto.Ed25519.publicKey(seed: seed), siteID: "s",
                applied: nil)
        else { return XCTFail() }
        XCTAssertEqual(accepted.document, doc)
        for bad in [#"["ab"]"#, #"[1]"#, #""x""#] {
            let body =
                #"{"site":"s","version":2,"origin":"a","issued":1,"revocations":{"uids":[],"signatures":[]},"#
                + #""tags":[],"secret_tombstones":\#(bad)}"#
            XCTAssertThrowsError(try FleetDocument.parseBody(Array(body.utf8)), bad)
        }
    }

    /// A tombstone deactivates the key (and only it), refuses the sealed
    /// copy, and is recorded; applied twice it changes nothing.
    func testATombstoneDeactivatesAndRefusesTheKey() {
        var doc = FleetDocument(site: "s", version: 3, origin: "a/x", issued: 1)
        doc.secretTombstones = [FleetDocument.tombstone(of: leaked)]
        let sealed = FleetSecrets(
            secrets: [
                .init(action: 0, key: leaked, origin: .generated), .init(action: 0, key: other, origin: .generated),
            ])
        let holding = FleetRules.Local(secretKeys: [leaked, other])
        let c = FleetRules.changes(doc, to: holding, actions: [0], secrets: sealed)
        XCTAssertEqual(c.addTombstones, [FleetDocument.tombstone(of: leaked)])
        XCTAssertEqual(c.deactivateSecrets, [leaked])
        XCTAssertEqual(c.addSecrets, [])
        XCTAssertEqual(c.refusedRemovedSecrets, 0, "held (inactive) here: nothing to refuse")
        XCTAssertFalse(c.summary.contains("5a5a"), c.summary)
        // After it: nothing changes again.
        let after = FleetRules.Local(
            secretKeys: [leaked, other], activeKeys: [other], secretTombstones: [FleetDocument.tombstone(of: leaked)])
        XCTAssertTrue(FleetRules.changes(doc, to: after, actions: [0], secrets: sealed).isEmpty)
        // A door that never held it: the copy is refused (and counted), the other key added.
        let c2 = FleetRules.changes(doc, to: FleetRules.Local(), actions: [0], secrets: sealed)
        XCTAssertEqual(c2.addSecrets.map(\.key), [other])
        XCTAssertEqual(c2.refusedRemovedSecrets, 1)
        XCTAssertTrue(c2.summary.contains(", 1 removed secrets not restored"), c2.summary)
        // The door's own tombstone holds against a document without one (an older build's).
        let mine = FleetRules.Local(secretTombstones: [FleetDocument.tombstone(of: leaked)])
        let c3 = FleetRules.changes(
            FleetDocument(site: "s", version: 4, origin: "old/x", issued: 1), to: mine, actions: [0], secrets: sealed)
        XCTAssertEqual(c3.addSecrets.map(\.key), [other])
        XCTAssertEqual(c3.addTombstones, [])
        // The snapshot carries every tombstone the door holds.
        XCTAssertEqual(
            FleetRules.snapshot(mine, site: "s", version: 5, origin: "o", now: 1).secretTombstones,
            [FleetDocument.tombstone(of: leaked)])
    }

    /// Only a strictly newer generation replaces a remote key; none held: any key.
    func testOnlyANewerGenerationReplacesARemoteKey() {
        let doc = FleetDocument(site: "s", version: 3, origin: "a/x", issued: 1)
        let k1 = [UInt8](repeating: 1, count: 32), k2 = [UInt8](repeating: 2, count: 32)
        func change(_ key: [UInt8], _ generation: Int64?, mine: [UInt8]?, _ myGeneration: Int64) -> FleetRules.Changes {
            FleetRules.changes(
                doc, to: FleetRules.Local(nativeCommandKey: mine, nativeCommandGeneration: myGeneration), actions: [0],
                secrets: FleetSecrets(nativeCommandKey: key, nativeCommandGeneration: generation))
        }
        XCTAssertEqual(change(k2, 3, mine: k1, 2).setNativeCommand, .init(key: k2, generation: 3))
        XCTAssertNil(change(k2, 2, mine: k1, 3).setNativeCommand, "a rollback")
        XCTAssertEqual(
            change(k2, 2, mine: k1, 3).keptRemoteKeys,
            ["command key of generation 2 not taken (older than generation 3 here)"])
        XCTAssertNil(change(k2, 3, mine: k1, 3).setNativeCommand, "a rotation at two doors at once")
        XCTAssertNil(change(k2, nil, mine: k1, 0).setNativeCommand, "an older build's document")
        XCTAssertEqual(change(k2, nil, mine: nil, 0).setNativeCommand, .init(key: k2, generation: 0))
        XCTAssertEqual(change(k2, 5, mine: nil, 0).setNativeCommand, .init(key: k2, generation: 5))
        XCTAssertTrue(change(k1, 1, mine: k1, 4).isEmpty, "the same key: nothing")
    }

    /// The summary names each tombstone (with what it removes, when the last
    /// document carried that secret) and says when a remote key is not a rotation.
    func testTheSummaryShowsTombstonesAndGenerations() {
        let old = FleetDocument(site: "s", version: 4, origin: "a/x", issued: 0)
        var new = FleetDocument(site: "s", version: 5, origin: "b/y", issued: 0)
        let unknown = [UInt8](repeating: 0x7C, count: 32)
        new.secretTombstones = [FleetDocument.tombstone(of: leaked), FleetDocument.tombstone(of: unknown)]
        let before = FleetSecrets(
            secrets: [.init(action: 0, key: leaked, label: "leaked", origin: .generated)],
            compatTimestampKey: [UInt8](repeating: 1, count: 16), nativeCommandKey: other,
            compatTimestampGeneration: 3, nativeCommandGeneration: 2)
        let after = FleetSecrets(
            compatTimestampKey: [UInt8](repeating: 2, count: 16), nativeCommandKey: leaked,
            compatTimestampGeneration: 2, nativeCommandGeneration: 2)
        let lines = FleetDiff.between(old, oldSecrets: before, new, newSecrets: after).lines()
        let otp = (
            FleetDiff.fingerprint([UInt8](repeating: 1, count: 16)), FleetDiff.fingerprint(after.compatTimestampKey!)
        )
        XCTAssertEqual(
            Array(lines.suffix(6)),
            [
                "removed secrets (tombstones): 2 (+2)",
                "  + action 0 generated \"leaked\" key \(FleetDiff.fingerprint(leaked)): every door deactivates it; "
                    + "no push brings it back",
                "  + key \(FleetDiff.fingerprint(unknown)): every door deactivates it; no push brings it back",
                "secrets: 0 sealed to the site box (1 removed: tombstones above)",
                "otp key (COMPAT §3): NOT A ROTATION: \(otp.1) generation 2 is OLDER than the last document's "
                    + "\(otp.0) generation 3: doors that hold that one keep it (`gatewayctl keys … new` here makes "
                    + "a newer generation)",
                "command key (COMPAT §5): NOT A ROTATION: \(FleetDiff.fingerprint(leaked)) generation 2 is of the "
                    + "same generation as the last document's \(FleetDiff.fingerprint(other)) generation 2: doors "
                    + "that hold that one keep it (`gatewayctl keys … new` here makes a newer generation)",
            ])
        // Without --secrets the tombstones are still shown (they travel in every document).
        let plain = FleetDiff.between(old, new).lines()
        XCTAssertTrue(plain.contains("removed secrets (tombstones): 2 (+2)"), "\(plain)")
        XCTAssertTrue(
            plain.contains(
                "  + key \(FleetDiff.fingerprint(leaked)): every door deactivates it; no push brings it back"))
        XCTAssertEqual(FleetDiff.between(new, old).droppedTombstones.count, 2)
    }
}
