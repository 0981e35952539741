import DoorCore
import Foundation
import TestSupport
import XCTest

/// `gatewayctl reader scan|write` as a person over ssh would run them, on the
/// built binary against the built pn532-sim.
final class ReaderCLITests: XCTestCase {
    func testScanWriteScanAndRefusals() throws {
        let sim = try PN532SimProcess(["--uid", "04C0FFEE123456"])
        let device = "pn532_uart:\(sim.tty)"
        var r = try Run.gatewayctl(["reader", "scan", "--device", device, "--timeout", "2", "--json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        let blank = try JSONValue.parse(Array(r.stdout.utf8))
        XCTAssertEqual(blank["uid"]?.stringValue, "04C0FFEE123456")
        XCTAssertEqual(blank["type"]?.stringValue, "NTAG213")
        XCTAssertEqual(blank["content"]?.stringValue, "blank")

        r = try Run.gatewayctl(["reader", "write", "--device", device, "--url", "https://example.com/x"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("written and verified"), r.stdout)
        // Foreign now: refused without --overwrite (exit 1), the tag unchanged.
        r = try Run.gatewayctl(["reader", "write", "--device", device, "--url", "smp://action?idx=0&ts=1&sig=00"])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.contains("foreign content"), r.stderr)
        r = try Run.gatewayctl(["reader", "scan", "--device", device, "--timeout", "2"])
        XCTAssertTrue(r.stdout.contains("https://example.com/x"), r.stdout)

        let state = sim.path("state")
        r = try Run.gatewayctl([
            "reader", "write", "--device", device, "--url", "smp://action?idx=0&ts=1&sig=00", "--overwrite",
            "--protect",
            "--state-dir", state,
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.contains("password-protected"), r.stdout)
        r = try Run.gatewayctl(["reader", "scan", "--device", device, "--timeout", "2", "--json"])
        XCTAssertEqual(try JSONValue.parse(Array(r.stdout.utf8))["password_protected_from_page"], .int(4))

        // No tag: exit 1; no reader: exit 2.
        _ = try sim.control("remove")
        r = try Run.gatewayctl(["reader", "scan", "--device", device, "--timeout", "0.3"])
        XCTAssertEqual(r.status, 1)
        r = try Run.gatewayctl(["reader", "scan", "--device", "pn532_uart:/nonexistent", "--timeout", "0.3"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("no reader"), r.stderr)
    }
}
