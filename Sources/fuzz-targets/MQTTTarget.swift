#if canImport(Glibc)
    import Glibc
#endif
import DoorCore
import GatewayConfig
import GatewayStore
import Logging
#if DEBUG || FUZZING
    // `judge` is internal to the adapter; a release build without FUZZING cannot see it.
    @testable import GatewayMQTT
#endif

/// A message on a topic the door subscribes to, through MQTTLink's own
/// `judge` (what its on_message callback runs for every topic but
/// `homeassistant/status`): native commands, compat commands, Home Assistant's
/// lock, mode, lockout and action topics. The links are never started: no
/// broker, a store in a temporary directory (removed at exit) with the tests' keys.
///
/// Input: one byte (bits 0–2 the topic, bit 3 retained, bit 4 the link with
/// `home_assistant_open = true`), then the payload.
enum MQTTTarget {
    static func run(_ data: [UInt8]) {
        #if DEBUG || FUZZING
            guard let selector = data.first else { return }
            let link = selector & 0x10 != 0 ? links.open : links.closed
            let topics = [
                link.topics.command, "phone/front-door", link.topics.lockSet, link.topics.modeSet,
                link.topics.lockoutClear, link.topics.actionSet, "phone/other", link.topics.command,
            ]
            let retained = selector & 0x08 != 0
            let outcome = link.judge(
                topic: topics[Int(selector & 0x07)], payload: Array(data.dropFirst()), retained: retained)
            guard case .accepted(let target, let source)? = outcome else { return }
            expect(!retained, "a retained message accepted")
            // Compat command 5 asks for a device report and needs no OTP (COMPAT §3).
            if target == .report {
                expect(source == "compat", "a report requested through \(source)")
                return
            }
            // Anything else needs a key this input cannot know, except Home
            // Assistant's topics, and those only when the link allows HA to act.
            expect(source == "homeassistant", "a \(source) command accepted: \(target)")
            expect(link === links.open, "Home Assistant accepted with home_assistant_open = false")
        #else
            _ = data
        #endif
    }

    #if DEBUG || FUZZING
        static let links: (open: MQTTLink, closed: MQTTLink) = {
            // In memory when it can be: accepted commands write the replay record (fsync).
            let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
            var template = "\(base)/doorgateway-fuzz-mqtt-XXXXXX".utf8CString
            let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
            atexit { MQTTTarget.removeStateDirectory() }
            stateDirectory = dir
            do {
                let store = try GatewayStore(stateDirectory: dir)
                try store.setKey(.compatTimestamp, Vectors.compatKey, now: 0)
                try store.setKey(.nativeCommand, Vectors.nativeKey, now: 0)
                func link(_ haOpen: Bool) throws -> MQTTLink {
                    let toml = """
                        [device]
                        id = "\(Vectors.deviceID)"
                        [board]
                        kind = "sim"
                        [mqtt]
                        enabled = true
                        host = "127.0.0.1"
                        home_assistant_open = \(haOpen)
                        [mqtt.tls]
                        enabled = false
                        [mqtt.commands]
                        compat_topics = ["phone/front-door"]
                        """
                    let l = try MQTTLink(
                        configuration: GatewayConfiguration.load(toml: toml).mqtt, deviceID: Vectors.deviceID,
                        store: store, log: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }))
                    l.clockSynchronised = { true }
                    return l
                }
                return (try link(true), try link(false))
            } catch {
                fputs("fuzz-targets: mqtt setup: \(error)\n", stderr)
                exit(2)
            }
        }()

        nonisolated(unsafe) static var stateDirectory: String?

        static func removeStateDirectory() {
            guard let dir = stateDirectory else { return }
            if let d = opendir(dir) {
                while let e = readdir(d) {
                    let name = withUnsafeBytes(of: e.pointee.d_name) {
                        String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                    }
                    if name != "." && name != ".." { unlink(dir + "/" + name) }
                }
                closedir(d)
            }
            rmdir(dir)
        }
    #endif
}
