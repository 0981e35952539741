import DoorCore
import Foundation
import GatewayConfig
import TestSupport
import XCTest

/// The image's first boot takes the door's time zone from a `timezone` file on
/// the boot partition (provisioning/firstboot/doorgateway-firstboot.sh,
/// docs/pi-image.md): the zone becomes the system's (/etc/localtime and
/// /etc/timezone), which gatewayd's schedules read when gateway.toml sets no
/// `[clock] time_zone`. The script runs here with its paths pointed at a
/// temporary tree, a zoneinfo directory of its own included.
final class FirstBootTimeZoneTests: TemporaryDirectoryTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try temporaryDirectory("firstboot-tz") }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// Runs first boot with `timezone` (the file's text) on the card, a
    /// complete configuration installed (so nothing else is an error), a
    /// zoneinfo tree holding Europe/Berlin and UTC, and /etc/localtime at UTC.
    func firstBoot(timezone: String) throws -> (status: ProcessResult, statusFile: String) {
        let fb = dir.appendingPathComponent("fb"), etc = dir.appendingPathComponent("etc")
        let bin = dir.appendingPathComponent("bin"), zoneinfo = dir.appendingPathComponent("zoneinfo")
        for d in [fb, etc, bin, zoneinfo.appendingPathComponent("Europe")] {
            try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        }
        try FileManager.default.createSymbolicLink(
            at: bin.appendingPathComponent("gatewayctl"), withDestinationURL: Run.product("gateway"))
        try Data(FirmwareHoldCLITests.chosen(activeLow: true, lock: .deenergised).utf8).write(
            to: etc.appendingPathComponent("gateway.toml"))
        // TZif files as far as first boot looks (the magic); gatewayd's parser is tested on tzdata itself.
        for zone in ["Europe/Berlin", "UTC"] {
            try Data(Array("TZif2".utf8) + [UInt8](repeating: 0, count: 40)).write(
                to: zoneinfo.appendingPathComponent(zone))
        }
        try Data("not a zone".utf8).write(to: zoneinfo.appendingPathComponent("zone.tab"))
        try FileManager.default.createSymbolicLink(
            atPath: path("localtime"), withDestinationPath: zoneinfo.appendingPathComponent("UTC").path)
        try Data(timezone.utf8).write(to: fb.appendingPathComponent("timezone"))
        let r = try FirstBootScript.run(
            dir,
            [
                "DOORGATEWAY_ZONEINFO": zoneinfo.path, "DOORGATEWAY_LOCALTIME": path("localtime"),
                "DOORGATEWAY_TIMEZONE_FILE": path("timezone"),
            ])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: fb.appendingPathComponent("timezone").path),
            "the timezone file is consumed from the card")
        return (r, try String(contentsOf: fb.appendingPathComponent("STATUS.txt"), encoding: .utf8))
    }

    func testATimezoneFileSetsTheSystemZone() throws {
        // As people type it: a CRLF from a Windows editor, blanks around.
        let run = try firstBoot(timezone: "  Europe/Berlin \r\n")
        XCTAssertFalse(run.statusFile.contains("ERROR"), run.statusFile)
        XCTAssertTrue(run.statusFile.contains("time zone Europe/Berlin (\(path("localtime")))"), run.statusFile)
        XCTAssertEqual(
            try FileManager.default.destinationOfSymbolicLink(atPath: path("localtime")),
            path("zoneinfo") + "/Europe/Berlin")
        XCTAssertEqual(try String(contentsOfFile: path("timezone"), encoding: .utf8), "Europe/Berlin\n")
        let mode = try FileManager.default.attributesOfItem(atPath: path("timezone"))[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o644, "/etc/timezone is world-readable, as Debian's")
        XCTAssertTrue(FileManager.default.fileExists(atPath: path("firstboot.done")), run.status.stdout)
    }

    func testAZoneThatIsNotThereOrAPathIsRefusedAndTheZoneStays() throws {
        let names = [
            "Mars/Olympus_Mons", "../../../etc/passwd", "/etc/shadow", "zone.tab", "Europe/Berlin; reboot", "",
        ]
        for bad in names {
            try tearDownWithError()
            try setUpWithError()
            let run = try firstBoot(timezone: bad + "\n")
            XCTAssertTrue(run.statusFile.contains("ERROR: timezone '\(bad)': "), "\(bad): \(run.statusFile)")
            XCTAssertEqual(
                try FileManager.default.destinationOfSymbolicLink(atPath: path("localtime")),
                path("zoneinfo") + "/UTC", "\(bad): the zone stays")
            XCTAssertFalse(FileManager.default.fileExists(atPath: path("timezone")), bad)
            XCTAssertFalse(
                FileManager.default.fileExists(atPath: path("firstboot.done")), "\(bad): an error leaves no stamp")
        }
    }
}
