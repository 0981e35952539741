import DoorCore
import Foundation
import TestSupport
import XCTest

/// gatewayd with a real broker: phone-style commands open the door once,
/// and the outbox delivers everything, in order, across a crash.
final class MQTTStoryTests: XCTestCase {
    func mqttSection(_ broker: MosquittoBroker) -> String {
        broker.configurationSection(compatTopic: "phone/front-door")
    }

    func testPhoneCommandOpensOnceAndItsReplayIsRejected() throws {
        let broker = try MosquittoBroker()
        try broker.start()
        let g = try GatewayUnderTest(extra: mqttSection(broker), deviceID: MosquittoBroker.doorID)
        try g.start()
        try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
        // Home Assistant's certificate listens: the phone's publishes below (one connection per certificate).
        let events = try broker.subscribe("doorgateway/front-door/event", as: "homeassistant")
        let keyFile = g.dir.appendingPathComponent("otp.key").path
        try g.ctlJSON(["keys", "otp", "new"])
        let export = try g.ctl(["keys", "otp", "export"])
        try export.stdout.write(toFile: keyFile, atomically: true, encoding: .utf8)
        let message = try g.ctl(["otp", "make", "--key-file", keyFile]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        XCTAssertEqual(try broker.publish("phone/front-door", message).status, 0)
        try g.waitForEvent("remote_accepted")
        try g.waitForOutput("strike", "unlocked")
        _ = try broker.publish("phone/front-door", message)
        let rejected = try g.waitForEvent("remote_rejected")
        XCTAssertEqual(rejected["reason"]?.stringValue, "replay")
        let lines = events.wait { $0.contains { $0.contains("remote_rejected") } }
        XCTAssertTrue(lines.contains { $0.contains(#""kind":"remote_accepted""#) }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains(#""reason":"replay""#) })
    }

    /// The broker a Home Assistant OS user already has (users and passwords,
    /// TLS with a server certificate only): gatewayd logs in with the password
    /// from a systemd credential and its events arrive; a wrong password keeps
    /// it out, with the broker's reason in status and the password nowhere in
    /// the log; plain TCP is warned about once.
    func testTheDoorLogsInToABrokerWithAUserAndPassword() throws {
        let broker = try LoginBroker()
        try broker.start()
        for (password, tls) in [(LoginBroker.password, true), ("wrong password", true), (LoginBroker.password, false)] {
            let credentials = try XCTUnwrap(
                FileManager.default.temporaryDirectory.appendingPathComponent("creds-\(UUID().uuidString.prefix(8))"))
            try FileManager.default.createDirectory(at: credentials, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: credentials) }
            try (password + "\n").write(
                to: credentials.appendingPathComponent("mqtt.password"), atomically: true, encoding: .utf8)
            let g = try GatewayUnderTest(
                extra: """
                    [mqtt]
                    enabled = true
                    host = "localhost"
                    port = \(tls ? broker.tlsPort : broker.plainPort)
                    username = "\(LoginBroker.user)"
                    password_file = "mqtt.password"
                    [mqtt.tls]
                    \(tls ? "ca_file = \"\(broker.path("ca.crt"))\"" : "enabled = false")
                    """,
                deviceID: "front-door")
            try g.start(environment: ["CREDENTIALS_DIRECTORY": credentials.path])
            if password == LoginBroker.password {
                try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
                let events = try MosquittoBroker.Subscription(
                    arguments: [
                        "-h", "localhost", "-p", "\(broker.plainPort)", "-u", LoginBroker.user, "-P",
                        LoginBroker.password, "-q", "1", "-t", "doorgateway/front-door/event", "-F", "%t|%r|%p",
                    ])
                try g.ctlJSON(["open", "--action", "0"])
                let lines = events.wait { $0.contains { $0.contains("admin_open") } }
                XCTAssertTrue(lines.contains { $0.contains(#""kind":"admin_open""#) }, "\(lines)\n\(g.log)")
            } else {
                var broker: JSONValue?
                for _ in 0..<200 {
                    broker = try g.status()["broker"]
                    if broker?["last_error"]?.stringValue?.lowercased().contains("not authori") == true { break }
                    usleep(50_000)
                }
                XCTAssertTrue(
                    broker?["last_error"]?.stringValue?.lowercased().contains("not authori") == true,
                    "\(broker.map { "\($0)" } ?? "nil")\n\(g.log)")
                XCTAssertNotEqual(broker?["connected"], .bool(true))
            }
            XCTAssertEqual(g.stop(), 0, g.log)
            XCTAssertFalse(g.log.contains(password), "the password is in the log:\n\(g.log)")
            let warnings = g.log.components(separatedBy: "plain TCP to localhost").count - 1
            XCTAssertEqual(warnings, tls ? 0 : 1, g.log)
        }
    }

    /// Home Assistant's "last access" counts every kind of open with its
    /// source, and a restart does not forget it (it is read back from the
    /// audit log). The door's state is retained, so HA's account reads it.
    func testLastAccessSurvivesARestart() throws {
        let broker = try MosquittoBroker()
        try broker.start()
        let g = try GatewayUnderTest(extra: mqttSection(broker), deviceID: MosquittoBroker.doorID)
        try g.start()
        try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
        func retainedState() throws -> JSONValue? {
            let sub = try broker.subscribe("doorgateway/front-door/state", as: "homeassistant")
            guard let line = sub.wait(timeout: 5, { !$0.isEmpty }).last else { return nil }
            return try JSONValue.parse(Array(line.split(separator: "|", maxSplits: 2)[2].utf8))
        }
        XCTAssertEqual(try retainedState()?["last_access"], .null, "no access yet")
        do {  // gone before the next client with HA's certificate (one connection per certificate)
            let early = try broker.subscribe("doorgateway/front-door/last_access", as: "homeassistant")
            XCTAssertEqual(early.wait(timeout: 1) { !$0.isEmpty }, [], "nothing retained before the first access")
        }
        try g.ctlJSON(["open", "--action", "0"])
        try g.waitForEvent("admin_open")
        try waitUntil { try retainedState()?["last_access_source"]?.stringValue == "admin" }
        let before = try XCTUnwrap(try retainedState()?["last_access"]?.stringValue)
        XCTAssertEqual(g.stop(), 0, g.log)
        try g.start()
        try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
        let after = try XCTUnwrap(try retainedState())
        XCTAssertEqual(after["last_access"]?.stringValue, before, "\(after)")
        XCTAssertEqual(after["last_access_source"]?.stringValue, "admin")
        // Home Assistant's sensor reads its own retained topic (nothing before the first access).
        let sensor = try broker.subscribe("doorgateway/front-door/last_access", as: "homeassistant")
        let line = try XCTUnwrap(sensor.wait(timeout: 5) { !$0.isEmpty }.first)
        XCTAssertEqual(line, #"doorgateway/front-door/last_access|1|{"time":"\#(before)","source":"admin"}"#)
    }

    /// A sticker's label goes on its access events only when label_in_events
    /// is on (labels are often names); every sticker presented is also a scan
    /// on …/tag for HA's tag integration, with the UID as events name it.
    func testLabelsAreOptInAndEveryTapIsATagScan() throws {
        let broker = try MosquittoBroker()
        try broker.start()
        for labels in [false, true] {
            let g = try GatewayUnderTest(
                extra: mqttSection(broker).replacingOccurrences(
                    of: "[mqtt]\n", with: "[mqtt]\nlabel_in_events = \(labels)\n"),
                deviceID: MosquittoBroker.doorID)
            try g.start()
            try waitUntil { (try g.status()["broker"]?["connected"]) == .bool(true) }
            let events = try broker.subscribe("doorgateway/front-door/event", as: "homeassistant")
            let scans = try broker.subscribe("doorgateway/front-door/tag", as: "phone-alice")
            try g.provisionTag("04A1B2C3D4E5F6", arm: ["provision", "--action", "0", "--label", "Alice"])
            try g.ctlJSON(["sim", "remove"])
            E2ETiming.outlastQuietWindow()  // longer than same_tag_quiet_ms
            try g.ctlJSON(["sim", "reinsert"])
            try g.waitForEvent("access_granted")
            let granted = try XCTUnwrap(
                events.wait { $0.contains { $0.contains("access_granted") } }.first { $0.contains("access_granted") })
            XCTAssertEqual(granted.contains(#""label":"Alice""#), labels, granted)
            let scan = try XCTUnwrap(scans.wait { !$0.isEmpty }.first, "a tap is a tag scan")
            let uid = try XCTUnwrap(
                try JSONValue.parse(Array(granted.split(separator: "|", maxSplits: 2)[2].utf8))["uid"]?.stringValue)
            XCTAssertEqual(scan, #"doorgateway/front-door/tag|0|{"uid":"\#(uid)"}"#)
            XCTAssertEqual(g.stop(), 0, g.log)
        }
    }

    /// The broker stopped → 1 000 events → gatewayd killed (SIGKILL) and
    /// restarted → the broker started → all 1 000 delivered, in order.
    func testOutboxSurvivesBrokerOutageAndACrash() throws {
        let broker = try MosquittoBroker()
        let g = try GatewayUnderTest(extra: mqttSection(broker), deviceID: MosquittoBroker.doorID)
        try g.start()
        let client = try ControlConnection(path: g.socket)
        for i in 0..<1000 {
            let r = try client.call("mode", ["mode": i % 2 == 0 ? "passage" : "normal"])
            XCTAssertEqual(r["ok"], .bool(true))
        }
        try waitUntil(timeout: 20) {
            (try g.ctlJSON(["log", "--limit", "5000"]).arrayValue ?? []).filter {
                $0["kind"]?.stringValue == "mode_changed"
            }.count >= 1000
        }
        XCTAssertGreaterThanOrEqual(try g.status()["broker"]?["outbox"]?.intValue ?? 0, 1000)
        g.stop(signal: SIGKILL)
        g.killOrphanedSimulator()
        try g.start()
        try broker.start()
        let sub = try broker.subscribe("doorgateway/front-door/event")
        let lines = sub.wait(timeout: 60) { $0.filter { $0.contains(#""kind":"mode_changed""#) }.count >= 1000 }
        var seen = Set<Int>()
        var order: [Int] = []
        for line in lines {
            let json = try JSONValue.parse(Array(line.split(separator: "|", maxSplits: 2)[2].utf8))
            guard let seq = json["seq"]?.intValue, seen.insert(seq).inserted else { continue }  // QoS 1 duplicates
            if json["kind"]?.stringValue == "mode_changed" { order.append(seq) }
        }
        XCTAssertEqual(
            order.count, 1000,
            "every event delivered; status \((try? g.status()["broker"]) ?? .null)\n\(g.log.suffix(2000))")
        XCTAssertEqual(order, order.sorted(), "in order")
        try waitUntil { (try g.status()["broker"]?["outbox"]?.intValue) == 0 }
    }
}

/// A persistent control-socket connection for many requests.
final class ControlConnection {
    let fd: Int32
    var buffer: [UInt8] = []
    var id = 0
    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { for (i, c) in path.utf8.enumerated() { $0[i] = c } }
        let ok = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard ok == 0 else { throw E2EError("cannot connect to \(path)") }
    }
    deinit { close(fd) }

    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    func readLine() throws -> String {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !buffer.contains(0x0A) {
            let n = read(fd, &chunk, chunk.count)
            guard n > 0 else { throw E2EError("connection closed") }
            buffer += chunk[0..<n]
        }
        let i = buffer.firstIndex(of: 0x0A)!
        defer { buffer.removeSubrange(...i) }
        return String(decoding: buffer[..<i], as: UTF8.self)
    }

    func call(_ method: String, _ params: [String: String] = [:]) throws -> JSONValue {
        id += 1
        let p = JSONValue.object(params.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
        send(JSONValue.object([("id", .int(id)), ("method", .string(method)), ("params", p)]).serialized)
        return try JSONValue.parse(Array(try readLine().utf8))
    }
}
