import DoorCore
import Foundation
import TestSupport
import XCTest

/// A real `gatewayd` process on the simulated board with its own pn532-sim
/// child, reached through the real libnfc path, driven through `gatewayctl`.
/// Runs the binaries in `$DOORGATEWAY_E2E_BIN` (make test points it at the
/// static build in out/static) or else the debug build.
final class GatewayUnderTest {
    let dir: URL
    let configFile: URL
    let socket: String
    let logFile: URL
    private(set) var process: Process?
    /// Runs gatewayd through this command (e.g. `unshare … sh -c '… exec "$@"'`);
    /// it must end by exec'ing its arguments so the pid stays gatewayd's.
    var launcher: [String] = []
    /// `[device] id` (a broker test uses the id its certificate's CN names).
    let deviceID: String

    static var binDirectory: URL { TestTiming.binDirectory }
    static var gateway: URL { binDirectory.appendingPathComponent("gateway") }

    /// `extra` is appended to the base configuration (sections it names must not be in the base).
    init(extra: String = "", door: String = "", deviceID: String = "e2e-door") throws {
        self.deviceID = deviceID
        dir = try Self.makeDirectory()
        configFile = dir.appendingPathComponent("gateway.toml")
        socket = dir.appendingPathComponent("run/control.sock").path
        logFile = dir.appendingPathComponent("gatewayd.log")
        try writeConfig(extra: extra, door: door)
    }

    /// The shipped example configuration for `board` (`gateway ctl config
    /// example`), every value stock, with only `[paths]` moved into the
    /// test's own directory.
    /// `edits` replace exact text of the example (each must be found once).
    init(stockExample board: String, edits: [(String, String)] = []) throws {
        deviceID = "front-door"
        dir = try Self.makeDirectory()
        configFile = dir.appendingPathComponent("gateway.toml")
        socket = dir.appendingPathComponent("run/control.sock").path
        logFile = dir.appendingPathComponent("gatewayd.log")
        let example = try Run.process(Self.gateway, ["ctl", "config", "example", "--board", board])
        guard example.status == 0 else { throw E2EError("config example: \(example.stderr)") }
        let stateLine = "state_dir = \"/var/lib/doorgateway\"", runtimeLine = "runtime_dir = \"/run/doorgateway\""
        guard example.stdout.contains(stateLine), example.stdout.contains(runtimeLine) else {
            throw E2EError("the example's [paths] changed; update this test:\n\(example.stdout)")
        }
        let toml = example.stdout
            .replacingOccurrences(of: stateLine, with: "state_dir = \"\(dir.path)/state\"")
            .replacingOccurrences(of: runtimeLine, with: "runtime_dir = \"\(dir.path)/run\"")
        try Self.edited(toml, edits).write(to: configFile, atomically: true, encoding: .utf8)
    }

    /// `toml` with each `(old, new)` of `edits` replaced; each `old` must be there exactly once.
    static func edited(_ toml: String, _ edits: [(String, String)]) throws -> String {
        var toml = toml
        for (old, new) in edits {
            guard toml.components(separatedBy: old).count == 2 else {
                throw E2EError("the configuration does not hold \(old.debugDescription) exactly once; update this test")
            }
            toml = toml.replacingOccurrences(of: old, with: new)
        }
        return toml
    }

    /// The configuration file with `edits` made (`edited`).
    func editConfig(_ edits: [(String, String)]) throws {
        try Self.edited(String(contentsOf: configFile, encoding: .utf8), edits)
            .write(to: configFile, atomically: true, encoding: .utf8)
    }

    /// A stock example's reader moved to the external pn532-sim `sim`.
    func moveStockReader(to sim: PN532SimProcess) throws {
        try editConfig([
            ("connstring = \"pn532_i2c:/dev/i2c-1\"", "connstring = \"pn532_uart:\(sim.tty)\""),
            ("simulator = \"spawn\"", "simulator = \"\(sim.socket)\""),
        ])
    }

    private static func makeDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    func writeConfig(extra: String = "", door: String = "") throws {
        try writeConfig(extra: extra, door: door, actions: Self.baseActions)
    }

    /// The `[reader]` lines of a door on an external pn532-sim `sim` (the test
    /// holds its control socket and, with the door stopped, its reader).
    static func readerLines(_ sim: PN532SimProcess) -> String {
        """
        simulator = "\(sim.socket)"
        connstring = "pn532_uart:\(sim.tty)"
        """
    }

    /// A door with the base configuration (or `actions`) on the external pn532-sim `sim`.
    static func onSim(_ sim: PN532SimProcess, deviceID: String? = nil, actions: String = baseActions) throws
        -> GatewayUnderTest
    {
        let g = try deviceID.map { try GatewayUnderTest(deviceID: $0) } ?? GatewayUnderTest()
        try g.writeConfig(reader: readerLines(sim), actions: actions)
        return g
    }

    /// The registry row of `uid` (`tags list`), nil when there is none.
    func issuedTag(_ uid: String) throws -> JSONValue? {
        (try ctlJSON(["tags", "list"])["tags"]?.arrayValue ?? []).first { $0["uid"]?.stringValue == uid }
    }

    /// `[fleet]` on (site `main-site`, `publicKey`), over an MQTT broker that
    /// is not there (port 9, plain TCP): the fleet's receiver is made all the same.
    static func fleetWithoutBroker(publicKey: String) -> String {
        """
        [mqtt]
        enabled = true
        host = "127.0.0.1"
        port = 9
        [mqtt.tls]
        enabled = false
        [fleet]
        enabled = true
        site_id = "main-site"
        site_public_key = "\(publicKey)"
        """
    }

    /// The base configuration's two actions: 0 "front" (a 300 ms pulse), 1 "long" (3 s).
    static let baseActions = ConfigText.action(0, "front") + "\n" + ConfigText.action(1, "long", ms: 3000)

    /// The base configuration with `actions` (`[[actions]]` tables) in place
    /// of its two, `clock` lines added to its `[clock]`, and `reader` the
    /// lines of its `[reader]` (by default a pn532-sim the daemon spawns).
    func writeConfig(
        extra: String = "", door: String = "", clock: String = "", reader: String = #"simulator = "spawn""#,
        actions: String
    ) throws {
        let toml = """
            [device]
            id = "\(deviceID)"
            [board]
            kind = "sim"
            [reader]
            \(reader)
            [door]
            same_tag_quiet_ms = 1000
            \(door)
            \(actions)
            [clock]
            declare_synchronised = true
            \(clock)
            [paths]
            state_dir = "\(dir.path)/state"
            runtime_dir = "\(dir.path)/run"
            \(extra)
            """
        try toml.write(to: configFile, atomically: true, encoding: .utf8)
    }

    /// The gateway binary the daemon runs as (the test's binary by default).
    var executable = GatewayUnderTest.gateway

    func start(environment extra: [String: String] = [:]) throws {
        let p = Process()
        let command = launcher + [executable.path, "daemon", "--config", configFile.path]
        p.executableURL = URL(fileURLWithPath: command[0])
        p.arguments = Array(command.dropFirst())
        p.environment = ProcessInfo.processInfo.environment.merging(extra) { $1 }
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let log = try FileHandle(forWritingTo: logFile)
        p.standardError = log
        p.standardOutput = log
        try p.run()
        process = p
        try waitFor("gatewayd answering on \(socket)", timeout: 15, interval: 0.05, context: { self.log }) {
            if !p.isRunning { throw E2EError("gatewayd exited with \(p.terminationStatus):\n\(self.log)") }
            return FileManager.default.fileExists(atPath: socket) && (try? ctl(["status"]))?.status == 0 ? true : nil
        }
    }

    /// SIGTERM (or `signal`) and wait; returns the exit status.
    @discardableResult
    func stop(signal sig: Int32 = SIGTERM) -> Int32 {
        guard let p = process else { return -1 }
        if p.isRunning { kill(p.processIdentifier, sig) }
        let deadline = Date() + 10
        while p.isRunning && Date() < deadline { usleep(20_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() }
        process = nil
        return p.terminationStatus
    }

    deinit {
        stop()
        killOrphanedSimulator()
        try? FileManager.default.removeItem(at: dir)
    }

    /// The daemon's pn532-sim, found by its control socket path (unique to this test).
    func simulatorPIDs() -> [Int32] {
        let r = try? Run.process(
            URL(fileURLWithPath: "/usr/bin/pgrep"), ["-f", dir.appendingPathComponent("run/pn532-sim.sock").path])
        return (r?.stdout ?? "").split(separator: "\n").compactMap { Int32($0) }
    }

    /// A safety net only: pn532-sim exits with its parent (--parent-pid), and
    /// a test asserts that; this ends one a failing build might leave.
    func killOrphanedSimulator() {
        for pid in simulatorPIDs() { kill(pid, SIGKILL) }
    }

    var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    func ctl(_ args: [String], stdin: String? = nil) throws -> ProcessResult {
        var env = ProcessInfo.processInfo.environment
        env["DOORGATEWAY_SOCKET"] = socket
        return try Run.process(Self.gateway, ["ctl"] + args, stdin: stdin, environment: env, timeout: 20)
    }

    /// `gatewayctl ARGS --json`, which must succeed; its parsed answer.
    @discardableResult
    func ctlJSON(_ args: [String], stdin: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws
        -> JSONValue
    {
        let r = try ctl(args + ["--json"], stdin: stdin)
        guard r.status == 0 else {
            throw E2EError("gatewayctl \(args.joined(separator: " ")) exited \(r.status): \(r.stderr)")
        }
        return try JSONValue.parse(
            Array(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines).utf8), maxDepth: 32, maxBytes: 16 << 20)
    }

    func status() throws -> JSONValue { try ctlJSON(["status"]) }

    /// The audit log's rows (newest last).
    func auditKinds() throws -> [String] {
        let rows = try ctlJSON(["log", "--limit", "200"])
        return (rows.arrayValue ?? []).compactMap { $0["kind"]?.stringValue }
    }

    /// Waits until an event of `kind` (with `reason` when given) appears in
    /// the audit log after `after` events; returns it.
    @discardableResult
    func waitForEvent(_ kind: String, reason: String? = nil, after: Int = 0, timeout: TimeInterval = 10) throws
        -> JSONValue
    {
        try waitForEvent(anyOf: [kind], reason: reason, after: after, timeout: timeout)
    }

    /// Waits until an event of one of `kinds` (with `reason` when given)
    /// appears in the audit log after `after` events; returns the first.
    @discardableResult
    func waitForEvent(anyOf kinds: [String], reason: String? = nil, after: Int = 0, timeout: TimeInterval = 10)
        throws -> JSONValue
    {
        try waitFor(
            "no \(kinds.joined(separator: " or "))\(reason.map { " (\($0))" } ?? "") event", timeout: timeout,
            interval: 0.05, context: { "log: \((try? self.auditKinds()) ?? [])\n\(self.log.suffix(3000))" }
        ) {
            (try ctlJSON(["log", "--limit", "500"]).arrayValue ?? []).dropFirst(after).first {
                kinds.contains($0["kind"]?.stringValue ?? "")
                    && (reason == nil || $0["reason"]?.stringValue == reason)
            }
        }
    }

    /// The access event (granted or denied) the door writes after `after` events.
    func accessEvent(after: Int, timeout: TimeInterval = 10) throws -> JSONValue {
        try waitForEvent(anyOf: ["access_granted", "access_denied"], after: after, timeout: timeout)
    }

    func eventCount() throws -> Int { (try ctlJSON(["log", "--limit", "100000"]).arrayValue ?? []).count }

    /// `gatewayctl log --verify` through the daemon: the audit chain walked
    /// from its anchor to its head, every link checked; fails the test unless intact.
    func assertChainIntact(_ what: String = "", file: StaticString = #filePath, line: UInt = #line) throws {
        let verify = try ctl(["log", "--verify"])
        XCTAssertEqual(verify.status, 0, "\(what) \(verify.stdout)\(verify.stderr)", file: file, line: line)
    }

    /// Provisioning as a person does it: `arm` (the gatewayctl command arming
    /// it), then a factory tag of `uid` presented (`tag`: `--blank`, an
    /// NTAG213 sticker, or `--ntag424`), written and verified. The tag stays
    /// in the field; the `provisioning_written` event.
    @discardableResult
    func provisionTag(_ uid: String, tag: String = "--blank", arm: [String] = ["provision", "--action", "0"]) throws
        -> JSONValue
    {
        let seen = try eventCount()
        try ctlJSON(arm)
        try waitForEvent("provisioning_armed", after: seen)
        try ctlJSON(["sim", "tap", tag, "--uid", uid])
        let written = try waitForEvent("provisioning_written", after: seen, timeout: 20)
        guard written["uid"]?.stringValue == uid else { throw E2EError("written for another UID: \(written)") }
        return written
    }

    /// A sticker written (`provisionTag`), its image saved and the tag taken off. The image's path.
    @discardableResult
    func issueSticker(_ uid: String, arm: [String] = ["provision", "--action", "0"]) throws -> String {
        try provisionTag(uid, arm: arm)
        let dump = dir.appendingPathComponent("\(uid).dump").path
        try ctlJSON(["sim", "dump", dump])
        try ctlJSON(["sim", "remove"])
        return dump
    }

    /// The sticker image `dump` presented after the same-tag quiet window; the
    /// event of `kind` (and `reason`) it makes; the tag taken off again.
    @discardableResult
    func tapSticker(_ dump: String, expect kind: String, reason: String? = nil) throws -> JSONValue {
        E2ETiming.outlastQuietWindow()
        let seen = try eventCount()
        try ctlJSON(["sim", "tap", "--dump", dump])
        let row = try waitForEvent(kind, reason: reason, after: seen)
        try ctlJSON(["sim", "remove"])
        return row
    }

    /// The tag on the reader taken off and, after the quiet window, put back;
    /// the event of `kind` (and `reason`) it makes. The tag stays on.
    @discardableResult
    func retap(expect kind: String, reason: String? = nil) throws -> JSONValue {
        try ctlJSON(["sim", "remove"])
        E2ETiming.outlastQuietWindow()
        let seen = try eventCount()
        try ctlJSON(["sim", "reinsert"])
        return try waitForEvent(kind, reason: reason, after: seen)
    }
}

struct E2EError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
