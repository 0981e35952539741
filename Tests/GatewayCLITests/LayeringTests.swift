import Foundation
import TestSupport
import XCTest

/// The targets' layering (DEVELOPERS.md "Layout"): gatewayctl is built
/// without the daemon's target (issue 34 Move C); what both need lives
/// lower, in GatewayControl and RemoteSettings.
final class LayeringTests: XCTestCase {
    /// The `dependencies: [ … ]` of `target` in Package.swift, as written.
    func dependencies(of target: String) throws -> String {
        let manifest = try String(contentsOf: Fixtures.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let named = try XCTUnwrap(manifest.range(of: "name: \"\(target)\","), "no target \(target)")
        let open = try XCTUnwrap(manifest.range(of: "dependencies: [", range: named.upperBound..<manifest.endIndex))
        let close = try XCTUnwrap(manifest.range(of: "]", range: open.upperBound..<manifest.endIndex))
        return String(manifest[open.upperBound..<close.lowerBound])
    }

    func testGatewayctlIsBuiltWithoutTheDaemon() throws {
        let ctl = try dependencies(of: "GatewayCtl")
        XCTAssertTrue(ctl.contains("\"GatewayControl\""), ctl)
        XCTAssertFalse(ctl.contains("\"GatewayDaemon\""), "GatewayCtl depends on GatewayDaemon: \(ctl)")
        let sources = Fixtures.root.appendingPathComponent("Sources/GatewayCtl")
        let files = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        XCTAssertGreaterThan(files.count, 10)
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            XCTAssertFalse(text.contains("import GatewayDaemon"), "Sources/GatewayCtl/\(file) imports GatewayDaemon")
        }
    }
}
