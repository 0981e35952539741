import Dispatch
import DoorCore
import GatewayConfig
import GatewayStore
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// Remote commands, whichever transport heard them: the handler, the rules
// it judges by (`[mqtt.commands]`, Home Assistant's powers) and its replay record.

extension RemoteService {
    /// The configuration's warnings, then the handler every remote command
    /// goes through (`[mqtt.commands]` for either transport); nil, logged,
    /// when the store cannot give it its replay record.
    func makeRemoteCommands(_ name: String) -> StoreCommands? {
        for warning in configuration.warnings { log.warning("configuration: \(warning)") }
        do {
            let deviceID = configuration.deviceID
            return try StoreCommands(
                store: store,
                livePolicy: { [live] in
                    let c = live.current
                    return RemotePolicy(c.mqtt, deviceID: deviceID, actionCount: c.door.actions.count)
                },
                actionCount: { [live] in live.current.door.actions.count },
                clockSynchronised: { [runtime] in runtime.clockSynchronised() },
                submit: { [runtime] outcome in runtime.submit(.remoteCommand(outcome)) }, log: log)
        } catch {
            log.error("\(name): \(error); events stay in the audit log")
            return nil
        }
    }
}

extension RemotePolicy {
    /// `[mqtt]`'s rules for remote commands.
    init(_ c: GatewayConfiguration.MQTT, deviceID: String, actionCount: Int) {
        self.init(
            commands: CommandJudge(
                mapping: c.commandMapping, tolerance: Int64(c.toleranceSeconds), deviceID: deviceID,
                actionCount: actionCount),
            homeAssistantOpen: c.homeAssistantOpen, homeAssistantAdmin: c.homeAssistantAdmin)
    }
}

/// Remote commands as the daemon takes them: the key and the replay record
/// from the store, `RemoteJudge`'s decision, the new record saved before an
/// accepted command reaches the door, the outcome into the door's queue.
/// Judged on the daemon's own serial queue, in the order they came: the
/// transport's network thread only hands the bytes over, and never waits on
/// the store (a slow or full disk must not stall keepalives and acks).
final class StoreCommands: RemoteCommandHandler, Sendable {
    let store: GatewayStore
    /// The rules in effect, read at each message: a reload changes
    /// `[mqtt.commands]`'s mapping and tolerance live (issue 32 L-3).
    private let basePolicy: @Sendable () -> RemotePolicy
    /// The number of actions in effect, read at each message (a reload may change it).
    private let actionCount: @Sendable () -> Int
    /// The policy a message is judged by: the one in effect, with today's actions.
    var policy: RemotePolicy {
        var p = basePolicy()
        p.commands.actionCount = actionCount()
        return p
    }
    let clockSynchronised: @Sendable () -> Bool
    let submit: @Sendable (RemoteOutcome) -> Void
    let log: Logger
    /// Where Home Assistant's admin requests go once allowed and parsed
    /// (set before the link starts).
    var admin: (@Sendable (HomeAssistantAdminRequest) -> Void)? {
        get { adminHook.withLock { $0 } }
        set { adminHook.withLock { $0 = newValue } }
    }
    private let adminHook = Mutex<(@Sendable (HomeAssistantAdminRequest) -> Void)?>(nil)
    /// The replay record as last saved; one message judged at a time.
    private let replay: Mutex<ReplayGuard>
    /// Where messages are judged, one after the other.
    let queue = DispatchQueue(label: "gatewayd.commands")

    convenience init(
        store: GatewayStore, policy: RemotePolicy, actionCount: @escaping @Sendable () -> Int,
        clockSynchronised: @escaping @Sendable () -> Bool,
        submit: @escaping @Sendable (RemoteOutcome) -> Void, log: Logger
    ) throws {
        try self.init(
            store: store, livePolicy: { policy }, actionCount: actionCount, clockSynchronised: clockSynchronised,
            submit: submit, log: log)
    }

    init(
        store: GatewayStore, livePolicy: @escaping @Sendable () -> RemotePolicy,
        actionCount: @escaping @Sendable () -> Int, clockSynchronised: @escaping @Sendable () -> Bool,
        submit: @escaping @Sendable (RemoteOutcome) -> Void, log: Logger
    ) throws {
        self.store = store
        self.basePolicy = livePolicy
        self.actionCount = actionCount
        self.clockSynchronised = clockSynchronised
        self.submit = submit
        self.log = log
        replay = Mutex(try store.replayGuard())
    }

    func received(_ message: RemoteMessage) {
        queue.async { [self] in
            if let outcome = judge(message) { submit(outcome) }
        }
    }

    /// The outcome of one message (nil: not a command), the record saved.
    func judge(_ message: RemoteMessage) -> RemoteOutcome? {
        let now = WallClock(unixSeconds: Int64(time(nil)), synchronised: clockSynchronised())
        return replay.withLock { record -> RemoteOutcome? in
            let key: RemoteKey
            switch message.channel.keyName {
            // Each door its own native key, derived from the site's (M3):
            // a client holding one door's key opens no other door.
            case .native?: key = readKey(.nativeCommand).doorCommandKey(device: policy.commands.deviceID)
            case .compat?: key = readKey(.compatTimestamp)
            case nil: key = .absent
            }
            let judgement = RemoteJudge.judge(message, policy: policy, key: key, replay: record, now: now)
            if let request = judgement.admin { admin?(request) }
            guard let newRecord = judgement.replay else { return judgement.outcome }
            // Saved before the command acts: a crash after the door opened
            // must not revive the message.
            do {
                try store.saveReplayGuard(newRecord)
                record = newRecord
                return judgement.outcome
            } catch {
                log.error("mqtt: replay record not saved, command refused: \(error)")
                return judgement.replayNotSaved("\(error)")
            }
        }
    }

    private func readKey(_ name: KeyName) -> RemoteKey {
        do { return RemoteKey(try store.key(name)) } catch { return .unreadable("\(error)") }
    }
}
