import DoorCore
import GatewayConfig
import GatewayControl
import TestSupport
import XCTest

/// `gatewayctl policy explain --reader NAME` and the door judge a second entry with the same rule
/// (`Passback.verdict`, issue 36), in the PolicyExplainAgreement table's pattern: on every row
/// what the explanation says is what the door does when the tag is tapped at that reader.
final class PassbackExplainAgreementTests: XCTestCase {
    let uid = TagUID(hex: "04A1B2C3D4E5F6")!
    let at: Int64 = 1_799_064_000

    typealias Registry = FixedRegistry

    func configuration() throws -> GatewayConfiguration {
        try GatewayConfiguration.load(
            toml: ConfigText.sim(id: "club")
                + ConfigText.action(
                    0, "members", ms: 3000,
                    "credentials = [\"uid\"]\npassback = \"hard\"\npassback_reset_minutes = 60\n")
                + ConfigText.action(1, "staff", ms: 3000, "credentials = [\"uid\"]\npassback = \"soft\"\n")
                + ConfigText.action(2, "visitors", ms: 3000, "credentials = [\"uid\"]\n")
                + ConfigText.entryAndExitReaders + "[clock]\ndeclare_synchronised = true\n")
    }

    struct Case {
        var name: String
        var action: ActionIndex
        var reader: String
        var last: Presence?
        var unreadable = false
        var expected: String
    }

    var cases: [Case] {
        let inRecent = Presence(inside: true, since: at - 600, reader: "street")
        let inLong = Presence(inside: true, since: at - 3600, reader: "street")
        let out = Presence(inside: false, since: at - 600, reader: "yard")
        return [
            Case(name: "hard, first entry", action: 0, reader: "street", last: nil, expected: "granted"),
            Case(name: "hard, second entry", action: 0, reader: "street", last: inRecent, expected: "passback"),
            Case(name: "hard, entry after the reset", action: 0, reader: "street", last: inLong, expected: "granted"),
            Case(name: "hard, entry after an exit", action: 0, reader: "street", last: out, expected: "granted"),
            Case(name: "hard, exit while in", action: 0, reader: "yard", last: inRecent, expected: "granted"),
            Case(name: "hard, exit while out", action: 0, reader: "yard", last: out, expected: "granted"),
            Case(
                name: "hard, passage unreadable", action: 0, reader: "street", last: nil, unreadable: true,
                expected: "registry_unavailable"),
            Case(name: "soft, second entry", action: 1, reader: "street", last: inLong, expected: "granted (passback)"),
            Case(name: "soft, entry after an exit", action: 1, reader: "street", last: out, expected: "granted"),
            Case(
                name: "soft, passage unreadable", action: 1, reader: "street", last: nil, unreadable: true,
                expected: "granted"),
            Case(name: "off, second entry", action: 2, reader: "street", last: inRecent, expected: "granted"),
        ]
    }

    func passage(_ c: Case, _ configuration: GatewayConfiguration) throws -> PassageFacts {
        let side = try XCTUnwrap(configuration.passageSide(reader: c.reader))
        return PassageFacts(side: side, last: c.last, unreadable: c.unreadable)
    }

    func explained(_ c: Case, _ configuration: GatewayConfiguration) throws -> String {
        let row = IssuedTagView(state: .active, kind: .uid, action: c.action)
        let answer = try PolicyExplain.explain(
            configuration: configuration, zone: .utc, action: c.action, tag: (uid, row), at: at, note: nil,
            registryConsulted: true, passage: try passage(c, configuration))
        guard answer["allowed"]?.boolValue == true else { return answer["reason"]?.stringValue ?? "?" }
        return answer["passback"]?["verdict"]?.stringValue == "soft" ? "granted (passback)" : "granted"
    }

    func tapped(_ c: Case, _ configuration: GatewayConfiguration) throws -> String {
        let wall = WallClock(unixSeconds: at, synchronised: true)
        var facts = TapFacts(uid: uid, reader: c.reader)
        facts.passage = try passage(c, configuration)
        let decision = TapDecision.decide(
            facts, secrets: TapSecrets(), actionCount: configuration.door.actions.count,
            registry: Registry(row: IssuedTagView(state: .active, kind: .uid, action: c.action)), now: at,
            policy: TapPolicy(
                policy: AccessPolicy(schedules: configuration.door.schedules, zone: .utc),
                actions: configuration.door.actions, wall: wall))
        var machine = DoorMachine(settings: configuration.door)
        let now = Now(monotonic: MonotonicInstant(nanoseconds: 1_000_000_000), wall: wall)
        _ = machine.start(at: now)
        for case .emit(let event) in machine.handle(.tagArrived(decision.presentation), at: now) {
            if event.kind == .accessGranted {
                XCTAssertEqual(event.source, "reader:\(c.reader)", c.name)
                return event.reason == GrantReason.passback ? "granted (passback)" : "granted"
            }
            if event.kind == .accessDenied { return event.reason ?? "?" }
        }
        return "no access event"
    }

    func testPolicyExplainAndTheDoorAgreeOnEveryPassbackRow() throws {
        let configuration = try configuration()
        for c in cases {
            XCTAssertEqual(try tapped(c, configuration), c.expected, "\(c.name): the door")
            XCTAssertEqual(try explained(c, configuration), c.expected, "\(c.name): policy explain")
        }
    }

    /// The text names the rule, the side and where the credential is.
    func testTheExplanationSaysWhy() throws {
        let configuration = try configuration()
        let answer = try PolicyExplain.explain(
            configuration: configuration, zone: .utc, action: 0,
            tag: (uid, IssuedTagView(state: .active, kind: .uid, action: 0)), at: at, note: nil,
            registryConsulted: true,
            passage: PassageFacts(side: .entry, last: Presence(inside: true, since: at - 600, reader: "street")))
        XCTAssertEqual(
            PolicyExplain.render(answer).split(separator: "\n").map(String.init),
            [
                "stays shut: passback — action 0 at 2027-01-04T12:00:00Z (UTC; 2027-01-04T12:00:00Z)",
                "passback hard at an entry reader: in since 2027-01-04T11:50:00Z (street) — a second entry without an exit: denied",
            ])
    }
}
