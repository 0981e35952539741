@testable import GatewayConfig
import XCTest

/// The issues loading `text` reports; none when it loads.
func loadIssues(_ text: String) -> [ConfigIssue] {
    do {
        _ = try GatewayConfiguration.load(toml: text)
        return []
    } catch {
        return error.issues
    }
}

/// Tests of texts the loader must refuse.
protocol ExpectsConfigIssues {}

extension ExpectsConfigIssues {
    /// The issues loading `text` reports; a text that loads fails the test.
    func issues(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [ConfigIssue] {
        do {
            _ = try GatewayConfiguration.load(toml: text)
            XCTFail("loaded without issues", file: file, line: line)
            return []
        } catch {
            return error.issues
        }
    }
}
