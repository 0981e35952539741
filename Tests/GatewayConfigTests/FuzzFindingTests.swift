@testable import GatewayConfig
import XCTest

/// Configuration files `make fuzz` found that crashed the loader (each input
/// is also kept in Fuzz/corpus/toml/regression-*, replayed by FuzzCorpusTests).
final class FuzzFindingTests: XCTestCase {
    /// A date, one space, one digit and a value terminator: toml++'s look-ahead
    /// for a time after the space scanned on from the terminator and failed its
    /// assertion, so `gatewayctl config check`, gatewayd's start and its reload
    /// aborted (SIGABRT) on `x = 1979-05-27 2`. Now a syntax error with its place.
    func testADateWithASpaceAndOneDigitIsASyntaxError() {
        let message = "a date-time needs a time (HH:MM:SS) after the space"
        let cases: [(String, Int, Int)] = [
            ("a = 1979-05-27 2\n", 1, 17),
            ("a = 1979-05-27 0 # x\n", 1, 17),
            ("a = 1979-05-27 2\r\n", 1, 17),
            ("a = [1979-05-27 2]", 1, 18),
            ("a = [1979-05-27 2,1]", 1, 18),
            ("a = {b = 1979-05-27 2}", 1, 22),
            ("[d]\nkind = \"sim\"\n[mqtt.commands.mapping]\n1 = 0\n2999 = 1\n3 =1979-05-27 2\n4 = 3\n", 6, 16),
        ]
        for (text, line, column) in cases {
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
            XCTAssertNil(TOMLGuard.refusal(text), text.debugDescription)
            XCTAssertNoThrow(try TOMLNode.parse(text).get(), text.debugDescription)
        }
        XCTAssertNil(TOMLGuard.refusal("d = 1979-05-27 2"))
        XCTAssertThrowsError(try TOMLNode.parse("d = 1979-05-27 2").get())
    }
}
