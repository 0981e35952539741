import DoorCore
import GatewayConfig
import XCTest

/// An action's `credentials` (docs/ntag424.md): the three sticker kinds
/// unless configured, `"uid"` only when listed, unknown names refused.
final class CredentialsConfigTests: XCTestCase {
    let base = """
        [device]
        id = "front-door"
        [board]
        kind = "sim"

        """

    func action(_ credentials: String) -> String {
        base + "[[actions]]\nindex = 0\nsteps = [{ pulse = \"strike\", ms = 3000 }]\n" + credentials
    }

    func issues(_ toml: String) -> String {
        loadIssues(toml).map { $0.formatted(file: "g.toml") }.joined(separator: "\n")
    }

    func testTheDefaultIsTheStickerKindsAndUIDIsOptIn() throws {
        let stock = try GatewayConfiguration.load(toml: base)
        XCTAssertEqual(stock.door.actions.count, 4)
        for a in stock.door.actions { XCTAssertEqual(a.credentials, [.ntag424, .stickerV2, .stickerV1]) }
        XCTAssertEqual(
            try GatewayConfiguration.load(toml: action("")).door.actions[0].credentials,
            [
                .ntag424, .stickerV2, .stickerV1,
            ])
        let shed = try GatewayConfiguration.load(toml: action("credentials = [\"uid\", \"ntag424\"]\n"))
        XCTAssertEqual(shed.door.actions[0].credentials, [.uid, .ntag424])
        XCTAssertEqual(
            try GatewayConfiguration.load(toml: action("credentials = []\n")).door.actions[0].credentials, [])
    }

    func testTheExampleSpellsOutTheDefault() throws {
        let example = ConfigExample.text(board: .sim)
        XCTAssertTrue(example.contains("\ncredentials = [\"ntag424\", \"sticker-v2\", \"sticker-v1\"]\n"), example)
        for a in try GatewayConfiguration.load(toml: example).door.actions {
            XCTAssertEqual(a.credentials, Set(CredentialKind.defaults))
        }
    }

    func testUnknownOrRepeatedNamesAreClearErrors() {
        let unknown = issues(action("credentials = [\"ntag424\", \"mifare\"]\n"))
        XCTAssertTrue(unknown.contains("actions[0].credentials[1]"), unknown)
        XCTAssertTrue(unknown.contains("\"mifare\" is not a credential kind"), unknown)
        XCTAssertTrue(unknown.contains("\"sticker-v2\""), "the kinds are listed: \(unknown)")
        let twice = issues(action("credentials = [\"uid\", \"uid\"]\n"))
        XCTAssertTrue(twice.contains("\"uid\" is listed twice"), twice)
        let notList = issues(action("credentials = \"uid\"\n"))
        XCTAssertTrue(notList.contains("expected an array of strings"), notList)
    }

    /// `"ntag424-sun"` is opt-in and `config check` warns about pre-play for each action that lists it.
    func testTheSUNOnlyTierIsOptInAndWarnedAbout() throws {
        let stock = try GatewayConfiguration.load(toml: base)
        XCTAssertFalse(stock.door.actions.contains { $0.credentials.contains(.ntag424SUN) })
        XCTAssertFalse(stock.warnings.contains { $0.contains("ntag424-sun") }, "\(stock.warnings)")
        let example = try GatewayConfiguration.load(toml: ConfigExample.text(board: .sim))
        XCTAssertFalse(example.warnings.contains { $0.contains("ntag424-sun") }, "\(example.warnings)")
        let sun = try GatewayConfiguration.load(toml: action("name = \"gate\"\ncredentials = [\"ntag424-sun\"]\n"))
        XCTAssertEqual(sun.door.actions[0].credentials, [.ntag424SUN])
        let warned = sun.warnings.filter { $0.contains("ntag424-sun") }
        XCTAssertEqual(warned.count, 1, "\(sun.warnings)")
        let warning = try XCTUnwrap(warned.first)
        XCTAssertTrue(warning.hasPrefix("actions[0] (gate) lists \"ntag424-sun\""), warning)
        XCTAssertTrue(warning.contains("pre-play"), warning)
        let both = try GatewayConfiguration.load(toml: action("credentials = [\"ntag424\", \"ntag424-sun\"]\n"))
        XCTAssertEqual(both.warnings.filter { $0.contains("ntag424-sun") }.count, 1)
        XCTAssertEqual(
            try GatewayConfiguration.load(toml: action("credentials = [\"ntag424\"]\n")).warnings.filter {
                $0.contains("ntag424-sun")
            }, [])
    }
}
