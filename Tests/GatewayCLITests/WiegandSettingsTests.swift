import DoorIO
import XCTest

@testable import GatewayDaemon

/// The interim Wiegand settings (issue 35: until `[[readers]]` is in the
/// configuration): `GATEWAYD_WIEGAND_INTERIM`, each malformed value refused by name.
final class WiegandSettingsTests: XCTestCase {
    func settings(_ value: String?) throws -> WiegandSettings? {
        try WiegandSettings.interim(value.map { [WiegandSettings.variable: $0] } ?? [:], defaultChip: "gpiochip0")
    }

    func testTheInterimVariable() throws {
        XCTAssertNil(try settings(nil))
        XCTAssertNil(try settings(""))
        let s = try XCTUnwrap(try settings("name=gate, d0=GPIO5,d1=6 ,frame_gap_ms=25"))
        XCTAssertEqual(
            s.lines,
            WiegandLines(
                name: "gate", chip: "gpiochip0", d0: .name("GPIO5"), d1: .offset(6), frameGap: .milliseconds(25)))
        XCTAssertEqual(try settings("name=g,chip=gpio-sim.0,d0=A,d1=B")?.lines.chip, "gpio-sim.0")
        XCTAssertEqual(try settings("name=g,d0=A,d1=B")?.lines.frameGap, .milliseconds(50))
        for bad in [
            "name=gate,d0=A", "name=gate,d0=A,d1=A", "d0=A,d1=B", "name=a b,d0=A,d1=B",
            "name=g,d0=A,d1=B,frame_gap_ms=10",
            "name=g,d0=A,d1=B,frame_gap_ms=x", "name=g,d0=A,d1=B,pin=1234", "name=g,name=h,d0=A,d1=B",
            "name=g,d0=,d1=B",
        ] {
            XCTAssertThrowsError(try settings(bad), bad)
        }
    }
}
