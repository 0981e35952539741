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
        do {
            _ = try GatewayConfiguration.load(toml: toml)
            return ""
        } catch {
            return error.issues.map { $0.formatted(file: "g.toml") }.joined(separator: "\n")
        }
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
}
