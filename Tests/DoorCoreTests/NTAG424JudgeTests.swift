import DoorCore
import XCTest

/// `NTAG424Judge` and `UIDFobJudge` (docs/ntag424.md): every denial reason,
/// whether it counts toward lockout, and that the SUN counter is offered for
/// storing only on a tap that is granted otherwise.
final class NTAG424JudgeTests: XCTestCase {
    let uid = TagUID(hex: "04DE5F1EACC040")!
    let master: [UInt8] = (0..<16).map { UInt8($0 * 3) }
    let wall = WallClock(unixSeconds: 1_800_000_000, synchronised: true)

    typealias Registry = TapJudgeTests.Registry

    func policy(_ credentials: Set<CredentialKind> = Set(CredentialKind.defaults)) -> TapPolicy {
        var a = ActionDefinition(index: 0, name: "front", steps: [])
        a.credentials = credentials
        return TapPolicy(policy: AccessPolicy(schedules: [], zone: .utc), actions: [a], wall: wall)
    }

    /// The SUN URL the tag would mirror for `counter` (AN12196 §6.7's layout) under `master`.
    func sun(counter: UInt32, uid sunUID: [UInt8]? = nil, master m: [UInt8]? = nil, badMAC: Bool = false) throws
        -> String
    {
        let keys = try NTAG424.DoorKeys(masterKey: m ?? master, uid: sunUID ?? uid.bytes, issue: .legacy)
        let block = NTAG424.PICCData(tag: 0xC7, uid: sunUID ?? uid.bytes, counter: counter).block(
            random: [1, 2, 3, 4, 5])
        let e = try Crypto.aes128CBC(
            .encrypt, key: keys[NTAG424.DoorKeys.metaRead], iv: Array(repeating: 0, count: 16), data: block)
        var c = try NTAG424.sdmMAC(
            fileReadKey: keys[NTAG424.DoorKeys.fileRead], uid: sunUID ?? uid.bytes, counter: counter, input: [])
        if badMAC { c[0] ^= 1 }
        return "https://door.example/t?e=\(Hex.encode(e, uppercase: true))&c=\(Hex.encode(c, uppercase: true))"
    }

    var row: IssuedTagView { IssuedTagView(state: .active, kind: .ntag424, action: 0) }

    func verdict(
        _ registry: Registry, uri: String?, proof: NTAG424TapFacts.Proof? = nil, policy p: TapPolicy? = nil,
        stored: inout [UInt32]
    ) -> String {
        var seen = stored
        let presentation = NTAG424Judge.judge(
            tap: NTAG424TapFacts(uid: uid, uri: uri, proof: proof ?? .authenticated(cardUID: uid.bytes)),
            siteKey: master, registry: registry, now: wall.unixSeconds, policy: p ?? policy()
        ) { _, counter in
            guard counter > (seen.last ?? 0) else { return false }
            seen.append(counter)
            return true
        }
        stored = seen
        switch presentation.verdict {
        case .grant(let action, let reason): return "grant \(action) \(reason)"
        case .deny(let reason, let counts): return "deny \(reason)\(counts ? "" : " (not counted)")"
        }
    }

    func testAProvedKeyAndAFreshSUNOpenAndEveryFailureHasItsReason() throws {
        var stored: [UInt32] = []
        let ok = Registry(row: row)
        XCTAssertEqual(verdict(ok, uri: try sun(counter: 5), stored: &stored), "grant 0 ntag424")
        XCTAssertEqual(stored, [5], "the counter is stored")
        XCTAssertEqual(verdict(ok, uri: try sun(counter: 5), stored: &stored), "deny counter_replay")
        XCTAssertEqual(verdict(ok, uri: try sun(counter: 4), stored: &stored), "deny counter_replay")
        XCTAssertEqual(verdict(ok, uri: try sun(counter: 6), stored: &stored), "grant 0 ntag424")
        XCTAssertEqual(verdict(ok, uri: nil, stored: &stored), "grant 0 ntag424", "EV2 alone when no SUN is mirrored")
        XCTAssertEqual(verdict(ok, uri: try sun(counter: 9, badMAC: true), stored: &stored), "deny sun_invalid")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 9, master: Array(repeating: 1, count: 16)), stored: &stored),
            "deny sun_invalid", "another site's SUN")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 9, uid: [4, 1, 2, 3, 4, 5, 6]), stored: &stored), "deny sun_invalid",
            "a SUN of another UID does not verify with this UID's file key")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 9), proof: .refused("91AE"), stored: &stored), "deny auth_failed")
        XCTAssertEqual(verdict(ok, uri: try sun(counter: 9), proof: .notTried, stored: &stored), "deny auth_failed")
        XCTAssertEqual(
            verdict(Registry(row: nil), uri: nil, proof: .torn, stored: &stored), "deny tag_lost (not counted)",
            "a tear is no attempt")
        XCTAssertEqual(
            verdict(
                ok, uri: try sun(counter: 9), proof: .authenticated(cardUID: [4, 0, 0, 0, 0, 0, 1]), stored: &stored),
            "deny uid_mismatch", "a faked anticollision UID")
        XCTAssertEqual(verdict(Registry(row: nil), uri: try sun(counter: 9), stored: &stored), "deny unknown_tag")
        var sticker = row
        sticker.kind = .stickerV2
        XCTAssertEqual(verdict(Registry(row: sticker), uri: try sun(counter: 9), stored: &stored), "deny unknown_tag")
        var pending = row
        pending.state = .pending
        XCTAssertEqual(verdict(Registry(row: pending), uri: try sun(counter: 9), stored: &stored), "deny tag_pending")
        XCTAssertEqual(verdict(Registry(row: row, revoked: true), uri: nil, stored: &stored), "deny revoked")
        XCTAssertEqual(
            verdict(Registry(row: row, unreadable: true), uri: nil, stored: &stored), "deny registry_unavailable")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 9), policy: policy([.stickerV2]), stored: &stored),
            "deny credential_not_allowed (not counted)")
        XCTAssertEqual(stored, [5, 6], "no denied tap stored a counter")
    }

    struct DiskFull: Error {}

    /// docs/security.md "NTAG 424 DNA at the door": the SUN counter is on
    /// disk before the relay moves. A counter store that fails (a full disk,
    /// a locked database) is a denial, `registry_unavailable`, counted: on
    /// both tiers, for a tap that would otherwise open.
    func testACounterThatCannotBeStoredIsADenial() throws {
        for (credentials, proof) in [
            (Set<CredentialKind>([.ntag424]), NTAG424TapFacts.Proof.authenticated(cardUID: uid.bytes)),
            ([.ntag424SUN], .notTried),
        ] {
            var offered: [UInt32] = []
            let presentation = NTAG424Judge.judge(
                tap: NTAG424TapFacts(uid: uid, uri: try sun(counter: 7), proof: proof),
                siteKey: master, registry: Registry(row: row), now: wall.unixSeconds, policy: policy(credentials)
            ) { _, counter in
                offered.append(counter)
                throw DiskFull()
            }
            XCTAssertEqual(offered, [7], "\(credentials): the counter was offered")
            XCTAssertEqual(
                presentation.verdict, .deny(reason: TapDenial.registryUnavailable, countsTowardLockout: true),
                "\(credentials)")
        }
    }

    /// The SUN-only tier (`"ntag424-sun"`): a verified, fresh SUN opens an
    /// action that lists it without the chip's proof, audited
    /// `valid_sun_only`; never an action that lists `"ntag424"` alone.
    func testTheSUNOnlyTierOpensOnAFreshSUNAloneAndSaysSo() throws {
        var stored: [UInt32] = []
        let ok = Registry(row: row)
        let sunOnly = policy([.ntag424SUN]), both = policy([.ntag424, .ntag424SUN]), keyOnly = policy([.ntag424])
        for proof in [NTAG424TapFacts.Proof.notTried, .refused("91AE")] {
            XCTAssertEqual(
                verdict(ok, uri: try sun(counter: 3), proof: proof, policy: keyOnly, stored: &stored),
                "deny auth_failed", "\"ntag424\" alone needs the proof")
        }
        XCTAssertEqual(stored, [], "a denied tap stores no counter")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 3), proof: .notTried, policy: sunOnly, stored: &stored),
            "grant 0 valid_sun_only")
        XCTAssertEqual(stored, [3])
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 3), proof: .notTried, policy: sunOnly, stored: &stored),
            "deny counter_replay", "the same URL twice")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 2), proof: .refused("91AE"), policy: both, stored: &stored),
            "deny counter_replay")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 4), proof: .refused("91AE"), policy: both, stored: &stored),
            "grant 0 valid_sun_only", "EV2 failed: the SUN-only tier still opens where it is listed")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 5), policy: sunOnly, stored: &stored), "grant 0 ntag424",
            "a tap that proved its key is audited as such wherever it opens")
        XCTAssertEqual(verdict(ok, uri: nil, proof: .notTried, policy: sunOnly, stored: &stored), "deny auth_failed")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 9, badMAC: true), proof: .notTried, policy: sunOnly, stored: &stored),
            "deny sun_invalid")
        XCTAssertEqual(
            verdict(
                ok, uri: try sun(counter: 9, master: Array(repeating: 1, count: 16)), proof: .notTried,
                policy: sunOnly, stored: &stored), "deny sun_invalid", "another site's SUN")
        XCTAssertEqual(
            verdict(
                ok, uri: try sun(counter: 9), proof: .authenticated(cardUID: [4, 0, 0, 0, 0, 0, 1]),
                policy: sunOnly, stored: &stored), "deny uid_mismatch")
        XCTAssertEqual(
            verdict(
                Registry(row: nil), uri: try sun(counter: 9), proof: .notTried, policy: sunOnly, stored: &stored),
            "deny unknown_tag")
        XCTAssertEqual(
            verdict(
                Registry(row: row, revoked: true), uri: try sun(counter: 9), proof: .notTried, policy: sunOnly,
                stored: &stored), "deny revoked")
        var pending = row
        pending.state = .pending
        XCTAssertEqual(
            verdict(
                Registry(row: pending), uri: try sun(counter: 9), proof: .notTried, policy: sunOnly,
                stored: &stored), "deny tag_pending")
        XCTAssertEqual(
            verdict(ok, uri: try sun(counter: 9), proof: .notTried, policy: policy([.stickerV2]), stored: &stored),
            "deny auth_failed", "an unproved tap where no 424 tier is listed counts")
        XCTAssertEqual(stored, [3, 4, 5], "only granted taps stored their counter")
    }

    /// The door skips EV2 only for a 424 whose action opens on the SUN alone.
    func testEV2IsSkippedOnlyWhereTheActionListsTheSUNOnlyTierAlone() {
        func wants(_ r: Registry, _ p: TapPolicy) -> Bool {
            NTAG424Judge.wantsEV2(uid: uid, registry: r, actions: p.actions)
        }
        XCTAssertFalse(wants(Registry(row: row), policy([.ntag424SUN])))
        XCTAssertFalse(wants(Registry(row: row), policy([.ntag424SUN, .stickerV2])))
        XCTAssertTrue(wants(Registry(row: row), policy([.ntag424SUN, .ntag424])))
        XCTAssertTrue(wants(Registry(row: row), policy()))
        XCTAssertTrue(wants(Registry(row: row), policy([])))
        XCTAssertTrue(wants(Registry(row: nil), policy([.ntag424SUN])), "an unknown tag is asked for its proof")
        XCTAssertTrue(wants(Registry(row: row, unreadable: true), policy([.ntag424SUN])))
        var other = row
        other.action = 7
        XCTAssertTrue(wants(Registry(row: other), policy([.ntag424SUN])), "an unknown action")
    }

    func testAUIDFobOpensOnlyActionsThatListUID() {
        let fob = Registry(row: IssuedTagView(state: .active, kind: .uid, action: 0))
        func judge(_ r: Registry, _ p: TapPolicy?) -> String {
            guard let v = UIDFobJudge.judge(uid: uid, registry: r, now: wall.unixSeconds, policy: p)?.verdict else {
                return "none"
            }
            switch v {
            case .grant(let action, let reason): return "grant \(action) \(reason)"
            case .deny(let reason, let counts): return "deny \(reason)\(counts ? "" : " (not counted)")"
            }
        }
        XCTAssertEqual(judge(fob, policy([.uid])), "grant 0 weak_credential")
        XCTAssertEqual(judge(fob, policy()), "deny credential_not_allowed (not counted)", "uid is opt-in")
        XCTAssertEqual(judge(fob, nil), "deny unknown_action")
        XCTAssertEqual(judge(Registry(row: row), policy([.uid])), "none", "a 424's row is not a fob")
        XCTAssertEqual(judge(Registry(row: nil), policy([.uid])), "none")
        XCTAssertEqual(
            judge(Registry(row: IssuedTagView(state: .active, validUntil: 1, kind: .uid, action: 0)), policy([.uid])),
            "deny expired")
        // Through TapJudge: a blank tag and a foreign one with an enrolled UID.
        for message in [nil, NDEFMessage(records: [.uri("https://example.com/")])] {
            let r = TapJudge.judge(
                uid: uid, message: message, secrets: [], actionCount: 1, registry: fob, now: wall.unixSeconds,
                policy: policy([.uid]))
            XCTAssertEqual(r.presentation.verdict, .grant(action: 0, reason: "weak_credential"))
        }
    }

    func testASUNURLOnATagThatIsNotA424IsACopy() throws {
        let r = TapJudge.judge(
            uid: TagUID(hex: "04998877665544")!, message: NDEFMessage(records: [.uri(try sun(counter: 7))]),
            secrets: [], actionCount: 1, registry: Registry(row: nil), now: wall.unixSeconds, policy: policy())
        XCTAssertEqual(r.presentation.verdict, .deny(reason: "sun_copy", countsTowardLockout: true))
        // Not even on the SUN-only tier, nor on a "magic" NTAG21x that fakes the 424's UID:
        // the SUN is taken only from a tag that activated as an NTAG 424 DNA.
        let magic = TapJudge.judge(
            uid: uid, message: NDEFMessage(records: [.uri(try sun(counter: 7))]), secrets: [], actionCount: 1,
            registry: Registry(row: row), now: wall.unixSeconds, policy: policy([.ntag424SUN, .ntag424]))
        XCTAssertEqual(magic.presentation.verdict, .deny(reason: "sun_copy", countsTowardLockout: true))
    }

    func testStickerKindsAreHeldToTheActionsCredentials() {
        let key = [UInt8](repeating: 7, count: 32)
        let stickerUID = TagUID(hex: "04A1B2C3D4E5F6")!
        let message = NDEFMessage(records: [
            .uri(StickerSigner.signV2(action: 0, timestamp: 1_700_000_000, key: key, uid: stickerUID).text)
        ])
        let registry = Registry(row: IssuedTagView(state: .active))
        func judge(_ p: TapPolicy) -> AccessVerdict {
            TapJudge.judge(
                uid: stickerUID, message: message,
                secrets: [StickerSecret(id: 1, action: 0, key: key, origin: .generated)], actionCount: 1,
                registry: registry, now: wall.unixSeconds, policy: p
            ).presentation.verdict
        }
        XCTAssertEqual(judge(policy()), .grant(action: 0, reason: "valid_v2"))
        XCTAssertEqual(
            judge(policy([.ntag424, .uid])), .deny(reason: "credential_not_allowed", countsTowardLockout: false))
    }
}
