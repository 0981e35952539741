import DoorCore
import XCTest

/// Issue 26 through the fleet: an NTAG 424 DNA row travels with its
/// credential, and the site's 424 master key travels sealed, so a tag
/// provisioned at one door opens the others (docs/ntag424.md "Fleet").
final class FleetNTAG424Tests: XCTestCase {
    let seed = Array(repeating: UInt8(7), count: 32)
    let uid = TagUID(hex: "04DE5F1EACC040")!
    let master = [UInt8](repeating: 0x42, count: 16)
    let mine = [UInt8](repeating: 0x24, count: 16)

    func document(_ tags: [FleetDocument.Tag]) -> FleetDocument {
        FleetDocument(site: "acme-hq", version: 3, origin: "door-a/root", issued: 1, tags: tags)
    }

    func testA424RowKeepsItsCredentialThroughSigningAndParsing() throws {
        let doc = document([
            FleetDocument.Tag(uid: uid, action: 0, label: "alice", credential: "ntag424"),
            FleetDocument.Tag(uid: TagUID(hex: "04112233445566")!, action: 0, label: "bob"),
        ])
        let parsed = try FleetDocument.parseBody(doc.bodyBytes)
        XCTAssertEqual(parsed.tags.map(\.credential), ["ntag424", nil])
        // A sticker's entry is what older builds sign: no `credential` key.
        let body = String(decoding: doc.bodyBytes, as: UTF8.self)
        XCTAssertEqual(body.split(separator: "\"credential\"", omittingEmptySubsequences: false).count, 2, body)
        let parts = body.split(separator: "\"credential\":\"ntag424\"", omittingEmptySubsequences: false)
        XCTAssertEqual(parts.count, 2)
        for bad in ["\"NTAG424\"", "\"\"", "42", "\"a b\"", "\"\(String(repeating: "x", count: 33))\""] {
            let tampered = parts[0] + "\"credential\":\(bad)" + parts[1]
            XCTAssertThrowsError(try FleetDocument.parseBody(Array(tampered.utf8)), bad)
        }
    }

    func testADoorInsertsA424RowAsOneAndUpdatesAStickerRowOfThatUID() {
        let tag = FleetDocument.Tag(uid: uid, action: 0, label: "alice", credential: "ntag424")
        let empty = FleetRules.changes(document([tag]), to: FleetRules.Local(), actions: [0])
        XCTAssertEqual(empty.upsertTags, [tag])
        var held = FleetRules.Local(tags: [uid: (.active, 0, "alice", nil)])
        XCTAssertEqual(
            FleetRules.changes(document([tag]), to: held, actions: [0]).upsertTags, [tag],
            "the same UID held as a sticker becomes a 424 row")
        held.tagCredentials = [uid: "ntag424"]
        XCTAssertTrue(FleetRules.changes(document([tag]), to: held, actions: [0]).isEmpty, "applied twice: nothing")
        let snapshot = FleetRules.snapshot(held, site: "acme-hq", version: 4, origin: "door-b", now: 2)
        XCTAssertEqual(snapshot.tags, [tag], "a door's push carries the credential on")
    }

    /// docs/ntag424.md "Re-issuing a tag": a 424 entry carries its key issue
    /// (signed with the body); a reissue elsewhere (a new issue) replaces the
    /// row's, a document without one (an older build) never erases it, and a
    /// row reset here is made active again only by a new issue (review L-4).
    func testA424EntryCarriesItsKeyIssueAndOnlyANewIssueRevivesAResetRow() throws {
        let first = NTAG424.KeyIssue(salt: Array(repeating: 1, count: 16), version: 2)
        let second = NTAG424.KeyIssue(salt: Array(repeating: 2, count: 16), version: 3)
        let tag = FleetDocument.Tag(uid: uid, action: 0, label: "alice", credential: "ntag424", keyIssue: first)
        let parsed = try FleetDocument.parseBody(document([tag]).bodyBytes)
        XCTAssertEqual(parsed.tags, [tag])
        for bad in [
            #""key_version":1,"key_salt":"0101""#, #""key_version":2"#, #""key_version":0"#,
            #""key_version":"2","key_salt":"01010101010101010101010101010101""#,
        ] {
            let body = String(decoding: document([tag]).bodyBytes, as: UTF8.self)
            let good = #""key_version":2,"key_salt":"01010101010101010101010101010101""#
            XCTAssertTrue(body.contains(good), body)
            XCTAssertThrowsError(
                try FleetDocument.parseBody(Array(body.replacingOccurrences(of: good, with: bad).utf8)), bad)
        }

        var held = FleetRules.Local(tags: [uid: (.active, 0, "alice", nil)])
        held.tagCredentials = [uid: "ntag424"]
        held.tagKeyIssues = [uid: first]
        XCTAssertTrue(FleetRules.changes(document([tag]), to: held, actions: [0]).isEmpty)
        var reissued = tag
        reissued.keyIssue = second
        XCTAssertEqual(FleetRules.changes(document([reissued]), to: held, actions: [0]).upsertTags, [reissued])
        var older = tag
        older.keyIssue = nil
        XCTAssertTrue(
            FleetRules.changes(document([older]), to: held, actions: [0]).isEmpty,
            "a document without an issue changes none")
        XCTAssertEqual(FleetRules.snapshot(held, site: "acme-hq", version: 4, origin: "b", now: 2).tags, [tag])

        held.tags[uid] = (.failed, 0, "alice", nil)  // `provision reset` here
        for same in [tag, older] {
            let c = FleetRules.changes(document([same]), to: held, actions: [0])
            XCTAssertTrue(c.upsertTags.isEmpty, "a reset row came back active")
            XCTAssertEqual(c.skipped.map(\.uid), [uid])
        }
        XCTAssertEqual(FleetRules.changes(document([reissued]), to: held, actions: [0]).upsertTags, [reissued])
    }

    func testRevocationByUIDReachesA424Row() {
        var doc = document([])
        doc.revokedUIDs = [uid]
        var held = FleetRules.Local(tags: [uid: (.active, 0, "alice", nil)])
        held.tagCredentials = [uid: "ntag424"]
        XCTAssertEqual(FleetRules.changes(doc, to: held, actions: [0]).revokeUIDs, [uid])
        // And a document that revokes it never re-adds it as a 424 row.
        doc.tags = [FleetDocument.Tag(uid: uid, action: 0, credential: "ntag424")]
        XCTAssertTrue(FleetRules.changes(doc, to: FleetRules.Local(), actions: [0]).upsertTags.isEmpty)
    }

    func testTheMasterKeyTravelsSealedAndIsTakenOnlyWhereNoTagDependsOnAnother() throws {
        let box = try Crypto.SiteBox.generatePrivateKey()
        var doc = document([])
        doc.sealedSecrets = try FleetSecrets(ntag424MasterKey: master).seal(
            to: try Crypto.SiteBox.publicKey(privateKey: box), site: doc.site, version: doc.version)
        let bytes = try doc.signed(seed: seed)
        XCTAssertFalse(String(decoding: bytes, as: UTF8.self).contains(Hex.encode(master)), "never in clear")
        guard
            case .apply(let accepted) = FleetRules.judge(
                bytes, sitePublicKey: try Crypto.Ed25519.publicKey(seed: seed), siteID: "acme-hq", applied: nil)
        else { return XCTFail("refused") }
        let secrets = try XCTUnwrap(try FleetSecrets.open(accepted.document, boxPrivateKey: box))
        XCTAssertEqual(secrets.ntag424MasterKey, master)

        func change(_ local: FleetRules.Local) -> FleetRules.Changes {
            FleetRules.changes(accepted.document, to: local, actions: [0], secrets: secrets)
        }
        XCTAssertEqual(change(FleetRules.Local()).setNTAG424MasterKey, master, "a door that holds none")
        var unused = FleetRules.Local()
        unused.ntag424MasterKey = mine
        XCTAssertEqual(change(unused).setNTAG424MasterKey, master, "a door whose own key provisioned nothing")
        var used = unused
        used.ntag424MasterKeyInUse = true
        let kept = change(used)
        XCTAssertNil(kept.setNTAG424MasterKey, "tags provisioned here depend on this door's key")
        XCTAssertEqual(
            kept.keptRemoteKeys, ["ntag424 master key not taken (tags provisioned here depend on this door's own)"])
        var same = used
        same.ntag424MasterKey = master
        XCTAssertTrue(change(same).isEmpty)
        XCTAssertTrue(change(FleetRules.Local()).summary.contains("ntag424 master key taken"))
        XCTAssertFalse(change(FleetRules.Local()).summary.contains(Hex.encode(master)))
    }

    func testAMasterKeyOfAnotherLengthIsMalformed() throws {
        let box = try Crypto.SiteBox.generatePrivateKey()
        let boxPublic = try Crypto.SiteBox.publicKey(privateKey: box)
        var doc = document([])
        doc.sealedSecrets = try FleetSecrets(ntag424MasterKey: [UInt8](repeating: 1, count: 15)).seal(
            to: boxPublic, site: doc.site, version: doc.version)
        XCTAssertThrowsError(try FleetSecrets.open(doc, boxPrivateKey: box))
    }

    func testThePushSummaryNamesTheMasterKeyByFingerprintAndTheCredential() {
        let old = document([FleetDocument.Tag(uid: uid, action: 0, label: "alice")])
        var new = document([FleetDocument.Tag(uid: uid, action: 0, label: "alice", credential: "ntag424")])
        new.version = 4
        let diff = FleetDiff.between(
            old, oldSecrets: FleetSecrets(), new, newSecrets: FleetSecrets(ntag424MasterKey: master))
        let text = diff.lines().joined(separator: "\n")
        XCTAssertTrue(text.contains("credential sticker → ntag424"), text)
        XCTAssertTrue(text.contains("ntag424 master key: added"), text)
        XCTAssertTrue(text.contains(FleetDiff.fingerprint(master)), text)
        XCTAssertFalse(text.contains(Hex.encode(master)), text)
        XCTAssertFalse(diff.isEmpty)
    }
}
