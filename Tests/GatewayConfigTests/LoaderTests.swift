import DoorCore
@testable import GatewayConfig
import XCTest

/// The strict loader: defaults of each section, every kind of error naming its
/// key and line, the example files.
final class LoaderTests: XCTestCase, ExpectsConfigIssues {
    /// Lines 1–4; snippets appended start at line 5. The simulated board,
    /// whose relay has defaults; a real board states its relay (`realBase`,
    /// PolarityTests).
    static let base = "[device]\nid = \"d1\"\n[board]\nkind = \"sim\"\n"
    /// A real board with its relay stated: an active-low module on a strike.
    static let realBase = """
        [device]
        id = "d1"
        [board]
        kind = "real"
        [[outputs]]
        name = "strike"
        line = "GPIO17"
        active_low = true
        locked_level = "deenergised"

        """

    func load(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> GatewayConfiguration? {
        do {
            return try GatewayConfiguration.load(toml: text)
        } catch {
            XCTFail("unexpected issues:\n\(error)", file: file, line: line)
            return nil
        }
    }

    /// `extra` after the base lines yields exactly this one issue.
    func assertIssue(
        _ extra: String, _ key: String, line expectedLine: Int?, _ message: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let found = issues(Self.base + extra, file: file, line: line)
        XCTAssertEqual(found, [ConfigIssue(key: key, line: expectedLine, message: message)], file: file, line: line)
    }

    // MARK: Defaults

    func testHomeAssistantNameAreaAndLabelsAreOptional() throws {
        let plain = try XCTUnwrap(load(Self.base))
        XCTAssertNil(plain.mqtt.homeAssistantName)
        XCTAssertNil(plain.mqtt.homeAssistantArea)
        XCTAssertFalse(plain.mqtt.labelInEvents, "labels are often names: off unless asked for")
        let set = try XCTUnwrap(
            load(
                Self.base
                    + "[mqtt]\nhome_assistant_name = \"Front door\"\nhome_assistant_area = \"Hallway\"\n"
                    + "label_in_events = true\n"))
        XCTAssertEqual(set.mqtt.homeAssistantName, "Front door")
        XCTAssertEqual(set.mqtt.homeAssistantArea, "Hallway")
        XCTAssertTrue(set.mqtt.labelInEvents)
        assertIssue(
            "[mqtt]\nhome_assistant_area = \"\"\n", "mqtt.home_assistant_area", line: 6, "must be 1…64 characters")
    }

    func testAMinimalFileIsTheDeviceAndTheBoardAndEveryOtherValueHasItsDefault() throws {
        let c = try XCTUnwrap(load(Self.base))
        XCTAssertEqual(c.deviceID, "d1")
        XCTAssertEqual(c.board, .sim)
        XCTAssertEqual(c.chip, "gpiochip0")
        XCTAssertEqual(c.reader, .init(connstring: "pn532_i2c:/dev/i2c-1", simulator: "spawn"))
        XCTAssertEqual(
            c.outputs, [.init(name: "strike", line: .name("GPIO17"), activeLow: false, lockedLevel: .deenergised)])
        XCTAssertEqual(c.indicators.map(\.name), ["buzzer", "green", "red"])
        XCTAssertEqual(c.indicators.map(\.line), [.name("GPIO24"), .name("GPIO22"), .name("GPIO23")])
        XCTAssertFalse(c.indicators.contains { $0.activeLow })
        XCTAssertEqual(c.button, .init(line: .name("GPIO27"), activeLow: true, bias: .pullUp, debounceMilliseconds: 30))
        XCTAssertNil(c.doorContact)
        XCTAssertFalse(c.declareClockSynchronised)
        XCTAssertEqual(c.control, .init(socket: nil, adminGroup: "doorgateway"))
        XCTAssertEqual(c.controlSocket, "/run/doorgateway/control.sock")
        XCTAssertEqual(c.paths, .init(stateDirectory: "/var/lib/doorgateway", runtimeDirectory: "/run/doorgateway"))
        // A real board differs only in its relay, which it states.
        var real = try XCTUnwrap(load(Self.realBase))
        XCTAssertEqual(
            real.outputs, [.init(name: "strike", line: .name("GPIO17"), activeLow: true, lockedLevel: .deenergised)])
        real.board = .sim
        real.outputs = c.outputs
        XCTAssertEqual(real, c)
    }

    func testDoorDefaultsAreDoorCoresDefaults() throws {
        let d = try XCTUnwrap(load(Self.base)).door
        // DoorSettings() is DoorCore's default: one fail-secure strike, four
        // 3 s actions, pulses 50 ms…10 s, stock patterns, default policies.
        XCTAssertEqual(d, DoorSettings())
        XCTAssertEqual(d.actions.map(\.index), [0, 1, 2, 3])
        XCTAssertEqual(d.actions[3].steps, [.pulse(output: "strike", duration: .seconds(3))])
        XCTAssertEqual(d.pulseLimits, PulseLimits(minimum: .milliseconds(50), maximum: .seconds(10)))
        XCTAssertEqual(d.sameTagQuiet, .seconds(1))
        XCTAssertEqual(d.initialMode, .normal)
        XCTAssertEqual(
            d.lockout,
            LockoutPolicy(
                enabled: true, perTagThreshold: 3, globalThreshold: 10, window: .seconds(60),
                duration: .seconds(30), cap: .seconds(300)))
        XCTAssertEqual(
            d.button, ButtonPolicy(exitAction: 0, minimumPress: .milliseconds(50), provisioningHold: .seconds(5)))
        XCTAssertEqual(
            d.provisioning,
            ProvisioningPolicy(buttonArmed: true, action: 0, timeout: .seconds(60), protect: false, authLimit: 0))
        XCTAssertEqual(
            d.doorContact,
            DoorContactPolicy(
                enabled: false, heldOpenAfter: .seconds(30), openGrace: .seconds(10), warnAfter: .seconds(15),
                escalateAfter: .seconds(120)))
        XCTAssertEqual(d.patterns, FeedbackPattern.defaultPatterns)
    }

    func testMQTTDefaultsFollowTheDeviceID() throws {
        let m = try XCTUnwrap(load(Self.base)).mqtt
        XCTAssertFalse(m.enabled)
        XCTAssertEqual(m.host, "localhost")
        XCTAssertEqual(m.port, 8883)
        XCTAssertEqual(m.clientID, "d1")
        XCTAssertEqual(m.topicPrefix, "doorgateway/d1")
        XCTAssertEqual(m.protocolVersion, .v311)
        XCTAssertEqual(
            m.tls, .init(enabled: true, caFile: nil, caDirectory: nil, certFile: nil, keyFile: nil, insecure: false))
        XCTAssertEqual(m.keepaliveSeconds, 60)
        XCTAssertEqual(m.compatCommandTopics, [])
        XCTAssertEqual(m.commandMapping, [1: .action(0), 2: .action(1), 3: .action(2), 4: .action(3), 5: .report])
        XCTAssertEqual(m.toleranceSeconds, 5)
        XCTAssertEqual(m.uidInEvents, .hmac)
        XCTAssertTrue(m.homeAssistantDiscovery, "on by default when a broker is configured")
        XCTAssertFalse(m.homeAssistantOpen, "MAC-less Home Assistant opens only when enabled")
        XCTAssertEqual(m.outboxLimit, 10_000)
        XCTAssertEqual(m.telemetrySeconds, 60)
        let plain = try XCTUnwrap(load(Self.base + "[mqtt.tls]\nenabled = false\n")).mqtt
        XCTAssertEqual(plain.port, 1883, "without TLS the default port is 1883")
    }

    func testASimulatedBoard() throws {
        let c = try XCTUnwrap(
            load("[device]\nid = \"sim-1\"\n[board]\nkind = \"sim\"\n[reader]\nsimulator = \"/run/pn532-sim.sock\"\n"))
        XCTAssertEqual(c.board, .sim)
        XCTAssertEqual(c.reader.simulator, "/run/pn532-sim.sock")
    }

    // MARK: Sections as configured

    func testSeveralOutputsActionsWithWaitsAndPatternOverrides() throws {
        let c = try XCTUnwrap(
            load(
                Self.base + """
                    [[outputs]]
                    name = "open"
                    line = 5
                    [[outputs]]
                    name = "stop"
                    line = "6"
                    active_low = true
                    [[outputs]]
                    name = "maglock"
                    line = "GPIO13"
                    locked_level = "energised"
                    [indicators.led]
                    line = 20
                    active_low = true
                    [inputs.door_contact]
                    line = "GPIO21"
                    open_level = "low"
                    debounce_ms = 100
                    [door]
                    pulse_max_ms = 20000
                    same_tag_quiet_ms = 0
                    mode = "passage"
                    [[actions]]
                    index = 1
                    name = "garage"
                    steps = [
                      { pulse = "open", ms = 500 },
                      { wait_ms = 10000 },
                      { pulse = "stop", ms = 500 },
                    ]
                    [[actions]]
                    index = 0
                    name = "lock"
                    steps = [{ pulse = "maglock", ms = 20000 }]
                    [feedback.granted]
                    steps = [{ on = ["led"], ms = 250 }, { on = [], ms = 50 }]
                    repeat = true
                    [feedback.denied]
                    priority = 99
                    [button]
                    exit_action = "none"
                    [door_contact]
                    held_open_s = 120
                    [mqtt.commands]
                    compat_topics = ["door/cmd", "home/door/cmd"]
                    tolerance_s = 30
                    [mqtt.commands.mapping]
                    7 = 1
                    8 = "report"

                    """))
        XCTAssertEqual(
            c.outputs,
            [
                .init(name: "open", line: .offset(5), activeLow: false, lockedLevel: .deenergised),
                .init(name: "stop", line: .offset(6), activeLow: true, lockedLevel: .deenergised),
                .init(name: "maglock", line: .name("GPIO13"), activeLow: false, lockedLevel: .energised),
            ])
        XCTAssertEqual(
            c.door.outputs,
            [
                OutputDefinition(name: "open"), OutputDefinition(name: "stop"),
                OutputDefinition(name: "maglock", lockedLevel: .energised),
            ])
        XCTAssertEqual(c.indicators, [.init(name: "led", line: .offset(20), activeLow: true)])
        XCTAssertEqual(
            c.doorContact, .init(line: .name("GPIO21"), activeLow: true, bias: .pullUp, debounceMilliseconds: 100))
        XCTAssertEqual(
            c.door.doorContact,
            DoorContactPolicy(enabled: true, heldOpenAfter: .seconds(120), warnAfter: .zero, escalateAfter: .zero),
            "enabled by the input; held_open_s alone: the one alert of before the stages")
        XCTAssertEqual(c.door.pulseLimits.maximum, .seconds(20))
        XCTAssertEqual(c.door.sameTagQuiet, .zero)
        XCTAssertEqual(c.door.initialMode, .passage)
        XCTAssertEqual(
            c.door.actions,
            [
                ActionDefinition(index: 0, name: "lock", steps: [.pulse(output: "maglock", duration: .seconds(20))]),
                ActionDefinition(
                    index: 1, name: "garage",
                    steps: [
                        .pulse(output: "open", duration: .milliseconds(500)), .wait(.seconds(10)),
                        .pulse(output: "stop", duration: .milliseconds(500)),
                    ]),
            ])
        XCTAssertEqual(
            c.door.patterns[.granted],
            FeedbackPattern(
                steps: [
                    PatternStep(on: ["led"], duration: .milliseconds(250)), .off(.milliseconds(50)),
                ], repeats: true, priority: 60))
        // Stock patterns keep only the configured lines; an override keeps what it does not set.
        XCTAssertEqual(
            c.door.patterns[.denied],
            FeedbackPattern(steps: [.off(.milliseconds(800)), .off(.milliseconds(400))], priority: 99))
        XCTAssertEqual(c.door.patterns[.heartbeat]?.lines, [])
        XCTAssertNil(c.door.button.exitAction)
        XCTAssertEqual(c.mqtt.compatCommandTopics, ["door/cmd", "home/door/cmd"])
        XCTAssertEqual(c.mqtt.toleranceSeconds, 30)
        XCTAssertEqual(c.mqtt.commandMapping, [7: .action(1), 8: .report], "a mapping replaces the default whole")
    }

    func testTheDefaultMappingKeepsOnlyActionsThatExist() throws {
        let c = try XCTUnwrap(load(Self.base + "[[actions]]\nindex = 0\nsteps = [{ pulse = \"strike\", ms = 100 }]\n"))
        XCTAssertEqual(c.mqtt.commandMapping, [1: .action(0), 5: .report])
        XCTAssertEqual(c.door.actions.map(\.name), ["action 0"])
    }

    func testDefaultActionsFitNarrowPulseLimits() throws {
        let c = try XCTUnwrap(load(Self.base + "[door]\npulse_max_ms = 1000\n"))
        XCTAssertEqual(c.door.actions[0].steps, [.pulse(output: "strike", duration: .seconds(1))])
    }

    // MARK: Errors name their key and line

    func testUnknownKeysAtEveryLevel() {
        assertIssue("colour = \"red\"\n", "board.colour", line: 5, "unknown key")
        assertIssue("[doors]\nx = 1\n", "doors", line: 5, "unknown key")
        assertIssue("[door]\npulse_ms = 100\n", "door.pulse_ms", line: 6, "unknown key")
        assertIssue(
            "[[outputs]]\nname = \"a\"\nline = 1\n[[outputs]]\nname = \"b\"\nline = 2\ninverted = true\n",
            "outputs[1].inverted", line: 11, "unknown key")
        assertIssue(
            "[[actions]]\nindex = 0\nsteps = [{ pulse = \"strike\", ms = 100, repeat = 2 }]\n",
            "actions[0].steps[0].repeat", line: 7, "unknown key")
        assertIssue("[mqtt.tls]\npassword = \"x\"\n", "mqtt.tls.password", line: 6, "unknown key")
        assertIssue("[inputs.button]\npull = \"up\"\n", "inputs.button.pull", line: 6, "unknown key")
    }

    func testWrongTypesAndRanges() {
        assertIssue(
            "[door]\npulse_min_ms = \"50\"\n", "door.pulse_min_ms", line: 6, "expected an integer, found a string")
        assertIssue("[door]\npulse_max_ms = 30001\n", "door.pulse_max_ms", line: 6, "30001 is out of range 1…30000")
        assertIssue(
            "[lockout]\nenabled = \"yes\"\n", "lockout.enabled", line: 6, "expected true or false, found a string")
        assertIssue("[provisioning]\nauth_limit = 8\n", "provisioning.auth_limit", line: 6, "8 is out of range 0…7")
        assertIssue(
            "[mqtt.commands]\ntolerance_s = 31\n", "mqtt.commands.tolerance_s", line: 6, "31 is out of range 1…30")
        assertIssue("[mqtt]\nport = 1883.0\n", "mqtt.port", line: 6, "expected an integer, found a number")
        assertIssue(
            "[clock]\ndeclare_synchronised = 2026-01-01\n", "clock.declare_synchronised", line: 6,
            "expected true or false, found a date")
        assertIssue("door = 5\n", "board.door", line: 5, "unknown key")
        assertIssue("[mqtt]\ntls = \"on\"\n", "mqtt.tls", line: 6, "expected a table, found a string")
        assertIssue(
            "[mqtt.commands]\ncompat_topics = [\"a\", 1]\n", "mqtt.commands.compat_topics[1]", line: 6,
            "expected a string, found an integer")
    }

    func testBadEnumValues() {
        assertIssue(
            "[[outputs]]\nname = \"s\"\nline = 1\nlocked_level = \"open\"\n",
            "outputs[0].locked_level", line: 8, "\"open\" is not one of \"deenergised\", \"energised\"")
        assertIssue(
            "[door]\nmode = \"party\"\n", "door.mode", line: 6,
            "\"party\" is not one of \"normal\", \"passage\", \"lockdown\"")
        assertIssue("[mqtt]\nprotocol = \"4\"\n", "mqtt.protocol", line: 6, "\"4\" is not one of \"3.1.1\", \"5\"")
        assertIssue(
            "[inputs.button]\nbias = \"up\"\n", "inputs.button.bias", line: 6,
            "\"up\" is not one of \"as-is\", \"disable\", \"pull-up\", \"pull-down\"")
        XCTAssertEqual(
            issues("[device]\nid = \"d\"\n[board]\nkind = \"pi\"\n"),
            [ConfigIssue(key: "board.kind", line: 4, message: "\"pi\" is not one of \"real\", \"sim\"")])
    }

    func testRequiredKeys() {
        XCTAssertEqual(
            issues("[board]\nkind = \"sim\"\n"),
            [
                ConfigIssue(
                    key: "device.id", line: nil,
                    message: "is required: the door's name, letters, digits, '-' and '_' (1…64)")
            ])
        XCTAssertEqual(
            issues("[device]\nid = \"d\"\n"),
            [
                ConfigIssue(
                    key: "board.kind", line: nil,
                    message: "is required: \"real\" (GPIO and a PN532) or \"sim\" (simulated board)")
            ])
        XCTAssertEqual(
            issues("[device]\nname = \"d\"\n[board]\nkind = \"sim\"\n").map(\.key), ["device.id", "device.name"])
        XCTAssertEqual(
            issues("[device]\nname = \"d\"\n[board]\nkind = \"sim\"\n").first?.line, 1,
            "a missing key points at its table")
        assertIssue(
            "[[outputs]]\nname = \"s\"\n", "outputs[0].line", line: 5,
            "is required: an offset on the chip (17) or a line name (\"GPIO17\")")
        assertIssue(
            "[inputs.door_contact]\nopen_level = \"low\"\n", "inputs.door_contact.line", line: 5,
            "is required: an offset on the chip (17) or a line name (\"GPIO17\")")
    }

    func testBadIdentifiersAndLineSpecs() {
        XCTAssertEqual(
            issues("[device]\nid = \"front door\"\n[board]\nkind = \"sim\"\n"),
            [
                ConfigIssue(
                    key: "device.id", line: 2, message: "\"front door\" may hold only letters, digits, '-' and '_'")
            ])
        XCTAssertEqual(
            issues("[device]\nid = \"\(String(repeating: "a", count: 65))\"\n[board]\nkind = \"sim\"\n"),
            [ConfigIssue(key: "device.id", line: 2, message: "must be 1…64 characters")])
        let output = "[[outputs]]\nname = \"s\"\n"
        assertIssue(output + "line = -1\n", "outputs[0].line", line: 7, "offset -1 is out of range 0…4095")
        assertIssue(output + "line = 5000\n", "outputs[0].line", line: 7, "offset 5000 is out of range 0…4095")
        assertIssue(
            output + "line = \"GPIO 17\"\n", "outputs[0].line", line: 7,
            "a line name has no spaces or control characters")
        assertIssue(output + "line = \"\"\n", "outputs[0].line", line: 7, "a line name is 1…31 characters")
        assertIssue(
            output + "line = 1.5\n", "outputs[0].line", line: 7, "expected an offset or a line name, found a number")
        assertIssue(
            "[indicators.\"blue led\"]\nline = 3\n", "indicators.blue led", line: 5,
            "bad indicator name: \"blue led\" may hold only letters, digits, '-' and '_'")
    }

    func testDuplicateNamesAndLines() {
        assertIssue(
            "[[outputs]]\nname = \"s\"\nline = 1\n[[outputs]]\nname = \"s\"\nline = 2\n",
            "outputs[1].name", line: 9, "another output is already named \"s\"")
        assertIssue(
            "[[outputs]]\nname = \"s\"\nline = \"GPIO22\"\n",
            "indicators.green", line: nil, "line GPIO22 is already used by outputs[0].line")
        assertIssue(
            "[inputs.button]\nline = 7\n[inputs.door_contact]\nline = \"7\"\n",
            "inputs.door_contact.line", line: 8, "line 7 is already used by inputs.button.line")
    }

    func testActionErrors() {
        let action = "[[actions]]\nindex = 0\n"
        assertIssue(
            action + "steps = [{ pulse = \"strike\", ms = 100 }, { wait_ms = 5 }, { pulse = \"gate\", ms = 100 }]\n",
            "actions[0].steps[2].pulse", line: 7, "there is no output named \"gate\" (outputs: strike)")
        assertIssue(
            action
                + "steps = [\n  { pulse = \"strike\", ms = 100 },\n  { wait_ms = 5 },\n  { pulse = \"strike\", ms = 10001 },\n]\n",
            "actions[0].steps[2].ms", line: 10, "10001 is out of range 50…10000")
        assertIssue(
            action + "steps = [{ pulse = \"strike\" }]\n", "actions[0].steps[0].ms", line: 7,
            "is required: the pulse length (50…10000, door.pulse_min_ms…door.pulse_max_ms)")
        assertIssue(
            action + "steps = [{ pulse = \"strike\", ms = 100, wait_ms = 5 }]\n", "actions[0].steps[0].wait_ms",
            line: 7,
            "a step either pulses an output or waits, not both")
        assertIssue(
            action + "steps = [{ ms = 100 }]\n", "actions[0].steps[0]", line: 7,
            "a step is { pulse = \"OUTPUT\", ms = N } or { wait_ms = N }")
        assertIssue(action + "steps = []\n", "actions[0].steps", line: 7, "at least one step is needed")
        assertIssue(action, "actions[0].steps", line: 5, "is required: [{ pulse = \"strike\", ms = 3000 }]")
        let step = "steps = [{ pulse = \"strike\", ms = 100 }]\n"
        assertIssue(
            action + step + "[[actions]]\nindex = 2\n" + step, "actions[1].index", line: 9,
            "2 leaves a gap: 2 actions take indexes 0…1")
        assertIssue(
            action + step + "[[actions]]\nindex = 0\n" + step, "actions[1].index", line: 9, "0 is also actions[0].index"
        )
        assertIssue("actions = []\n", "board.actions", line: 5, "unknown key")
        XCTAssertEqual(issues("actions = []\n" + Self.base).map(\.key), ["actions"])
    }

    func testFeedbackErrors() {
        assertIssue(
            "[feedback.party]\nrepeat = true\n", "feedback.party", line: 5,
            "unknown pattern (patterns: granted, denied, locked_out, provisioning_armed, tag_written, write_failed, reader_fault, heartbeat, awaiting_approval, held_open)"
        )
        assertIssue(
            "[feedback.granted]\nsteps = [{ on = [\"green\", \"blue\"], ms = 100 }]\n",
            "feedback.granted.steps[0].on[1]", line: 6,
            "there is no indicator named \"blue\" (indicators: buzzer, green, red)")
        assertIssue(
            "[indicators.led]\nline = 3\n[feedback.denied]\nsteps = [{ on = [\"red\"], ms = 100 }]\n",
            "feedback.denied.steps[0].on[0]", line: 8, "there is no indicator named \"red\" (indicators: led)")
        assertIssue(
            "[feedback.granted]\npriority = 101\n", "feedback.granted.priority", line: 6, "101 is out of range 0…100")
        assertIssue(
            "[feedback.granted]\nsteps = [{ on = [\"green\"] }]\n", "feedback.granted.steps[0].ms", line: 6,
            "is required (1…60000)")
    }

    func testCrossSectionErrors() {
        assertIssue(
            "[door]\npulse_min_ms = 600\npulse_max_ms = 500\n", "door.pulse_min_ms", line: 6,
            "600 is above door.pulse_max_ms (500)")
        assertIssue("[button]\nexit_action = 4\n", "button.exit_action", line: 6, "there is no action 4")
        assertIssue(
            "[button]\nexit_action = true\n", "button.exit_action", line: 6,
            "expected an action index or \"none\", found a boolean")
        assertIssue(
            "[button]\nmin_press_ms = 900\nhold_ms = 800\n", "button.hold_ms", line: 7,
            "800 must be longer than button.min_press_ms (900)")
        assertIssue("[provisioning]\naction = 7\n", "provisioning.action", line: 6, "there is no action 7")
        assertIssue(
            "[door_contact]\nenabled = true\n", "door_contact.enabled", line: 6,
            "true needs a contact line in [inputs.door_contact]")
        assertIssue(
            "[lockout]\nduration_s = 600\ncap_s = 300\n", "lockout.cap_s", line: 7,
            "300 is below lockout.duration_s (600)")
        assertIssue("[mqtt.commands.mapping]\n1 = 9\n", "mqtt.commands.mapping.1", line: 6, "there is no action 9")
        assertIssue(
            "[mqtt.commands.mapping]\none = 0\n", "mqtt.commands.mapping.one", line: 6,
            "a command number 0…9999 is expected as the key")
        assertIssue(
            "[mqtt.commands.mapping]\n1 = \"open\"\n", "mqtt.commands.mapping.1", line: 6,
            "expected an action index or \"report\", found a string")
    }

    func testMQTTAndPathErrors() {
        assertIssue(
            "[mqtt]\nenabled = true\n", "mqtt.tls.ca_file", line: 5,
            "is required with TLS on: set ca_file or ca_dir (or mqtt.tls.enabled = false for a plain-TCP broker)")
        assertIssue(
            "[mqtt.tls]\ncert_file = \"/etc/doorgateway/d.crt\"\n", "mqtt.tls.key_file", line: 5,
            "is required with the other: the client certificate and its key go together")
        assertIssue(
            "[mqtt.tls]\nca_file = \"ca.pem\"\n", "mqtt.tls.ca_file", line: 6, "\"ca.pem\" must be an absolute path")
        assertIssue(
            "[mqtt]\ntopic_prefix = \"doors/#\"\n", "mqtt.topic_prefix", line: 6,
            "\"doors/#\": no MQTT wildcards (+, #) here")
        assertIssue(
            "[mqtt.commands]\ncompat_topics = [\"/door\"]\n", "mqtt.commands.compat_topics[0]", line: 6,
            "\"/door\" must not start or end with '/'")
        assertIssue(
            "[paths]\nstate_dir = \"var/lib/doorgateway\"\n", "paths.state_dir", line: 6,
            "\"var/lib/doorgateway\" must be an absolute path")
        let long = "/" + String(repeating: "r", count: 100)
        assertIssue(
            "[paths]\nruntime_dir = \"\(long)\"\n", "paths.runtime_dir", line: 6,
            "the control socket under it: a socket path is at most 107 bytes")
        assertIssue(
            "[control]\nadmin_group = \"Door Admins\"\n", "control.admin_group", line: 6,
            "\"Door Admins\" is not a group name (lower-case letters, digits, '-' and '_', 1…32)")
        let usage = "expected pn532_i2c:/dev/i2c-1, pn532_spi:/dev/spidev0.0[:500000] or pn532_uart:/dev/ttyS1[:115200]"
        assertIssue(
            "[reader]\nconnstring = \"acr122_usb:\"\n", "reader.connstring", line: 6, "\"acr122_usb:\": \(usage)")
        assertIssue(
            "[reader]\nconnstring = \"pn532_i2c:/dev/i2c-1:100\"\n", "reader.connstring", line: 6,
            "\"pn532_i2c:/dev/i2c-1:100\": \(usage)")
        assertIssue(
            "[reader]\nsimulator = \"sim.sock\"\n", "reader.simulator", line: 6,
            "\"spawn\" or a pn532-sim control socket: \"sim.sock\" must be an absolute path")
        for good in ["pn532_spi:/dev/spidev0.0:500000", "pn532_uart:/dev/ttyS0", "pn532_uart:/dev/ttyUSB0:115200"] {
            XCTAssertEqual(load(Self.base + "[reader]\nconnstring = \"\(good)\"\n")?.reader.connstring, good)
        }
    }

    func testASyntaxErrorCarriesLineAndColumn() {
        let found = issues(Self.base + "[door]\npulse_min_ms = = 5\n")
        XCTAssertEqual(found.count, 1)
        XCTAssertEqual(found.first?.key, "")
        XCTAssertEqual(found.first?.line, 6)
        XCTAssertTrue(
            found.first?.message.hasPrefix("TOML syntax error at column 16: ") ?? false, found.first?.message ?? "")
        XCTAssertEqual(issues(Self.base + "[door]\n[door]\n").first?.line, 6, "a table defined twice")
    }

    func testEveryProblemIsReportedInFileOrder() {
        let found = issues(
            """
            [device]
            id = "bad id"
            [board]
            kind = "sim"
            [door]
            mode = "open"
            [mqtt]
            port = 0
            extra = 1
            """)
        XCTAssertEqual(found.map(\.key), ["device.id", "door.mode", "mqtt.port", "mqtt.extra"])
        XCTAssertEqual(found.map(\.line), [2, 6, 8, 9])
        XCTAssertEqual(
            found[2].formatted(file: "/etc/doorgateway/gateway.toml"),
            "/etc/doorgateway/gateway.toml:8: mqtt.port: 0 is out of range 1…65535")
        XCTAssertEqual(
            ConfigIssue(key: "device.id", line: nil, message: "is required").formatted(file: "g.toml"),
            "g.toml: device.id: is required")
    }

    func testAnUnreadableFileIsOneIssue() {
        XCTAssertThrowsError(try GatewayConfiguration.load(file: "/nonexistent/gateway.toml")) { error in
            XCTAssertEqual(
                (error as? ConfigError)?.issues,
                [ConfigIssue(key: "", line: nil, message: "cannot read the file: open: No such file or directory")])
        }
    }

    // MARK: Example

    func testTheSimulatedBoardsExampleLoadsAndHoldsOnlyDefaults() throws {
        let example = try XCTUnwrap(load(ConfigExample.text(board: .sim)))
        let minimal = try XCTUnwrap(load("[device]\nid = \"\(ConfigExample.deviceID)\"\n[board]\nkind = \"sim\"\n"))
        XCTAssertEqual(example, minimal)
    }

    /// The commented-out keys of the example, uncommented: every optional
    /// table and key. Of a key shown commented out more than once in a table
    /// (the relay's choices), the first is taken.
    static func uncommented(_ text: String) -> String {
        var inBlock = false
        var taken: Set<String> = []
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            if line.hasPrefix("[") || line.hasPrefix("# [") { taken = [] }
            if line.hasPrefix("# [") { inBlock = true; return String(line.dropFirst(2)) }
            if line.isEmpty { inBlock = false }
            if inBlock && line.hasPrefix("# ") { return String(line.dropFirst(2)) }
            if line.range(of: #"^# [a-z_]+ = "#, options: .regularExpression) != nil {
                let key = String(line.dropFirst(2).prefix { $0 != " " })
                guard taken.insert(key).inserted else { return String(line) }
                return String(line.dropFirst(2))
            }
            return String(line)
        }.joined(separator: "\n")
    }

    func testTheExamplesCommentedKeysLoadToo() throws {
        let text = Self.uncommented(ConfigExample.text(board: .pi))
        let c = try XCTUnwrap(load(text))
        XCTAssertEqual(
            c.door.patterns, FeedbackPattern.defaultPatterns, "the commented stock patterns are the stock patterns")
        XCTAssertEqual(
            c.doorContact, .init(line: .name("GPIO5"), activeLow: false, bias: .pullUp, debounceMilliseconds: 30))
        XCTAssertFalse(c.door.doorContact.enabled)
        XCTAssertEqual(c.mqtt.port, 8883)
        XCTAssertEqual(c.mqtt.clientID, ConfigExample.deviceID)
        XCTAssertEqual(c.mqtt.topicPrefix, "doorgateway/\(ConfigExample.deviceID)")
        // The key as the unit's credential: /etc/doorgateway/door.key stays root-only
        // (0600), which gatewayd's user could not read directly.
        XCTAssertEqual(c.mqtt.tls.keyFile, "/run/credentials/gatewayd.service/door.key")
        XCTAssertEqual(c.mqtt.tls.certFile, "/etc/doorgateway/door.crt")
        XCTAssertEqual(c.mqtt.tls.caFile, "/etc/doorgateway/ca.crt")
        XCTAssertEqual(c.control.socket, c.controlSocket)
        XCTAssertEqual(c.controlSocket, "/run/doorgateway/control.sock")
    }

    func testTheExampleDocumentsEveryKeyTheLoaderKnows() {
        let example = ConfigExample.text(board: .pi)
        let withWaits =
            Self.uncommented(example)
            + "\n[[actions]]\nindex = 4\nsteps = [{ wait_ms = 1 }, { pulse = \"strike\", ms = 50 }]\n"
        let known = GatewayConfiguration.knownKeys(readingSource: withWaits)
        XCTAssertGreaterThan(known.count, 80)
        for key in known.sorted() {
            let leaf = key.split(separator: ".").last.map { String($0.prefix { $0 != "[" }) } ?? key
            XCTAssertTrue(
                example.contains("\(leaf) = ") || example.contains("[\(key)]") || example.contains("[\(key).")
                    || example.contains("[[\(key.dropLast(2))]]"),
                "the example does not document \(key)")
        }
        XCTAssertTrue(known.contains("actions[].steps[].wait_ms"))
        XCTAssertTrue(known.contains("inputs.door_contact.open_level"))
    }

    // MARK: Environment and summary

    func testSystemdDirectoriesWinOverTheFile() throws {
        let c = try XCTUnwrap(load(Self.base + "[paths]\nstate_dir = \"/srv/door\"\n"))
        XCTAssertEqual(c.applying(environment: [:]).paths, c.paths)
        let applied = c.applying(environment: [
            "STATE_DIRECTORY": "/var/lib/doorgateway:/var/lib/other", "RUNTIME_DIRECTORY": "/run/dg", "HOME": "/root",
        ])
        XCTAssertEqual(applied.paths, .init(stateDirectory: "/var/lib/doorgateway", runtimeDirectory: "/run/dg"))
        XCTAssertEqual(applied.controlSocket, "/run/dg/control.sock")
        XCTAssertEqual(c.applying(environment: ["STATE_DIRECTORY": ""]).paths.stateDirectory, "/srv/door")
        XCTAssertEqual(GatewayConfiguration.defaultFile(environment: [:]), "/etc/doorgateway/gateway.toml")
        XCTAssertEqual(
            GatewayConfiguration.defaultFile(environment: ["CONFIGURATION_DIRECTORY": "/etc/dg"]),
            "/etc/dg/gateway.toml")
    }

    func testTheSummaryIsOneLinePerSectionAndNamesKeyFilesOnly() throws {
        let c = try XCTUnwrap(
            load(
                Self.realBase + """
                    [mqtt]
                    enabled = true
                    host = "broker.lan"
                    [mqtt.tls]
                    ca_file = "/etc/doorgateway/ca.pem"
                    cert_file = "/etc/doorgateway/d1.crt"
                    key_file = "/etc/doorgateway/d1.key"

                    """))
        let summary = c.summary
        XCTAssertEqual(summary.count, 17)
        XCTAssertEqual(summary.first, "device d1, board real, chip gpiochip0")
        XCTAssertEqual(
            summary[2...3],
            [
                "outputs strike@GPIO17 active-low locked deenergised",
                "firmware hold gpio=17=op,dh,pu (config.txt: gatewayctl config firmware)",
            ])
        let sim = try XCTUnwrap(load(Self.base))
        XCTAssertFalse(sim.summary.contains { $0.hasPrefix("firmware") }, "the simulated board has no firmware hold")
        XCTAssertEqual(
            summary.first { $0.hasPrefix("mqtt ") },
            """
            mqtt broker.lan:8883 MQTT 3.1.1 as d1, TLS ca /etc/doorgateway/ca.pem cert /etc/doorgateway/d1.crt key /etc/doorgateway/d1.key, \
            prefix doorgateway/d1, compat topics none (1→action 0 2→action 1 3→action 2 4→action 3 5→report), tolerance 5 s, uid hmac, outbox 10000, Home Assistant discovery
            """)
        XCTAssertTrue(summary.allSatisfy { !$0.contains("\n") })
    }
}

/// `[[schedules]]`, an action's `schedule`, `door.passage_schedule` and
/// `clock.time_zone` (docs/policy.md).
final class ScheduleConfigTests: XCTestCase {
    static let schedules = """
        [clock]
        time_zone = "Europe/Berlin"
        [door]
        passage_schedule = "shop"
        [[schedules]]
        name = "staff"
        windows = [{ days = ["mon", "tue", "wed", "thu", "fri"], from = "08:00", to = "18:00" }]
        holidays = ["2026-12-25"]
        [[schedules]]
        name = "shop"
        windows = [
          { days = ["mon", "tue", "wed", "thu", "fri"], from = "09:00", to = "18:30" },
          { days = ["sat"], from = "10:00", to = "24:00" },
        ]
        [[actions]]
        index = 0
        steps = [{ pulse = "strike", ms = 3000 }]
        schedule = "staff"
        [[actions]]
        index = 1
        steps = [{ pulse = "strike", ms = 3000 }]

        """

    func testSchedulesLoad() throws {
        let c = try GatewayConfiguration.load(toml: LoaderTests.base + Self.schedules)
        XCTAssertEqual(c.timeZone, "Europe/Berlin")
        XCTAssertEqual(c.door.passageSchedule, "shop")
        XCTAssertEqual(c.door.actions.map(\.schedule), ["staff", nil])
        XCTAssertEqual(c.door.schedules.map(\.name), ["staff", "shop"])
        XCTAssertEqual(
            c.door.schedules[0].windows, [ScheduleWindow(days: [1, 2, 3, 4, 5], from: 480, to: 1080)])
        XCTAssertEqual(c.door.schedules[0].holidays, [CivilDate(year: 2026, month: 12, day: 25)])
        XCTAssertEqual(c.door.schedules[1].windows[1], ScheduleWindow(days: [6], from: 600, to: 1440))
    }

    func testScheduleErrorsNameTheirKey() {
        func issue(_ text: String) -> [String] {
            loadIssues(LoaderTests.base + text).map { "\($0.key): \($0.message)" }
        }
        XCTAssertEqual(
            issue("[[schedules]]\nname = \"s\"\nwindows = [{ days = [\"mo\"], from = \"08:00\", to = \"18:00\" }]"),
            ["schedules[0].windows[0].days[0]: \"mo\" is not a day: mon, tue, wed, thu, fri, sat, sun"])
        XCTAssertEqual(
            issue("[[schedules]]\nname = \"s\"\nwindows = [{ days = [\"mon\"], from = \"22:00\", to = \"06:00\" }]"),
            [
                "schedules[0].windows[0].to: must be after from (a window over midnight is two windows: from … to 24:00, and 00:00 … next day)"
            ])
        XCTAssertEqual(
            issue("[[schedules]]\nname = \"s\"\nwindows = [{ days = [\"mon\"], from = \"8:00\", to = \"18:00\" }]"),
            ["schedules[0].windows[0].from: \"8:00\" is not a time HH:MM (00:00…24:00)"])
        XCTAssertEqual(
            issue("[[schedules]]\nname = \"s\"\nwindows = []\nholidays = [\"2026-02-30\"]"),
            ["schedules[0].holidays[0]: \"2026-02-30\" is not a date YYYY-MM-DD"])
        XCTAssertEqual(
            issue("[[actions]]\nindex = 0\nsteps = [{ pulse = \"strike\", ms = 3000 }]\nschedule = \"nope\""),
            ["actions[0].schedule: there is no schedule named \"nope\" (add a [[schedules]] table)"])
        XCTAssertEqual(
            issue("[door]\npassage_schedule = \"nope\"\n[[schedules]]\nname = \"s\"\nwindows = []"),
            ["door.passage_schedule: there is no schedule named \"nope\" (schedules: s)"])
        XCTAssertEqual(
            issue("[clock]\ntime_zone = \"../../etc/passwd\""),
            [
                "clock.time_zone: \"../../etc/passwd\" is not a zone name like \"Europe/Berlin\" (see /usr/share/zoneinfo)"
            ])
        XCTAssertEqual(
            issue("[[schedules]]\nname = \"s\"\nwindows = []\n[[schedules]]\nname = \"s\"\nwindows = []"),
            ["schedules[1].name: \"s\" is another schedule's name too"])
        XCTAssertEqual(
            issue(
                "[[schedules]]\nname = \"s\"\nwindows = [{ days = [\"mon\"], from = \"08:00\", to = \"18:00\", x = 1 }]"
            ),
            ["schedules[0].windows[0].x: unknown key"])
    }
}
