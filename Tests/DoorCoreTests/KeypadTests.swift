import DoorCore
import TestSupport
import XCTest

/// scrypt through OpenSSL's EVP_KDF, and PINs (issue 35).
final class PINCryptoTests: XCTestCase {
    /// RFC 7914 §12's first two test vectors.
    func testScryptMatchesRFC7914() throws {
        XCTAssertEqual(
            Hex.encode(try Crypto.scrypt(password: [], salt: [], cost: .init(logN: 4, r: 1, p: 1), length: 64)),
            "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442"
                + "fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906")
        XCTAssertEqual(
            Hex.encode(
                try Crypto.scrypt(
                    password: Array("password".utf8), salt: Array("NaCl".utf8), cost: .init(logN: 10, r: 8, p: 16),
                    length: 64)),
            "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
                + "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640")
    }

    /// A keypad PIN's cost, against Python's hashlib.scrypt (OpenSSL too, but
    /// not this wrapper): scrypt(b"1234", bytes(range(16)), n=16384, r=8, p=1, dklen=32).
    func testAPINHashesWithTheKeypadCostAndMatchesOnlyItself() throws {
        let salt = (0..<16).map { UInt8($0) }
        let hash = try PINHash(pin: PIN("1234")!, salt: salt)
        XCTAssertEqual(hash.cost, Crypto.ScryptCost(logN: 14, r: 8, p: 1))
        XCTAssertEqual(Hex.encode(hash.hash), "58dfbceef3ed18ee28d5fc04b6d96828d230b6a199aa7b1f91209634986ba4c8")
        XCTAssertTrue(try hash.matches(PIN("1234")!))
        XCTAssertFalse(try hash.matches(PIN("1235")!))
        XCTAssertFalse(try hash.matches(PIN("12340")!))
    }

    func testAPINIsFourToTwelveDigitsAndNeverPrints() {
        XCTAssertNil(PIN("123"))
        XCTAssertNil(PIN("1234567890123"))
        XCTAssertNil(PIN("12a4"))
        XCTAssertNil(PIN("١٢٣٤"), "ASCII digits only")
        XCTAssertNil(PIN(keys: [1, 2, 3, 10]))
        let pin = PIN("987654")!
        for text in ["\(pin)", String(describing: pin), String(reflecting: pin), "\([pin])"] {
            XCTAssertFalse(text.contains("987654"), text)
            XCTAssertFalse(text.contains("9"), text)
        }
    }
}

/// The keypad desk (issue 35): card + PIN on the same reader within the
/// window, PIN-only codes, duress, and per-reader lockout — a keypad flood
/// on one reader costs no hashing and locks no other reader.
final class KeypadDeskTests: XCTestCase {
    static let cheap = Crypto.ScryptCost(logN: 10, r: 1, p: 1)
    let card = CardNumber(format: .h10301, facility: 7, number: 4242)!
    var cardKey: TagUID { card.registryKey }
    let codeKey = PINCode.key(random: [UInt8](repeating: 0x11, count: 14))!
    let duressKey = PINCode.key(random: [UInt8](repeating: 0x22, count: 14))!
    var clock = MonotonicInstant(nanoseconds: 1_000_000_000)

    final class Verifier: PINVerifier, @unchecked Sendable {
        var pins: [TagUID: PINHash] = [:]
        var codeList: [(key: TagUID, hash: PINHash)] = []
        var reads = 0
        var down = false
        struct Down: Error {}
        func pin(for uid: TagUID) throws -> PINHash? {
            reads += 1
            if down { throw Down() }
            return pins[uid]
        }
        func codes() throws -> [(key: TagUID, hash: PINHash)] {
            reads += 1
            if down { throw Down() }
            return codeList
        }
    }

    func verifier() throws -> Verifier {
        let v = Verifier()
        let salt = [UInt8](repeating: 9, count: 16)
        v.pins[cardKey] = try PINHash(pin: PIN("2468")!, salt: [UInt8](repeating: 1, count: 16), cost: Self.cheap)
        v.codeList = [
            (codeKey, try PINHash(pin: PIN("135790")!, salt: salt, cost: Self.cheap)),
            (duressKey, try PINHash(pin: PIN("999000")!, salt: salt, cost: Self.cheap, duress: true)),
        ]
        return v
    }

    /// A card whose action lists "card+pin", read on `reader`.
    func held(reader: String = "gate") -> TagPresentation {
        var p = TagPresentation(
            uid: cardKey, content: .ours, verdict: .grant(action: 0, reason: GrantReason.cardPIN),
            needs: StoreNeeds(touchLastSeen: true), reader: reader, cardRead: true)
        p.pinRequired = true
        return p
    }

    func press(
        _ desk: inout KeypadDesk, _ text: String, reader: String = "gate", _ v: Verifier,
        gap: Duration = .milliseconds(300)
    ) -> [KeypadOutput] {
        var out: [KeypadOutput] = []
        for ch in text {
            clock = clock + gap
            let key: KeypadKey = ch == "#" ? .enter : ch == "*" ? .clear : .digit(UInt8(String(ch))!)
            out += desk.key(key, reader: reader, at: clock, verifier: v)
        }
        return out
    }

    func verdicts(_ out: [KeypadOutput]) -> [String] {
        out.compactMap {
            switch $0 {
            case .decided(let p):
                switch p.verdict {
                case .grant(let a, let r): return "grant \(a) \(r)\(p.pinRequired ? " held" : "") \(p.source)"
                case .deny(let r, _): return "deny \(r) \(p.source)"
                }
            case .decide(let facts): return "decide code \(facts.uid.hex.prefix(6)) \(facts.reader ?? "-")"
            case .emit(let e): return "event \(e.kind.rawValue) \(e.reason ?? "-") \(e.source ?? "-")"
            case .feedback(let f): return "feedback \(f.rawValue)"
            }
        }
    }

    func testACardWaitsForItsPINOnItsReaderAndOpensWithIt() throws {
        let v = try verifier()
        var desk = KeypadDesk()
        XCTAssertEqual(desk.card(held(), at: clock), [], "held: the machine sees nothing yet")
        XCTAssertEqual(
            verdicts(press(&desk, "2468#", reader: "side", v)),
            [
                "feedback denied", "event access_denied wrong_pin reader:side",
            ], "another reader's keypad is not this card's")
        XCTAssertEqual(verdicts(press(&desk, "2468#", v)), ["grant 0 card_pin reader:gate"])
        XCTAssertEqual(
            verdicts(press(&desk, "2468#", v)),
            [
                "feedback denied", "event access_denied wrong_pin reader:gate",
            ], "released once; the PIN alone opens nothing")
    }

    func testAWrongPINOrNoPINInTimeDeniesTheCard() throws {
        let v = try verifier()
        var desk = KeypadDesk()
        _ = desk.card(held(), at: clock)
        XCTAssertEqual(verdicts(press(&desk, "1111#", v)), ["deny wrong_pin reader:gate"])
        _ = desk.card(held(), at: clock)
        XCTAssertEqual(desk.nextDeadline, clock + .seconds(10))
        XCTAssertEqual(desk.tick(at: clock + .milliseconds(9999)), [])
        XCTAssertEqual(verdicts(desk.tick(at: clock + .seconds(10))), ["deny pin_timeout reader:gate"])
        clock = clock + .seconds(11)
        XCTAssertEqual(verdicts(press(&desk, "2468#", v)).first, "feedback denied", "too late")
    }

    func testAGapOrStarDropsTheEntryAndOverlongIsWrong() throws {
        let v = try verifier()
        var desk = KeypadDesk()
        _ = desk.card(held(), at: clock)
        _ = press(&desk, "99", v)
        XCTAssertEqual(verdicts(press(&desk, "*2468#", v)), ["grant 0 card_pin reader:gate"], "* drops 99")
        _ = press(&desk, "1357", v)
        XCTAssertEqual(
            verdicts(press(&desk, "90#", v, gap: .seconds(6))),
            ["feedback denied", "event access_denied wrong_pin reader:gate"], "a pause drops 1357")
        XCTAssertEqual(
            verdicts(press(&desk, "1357901357901#", v)),
            ["feedback denied", "event access_denied wrong_pin reader:gate"],
            "13 digits: no code, even with a code's digits in it")
    }

    func testAPINOnlyCodeIsDecidedAsACodeAndDuressRaisesTheSilentAlarm() throws {
        let v = try verifier()
        var desk = KeypadDesk()
        XCTAssertEqual(verdicts(press(&desk, "135790#", v)), ["decide code C0DE11 gate"])
        XCTAssertEqual(
            verdicts(press(&desk, "999000#", v)), ["event duress duress_pin reader:gate", "decide code C0DE22 gate"])
        // A duress code typed for a waiting card alarms and is decided as
        // the code (its own row: revoked, expired, out of uses or schedule,
        // it opens nothing); it never releases the card (review finding: a
        // leaked or revoked duress code made card + PIN card alone).
        _ = desk.card(held(), at: clock)
        XCTAssertEqual(
            verdicts(press(&desk, "999000#", v)),
            ["event duress duress_pin reader:gate", "decide code C0DE22 gate"])
        // An unreadable store denies, counts nothing.
        v.down = true
        XCTAssertEqual(
            verdicts(press(&desk, "135790#", v)),
            ["feedback denied", "event access_denied registry_unavailable reader:gate"])
    }

    /// Five wrong PINs lock that reader's keypad: its keys are then dropped
    /// unread (no store read, no hash), the other reader's codes still open,
    /// and a card on the locked reader that needs its PIN is denied at once.
    func testWrongPINsLockOneReadersKeypadOnlyAndAFloodCostsNothing() throws {
        let v = try verifier()
        var desk = KeypadDesk()
        var out: [KeypadOutput] = []
        for _ in 0..<5 { out += press(&desk, "0000#", reader: "gate", v) }
        XCTAssertEqual(
            verdicts(out).suffix(2), ["feedback locked_out", "event lockout keypad reader:gate"])
        XCTAssertTrue(desk.isLockedOut("gate", at: clock))
        let reads = v.reads
        for _ in 0..<200 {
            XCTAssertEqual(press(&desk, "135790#", reader: "gate", v, gap: .milliseconds(10)), [], "dropped")
        }
        XCTAssertEqual(v.reads, reads, "a flood on a locked keypad reads and hashes nothing")
        XCTAssertFalse(desk.isLockedOut("side", at: clock))
        XCTAssertEqual(verdicts(press(&desk, "135790#", reader: "side", v)), ["decide code C0DE11 side"])
        XCTAssertEqual(verdicts(desk.card(held(), at: clock)), ["deny locked_out reader:gate"])
        var plain = held()
        plain.pinRequired = false
        XCTAssertEqual(desk.card(plain, at: clock), [.decided(plain)], "a card alone is not the keypad")
        // The lockout ends after a minute; the next one lasts two.
        clock = clock + .seconds(61)
        XCTAssertEqual(verdicts(desk.tick(at: clock)), ["event lockout_ended keypad reader:gate"])
        XCTAssertEqual(verdicts(press(&desk, "135790#", reader: "gate", v)), ["decide code C0DE11 gate"])
        for _ in 0..<5 { _ = press(&desk, "0000#", reader: "gate", v) }
        XCTAssertTrue(desk.isLockedOut("gate", at: clock + .seconds(119)))
        XCTAssertFalse(desk.isLockedOut("gate", at: clock + .seconds(121)))
    }

    /// A code is decided by TapDecision: its row's action must list "pin"
    /// (a duress code also "card+pin"), with a guest pass's uses.
    func testTheDecisionOfACode() {
        typealias Registry = TapJudgeTests.Registry
        var a = ActionDefinition(index: 0, name: "front", steps: [])
        let wall = WallClock(unixSeconds: 1_800_000_000, synchronised: true)
        func decide(_ row: IssuedTagView?, _ credentials: Set<CredentialKind>, duress: Bool = false) -> String {
            a.credentials = credentials
            let p = TapDecision.decide(
                TapFacts(code: PINCodeMatch(key: codeKey, duress: duress), reader: "gate"), secrets: TapSecrets(),
                actionCount: 1, registry: Registry(row: row), now: wall.unixSeconds,
                policy: TapPolicy(policy: AccessPolicy(schedules: [], zone: .utc), actions: [a], wall: wall)
            ).presentation
            switch p.verdict {
            case .grant(let action, let reason): return "grant \(action) \(reason) \(p.needs.guestPass) \(p.source)"
            case .deny(let reason, _): return "deny \(reason)"
            }
        }
        let row = IssuedTagView(state: .active, usesLeft: 2, kind: .pin, action: 0)
        XCTAssertEqual(decide(row, [.pin]), "grant 0 pin true reader:gate")
        XCTAssertEqual(decide(row, [.wiegand, .cardPIN]), "deny credential_not_allowed")
        XCTAssertEqual(decide(row, [.cardPIN], duress: true), "grant 0 pin true reader:gate")
        XCTAssertEqual(decide(nil, [.pin]), "deny wrong_pin")
        XCTAssertEqual(decide(IssuedTagView(state: .active, kind: .wiegand, action: 0), [.pin]), "deny wrong_pin")
        XCTAssertEqual(decide(IssuedTagView(state: .revoked, kind: .pin, action: 0), [.pin]), "deny tag_revoked")
    }

    /// A card whose action lists "card+pin" (and not its reader's kind) is a held grant.
    func testACardPINActionHoldsTheGrant() {
        typealias Registry = TapJudgeTests.Registry
        var a = ActionDefinition(index: 0, name: "front", steps: [])
        a.credentials = [.cardPIN]
        let wall = WallClock(unixSeconds: 1_800_000_000, synchronised: true)
        /// The enrolled card read at `reader` over `link`, for `action` alone.
        func decide(_ action: ActionDefinition, at reader: String, _ link: CardRead.Link) -> TagPresentation {
            TapDecision.decide(
                TapFacts(card: CardRead(number: card, reader: reader, link: link)), secrets: TapSecrets(),
                actionCount: 1, registry: Registry(row: IssuedTagView(state: .active, kind: .wiegand, action: 0)),
                now: wall.unixSeconds,
                policy: TapPolicy(policy: AccessPolicy(schedules: [], zone: .utc), actions: [action], wall: wall)
            ).presentation
        }
        let p = decide(a, at: "gate", .wiegand)
        // Card and PIN both crossed a Wiegand line in clear: weak, audited as the card alone
        // is there (before: `card_pin`, no weak flag).
        XCTAssertEqual(p.verdict, .grant(action: 0, reason: "weak_credential"))
        XCTAssertTrue(p.pinRequired)
        for (link, reason) in [(CardRead.Link.osdpPlain, "weak_credential"), (.osdpSecure, "card_pin")] {
            var b = a
            b.credentials = [.cardPIN, .osdp]
            let over = decide(b, at: "street", link)
            XCTAssertEqual(over.verdict, .grant(action: 0, reason: reason), "\(link)")
            XCTAssertTrue(over.pinRequired, "\(link)")
        }
        a.credentials = [.cardPIN, .wiegand]
        let alone = decide(a, at: "gate", .wiegand)
        // "card+pin" wins over the reader's kind listed beside it: no card
        // opens it alone (review finding: before, the cloned card opened
        // without its PIN, audited weak_credential).
        XCTAssertEqual(alone.verdict, .grant(action: 0, reason: "weak_credential"))
        XCTAssertTrue(alone.pinRequired, "an action that lists card+pin never opens on the card alone")
    }

    /// A code is one event: typed again after the quiet time it opens again
    /// (were it "present" like a tag on the NFC reader, never again).
    static func opens(_ effect: DoorEffect) -> Bool {
        if case .drive(_, .unlocked) = effect { return true }
        return false
    }

    func testACodeTypedTwiceOpensTwice() {
        typealias Registry = TapJudgeTests.Registry
        var a = ActionDefinition(index: 0, name: "front", steps: [])
        a.credentials = [.pin]
        let wall = WallClock(unixSeconds: 1_800_000_000, synchronised: true)
        let p = TapDecision.decide(
            TapFacts(code: PINCodeMatch(key: codeKey, duress: false), reader: "gate"), secrets: TapSecrets(),
            actionCount: 1, registry: Registry(row: IssuedTagView(state: .active, kind: .pin, action: 0)),
            now: wall.unixSeconds,
            policy: TapPolicy(policy: AccessPolicy(schedules: [], zone: .utc), actions: [a], wall: wall)
        ).presentation
        XCTAssertTrue(p.cardRead)
        var h = MachineHarness()
        h.start()
        XCTAssertTrue(h.send(.tagArrived(p)).contains(where: Self.opens))
        h.advance(.seconds(10))
        XCTAssertTrue(
            h.send(.tagArrived(p)).contains(where: Self.opens),
            "the same code, later: opens again")
    }
}
