@testable import GatewayConfig
import XCTest

/// Configuration files `make fuzz` found that crashed the loader (the inputs
/// are also kept in Fuzz/corpus/toml/regression-*, replayed by FuzzCorpusTests).
final class FuzzFindingTests: XCTestCase {
    /// A value toml++ takes for a date, one space, one digit and a value
    /// terminator: toml++'s look-ahead for a time after the space scanned on
    /// from the terminator and failed its assertion, so `gatewayctl config
    /// check`, gatewayd's start and its reload aborted (SIGABRT) on
    /// `x = 1979-05-27 2`. toml++ calls any ten characters with `-` at the
    /// fifth and eighth a date (`1979-05-2"`, the second input the fuzzer
    /// found). toml++ is gone (TOMLParser reads TOML itself); these stay
    /// syntax errors with their place: the three toml++ took for dates are
    /// now refused where TOML 1.0 says they go wrong (a one-digit day, a
    /// number with '-'), and a value followed by another is a missing new line.
    func testAValueASpaceAndOneDigitIsASyntaxError() {
        let date = "a date-time needs a time (HH:MM:SS) after the space"
        let cases: [(String, Int, Int, String)] = [
            ("a = 1979-05-27 2\n", 1, 16, date),
            ("a = 1979-05-27 0 # x\n", 1, 16, date),
            ("a = 1979-05-27 2\r\n", 1, 16, date),
            ("a = [1979-05-27 2]", 1, 17, date),
            ("a = [1979-05-27 2,1]", 1, 17, date),
            ("a = {b = 1979-05-27 2}", 1, 21, date),
            ("[d]\nkind = \"sim\"\n[mqtt.commands.mapping]\n1 = 0\n2999 = 1\n3 =1979-05-27 2\n4 = 3\n", 6, 15, date),
            ("#''o\n-p= 1979-05-2\" 7 s\n", 2, 13, "the day needs two digits"),
            ("a = 1979-05-2a 7\n", 1, 13, "the day needs two digits"),
            ("a = 1_979-05-27 7]", 1, 5, "'1_979-05-27' is not a number: unexpected '-'"),
            ("a = 12 3\n", 1, 8, "expected a new line after a statement, saw '3'"),
        ]
        for (text, line, column, message) in cases {
            XCTAssertThrowsError(try GatewayConfiguration.load(toml: text), text.debugDescription) { error in
                XCTAssertEqual(
                    (error as? ConfigError)?.issues,
                    [ConfigIssue(key: "", line: line, message: "TOML syntax error at column \(column): \(message)")],
                    text.debugDescription)
            }
        }
    }

    /// Dates and date-times with a space are still TOML (the loader then says
    /// they are not a value it takes), and a lone digit at the very end is
    /// toml++'s own syntax error.
    func testDatesAndSpaceSeparatedDateTimesStillParse() {
        for text in [
            "d = 1979-05-27\n", "d = 1979-05-27 07:32:00\n", "d = [1979-05-27 , 1979-05-28]\n", "d = 1979-05-27 # 2\n",
        ] {
            XCTAssertNoThrow(try TOMLNode.parse(text).get(), text.debugDescription)
        }
        XCTAssertThrowsError(try TOMLNode.parse("d = 1979-05-27 2").get())
    }
}
