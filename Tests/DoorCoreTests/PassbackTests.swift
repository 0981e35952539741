import DoorCore
import TestSupport
import XCTest

/// Anti-passback (issue 36): the tap's decision with the reader's side and the credential's last
/// passage. A second entry without an exit is denied `passback` under "hard" (not counted toward
/// lockout), granted `passback` under "soft"; an exit is never refused; the timed reset and a
/// reset passage let the credential in again; an unreadable passage fails closed under "hard".
final class PassbackTests: XCTestCase {
    let uid = TagUID(hex: "04A1B2C3D4E5F6")!
    let now: Int64 = 1_800_000_000

    let registry = FixedRegistry(row: IssuedTagView(state: .active, kind: .uid, action: 0))

    func policy(_ rule: PassbackRule) -> TapPolicy {
        var action = ActionDefinition(index: 0, name: "club", steps: [.pulse(output: "strike", duration: .seconds(3))])
        action.credentials = [.uid]
        action.passback = rule
        return TapPolicy(
            policy: AccessPolicy(schedules: [], zone: .utc), actions: [action],
            wall: WallClock(unixSeconds: now, synchronised: true))
    }

    func tap(_ rule: PassbackRule, _ passage: PassageFacts?) -> String {
        var facts = TapFacts(uid: uid, reader: passage?.side == .exit ? "yard" : "street")
        facts.passage = passage
        let p = TapDecision.decide(
            facts, secrets: TapSecrets(), actionCount: 1, registry: registry, now: now, policy: policy(rule)
        ).presentation
        switch p.verdict {
        case .grant(let action, let reason):
            return "grant \(action) \(reason)\(p.needs.touchLastSeen ? "" : " (no last_seen)")"
        case .deny(let reason, let counts): return "deny \(reason)\(counts ? " (counted)" : "")"
        }
    }

    let inside = Presence(inside: true, since: 1_800_000_000 - 600, reader: "street")
    let outside = Presence(inside: false, since: 1_800_000_000 - 600, reader: "yard")

    func testASecondEntryWithoutAnExitIsJudgedByTheActionsRule() {
        let again = PassageFacts(side: .entry, last: inside)
        XCTAssertEqual(tap(PassbackRule(mode: .hard), again), "deny passback")
        XCTAssertEqual(tap(PassbackRule(mode: .soft), again), "grant 0 passback")
        XCTAssertEqual(tap(.off, again), "grant 0 weak_credential", "off: occupancy only")
        XCTAssertEqual(tap(PassbackRule(mode: .hard), nil), "grant 0 weak_credential", "a door without sides")
    }

    func testAFirstEntryAnEntryAfterAnExitAndEveryExitOpen() {
        for mode in [PassbackMode.soft, .hard] {
            let rule = PassbackRule(mode: mode)
            XCTAssertEqual(tap(rule, PassageFacts(side: .entry, last: nil)), "grant 0 weak_credential", "first")
            XCTAssertEqual(tap(rule, PassageFacts(side: .entry, last: outside)), "grant 0 weak_credential")
            XCTAssertEqual(
                tap(rule, PassageFacts(side: .exit, last: outside)), "grant 0 weak_credential",
                "an exit without an entry: the door keeps nobody in")
            XCTAssertEqual(tap(rule, PassageFacts(side: .exit, last: inside)), "grant 0 weak_credential")
        }
    }

    func testTheTimedResetCountsAnOldEntryAsOut() {
        let rule = PassbackRule(mode: .hard, resetAfter: 600)
        XCTAssertEqual(tap(rule, PassageFacts(side: .entry, last: inside)), "grant 0 weak_credential", "600 s on")
        var recent = inside
        recent.since = now - 599
        XCTAssertEqual(tap(rule, PassageFacts(side: .entry, last: recent)), "deny passback")
    }

    func testAnUnreadablePassageFailsClosedUnderHardOnly() {
        let unreadable = PassageFacts(side: .entry, last: nil, unreadable: true)
        XCTAssertEqual(tap(PassbackRule(mode: .hard), unreadable), "deny registry_unavailable (counted)")
        XCTAssertEqual(tap(PassbackRule(mode: .soft), unreadable), "grant 0 weak_credential")
    }

    func testAPassbackDenialIsNoAttack() {
        XCTAssertEqual(Denial.passback.reason, "passback")
        XCTAssertFalse(Denial.passback.countsTowardLockout)
        XCTAssertFalse(Denial.passback.isFailedProof)
        // Ten of them in a row lock nobody out.
        var settings = DoorSettings()
        settings.lockout.perTagThreshold = 3
        var machine = DoorMachine(settings: settings)
        var clock = MonotonicInstant(nanoseconds: 1_000_000_000)
        let wall = WallClock(unixSeconds: now, synchronised: true)
        _ = machine.start(at: Now(monotonic: clock, wall: wall))
        for _ in 0..<10 {
            _ = machine.handle(
                .tagArrived(TagPresentation(uid: uid, content: .ours, verdict: Denial.passback.verdict)),
                at: Now(monotonic: clock, wall: wall))
            _ = machine.handle(.tagDeparted(uid), at: Now(monotonic: clock, wall: wall))
            clock = clock + settings.sameTagQuiet + .milliseconds(1)
        }
        XCTAssertFalse(machine.lockoutStatus(at: clock).isActive)
    }
}
