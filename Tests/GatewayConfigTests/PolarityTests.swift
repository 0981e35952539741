import DoorCore
@testable import GatewayConfig
import XCTest

/// Issue 23: a real board's relay polarity and locked level are choices, never
/// defaults (the common opto relay modules switch on while their input is
/// low: assumed active-high, a strike's relay is energised whenever the door
/// is idle); the firmware hold in config.txt follows from them.
final class PolarityTests: XCTestCase, ExpectsConfigIssues {
    static let real = "[device]\nid = \"d1\"\n[board]\nkind = \"real\"\n"
    static let sim = "[device]\nid = \"d1\"\n[board]\nkind = \"sim\"\n"
    static let strike = "[[outputs]]\nname = \"strike\"\nline = \"GPIO17\"\n"

    static let activeLowMessage =
        "output \"strike\": is required on a real board, there is no default: true for an opto-isolated relay module "
        + "(the common 1/2/4-channel boards: on while the input is low), false for a transistor/MOSFET stage or a relay "
        + "HAT (on while the line is high); check which before a lock is wired (board/wiring.md)"
    static let lockedLevelMessage =
        "output \"strike\": is required on a real board, there is no default: \"deenergised\" for a fail-secure strike "
        + "(locked without power), \"energised\" for a maglock (locked while powered)"

    // MARK: Refusals

    func testARealBoardsOutputWithoutActiveLowIsRefusedNamingTheKeyTheOutputAndBothBoards() {
        XCTAssertEqual(
            issues(Self.real + Self.strike + "locked_level = \"deenergised\"\n"),
            [ConfigIssue(key: "outputs[0].active_low", line: 5, message: Self.activeLowMessage)])
    }

    func testARealBoardsOutputWithoutLockedLevelIsRefusedNamingTheKey() {
        XCTAssertEqual(
            issues(Self.real + Self.strike + "active_low = false\n"),
            [ConfigIssue(key: "outputs[0].locked_level", line: 5, message: Self.lockedLevelMessage)])
    }

    func testEachOutputOfARealBoardIsCheckedAndNamed() {
        let found = issues(
            Self.real + Self.strike + "active_low = true\nlocked_level = \"deenergised\"\n"
                + "[[outputs]]\nname = \"garage\"\nline = \"GPIO6\"\nactive_low = true\n"
                + "[[outputs]]\nname = \"maglock\"\nline = \"GPIO13\"\n")
        XCTAssertEqual(
            found.map(\.key), ["outputs[1].locked_level", "outputs[2].active_low", "outputs[2].locked_level"])
        XCTAssertEqual(found.map(\.line), [10, 14, 14])
        XCTAssertTrue(found[0].message.hasPrefix("output \"garage\": is required on a real board"), found[0].message)
        XCTAssertTrue(found[1].message.hasPrefix("output \"maglock\": is required on a real board"), found[1].message)
    }

    func testARealBoardWithoutAnyOutputIsRefused() {
        // The stock relay (GPIO17) is the simulated board's default only.
        XCTAssertEqual(
            issues(Self.real),
            [
                ConfigIssue(
                    key: "outputs", line: nil,
                    message:
                        "is required on a real board: each relay as [[outputs]] with name, line, active_low and locked_level, none of them assumed (`gatewayctl config example --board pi`)"
                )
            ])
    }

    func testAStatedRelayLoadsOnARealBoard() throws {
        for activeLow in [true, false] {
            for level in CoilLevel.allCases {
                let c = try GatewayConfiguration.load(
                    toml: Self.real + Self.strike + "active_low = \(activeLow)\nlocked_level = \"\(level.rawValue)\"\n")
                XCTAssertEqual(
                    c.outputs, [.init(name: "strike", line: .name("GPIO17"), activeLow: activeLow, lockedLevel: level)])
            }
        }
    }

    func testTheSimulatedBoardKeepsItsDefaults() throws {
        let bare = try GatewayConfiguration.load(toml: Self.sim)
        XCTAssertEqual(
            bare.outputs, [.init(name: "strike", line: .name("GPIO17"), activeLow: false, lockedLevel: .deenergised)])
        let stated = try GatewayConfiguration.load(toml: Self.sim + Self.strike)
        XCTAssertEqual(stated.outputs, bare.outputs)
    }

    // MARK: The example as shipped (scripts/deb.sh installs it as /etc/doorgateway/gateway.toml)

    /// The Pi example with the first commented line of each relay key taken
    /// out of its comment, or the given one.
    static func chosen(activeLow: Bool, level: CoilLevel) -> String {
        ConfigExample.text(board: .pi).split(separator: "\n", omittingEmptySubsequences: false).map { line in
            if line.hasPrefix("# active_low = \(activeLow) ")
                || line.hasPrefix("# locked_level = \"\(level.rawValue)\" ")
            {
                return String(line.dropFirst(2))
            }
            return String(line)
        }.joined(separator: "\n")
    }

    func testTheShippedPiExampleIsRefusedForTheRelaysTwoChoicesOnly() throws {
        let shipped = ConfigExample.text(board: .pi)
        let found = issues(shipped)
        let header = try XCTUnwrap(
            shipped.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0 == "[[outputs]]" })
        XCTAssertEqual(
            found,
            [
                ConfigIssue(key: "outputs[0].active_low", line: header + 1, message: Self.activeLowMessage),
                ConfigIssue(key: "outputs[0].locked_level", line: header + 1, message: Self.lockedLevelMessage),
            ])
        // Both choices of each are shown, commented out; none is set.
        for shown in [
            "# active_low = true ", "# active_low = false ", "# locked_level = \"deenergised\" ",
            "# locked_level = \"energised\" ",
        ] {
            XCTAssertTrue(shipped.contains("\n" + shown), shown)
        }
        let lines = shipped.split(separator: "\n", omittingEmptySubsequences: false)
        let relay = lines[header...].prefix { !$0.hasPrefix("[") || $0 == "[[outputs]]" }
        XCTAssertFalse(relay.contains { $0.hasPrefix("active_low") || $0.hasPrefix("locked_level") }, "\(relay)")
        XCTAssertGreaterThan(relay.count, 10)
        XCTAssertTrue(shipped.contains("opto-isolated relay module"))
        XCTAssertTrue(shipped.contains("transistor/MOSFET stage or relay HAT"))
    }

    func testTheShippedPiExampleWithTheRelayChosenLoadsAsTheDefaultsPlusThatRelay() throws {
        let minimal = try GatewayConfiguration.load(
            toml: "[device]\nid = \"\(ConfigExample.deviceID)\"\n[board]\nkind = \"sim\"\n")
        for activeLow in [true, false] {
            for level in CoilLevel.allCases {
                var c = try GatewayConfiguration.load(toml: Self.chosen(activeLow: activeLow, level: level))
                XCTAssertEqual(c.board, .real)
                XCTAssertEqual(
                    c.outputs, [.init(name: "strike", line: .name("GPIO17"), activeLow: activeLow, lockedLevel: level)])
                XCTAssertEqual(c.door.outputs, [OutputDefinition(name: "strike", lockedLevel: level)])
                // Everything else is the defaults.
                c.board = .sim
                c.outputs = minimal.outputs
                c.door.outputs = minimal.door.outputs
                XCTAssertEqual(c, minimal, "active_low \(activeLow), \(level)")
            }
        }
    }

    // MARK: The firmware hold (config.txt gpio=)

    func testTheFirmwareHoldIsTheLockedStatesLevelForAllFourCombinations() throws {
        let expected: [(Bool, CoilLevel, String)] = [
            (true, .deenergised, "gpio=17=op,dh,pu"),  // opto module + strike: de-energised = input high
            (false, .deenergised, "gpio=17=op,dl,pd"),  // transistor stage + strike
            (true, .energised, "gpio=17=op,dl,pd"),  // opto module + maglock: energised = input low
            (false, .energised, "gpio=17=op,dh,pu"),  // transistor stage + maglock
        ]
        for (activeLow, level, line) in expected {
            let c = try GatewayConfiguration.load(toml: Self.chosen(activeLow: activeLow, level: level))
            let holds = try c.firmwareHolds()
            XCTAssertEqual(holds.map(\.line), [line], "active_low \(activeLow), \(level)")
            XCTAssertEqual(holds.first?.pin, 17)
            // The hold is the level gatewayd itself drives for `locked`.
            let o = c.outputs[0]
            let lockedCoil = o.lockedLevel == .energised
            XCTAssertEqual(o.lockedLineLevel == .high, lockedCoil != o.activeLow)
        }
    }

    func testTheFirmwareHoldFindsTheBCMPinByNameOrByOffsetOnThePisChip() throws {
        let c = try GatewayConfiguration.load(
            toml: Self.real
                + "[[outputs]]\nname = \"a\"\nline = \"GPIO6\"\nactive_low = true\nlocked_level = \"energised\"\n"
                + "[[outputs]]\nname = \"b\"\nline = 26\nactive_low = false\nlocked_level = \"deenergised\"\n")
        XCTAssertEqual(try c.firmwareHolds().map(\.line), ["gpio=6=op,dl,pd", "gpio=26=op,dl,pd"])

        let expander = try GatewayConfiguration.load(
            toml: "[device]\nid = \"d1\"\n[board]\nkind = \"real\"\nchip = \"gpiochip2\"\n"
                + "[[outputs]]\nname = \"relay\"\nline = 3\nactive_low = true\nlocked_level = \"deenergised\"\n")
        XCTAssertThrowsError(try expander.firmwareHolds()) { error in
            XCTAssertEqual(
                "\(error)",
                "output \"relay\": line 3 on chip gpiochip2 is not a Raspberry Pi GPIO the firmware can hold (config.txt gpio=): name it \"GPIOn\", or hold it at its locked level in hardware (a pull resistor)"
            )
        }
        let named = try GatewayConfiguration.load(
            toml: Self.real
                + "[[outputs]]\nname = \"r\"\nline = \"RELAY\"\nactive_low = true\nlocked_level = \"deenergised\"\n")
        XCTAssertThrowsError(try named.firmwareHolds())
        XCTAssertTrue(named.summary.contains { $0.hasPrefix("firmware hold none: output \"r\": line RELAY") })
    }

    static let hold = FirmwareHold(output: "strike", pin: 17, activeLow: true, lockedLevel: .deenergised)

    func testTheRewriteReplacesTheImagesUndecidedBlockWhereItStands() throws {
        let before =
            "arm_64bit=1\n# >>> doorgateway relay hold (not chosen yet)\ngpio=17=ip,pd\n# <<< doorgateway relay hold\ndtparam=strict_gpiod\n"
        let after = try FirmwareHold.rewrite(before, holds: [Self.hold])
        XCTAssertEqual(
            after,
            """
            arm_64bit=1
            # >>> doorgateway relay hold (written by `gatewayctl config firmware --write` from gateway.toml; board/wiring.md)
            # Each relay line at its locked level from power-on, before Linux and gatewayd.
            # strike (GPIO17): active-low relay, locked de-energised (strike): line high while locked, pulled up
            gpio=17=op,dh,pu
            # <<< doorgateway relay hold
            dtparam=strict_gpiod

            """)
        XCTAssertEqual(try FirmwareHold.rewrite(after, holds: [Self.hold]), after, "idempotent")
        XCTAssertEqual(FirmwareHold.current(in: after, pin: 17), "gpio=17=op,dh,pu")
        XCTAssertEqual(FirmwareHold.current(in: before, pin: 17), "gpio=17=ip,pd")
    }

    func testTheRewriteTakesTheOldFixedLineAndEveryOtherLineForThePin() throws {
        // The image before issue 23: a fixed `gpio=17=op,dl` (an opto module's relay energised from power-on).
        let old = "[all]\ndtparam=i2c_arm=on\ngpio=17=op,dl\ngpio=22=op,dl\n[pi4]\ngpio=17=op,dl\n"
        let new = try FirmwareHold.rewrite(old, holds: [Self.hold])
        let lines = new.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.filter { $0.hasPrefix("gpio=") }, ["gpio=17=op,dh,pu", "gpio=22=op,dl"])
        XCTAssertEqual(lines.firstIndex(of: "gpio=17=op,dh,pu"), 5, "in place of the first line for the pin")
        XCTAssertEqual(FirmwareHold.current(in: new, pin: 17), "gpio=17=op,dh,pu")
    }

    func testTheRewriteAppendsUnderAllAndRefusesALineSharingThePin() throws {
        XCTAssertEqual(
            try FirmwareHold.rewrite("[pi4]\narm_boost=1\n", holds: [Self.hold]).split(
                separator: "\n", omittingEmptySubsequences: false
            ).prefix(4),
            ["[pi4]", "arm_boost=1", "", "[all]"])
        XCTAssertEqual(FirmwareHold.current(in: "", pin: 17), nil)
        XCTAssertThrowsError(try FirmwareHold.rewrite("gpio=16-18=op,dl\n", holds: [Self.hold])) { error in
            XCTAssertEqual((error as? FirmwareHold.RewriteError)?.line, 1)
        }
        XCTAssertEqual(FirmwareHold.pins(ofConfigLine: "gpio=4-6,17=ip"), [4, 5, 6, 17])
        XCTAssertNil(FirmwareHold.pins(ofConfigLine: "dtparam=gpio=17"))
    }
}
