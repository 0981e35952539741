import DoorCore
import GatewayConfig
import GatewayControl
import TestSupport
import XCTest

/// `gatewayctl policy explain` and the door call the same rules (issue 34
/// Move A): on every row of the table, what PolicyExplain answers for a tag
/// is what the door does when that tag is tapped — its decision
/// (`TapDecision`) and the machine, with the store's answers (a guest pass's
/// use) and a lockout in place. Before, PolicyExplain re-implemented the
/// registry's rules: it missed a revocation of a tag not yet active, checked a
/// 424's expiry before its state, and knew no credentials and no lockout.
final class PolicyExplainAgreementTests: XCTestCase {
    let uid = TagUID(hex: "04A1B2C3D4E5F6")!
    let key = [UInt8](repeating: 7, count: 32)
    let master = [UInt8](repeating: 3, count: 16)
    /// Monday 2027-01-04 12:00 UTC (inside "weekdays"); Sunday 2027-01-03 12:00 is outside.
    let monday: Int64 = 1_799_064_000
    var sunday: Int64 { monday - 86_400 }

    typealias Registry = FixedRegistry

    func configuration() throws -> GatewayConfiguration {
        try GatewayConfiguration.load(
            toml: """
                [device]
                id = "explain"
                [board]
                kind = "sim"
                [[schedules]]
                name = "weekdays"
                windows = [{ days = ["mon", "tue", "wed", "thu", "fri"], from = "08:00", to = "18:00" }]
                [[actions]]
                index = 0
                name = "front"
                steps = [{ pulse = "strike", ms = 3000 }]
                credentials = ["ntag424", "sticker-v2", "sticker-v1", "uid", "wiegand"]
                [[actions]]
                index = 1
                name = "office"
                steps = [{ pulse = "strike", ms = 3000 }]
                schedule = "weekdays"
                [clock]
                declare_synchronised = true
                """)
    }

    struct Case {
        var name: String
        var action: ActionIndex = 0
        var row: IssuedTagView?
        var revoked = false
        var lockedOut = false
        var at: Int64? = nil
        var expected: String
    }

    func row(
        _ kind: CredentialKind?, _ state: RegistryState = .active, action: ActionIndex = 0, until: Int64? = nil,
        from: Int64? = nil, uses: Int? = nil
    ) -> IssuedTagView {
        IssuedTagView(
            state: state, validUntil: until, validFrom: from, usesLeft: uses, kind: kind,
            action: kind == .stickerV2 || kind == .stickerV1 ? nil : action)
    }

    var cases: [Case] {
        [
            Case(name: "sticker v2, active", row: row(.stickerV2), expected: "granted"),
            Case(name: "sticker v2, never issued", row: nil, expected: "not_issued"),
            Case(name: "sticker v2, revoked", row: row(.stickerV2, .revoked), revoked: true, expected: "revoked"),
            Case(
                name: "sticker v2, revoked while pending", row: row(.stickerV2, .pending), revoked: true,
                expected: "revoked"),
            Case(name: "sticker v2, pending", row: row(.stickerV2, .pending), expected: "tag_pending"),
            Case(name: "sticker v2, expired", row: row(.stickerV2, until: monday - 60), expected: "expired"),
            Case(name: "sticker v2, guest pass used up", row: row(.stickerV2, uses: 0), expected: "no_uses_left"),
            Case(name: "sticker v2, guest pass with a use", row: row(.stickerV2, uses: 1), expected: "granted"),
            Case(
                name: "sticker v2, guest pass not started", row: row(.stickerV2, from: monday + 3600),
                expected: "not_yet_valid"),
            Case(name: "sticker v2, schedule open", action: 1, row: row(.stickerV2), expected: "granted"),
            Case(
                name: "sticker v2, schedule closed", action: 1, row: row(.stickerV2), at: sunday,
                expected: "outside_schedule"),
            Case(name: "sticker v2, locked out", row: row(.stickerV2), lockedOut: true, expected: "locked_out"),
            Case(name: "uid fob, listed", row: row(.uid), expected: "granted"),
            Case(
                name: "uid fob, action without uid", action: 1, row: row(.uid, action: 1),
                expected: "credential_not_allowed"),
            Case(name: "uid fob, failed", row: row(.uid, .failed), expected: "tag_failed"),
            Case(name: "uid fob, revoked", row: row(.uid, .revoked), revoked: true, expected: "revoked"),
            Case(name: "ntag424, active", row: row(.ntag424), expected: "granted"),
            Case(
                name: "ntag424, pending and past its end", row: row(.ntag424, .pending, until: monday - 60),
                expected: "tag_pending"),
            Case(name: "ntag424, expired", row: row(.ntag424, until: monday - 60), expected: "expired"),
            Case(name: "ntag424, revoked", row: row(.ntag424, .revoked), revoked: true, expected: "revoked"),
            Case(name: "ntag424, guest pass used up", row: row(.ntag424, uses: 0), expected: "no_uses_left"),
            Case(
                name: "ntag424, schedule closed", action: 1, row: row(.ntag424, action: 1), at: sunday,
                expected: "outside_schedule"),
            Case(name: "ntag424, locked out", row: row(.ntag424), lockedOut: true, expected: "locked_out"),
            Case(name: "wiegand card, listed", row: row(.wiegand), expected: "granted"),
            Case(
                name: "wiegand card, action without it", action: 1, row: row(.wiegand, action: 1),
                expected: "credential_not_allowed"),
            Case(name: "wiegand card, expired", row: row(.wiegand, until: monday - 60), expected: "expired"),
            Case(name: "wiegand card, revoked", row: row(.wiegand, .revoked), revoked: true, expected: "revoked"),
            Case(name: "wiegand card, guest pass used up", row: row(.wiegand, uses: 0), expected: "no_uses_left"),
        ]
    }

    /// What `policy explain` answers (the daemon's: the registry consulted).
    func explained(_ c: Case, _ configuration: GatewayConfiguration) throws -> String {
        let at = c.at ?? monday
        let answer = try PolicyExplain.explain(
            configuration: configuration, zone: .utc, action: c.action, tag: (uid, c.row), at: at, note: nil,
            registryConsulted: true, revoked: c.revoked, lockedOutUntil: c.lockedOut ? at + 60 : nil)
        return answer["reason"]?.stringValue ?? "?"
    }

    /// What the door does when the tag is tapped at that time: "granted" or the denial's reason.
    func tapped(_ c: Case, _ configuration: GatewayConfiguration) throws -> String {
        let at = c.at ?? monday
        let wall = WallClock(unixSeconds: at, synchronised: true)
        let kind = c.row?.kind ?? .stickerV2
        let message: NDEFMessage?
        var ntag424: TapFacts.NTAG424Proof?
        switch kind {
        case .stickerV2:
            message = NDEFMessage(records: [
                .uri(StickerSigner.signV2(action: c.action, timestamp: at - 10, key: key, uid: uid).text)
            ])
        case .stickerV1:
            message = NDEFMessage(records: [
                .uri(StickerSigner.signV1(action: c.action, timestamp: at - 10, key: key).text)
            ])
        case .uid, .wiegand, .osdp, .cardPIN, .pin:
            message = nil
        case .ntag424, .ntag424SUN:
            message = nil
            ntag424 = .authenticated(cardUID: uid.bytes)
        }
        let secrets = configuration.door.actions.map {
            StickerSecret(id: Int64($0.index + 1), action: $0.index, key: key, origin: .generated)
        }
        let card = CardNumber(format: .h10301, facility: 1, number: 2)!
        let decision = TapDecision.decide(
            kind == .wiegand
                ? TapFacts(card: CardRead(number: card, reader: "gate", link: .wiegand))
                : TapFacts(uid: uid, message: message, ntag424: ntag424),
            secrets: TapSecrets(stickers: secrets, siteKey: .key(master)),
            actionCount: configuration.door.actions.count, registry: Registry(row: c.row, revoked: c.revoked),
            now: at,
            policy: TapPolicy(
                policy: AccessPolicy(schedules: configuration.door.schedules, zone: .utc),
                actions: configuration.door.actions, wall: wall))
        var settings = configuration.door
        settings.lockout.perTagThreshold = 1
        var machine = DoorMachine(settings: settings)
        var clock = MonotonicInstant(nanoseconds: 1_000_000_000)
        func now() -> Now { Now(monotonic: clock, wall: wall) }
        _ = machine.start(at: now())
        if c.lockedOut {
            // One forged sticker of this UID locks it out (threshold 1 here).
            _ = machine.handle(
                .tagArrived(TagPresentation(uid: uid, content: .ours, verdict: Denial.sticker(.badSignature).verdict)),
                at: now())
            _ = machine.handle(.tagDeparted(uid), at: now())
            clock = clock + settings.sameTagQuiet + .milliseconds(1)
        }
        var effects = machine.handle(.tagArrived(decision.presentation), at: now())
        // The store's answers, as the registry row would give them.
        while case .store(let request)? = effects.last {
            switch request {
            case .acceptSUNCounter(let u, _): effects = machine.handle(.storeAnswered(.sunCounter(u, .done)), at: now())
            case .takeGuestUse(let u):
                let left = c.row?.usesLeft ?? 0
                effects = machine.handle(.storeAnswered(.guestUse(u, left > 0 ? .done : .refused)), at: now())
            case .touchLastSeen: effects.removeLast()
            }
        }
        for case .emit(let event) in effects {
            if event.kind == .accessGranted { return "granted" }
            if event.kind == .accessDenied { return event.reason ?? "?" }
        }
        return "no access event: \(effects)"
    }

    func testPolicyExplainAndTheDoorAgreeOnEveryRow() throws {
        let configuration = try configuration()
        for c in cases {
            let door = try tapped(c, configuration)
            XCTAssertEqual(door, c.expected, "\(c.name): the door")
            XCTAssertEqual(try explained(c, configuration), door, "\(c.name): policy explain and the door")
        }
    }
}
