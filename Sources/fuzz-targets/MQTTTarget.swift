#if canImport(Glibc)
    import Glibc
#endif
import DoorCore
import GatewayMQTT
import Logging

/// A message on a topic the door subscribes to, as the transport names its
/// channel (`MQTTLink.channel(of:)`, what its on_message callback runs for
/// every topic but `homeassistant/status`), then `RemoteJudge` (what the
/// daemon's handler asks): native commands, compat commands, Home
/// Assistant's lock, mode, lockout and action topics. The link is never
/// started: no broker; the tests' keys, a replay record kept in memory.
///
/// Input: one byte (bits 0–2 the topic, bit 3 retained, bit 4 the policy
/// with `home_assistant_open = true`), then the payload.
enum MQTTTarget {
    static func run(_ data: [UInt8]) {
        guard let selector = data.first else { return }
        let haOpen = selector & 0x10 != 0
        let topics = link.topics
        let topic = [
            topics.command, "phone/front-door", topics.lockSet, topics.modeSet, topics.lockoutClear,
            topics.actionSet, "phone/other", topics.command,
        ][Int(selector & 0x07)]
        let retained = selector & 0x08 != 0
        guard let channel = link.channel(of: topic) else {
            expect(topic == "phone/other", "\(topic) is a command topic with no channel")
            return
        }
        let key: RemoteKey =
            switch channel.keyName {
            case .native?: .key(Vectors.nativeKey)
            case .compat?: .key(Vectors.compatKey)
            case nil: .absent
            }
        let judgement = RemoteJudge.judge(
            RemoteMessage(channel: channel, payload: Array(data.dropFirst()), retained: retained),
            policy: haOpen ? policies.open : policies.closed, key: key, replay: replay,
            now: WallClock(unixSeconds: Int64(time(nil)), synchronised: true))
        if let record = judgement.replay { replay = record }
        guard case .accepted(let target, let source)? = judgement.outcome else {
            expect(judgement.replay == nil, "a refused command changed the replay record")
            return
        }
        expect(!retained, "a retained message accepted")
        // Compat command 5 asks for a device report and needs no OTP (docs/formats.md §3).
        if target == .report {
            expect(source == .compat, "a report requested through \(source)")
            return
        }
        // Anything else needs a key this input cannot know, except Home
        // Assistant's topics, and those only when the policy allows HA to act.
        expect(source == .homeAssistant, "a \(source) command accepted: \(target)")
        expect(haOpen, "Home Assistant accepted with home_assistant_open = false")
    }

    final class NoOutbox: Outbox, Sendable {
        func commit(_ messages: [OutgoingMessage]) throws {}
        func waiting(after seq: Int64, limit: Int) throws -> [OutboxRow] { [] }
        func acknowledge(_ seqs: [Int64]) throws {}
        func depth() throws -> Int { 0 }
    }

    static let link = MQTTLink(
        settings: MQTTSettings(
            host: "127.0.0.1", port: 1883, clientID: Vectors.deviceID, tls: .init(enabled: false),
            topicPrefix: "doorgateway/\(Vectors.deviceID)", compatCommandTopics: ["phone/front-door"]),
        deviceID: Vectors.deviceID, outbox: NoOutbox(),
        log: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() }))

    static let policies: (open: RemotePolicy, closed: RemotePolicy) = {
        let commands = CommandJudge(deviceID: Vectors.deviceID)
        return (
            RemotePolicy(commands: commands, homeAssistantOpen: true),
            RemotePolicy(commands: commands, homeAssistantOpen: false)
        )
    }()

    // nonisolated(unsafe): libFuzzer (and the replayer) run one input at a time on one thread.
    nonisolated(unsafe) static var replay = ReplayGuard()
}
