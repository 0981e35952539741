// make bench (MQTT): events per second through the durable outbox (commit
// with synchronous FULL, publish at QoS 1, delete on PUBACK) to a local
// mosquitto with mutual TLS, beside `mosquitto_pub -l -q 1` sending the same
// payloads in the same run; and event→PUBACK latency p50/p99 one at a time.
// Prints figures only. Usage: mqtt-bench [EVENTS]
import DoorCore
import Foundation
import GatewayMQTT
import GatewayStore
import Logging
import RemoteLink

let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 5000 : 5000
let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mqtt-bench-\(getpid())").path
try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: dir) }

func run(_ path: String, _ args: [String], stdin: Data? = nil) throws -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = args
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    let pipe = Pipe()
    p.standardInput = pipe
    try p.run()
    if let stdin { pipe.fileHandleForWriting.write(stdin) }
    try pipe.fileHandleForWriting.close()
    p.waitUntilExit()
    return p.terminationStatus
}
func openssl(_ args: [String]) throws { _ = try run("/usr/bin/openssl", args) }
try openssl([
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=ca",
    "-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.crt",
])
for name in ["broker", "door", "client"] {
    try openssl([
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(name)", "-keyout",
        "\(dir)/\(name).key", "-out", "\(dir)/\(name).csr",
    ])
    try "subjectAltName=DNS:localhost\n".write(toFile: "\(dir)/\(name).ext", atomically: true, encoding: .utf8)
    try openssl([
        "x509", "-req", "-in", "\(dir)/\(name).csr", "-CA", "\(dir)/ca.crt", "-CAkey", "\(dir)/ca.key",
        "-CAcreateserial", "-days", "1", "-extfile", "\(dir)/\(name).ext", "-out", "\(dir)/\(name).crt",
    ])
}
let port = 20000 + Int(getpid() % 20000)
try """
listener \(port) 127.0.0.1
cafile \(dir)/ca.crt
certfile \(dir)/broker.crt
keyfile \(dir)/broker.key
require_certificate true
allow_anonymous false
use_identity_as_username true
persistence false
user root
""".write(toFile: "\(dir)/mosquitto.conf", atomically: true, encoding: .utf8)
let broker = Process()
broker.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
broker.arguments = ["-c", "\(dir)/mosquitto.conf"]
broker.standardError = FileHandle.nullDevice
try broker.run()
defer { broker.terminate() }
usleep(500_000)

// The transport's settings as gatewayd makes them from `[mqtt]` with these
// values (mutual TLS, no discovery; client ID and prefix are the defaults).
let outboxLimit = 1_000_000
let settings = MQTTSettings(
    host: "localhost", port: port, clientID: "bench",
    tls: .init(enabled: true, caFile: "\(dir)/ca.crt", certFile: "\(dir)/door.crt", keyFile: "\(dir)/door.key"),
    topicPrefix: "doorgateway/bench", homeAssistantDiscovery: false)
let store = try GatewayStore(stateDirectory: "\(dir)/state")
var logger = Logger(label: "bench")
logger.logLevel = .error
// The daemon's own outbox on the store, behind the transport.
let link = MQTTLink(
    settings: settings, deviceID: "bench", outbox: StoreOutbox(store: store, limit: outboxLimit),
    log: logger)
/// The bench sends no command; one heard is dropped.
final class NoCommands: RemoteCommandHandler, Sendable { func received(_ message: RemoteMessage) {} }
try link.start(RemoteWiring(commands: NoCommands()))
while !link.isConnected { usleep(10_000) }

func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
let event = DoorEvent(.accessGranted, reason: "valid_v2", action: 0, uid: TagUID(hex: "04A1B2C3D4E5F6"))

// Latency, one event at a time: commit → publish → PUBACK → row deleted.
var latencies: [Double] = []
for i in 0..<200 {
    let start = ContinuousClock.now
    link.record(event, at: 1_700_000_000 + Int64(i), uidText: "04A1B2C3D4E5F6")
    while link.status.outboxDepth > 0 { usleep(50) }
    latencies.append(seconds(ContinuousClock.now - start) * 1000)
}
latencies.sort()

// Throughput: `count` events as fast as they can be committed, until all are acknowledged.
let t0 = ContinuousClock.now
for i in 0..<count { link.record(event, at: 1_700_000_000 + Int64(i), uidText: "04A1B2C3D4E5F6") }
while link.status.outboxDepth > 0 { usleep(200) }
let ours = Double(count) / seconds(ContinuousClock.now - t0)
link.stop(flushWithin: .zero)

// mosquitto_pub -l -q 1 with the same payloads, in the same run.
let payloads = (0..<count).map {
    String(
        decoding: LinkPayloads.event(
            event, seq: Int64($0), time: 1_700_000_000, device: "bench", uidText: "04A1B2C3D4E5F6"), as: UTF8.self)
}
let input = Data((payloads.joined(separator: "\n") + "\n").utf8)
let t1 = ContinuousClock.now
_ = try run(
    "/usr/bin/mosquitto_pub",
    [
        "-h", "localhost", "-p", "\(port)", "--cafile", "\(dir)/ca.crt", "--cert", "\(dir)/client.crt", "--key",
        "\(dir)/client.key", "-q", "1", "-t", "bench/event", "-l",
    ], stdin: input)
let theirs = Double(count) / seconds(ContinuousClock.now - t1)

print("mqtt: \(count) events to mosquitto over mutual TLS on loopback")
print(String(format: "  durable outbox (SQLite WAL, synchronous FULL, QoS 1, delete on PUBACK): %.0f events/s", ours))
print(
    String(
        format: "  mosquitto_pub -l -q 1, same payloads: %.0f events/s  → ratio %.2f (target ≥ 0.5)", theirs,
        ours / theirs))
print(
    String(
        format: "  event → PUBACK (200 single events): p50 %.2f ms, p99 %.2f ms", latencies[latencies.count / 2],
        latencies[Int(Double(latencies.count - 1) * 0.99)]))
