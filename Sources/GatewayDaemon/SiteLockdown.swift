import Dispatch
import DoorCore
import GatewayConfig
import GatewayControl
import GatewayStore
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// The site's lockdown and signed site commands on the daemon's side (issue 36,
// docs/policy.md "Lockdown", docs/fleet.md "Site commands"): the lockdown is
// saved in the store before the door acts on it (a restarted door is still
// locked down), and every way in — `gatewayctl lockdown`, Home Assistant's
// admin switch, the site's signed command — goes through `DoorRuntime.lockdown`.

/// One lockdown change at a time, whoever asks (control socket, fleet, Home Assistant).
private let lockdownChanges = Mutex(0)

extension DoorRuntime {
    /// The door settings a starting runtime's machine takes: the file's, with
    /// the store's lockdown. Unreadable, the door starts locked down (fail
    /// closed: a lockdown nobody can see ended is not lifted by a restart);
    /// `gatewayctl lockdown end` lifts it once the store answers.
    static func withPersistedLockdown(_ door: DoorSettings, store: GatewayStore, log: Logger) -> DoorSettings {
        var settings = door
        do {
            settings.initialLockdown = try store.lockdown()
            if let l = settings.initialLockdown {
                log.notice("lockdown: in force since \(UTCTime.iso8601(l.since)), by \(l.by) (\(l.source))")
            }
        } catch {
            log.error(
                "lockdown: the store's lockdown state is unreadable (\(error)); starting locked down (gatewayctl lockdown end lifts it)"
            )
            settings.initialLockdown = Lockdown(by: "unknown", source: "store", since: Int64(time(nil)))
        }
        return settings
    }

    /// Starts or ends the site's lockdown: saved first, then the machine
    /// decides (`Lockdown.swift`). Returns the events; none when nothing
    /// changed (already in, or out of, lockdown). Throws when the store did
    /// not take it: the door then acts on nothing.
    func lockdown(_ request: LockdownRequest) throws -> [DoorEvent] {
        try lockdownChanges.withLock { _ in
            let (held, mode) = sync { (machine.lockdown, machine.mode) }
            switch request {
            case .start(let by, let source, let at):
                guard held == nil else { return [] }
                try store.saveLockdown(
                    Lockdown(by: by, source: source, since: at, modeBefore: mode == .lockdown ? .lockdown : .normal))
            case .end:
                guard held != nil else { return [] }
                try store.saveLockdown(nil)
            }
            return handleNow(.lockdown(request))
        }
    }

    /// `status`'s and the state document's `lockdown`.
    static func lockdownStatus(_ machine: DoorMachine) -> JSONValue {
        machine.lockdown?.json ?? Lockdown.inactiveJSON
    }
}

/// The site's signed commands heard on the fleet's topics or keys: judged
/// (`SiteCommandRules`) with this door's site key, site id, freshness
/// window and replay record, the record saved before the door acts, then
/// handed to the door. A refusal is audited (`site_command_refused`, the
/// reason and where it came from). One serial queue, in the order heard.
final class SiteCommands: Sendable, MadeWithParts {
    let parts: ServiceParts
    /// This door's own fleet topic (or key): a command it sent itself, heard
    /// back there, is a replay of what it already did, not worth an audit row.
    let ownTopic: String
    let queue = DispatchQueue(label: "gatewayd.site-commands")
    private let replay: Mutex<ReplayGuard>
    /// The digests of the commands this door sent (`gatewayctl … --site-key`), the newest 64.
    private let sent = Mutex<[[UInt8]]>([])

    /// A command this door sends: heard back on its own topic, it is not audited as a replay.
    func noteSent(_ payload: [UInt8]) {
        sent.withLock { s in
            s.append(Crypto.sha256(payload))
            if s.count > 64 { s.removeFirst() }
        }
    }

    init(parts: ServiceParts, ownTopic: String) throws {
        self.parts = parts
        self.ownTopic = ownTopic
        replay = Mutex(try parts.store.siteReplayGuard())
    }

    func received(_ payload: [UInt8], source: String) {
        queue.async { [self] in _ = handle(payload, source: source) }
    }

    /// Judges and acts on one command; the accepted command, or the refusal.
    @discardableResult
    func handle(_ payload: [UInt8], source: String) -> Result<SiteCommand, SiteCommandRefusal> {
        let c = live.current
        let now = WallClock(unixSeconds: Int64(time(nil)), synchronised: runtime.clockSynchronised())
        let verdict = replay.withLock { record -> Result<SiteCommand, SiteCommandRefusal> in
            var next = record
            let verdict = SiteCommandRules.judge(
                payload, sitePublicKey: c.fleet.sitePublicKey, siteID: c.fleet.siteID, now: now,
                tolerance: Int64(c.mqtt.toleranceSeconds), replay: &next)
            guard case .success = verdict, next != record else { return verdict }
            // Saved before the door acts: a restart must not revive the command.
            do {
                try store.saveSiteReplayGuard(next)
                record = next
                return verdict
            } catch {
                return .failure(SiteCommandRefusal(.replayRecordFull, "replay record not saved: \(error)"))
            }
        }
        switch verdict {
        case .failure(let refusal)
        where refusal.code == .replay && source == ownTopic
            && sent.withLock({ $0.contains(Crypto.sha256(payload)) }):
            log.debug("site command: this door's own, heard back on \(source)")
        case .failure(let refusal):
            log.warning("site command on \(source) refused: \(refusal)")
            runtime.note(
                DoorEvent(.siteCommandRefused, reason: refusal.code.rawValue, source: "site"),
                detail: "\(source): \(refusal.detail)".prefix(256).description)
        case .success(let command):
            log.notice("site command \(command.kind.rawValue) by \(command.by) from \(source)")
            act(command, now: now)
        }
        return verdict
    }

    private func act(_ command: SiteCommand, now: WallClock) {
        switch command.kind {
        case .lockdownStart, .lockdownEnd:
            let request: LockdownRequest =
                command.kind == .lockdownStart
                ? .start(by: command.by, source: "site", at: now.unixSeconds) : .end(by: command.by, source: "site")
            do { _ = try runtime.lockdown(request) } catch {
                log.error("lockdown: not saved, the site's \(command.kind.rawValue) not applied: \(error)")
                runtime.note(
                    DoorEvent(.siteCommandRefused, reason: "store", source: "site", who: command.by),
                    detail: "lockdown not saved: \(error)".prefix(256).description)
            }
        case .fireAlarm, .fireClear:
            // The alarm saved before the door acts, as its replay record was:
            // a stop between the two must not leave a command that counts as
            // heard and an alarm that a restart forgets (the machine saves it
            // again after the release; a failure here is logged, not waited on).
            if command.kind == .fireAlarm {
                do { try store.saveFireLatch(FireLatch(state: .alarm, site: true)) } catch {
                    log.error("fire: the site's alarm not saved before it acts: \(error)")
                }
            }
            _ = runtime.handleNow(.siteFire(active: command.kind == .fireAlarm, by: command.by))
        }
    }
}

extension HomeAssistantAdmin {
    /// Home Assistant's lockdown switch (`home_assistant_admin` only): this
    /// door, audited `by=homeassistant`; the store not taking it is refused.
    func lockdownSwitch(_ on: Bool) {
        let who = CommandSource.homeAssistant.rawValue
        let request: LockdownRequest =
            on ? .start(by: who, source: who, at: Int64(time(nil))) : .end(by: who, source: who)
        do { _ = try runtime.lockdown(request) } catch {
            log.error("home assistant admin: lockdown not saved: \(error)")
            runtime.submit(
                .remoteCommand(.rejected(code: "store", detail: "lockdown not saved: \(error)", source: .homeAssistant))
            )
        }
    }
}

extension RemoteService {
    /// The site commands' handler for the fleet receiver (nil, logged, when
    /// the store cannot give its replay record: commands are then not heard).
    func makeSiteCommands(ownTopic: String) -> SiteCommands? {
        do { return try SiteCommands(parts: parts, ownTopic: ownTopic) } catch {
            log.error("site commands: the replay record is unreadable, site commands are not taken: \(error)")
            return nil
        }
    }
}

extension ControlService {
    /// `gatewayctl mode`: no mode but lockdown while the site's lockdown holds.
    func refuseModeInLockdown(_ mode: DoorMode) throws {
        guard mode != .lockdown, let held = runtime.sync({ runtime.machine.lockdown }) else { return }
        throw DaemonError.request(
            "refused: the lockdown holds (since \(UTCTime.iso8601(held.since)), by \(held.by)); "
                + "`gatewayctl lockdown end` lifts it")
    }

    /// `gatewayctl lockdown start|end|status`, and `--site-key`'s signed
    /// command: judged here as every door will judge it, applied, then sent
    /// to the site.
    func answerLockdown(_ method: ControlMethod, _ p: [String: JSONValue], peer: Peer) throws -> JSONValue {
        let who = "uid=\(peer.uid)"
        switch method {
        case .lockdownStart, .lockdownEnd:
            let request: LockdownRequest =
                method == .lockdownStart
                ? .start(by: who, source: "gatewayctl", at: Int64(time(nil))) : .end(by: who, source: "gatewayctl")
            do { _ = try runtime.lockdown(request) } catch {
                throw DaemonError.request("the store did not take the lockdown, nothing changed: \(error)")
            }
        case .siteCommand:
            guard let command = Base64URL.decode(try p.string("command")) else {
                throw DaemonError.request("command: base64url expected")
            }
            guard let handler = remote.fleetReceiver?.siteCommands, let link = remote.transport else {
                throw DaemonError.request(
                    "a site command needs the fleet ([fleet] enabled) and its transport, which did not start")
            }
            if case .failure(let refusal) = handler.queue.sync(execute: {
                handler.handle(command, source: FleetReceiver.controlSource)
            }) {
                throw DaemonError.request("refused: \(refusal)")
            }
            handler.noteSent(command)
            guard link.publishSiteCommand(command) else {
                throw DaemonError.request(
                    "applied here, but not sent to the site: the \(link.transportName) link is not connected")
            }
        default:
            break
        }
        return runtime.sync { DoorRuntime.lockdownStatus(runtime.machine) }
    }
}
