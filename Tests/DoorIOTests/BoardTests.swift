import DoorCore
import Glibc
import Logging
import Synchronization
import TestSupport
import XCTest

@testable import DoorIO

final class SimulatedBoardTests: XCTestCase {
    private let strike = OutputDefinition(name: "door", lockedLevel: .deenergised)
    private let maglock = OutputDefinition(name: "gate", lockedLevel: .energised)

    func testDriveAndLockAllShowInTheSnapshotAndTheLog() throws {
        let log = LogCapture()
        let board = SimulatedBoard(outputs: [strike, maglock], logger: log.logger)
        XCTAssertEqual(board.snapshot().outputs["door"], .init(state: .locked, level: .deenergised))
        XCTAssertEqual(board.snapshot().outputs["gate"], .init(state: .locked, level: .energised))
        try board.drive("door", .unlocked)
        try board.drive("gate", .unlocked)
        try board.setIndicators([LineChange(line: "green", on: true), LineChange(line: "buzzer", on: true)])
        let open = board.snapshot()
        XCTAssertEqual(open.outputs["door"], .init(state: .unlocked, level: .energised))
        XCTAssertEqual(open.outputs["gate"], .init(state: .unlocked, level: .deenergised))
        XCTAssertEqual(open.indicators, ["green": true, "red": false, "buzzer": true])
        XCTAssertTrue(log.messages.contains("sim output door → unlocked (energised)"), "\(log.messages)")
        XCTAssertTrue(log.messages.contains("sim indicator buzzer=on"))

        board.lockAll()
        let locked = board.snapshot()
        XCTAssertEqual(locked.outputs["door"], .init(state: .locked, level: .deenergised))
        XCTAssertEqual(locked.outputs["gate"], .init(state: .locked, level: .energised))
        XCTAssertEqual(Set(locked.indicators.values), [false])
    }

    func testUnknownLinesAreTypedErrorsAndChangeNothing() {
        let board = SimulatedBoard(outputs: [strike], logger: LogCapture().logger)
        XCTAssertThrowsError(try board.drive("garage", .unlocked)) {
            XCTAssertEqual($0 as? DoorBoardError, .unknownOutput("garage"))
        }
        XCTAssertThrowsError(
            try board.setIndicators([LineChange(line: "green", on: true), LineChange(line: "blue", on: true)])
        ) {
            XCTAssertEqual($0 as? DoorBoardError, .unknownIndicator("blue"))
        }
        XCTAssertEqual(board.snapshot().indicators["green"], false)
        XCTAssertThrowsError(
            try SimulatedBoard(
                BoardDescription(
                    chip: "x",
                    outputs: [
                        .init(name: "door", line: .offset(1)), .init(name: "door", line: .offset(2)),
                    ]), logger: LogCapture().logger)
        ) { XCTAssertEqual($0 as? DoorBoardError, .duplicateName("door")) }
    }

    func testReleasingTheBoardLocksEveryOutput() throws {
        let log = LogCapture()
        var board: SimulatedBoard? = SimulatedBoard(outputs: [strike], logger: log.logger)
        try board?.drive("door", .unlocked)
        board = nil
        XCTAssertEqual(log.messages.last, "sim all outputs locked")
    }

    func testInjectedInputsReachTheHandlerAndTheSnapshot() {
        let board = SimulatedBoard(outputs: [strike], inputs: [.button, .doorContact], logger: LogCapture().logger)
        let seen = Mutex<[InputEvent]>([])
        board.setInputHandler { event in seen.withLock { $0.append(event) } }
        let press = InputEvent(input: .button, active: true, at: MonotonicInstant(nanoseconds: 5))
        let open = InputEvent(input: .doorContact, active: true, at: MonotonicInstant(nanoseconds: 9))
        board.inject(press)
        board.inject(open)
        XCTAssertEqual(seen.withLock { $0 }, [press, open])
        XCTAssertEqual(board.snapshot().inputs, [.button: true, .doorContact: true])
    }

    func testPatternDriverPlaysOnTheBoardAndNeverLeavesALineOn() throws {
        let board = SimulatedBoard(outputs: [strike], indicators: ["green", "buzzer"], logger: LogCapture().logger)
        var driver: PatternDriver? = PatternDriver(board: board, logger: LogCapture().logger)
        driver?.play(FeedbackPattern.defaultPatterns[.granted]!)
        // The pattern lasts 400 ms; "red" is not wired here and is skipped.
        let deadline = MonotonicClock.now() + .seconds(3)
        var sawOn = false
        while driver?.isPlaying == true, MonotonicClock.now() < deadline {
            sawOn = sawOn || board.snapshot().indicators["green"] == true
            MonotonicClock.sleep(for: .milliseconds(5))
        }
        XCTAssertTrue(sawOn)
        XCTAssertEqual(driver?.isPlaying, false)
        XCTAssertEqual(board.snapshot().indicators, ["green": false, "buzzer": false])

        // A repeating pattern dropped mid-step switches its lines off.
        driver?.play(FeedbackPattern.defaultPatterns[.provisioningArmed]!)
        XCTAssertTrue(try waitUntil { board.snapshot().indicators["green"] == true }, "the pattern's first step is on")
        driver = nil
        XCTAssertEqual(board.snapshot().indicators, ["green": false, "buzzer": false])
    }
}

final class RelaySafetyTests: XCTestCase {
    func testPersistWarningOnlyForARaspberryPiThatKeepsOutputs() throws {
        let pi5 = "Raspberry Pi 5 Model B Rev 1.0"
        let warning = try XCTUnwrap(
            RelaySafety.persistWarning(
                model: pi5, parameters: ["pinctrl_rp1": "Y\n", "gpio_brcmstb": "N\n"]))
        XCTAssertTrue(warning.contains("pinctrl_rp1"), warning)
        XCTAssertFalse(warning.contains("gpio_brcmstb"), warning)
        XCTAssertTrue(warning.contains("dtparam=strict_gpiod"), warning)
        XCTAssertNil(RelaySafety.persistWarning(model: pi5, parameters: ["pinctrl_rp1": "N\n"]))
        XCTAssertNil(RelaySafety.persistWarning(model: pi5, parameters: [:]))
        XCTAssertNil(RelaySafety.persistWarning(model: "QEMU Virtual Machine", parameters: ["pinctrl_rp1": "Y"]))
        XCTAssertNil(RelaySafety.persistWarning(model: nil, parameters: ["pinctrl_bcm2835": "Y"]))
        XCTAssertNotNil(
            RelaySafety.persistWarning(model: "Raspberry Pi 4 Model B", parameters: ["pinctrl_bcm2835": "1"]))
    }

    func testPulsesAreClampedToTheLimits() {
        let limits = PulseLimits()
        XCTAssertEqual(limits.clamp(.milliseconds(1)), .milliseconds(50))
        XCTAssertEqual(limits.clamp(.milliseconds(500)), .milliseconds(500))
        XCTAssertEqual(limits.clamp(.seconds(3600)), .seconds(10))
        XCTAssertEqual(PulseLimits(maximum: .seconds(120)).clamp(.seconds(120)), PulseLimits.absoluteMaximum)
    }
}

/// Issue 33: the pull each output is requested with is its safe level's
/// (electrical: an active-low strike relay, off while locked, is pulled up),
/// so the line stays there once released. The VM checks (released-active-high,
/// released-active-low) show it on a kernel GPIO chip.
final class OutputPullTests: XCTestCase {
    func testTheRequestedPullIsTheSafeLevelsElectricalLevel() {
        // (active_low, safe logical value, pull): relays locked de-energised
        // (a strike) or energised (a maglock); indicators are safe off.
        let cases: [(Bool, Bool, BoardDescription.Bias)] = [
            (true, false, .pullUp),  // opto module + strike: coil off = line high
            (false, false, .pullDown),  // transistor stage + strike, and every active-high LED/buzzer
            (true, true, .pullDown),  // opto module + maglock: coil on = line low
            (false, true, .pullUp),  // transistor stage + maglock
        ]
        for (activeLow, safe, pull) in cases {
            XCTAssertEqual(
                OutputLine.pull(activeLow: activeLow, safeValue: safe), pull, "active_low \(activeLow), safe \(safe)")
        }
    }

    func testABiasRefusalIsWhatOldKernelsAnswer() {
        XCTAssertTrue(OutputLine.biasRefusals.contains(EINVAL), "uAPI v1 before 5.5: unknown flags")
        XCTAssertFalse(OutputLine.biasRefusals.contains(EBUSY), "a busy line is not retried without the bias")
        XCTAssertFalse(OutputLine.biasRefusals.contains(EPERM))
    }
}

final class GPIOErrorTests: XCTestCase {
    func testAMissingChipIsNamedWithWhatIsPresent() {
        // No test machine has a chip by this name; the message lists the chips that exist.
        for spec in ["gpiochip-doorio-missing", "/dev/gpiochip-doorio-missing"] {
            XCTAssertThrowsError(try GPIOBoard(BoardDescription(chip: spec, outputs: []), logger: LogCapture().logger))
            {
                error in
                guard case .chipNotFound(let s, _)? = error as? GPIOError else { return XCTFail("\(error)") }
                XCTAssertEqual(s, spec)
                XCTAssertTrue("\(error)".hasPrefix("GPIO chip '\(spec)' not found"), "\(error)")
            }
        }
    }

    func testMessages() {
        XCTAssertEqual(
            GPIOError.chipNotFound(spec: "pinctrl-rp1", available: ["gpiochip0 [gpio-sim.0-node0] (8 lines)"])
                .description,
            "GPIO chip 'pinctrl-rp1' not found (by name, /dev path, label or number); present: gpiochip0 [gpio-sim.0-node0] (8 lines)"
        )
        XCTAssertEqual(
            GPIOError.chipNotFound(spec: "gpiochip0", available: []).description,
            "GPIO chip 'gpiochip0' not found (by name, /dev path, label or number); no GPIO chips are present")
        XCTAssertEqual(
            GPIOError.lineNotFound(chip: "gpiochip0", line: .name("GPIO99")).description,
            "GPIO line 'GPIO99' not found on chip gpiochip0")
        XCTAssertEqual(
            GPIOError.lineBusy(chip: "gpiochip0", line: .offset(17), consumer: "gatewayd").description,
            "GPIO line '17' on chip gpiochip0 is busy: already requested by 'gatewayd'")
        XCTAssertEqual(
            GPIOError.call(function: "gpiod_line_set_value", errno: EIO, subject: "output 'door'").description,
            "gpiod_line_set_value failed for output 'door': Input/output error (errno 5)")
    }

    func testLineSpecs() {
        XCTAssertEqual(LineSpec("17"), .offset(17))
        XCTAssertEqual(LineSpec("GPIO17"), .name("GPIO17"))
        XCTAssertEqual(LineSpec("-1"), .name("-1"))
        XCTAssertEqual(LineSpec(""), .name(""))
    }
}
