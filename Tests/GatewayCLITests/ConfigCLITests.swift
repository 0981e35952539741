import Foundation
import GatewayConfig
import TestSupport
import XCTest

/// Black-box: `gateway ctl config check|example`, whole outputs and exit codes.
final class ConfigCLITests: TemporaryDirectoryTestCase {
    var dir: URL!

    override func setUpWithError() throws { dir = try temporaryDirectory("config-cli") }

    func write(_ name: String, _ text: String) throws -> String {
        let url = dir.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    static let defaultSections = """
          outputs strike@GPIO17 locked deenergised
          indicators buzzer@GPIO24, green@GPIO22, red@GPIO23
          inputs button @GPIO27 active-low pull-up debounce 30 ms, door contact none
          door pulse 50…10000 ms, same tag quiet 1000 ms, mode normal
          actions 0 "action 0" (strike 3000 ms); 1 "action 1" (strike 3000 ms); 2 "action 2" (strike 3000 ms); 3 "action 3" (strike 3000 ms)
          feedback stock patterns
          lockout 3 per tag / 10 in all within 60 s, 30 s doubling to 300 s
          button exit action 0, hold 5000 ms arms provisioning
          provisioning button-armed, action 0, timeout 60 s, unprotected
          door contact off
          clock from adjtimex
          mqtt off
          control socket /run/doorgateway/control.sock, admin group doorgateway
          paths state /var/lib/doorgateway, runtime /run/doorgateway

        """

    /// The file scripts/deb.sh ships as /etc/doorgateway/gateway.toml: refused,
    /// naming the relay's two keys and nothing else, until one line of each
    /// choice is uncommented; then it checks OK with its firmware hold.
    func testTheExampleForAPiIsRefusedUntilTheRelayIsChosen() throws {
        let example = try Run.gatewayctl(["config", "example", "--board", "pi"])
        XCTAssertEqual(example.status, 0, example.stderr)
        XCTAssertEqual(example.stdout, ConfigExample.text(board: .pi))
        XCTAssertEqual(try Run.gatewayctl(["config", "example"]).stdout, example.stdout, "pi is the default board")
        let file = try write("pi.toml", example.stdout)
        let check = try Run.gatewayctl(["config", "check", file])
        XCTAssertEqual(check.status, 1)
        XCTAssertEqual(check.stdout, "")
        let header =
            try XCTUnwrap(
                example.stdout.split(separator: "\n", omittingEmptySubsequences: false).firstIndex {
                    $0 == "[[outputs]]"
                }) + 1
        XCTAssertEqual(
            check.stderr,
            """
            \(file):\(header): outputs[0].active_low: output "strike": is required on a real board, there is no default: \
            true for an opto-isolated relay module (the common 1/2/4-channel boards: on while the input is low), \
            false for a transistor/MOSFET stage or a relay HAT (on while the line is high); check which before a lock \
            is wired (board/wiring.md)
            \(file):\(header): outputs[0].locked_level: output "strike": is required on a real board, there is no \
            default: "deenergised" for a fail-secure strike (locked without power), "energised" for a maglock (locked \
            while powered)

            """)

        // An opto module on a strike, chosen by uncommenting one line of each.
        let chosen = try write(
            "chosen.toml",
            example.stdout.replacingOccurrences(of: "\n# active_low = true ", with: "\nactive_low = true ")
                .replacingOccurrences(
                    of: "\n# locked_level = \"deenergised\" ", with: "\nlocked_level = \"deenergised\" "))
        let ok = try Run.gatewayctl([
            "config", "check", "--config-txt", dir.appendingPathComponent("none").path, chosen,
        ])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertEqual(ok.stderr, "")
        XCTAssertEqual(
            ok.stdout,
            """
            ok: \(chosen)
              device front-door, board real, chip gpiochip0
              reader pn532_i2c:/dev/i2c-1

            """
                + Self.defaultSections.replacingOccurrences(
                    of: "  outputs strike@GPIO17 locked deenergised\n",
                    with: """
                          outputs strike@GPIO17 active-low locked deenergised
                          firmware hold gpio=17=op,dh,pu (config.txt: gatewayctl config firmware)

                        """))
    }

    /// gatewayd reads the file before it requests any line: the shipped file
    /// stops it with the two keys named (exit 78, EX_CONFIG), never with a GPIO
    /// error (which would mean it had gone on to open the chip).
    func testGatewaydRefusesTheShippedPiFileBeforeTouchingGPIO() throws {
        let file = try write("pi.toml", ConfigExample.text(board: .pi))
        let r = try Run.process(Run.product("gateway"), ["daemon", "--config", file])
        XCTAssertEqual(r.status, 78, r.stderr)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, r.stderr)
        XCTAssertTrue(lines[0].hasPrefix("gatewayd: \(file):"), r.stderr)
        XCTAssertTrue(lines[0].contains(": outputs[0].active_low: output \"strike\": is required on a real board"))
        XCTAssertTrue(lines[1].contains(": outputs[0].locked_level: output \"strike\": is required on a real board"))
        XCTAssertEqual(
            lines[2],
            "gatewayd: not started, no GPIO line touched: fix \(file) (`gatewayctl config check`), then restart")
        XCTAssertFalse(r.stderr.contains("GPIO chip"), r.stderr)
    }

    /// A Wiegand reader of `[[readers]]` wired onto the relay's line, D1 missing, its frame gap too
    /// short: gatewayd stops at the file (exit 78), each key named, no line touched (issue 35).
    func testGatewaydRefusesAWiegandReaderOnTheRelaysLine() throws {
        let file = try write(
            "wiegand.toml",
            ConfigExample.text(board: .sim)
                + "\n[[readers]]\nname = \"gate\"\nkind = \"wiegand\"\nd0 = \"GPIO17\"\nframe_gap_ms = 10\n")
        let r = try Run.process(Run.product("gateway"), ["daemon", "--config", file])
        XCTAssertEqual(r.status, 78, r.stderr)
        XCTAssertTrue(r.stderr.contains("readers[0].d0: line GPIO17 is already used by outputs[0].line"), r.stderr)
        XCTAssertTrue(r.stderr.contains("readers[0].d1: is required"), r.stderr)
        XCTAssertTrue(r.stderr.contains("readers[0].frame_gap_ms: 10 is out of range 25…100"), r.stderr)
        XCTAssertTrue(r.stderr.contains("gatewayd: not started, no GPIO line touched"), r.stderr)
    }

    /// Every command that reads a configuration file reads it one way
    /// (ConfigOptions, issue 34): its --help names the same default file, and
    /// a bad file is refused with each issue as `FILE:LINE: key: message`.
    func testEveryCommandReadingAConfigurationStatesTheDefaultAndNamesEachIssue() throws {
        let bad = try write("bad.toml", "[device]\nid = \"d\"\n[board]\nkind = \"sim\"\n[door]\npulse_max_ms = 0\n")
        let issue = "\(bad):6: door.pulse_max_ms: 0 is out of range"
        let at = ["--action", "0", "--at", "2026-01-01T10:00"]
        for (command, exit) in [
            (["ctl", "config", "check", bad], Int32(1)),
            (["ctl", "config", "firmware", bad], 1),
            (["ctl", "creds", "status", "--config", bad], 1),
            (["ctl", "policy", "explain"] + at + ["--config", bad], 1),
            (["daemon", "--config", bad], 78),
        ] {
            let r = try Run.process(Run.product("gateway"), command)
            XCTAssertEqual(r.status, exit, "\(command): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(issue), "\(command): \(r.stderr)")
        }
        let stated = "(default: $CONFIGURATION_DIRECTORY/gateway.toml, else /etc/doorgateway/gateway.toml)"
        for command in [
            ["daemon"], ["ctl", "creds", "status"], ["ctl", "log"], ["ctl", "fleet", "push"],
            ["ctl", "config", "check"],
        ] {
            let help = try Run.process(Run.product("gateway"), command + ["--help"])
            let text = (help.stdout + help.stderr).split(separator: "\n").map {
                $0.trimmingCharacters(in: .whitespaces)
            }.joined(separator: " ")
            XCTAssertTrue(text.contains(stated), "\(command) --help: \(help.stdout)")
        }
    }

    func testTheExampleForTheSimulatedBoardChecksOK() throws {
        let example = try Run.gatewayctl(["config", "example", "--board", "sim"])
        XCTAssertEqual(example.status, 0, example.stderr)
        XCTAssertTrue(example.stdout.contains("\nkind = \"sim\"\n"), example.stdout)
        let file = try write("sim.toml", example.stdout)
        let check = try Run.gatewayctl(["config", "check", file])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(
            check.stdout,
            """
            ok: \(file)
              device front-door, board sim
              reader pn532-sim (spawn)

            """ + Self.defaultSections)
    }

    func testEveryProblemOnItsOwnLineAndExitStatusOne() throws {
        let file = try write(
            "bad.toml",
            """
            [device]
            id = "front door"
            [board]
            kind = "real"
            [[outputs]]
            name = "strike"
            line = "GPIO17"
            locked_level = "open"
            [[actions]]
            index = 0
            steps = [{ pulse = "strike", ms = 3000 }, { wait_ms = 10 }, { pulse = "gate", ms = 100 }]
            [mqtt.commands]
            tolerance_s = 60
            [frobnicate]

            """)
        let r = try Run.gatewayctl(["config", "check", file])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stdout, "")
        XCTAssertEqual(
            r.stderr,
            """
            \(file):2: device.id: "front door" may hold only letters, digits, '-' and '_'
            \(file):5: outputs[0].active_low: output "strike": is required on a real board, there is no default: \
            true for an opto-isolated relay module (the common 1/2/4-channel boards: on while the input is low), \
            false for a transistor/MOSFET stage or a relay HAT (on while the line is high); check which before a lock \
            is wired (board/wiring.md)
            \(file):8: outputs[0].locked_level: "open" is not one of "deenergised", "energised"
            \(file):11: actions[0].steps[2].pulse: there is no output named "gate" (outputs: strike)
            \(file):13: mqtt.commands.tolerance_s: 60 is out of range 1…30
            \(file):14: frobnicate: unknown key

            """)
    }

    func testASyntaxErrorAndAMissingFile() throws {
        let file = try write("syntax.toml", "[device]\nid = \"d\"\n[board\nkind = \"sim\"\n")
        let r = try Run.gatewayctl(["config", "check", file])
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.stderr.hasPrefix("\(file):3: TOML syntax error at column "), r.stderr)
        XCTAssertEqual(r.stderr.filter { $0 == "\n" }.count, 1)

        let missing = dir.appendingPathComponent("missing.toml").path
        let m = try Run.gatewayctl(["config", "check", missing])
        XCTAssertEqual(m.status, 1)
        XCTAssertEqual(m.stderr, "\(missing): cannot read the file: open: No such file or directory\n")
    }

    func testTheDefaultFileFollowsConfigurationDirectory() throws {
        _ = try write("gateway.toml", "[device]\nid = \"d7\"\n[board]\nkind = \"sim\"\n")
        let r = try Run.process(
            Run.product("gateway"), ["ctl", "config", "check"],
            environment: ["CONFIGURATION_DIRECTORY": dir.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("ok: \(dir.path)/gateway.toml\n  device d7, board sim\n"), r.stdout)
    }

    func testAnUnknownBoardIsAUsageError() throws {
        let r = try Run.gatewayctl(["config", "example", "--board", "mars"])
        XCTAssertEqual(r.status, 64)
        XCTAssertTrue(r.stderr.contains("mars"), r.stderr)
    }
}
