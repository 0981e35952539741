import DoorCore
import TestSupport
import XCTest

/// Card numbers from outdoor readers (issue 35): the frame formats, the
/// registry key, and the tap decision for a card read with its reader's name.
final class CardNumberTests: XCTestCase {
    /// The frame as a reader sends it, first bit first, from a string of 0/1.
    func frame(_ bits: String) -> CardNumber {
        CardNumber(bitString: bits.compactMap { $0 == " " ? nil : $0 == "1" })!
    }

    /// H10301 26-bit, facility 18, card 12345 (0x12, 0x3039): even parity over
    /// the first 13 bits, odd over the last 13 — the ranges ESPHome's
    /// `wiegand` component checks (`check_eparity(value, 13, 13)`,
    /// `check_oparity(value, 0, 13)`), its tag `(value >> 1) & 0xffffff`.
    func test26BitFrameMatchesTheDocumentedLayout() {
        // P | 00010010 | 0011000000111001 | P
        // first 12 data bits 000100100011: four ones → even parity bit 0;
        // last 12 data bits 000000111001: four ones → odd parity bit 1.
        let card = CardNumber(format: .h10301, facility: 18, number: 12345)!
        XCTAssertEqual(card, frame("0 00010010 0011000000111001 1"))
        XCTAssertEqual(card.value, 0b0_00010010_0011000000111001_1)
        XCTAssertEqual((card.value! >> 1) & 0xFFFFFF, 0x123039, "ESPHome's on_tag value (1191993)")
        XCTAssertEqual(card.format, .h10301)
        XCTAssertEqual(card.fields?.facility, 18)
        XCTAssertEqual(card.fields?.number, 12345)
        XCTAssertEqual(card.description, "26:18:12345")
        XCTAssertEqual(CardNumber(text: "26:18:12345"), card)
    }

    func testABadParityIsNoNamedFormatButStaysRawBits() {
        let bad = frame("1 00010010 0011000000111001 1")
        XCTAssertNil(bad.format)
        XCTAssertNil(bad.fields)
        XCTAssertEqual(bad.description, "raw:26:" + Hex.encode(bad.bits))
        XCTAssertEqual(CardNumber(text: bad.description), bad)
        XCTAssertNotEqual(bad.registryKey, CardNumber(format: .h10301, facility: 18, number: 12345)!.registryKey)
    }

    /// 34 and 37 bits with the parity ranges ESPHome checks (`17, 17` / `0, 17`
    /// and `18, 19` / `0, 19`): every single-bit flip breaks the frame.
    func test34And37BitFramesAndEverySingleBitFlipIsCaught() {
        for (format, facility, number) in [(WiegandFormat.h10306, 4660, 22136), (.h10304, 65535, 524_287)] {
            let card = CardNumber(format: format, facility: UInt64(facility), number: UInt64(number))!
            XCTAssertEqual(card.bitCount, format.bitCount)
            XCTAssertEqual(card.format, format)
            XCTAssertEqual(card.fields?.facility, UInt64(facility))
            XCTAssertEqual(card.fields?.number, UInt64(number))
            XCTAssertEqual(CardNumber(text: card.description), card)
            for i in 0..<card.bitCount {
                var s = card.bitString
                s[i].toggle()
                XCTAssertNil(CardNumber(bitString: s)!.format, "\(format) bit \(i) flipped")
            }
        }
        // ESPHome's 34-bit tag: the 32 bits between the parity bits.
        let c34 = CardNumber(format: .h10306, facility: 0x1234, number: 0x5678)!
        XCTAssertEqual((c34.value! >> 1) & 0xFFFF_FFFF, 0x1234_5678)
        XCTAssertNil(CardNumber(format: .h10301, facility: 256, number: 0), "facility past 8 bits")
        XCTAssertNil(CardNumber(format: .h10301, facility: 0, number: 65536), "number past 16 bits")
        XCTAssertNil(CardNumber(text: "26:-1:5"))
        XCTAssertNil(CardNumber(text: "30:1:5"), "no named 30-bit format")
        XCTAssertNil(CardNumber(text: "raw:9:FF"), "9 bits need two bytes")
        XCTAssertNil(CardNumber(text: "raw:4:FF"), "bits past the count are set")
    }

    /// A card's registry key is never an NFC UID's length and names its card back.
    func testTheRegistryKeyRoundTripsAndNeverLooksLikeAnNFCUID() throws {
        let cards = [
            CardNumber(format: .h10301, facility: 1, number: 2)!,
            CardNumber(format: .h10304, facility: 3, number: 4)!,
            CardNumber(bits: [0x80], bitCount: 1)!,
            CardNumber(bits: [UInt8](repeating: 0xFF, count: 16), bitCount: 128)!,
            CardNumber(bits: [UInt8](repeating: 0xAA, count: 25), bitCount: 200)!,
        ]
        for card in cards {
            let key = card.registryKey
            XCTAssertFalse([4, 7, 10].contains(key.bytes.count))
            XCTAssertEqual(key.card, card)
            XCTAssertEqual(TagUID(hex: key.hex), key, "gatewayctl tags revoke takes the key")
        }
        XCTAssertNil(TagUID(hex: "04A1B2C3D4E5F6")!.card)
        XCTAssertNil(TagUID(hex: "CA19" + String(repeating: "00", count: 15)), "17 bytes: no key")
        XCTAssertNil(TagUID(hex: "CB19" + String(repeating: "00", count: 16)), "not the card tag")
        XCTAssertNil(CardNumber(bits: [], bitCount: 0))
        XCTAssertNil(CardNumber(bits: [UInt8](repeating: 0, count: 33), bitCount: 257))
    }
}

final class CardDecisionTests: XCTestCase {
    typealias Registry = TapJudgeTests.Registry
    let card = CardNumber(format: .h10301, facility: 18, number: 12345)!
    let wall = WallClock(unixSeconds: 1_800_000_000, synchronised: true)

    func policy(_ credentials: Set<CredentialKind>) -> TapPolicy {
        var a = ActionDefinition(index: 0, name: "front", steps: [])
        a.credentials = credentials
        return TapPolicy(policy: AccessPolicy(schedules: [], zone: .utc), actions: [a], wall: wall)
    }

    func decide(
        _ registry: Registry, _ credentials: Set<CredentialKind>, link: CardRead.Link = .wiegand,
        reader: String = "gate"
    ) -> TagPresentation {
        TapDecision.decide(
            TapFacts(card: CardRead(number: card, reader: reader, link: link)), secrets: TapSecrets(), actionCount: 1,
            registry: registry, now: wall.unixSeconds, policy: policy(credentials)
        ).presentation
    }

    func text(_ p: TagPresentation) -> String {
        switch p.verdict {
        case .grant(let action, let reason): return "grant \(action) \(reason)"
        case .deny(let reason, let counts): return "deny \(reason)\(counts ? "" : " (not counted)")"
        }
    }

    var row: IssuedTagView { IssuedTagView(state: .active, kind: .wiegand, action: 0) }

    func testAWiegandCardIsWeakAndOptInPerAction() {
        XCTAssertEqual(text(decide(Registry(row: row), [.wiegand])), "grant 0 weak_credential")
        XCTAssertEqual(
            text(decide(Registry(row: row), Set(CredentialKind.defaults))), "deny credential_not_allowed (not counted)",
            "not among the defaults")
        XCTAssertEqual(
            text(decide(Registry(row: row), [.osdp])), "deny credential_not_allowed (not counted)",
            "a Wiegand line is not Secure Channel")
        XCTAssertEqual(
            text(decide(Registry(row: row), [.osdp], link: .osdpPlain)), "deny credential_not_allowed (not counted)",
            "nor is OSDP without it")
        XCTAssertEqual(text(decide(Registry(row: row), [.wiegand], link: .osdpPlain)), "grant 0 weak_credential")
    }

    func testAnOSDPSecureChannelReadOpensAnOSDPActionAndAWiegandOneWeakly() {
        XCTAssertEqual(text(decide(Registry(row: row), [.osdp], link: .osdpSecure)), "grant 0 osdp_secure_channel")
        XCTAssertEqual(
            text(decide(Registry(row: row), [.osdp, .wiegand], link: .osdpSecure)), "grant 0 osdp_secure_channel")
        XCTAssertEqual(text(decide(Registry(row: row), [.wiegand], link: .osdpSecure)), "grant 0 weak_credential")
    }

    func testTheRegistryDecidesUnknownRevokedExpiredAndOtherKinds() {
        XCTAssertEqual(text(decide(Registry(row: nil), [.wiegand])), "deny unknown_tag")
        XCTAssertEqual(decide(Registry(row: nil), [.wiegand]).content, .foreign)
        XCTAssertEqual(text(decide(Registry(row: row, revoked: true), [.wiegand])), "deny revoked")
        var expired = row
        expired.validUntil = wall.unixSeconds - 1
        XCTAssertEqual(text(decide(Registry(row: expired), [.wiegand])), "deny expired")
        var fob = row
        fob.kind = .uid
        XCTAssertEqual(text(decide(Registry(row: fob), [.wiegand, .uid])), "deny unknown_tag", "only a card row")
        XCTAssertEqual(text(decide(Registry(unreadable: true), [.wiegand])), "deny registry_unavailable")
        var pending = row
        pending.state = .revoked
        XCTAssertEqual(text(decide(Registry(row: pending), [.wiegand])), "deny tag_revoked")
    }

    func testTheDecisionCarriesTheReaderAndTheCardKey() {
        let p = decide(Registry(row: row), [.wiegand], reader: "side-gate")
        XCTAssertEqual(p.uid, card.registryKey)
        XCTAssertEqual(p.reader, "side-gate")
        XCTAssertTrue(p.cardRead)
        XCTAssertEqual(p.source, "reader:side-gate")
        XCTAssertEqual(p.needs, StoreNeeds(touchLastSeen: true))
    }

    /// Every event of a card tap names the reader; a card read is one event
    /// (never "present"), the same card again within the quiet time is the
    /// same tap, and provisioning never takes it.
    func testTheMachineNamesTheReaderAndTreatsAReadAsOneEvent() {
        var h = MachineHarness()
        h.start()
        let granted = decide(Registry(row: row), [.wiegand], reader: "gate")
        let fx = h.send(.tagArrived(granted))
        XCTAssertTrue(
            fx.contains(
                .emit(
                    DoorEvent(
                        .accessGranted, reason: "weak_credential", action: 0, uid: card.registryKey,
                        source: "reader:gate"))), "\(fx)")
        XCTAssertEqual(h.send(.tagArrived(granted)), [.store(.touchLastSeen(card.registryKey))], "a repeat: no tap")
        h.advance(.seconds(10))
        XCTAssertTrue(
            h.send(.tagArrived(granted)).contains(where: {
                if case .emit(let e) = $0 { return e.kind == .accessGranted && e.source == "reader:gate" }
                return false
            }), "read again later: a new tap, without the card ever departing")

        _ = h.send(.admin(.armProvisioning(ProvisioningJob(action: 0))))
        h.advance(.seconds(10))
        let denied = decide(Registry(row: nil), [.wiegand], reader: "gate")
        let deniedFx = h.send(.tagArrived(denied))
        XCTAssertFalse(deniedFx.contains { if case .writeTag = $0 { return true } else { return false } })
        XCTAssertTrue(
            deniedFx.contains(
                .emit(DoorEvent(.accessDenied, reason: "unknown_tag", uid: card.registryKey, source: "reader:gate"))),
            "\(deniedFx)")
    }

    /// Review finding (issue 35): a card number is the attacker's choice,
    /// so counting unknown numbers per number never stopped an emulator
    /// walking a facility's 65 536 numbers at a Secure Channel reader. Ten
    /// denied cards at one reader lock that reader's cards out; the enrolled
    /// card is then denied there, granted at another reader, and NFC tags
    /// are not affected.
    func testDeniedCardsLockOutTheirReaderOnly() {
        var h = MachineHarness()
        h.start()
        func read(_ number: UInt64, at reader: String, _ registry: Registry) -> TagPresentation {
            TapDecision.decide(
                TapFacts(
                    card: CardRead(
                        number: CardNumber(format: .h10301, facility: 18, number: number)!,
                        reader: reader, link: .osdpSecure)),
                secrets: TapSecrets(), actionCount: 1, registry: registry, now: wall.unixSeconds,
                policy: policy([.osdp])
            ).presentation
        }
        var kinds: [DoorEvent.Kind] = []
        for n in UInt64(1)...10 {
            kinds += h.send(.tagArrived(read(n, at: "gate", Registry(row: nil)))).eventKinds
            h.advance(.seconds(1))
        }
        XCTAssertEqual(kinds.filter { $0 == .lockout }.count, 1, "\(kinds)")
        XCTAssertEqual(Array(h.machine.lockoutStatus(at: h.clock.monotonic).readers.keys), ["reader:gate"])
        XCTAssertNil(h.machine.lockoutStatus(at: h.clock.monotonic).globalUntil)
        let enrolled = Registry(row: row)
        XCTAssertTrue(
            h.send(.tagArrived(read(12345, at: "gate", enrolled))).contains(
                .emit(DoorEvent(.accessDenied, reason: "locked_out", uid: card.registryKey, source: "reader:gate"))),
            "the walked reader's cards are locked out")
        h.advance(.seconds(10))
        XCTAssertTrue(
            h.send(.tagArrived(read(12345, at: "yard", enrolled))).contains(where: {
                if case .emit(let e) = $0 { return e.kind == .accessGranted && e.source == "reader:yard" }
                return false
            }), "another reader's cards open")
        XCTAssertEqual(
            h.send(MachineHarness.tag("04A1B2C3D4E5F6", .grant(action: 0, reason: "valid_v2"))).eventKinds,
            [.accessGranted], "an NFC tag at the PN532 opens")
    }

    func testPolicyExplainKnowsACardRow() {
        var a = ActionDefinition(index: 0, name: "front", steps: [])
        a.credentials = [.osdp]
        let p = policy([.osdp])
        XCTAssertNil(TapDecision.explain(action: a, tag: .init(row: row), policy: p))
        a.credentials = [.uid]
        XCTAssertEqual(TapDecision.explain(action: a, tag: .init(row: row), policy: p), .credentialNotAllowed)
    }
}
