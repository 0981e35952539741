import DoorCore
import Foundation
import TestSupport
import XCTest

/// Security review L7 on the real binary: a control socket gatewayd cannot
/// make safe (here: its directory writable by everyone) stops the start with
/// the reason, instead of a door running with a socket anyone may swap.
final class ControlSocketStartTests: XCTestCase {
    func testARuntimeDirectoryOthersMayWriteRefusesTheStart() throws {
        let g = try GatewayUnderTest()
        let run = g.dir.appendingPathComponent("run").path
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        chmod(run, 0o777)
        XCTAssertThrowsError(try g.start()) { error in
            XCTAssertTrue("\(error)".contains("gatewayd exited with 1"), "\(error)")
        }
        XCTAssertTrue(
            g.log.contains("refusing to start: control socket directory \(run) is writable by others (mode 0777)"),
            g.log)
        XCTAssertTrue(g.log.contains("stopped; outputs locked"), g.log)
    }
}
