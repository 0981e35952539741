import DoorCore
import GatewayCLI
import GatewayConfig
import GatewayMQTT
import Synchronization
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// What the daemon puts behind the transport, in memory: an outbox with the
/// store's numbering and bound, and a command handler that asks `RemoteJudge`
/// with the tests' keys and a replay record that outlives a link (as the
/// store's does a restart).
/// The replay record the handler saves, kept across links.
final class SavedReplay: Sendable {
    let record = Mutex(ReplayGuard())
}

final class JudgingHandler: RemoteCommandHandler, Sendable {
    let policy: RemotePolicy
    let keys: [CommandKey: [UInt8]]
    let saved: SavedReplay
    let onOutcome: @Sendable (RemoteOutcome) -> Void
    init(
        policy: RemotePolicy, keys: [CommandKey: [UInt8]], saved: SavedReplay,
        onOutcome: @escaping @Sendable (RemoteOutcome) -> Void
    ) {
        self.policy = policy
        self.keys = keys
        self.saved = saved
        self.onOutcome = onOutcome
    }
    func received(_ message: RemoteMessage) {
        let now = WallClock(unixSeconds: Int64(time(nil)), synchronised: true)
        let outcome = saved.record.withLock { record -> RemoteOutcome? in
            let key = message.channel.keyName.map { RemoteKey(keys[$0]) } ?? .absent
            let j = RemoteJudge.judge(message, policy: policy, key: key, replay: record, now: now)
            if let r = j.replay { record = r }
            return j.outcome
        }
        if let outcome { onOutcome(outcome) }
    }
}

extension RemotePolicy {
    init(_ c: GatewayConfiguration.MQTT, deviceID: String, actionCount: Int = 4) {
        self.init(
            commands: CommandJudge(
                mapping: c.commandMapping, tolerance: Int64(c.toleranceSeconds), deviceID: deviceID,
                actionCount: actionCount),
            homeAssistantOpen: c.homeAssistantOpen)
    }
}
