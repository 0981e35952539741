@testable import GatewayConfig
import XCTest

/// Line numbers for dotted keys, and the input TOMLGuard once refused before
/// toml++ saw it: TOMLParser refuses it now, at the same place.
final class LocatorAndGuardTests: XCTestCase {
    func testTheLocatorFindsKeysInTablesArraysOfTablesAndInlineValues() {
        let locator = KeyLocator(
            source: """
                top = 1
                [mqtt.tls]
                ca_file = "/x" # comment with [fake] = 1
                [[outputs]]
                name = "a"
                [[outputs]]
                name = '''
                [not.a.header]
                '''
                  line = 5
                [[actions]]
                steps = [
                  { pulse = "a", ms = 1 },
                  { wait_ms = 2 },  # one
                  { pulse = "b",
                    ms = 3 },
                ]
                mqtt.commands.tolerance_s = 5
                "quoted key" . inner = [1, [2, 3]]
                [actions.extra]
                x = 1
                """)
        XCTAssertEqual(locator.line(of: "top"), 1)
        XCTAssertEqual(locator.line(of: "mqtt.tls"), 2)
        XCTAssertEqual(locator.line(of: "mqtt.tls.ca_file"), 3)
        XCTAssertEqual(locator.line(of: "mqtt.tls.key_file"), 2, "a missing key: its table")
        XCTAssertEqual(locator.line(of: "outputs"), 4)
        XCTAssertEqual(locator.line(of: "outputs[0].name"), 5)
        XCTAssertEqual(locator.line(of: "outputs[1].name"), 7)
        XCTAssertEqual(locator.line(of: "outputs[1].line"), 10, "a multi-line string holds no header")
        XCTAssertNil(locator.line(of: "not.a.header"))
        XCTAssertEqual(locator.line(of: "actions[0].steps"), 12)
        XCTAssertEqual(locator.line(of: "actions[0].steps[0].ms"), 13)
        XCTAssertEqual(locator.line(of: "actions[0].steps[1].wait_ms"), 14)
        XCTAssertEqual(locator.line(of: "actions[0].steps[2].ms"), 16)
        XCTAssertEqual(locator.line(of: "actions[0].steps[2].repeat"), 15)
        XCTAssertEqual(locator.line(of: "actions[0].mqtt.commands.tolerance_s"), 18)
        XCTAssertEqual(locator.line(of: "actions[0].quoted key.inner[1][0]"), 19)
        XCTAssertEqual(locator.line(of: "actions[0].extra.x"), 21, "a sub-table of an array element")
        XCTAssertNil(locator.line(of: "nowhere.at.all"))
    }

    func testTheLocatorStopsOnTextItCannotFollow() {
        let locator = KeyLocator(source: "a = 1\nb = \"unterminated\nc = 3\n" + String(repeating: "[", count: 10_000))
        XCTAssertEqual(locator.line(of: "a"), 1)
        XCTAssertNil(locator.line(of: "c"))
        XCTAssertEqual(KeyLocator(source: "x = " + String(repeating: "[", count: 10_000)).line(of: "x"), 1)
    }

    /// Each of these aborted the test process inside toml++ before the guard
    /// (toml++ and the guard are gone; the parser refuses them itself).
    func testInputThatTripsTomlPlusPlusIsASyntaxErrorWithItsPlace() {
        let cases: [(String, Int, Int, String)] = [
            ("[=", 1, 2, "a table header starts with a key (a letter, digit, '-', '_' or a quote)"),
            ("a = 1\n  [[ \t.b]]", 2, 7, "a table header starts with a key (a letter, digit, '-', '_' or a quote)"),
            ("[[[1]]]", 1, 3, "a table header starts with a key (a letter, digit, '-', '_' or a quote)"),
            ("\u{FEFF}[é]", 1, 2, "a table header starts with a key (a letter, digit, '-', '_' or a quote)"),
            ("a = 1979-05-27T-05:00", 1, 16, "a date-time needs a time (HH:MM:SS) after the 'T'"),
            ("a = [1979-05-27t:]", 1, 17, "a date-time needs a time (HH:MM:SS) after the 'T'"),
            ("a = [}", 1, 6, "expected a value, saw '}'"),
            ("a = [\n  1, # x\n  }]", 3, 3, "expected a value, saw '}'"),
            ("a = [1,\u{85}]", 1, 8, "a Unicode line separator outside a string"),
            ("a = [\u{2028}]", 1, 6, "a Unicode line separator outside a string"),
            ("a = \"x\u{0}y\"", 1, 7, "a NUL byte"),
        ]
        for (text, line, column, message) in cases {
            XCTAssertThrowsError(try GatewayConfiguration.load(toml: text), text) { error in
                XCTAssertEqual(
                    (error as? ConfigError)?.issues,
                    [ConfigIssue(key: "", line: line, message: "TOML syntax error at column \(column): \(message)")],
                    text)
            }
        }
    }

    func testTheGuardLeavesStringsAndCommentsAlone() throws {
        let text = """
            [device]
            id = "d" # [= 1979-05-27Tx [} ,}
            [board]
            kind = 'sim'
            [[actions]]
            index = 0
            name = "[= 1979-05-27T- [1, } \u{2028}"
            steps = [{ pulse = "strike", ms = 100 }]

            """
        XCTAssertEqual(try GatewayConfiguration.load(toml: text).door.actions[0].name, "[= 1979-05-27T- [1, } \u{2028}")
        XCTAssertNoThrow(
            try TOMLNode.parse("s = '''\n[=\n'''\nt = \"\"\"\n\\\"\"\" [}\n\"\"\"\nd = 1979-05-27T07:32:00Z\n").get())
    }
}
