import Testing
import XCTest

/// What scripts/no-leftovers.py must see: `testSkipsWithoutItsTool` is a
/// skip (a plain `<testcase>` in SwiftPM's parallel xUnit file), and
/// `swiftTestingSkip()` one too (Swift Testing's own xUnit file).
final class SkipGateTests: XCTestCase {
    func testPasses() {
        XCTAssertEqual([1, 2].reduce(0, +), 3)
    }

    func testSkipsWithoutItsTool() throws {
        throw XCTSkip("the fixture's tool is never installed")
    }
}

@Test(.disabled("the fixture's tool is never installed"))
func swiftTestingSkip() {}
