/// Where a remote message came in: the transport names the channel from the
/// topic, the core decides what the message may do.
public enum RemoteChannel: Equatable, Hashable, Sendable, CaseIterable {
    /// `PREFIX/command`: MAC-signed native commands (docs/formats.md §5).
    case native
    /// A phone-app compat topic (docs/formats.md §3); device reports share it.
    case compat
    /// Home Assistant's lock (`PREFIX/lock/set`: OPEN, UNLOCK, LOCK).
    case homeAssistantLock
    /// Home Assistant's mode selector (`PREFIX/mode/set`).
    case homeAssistantMode
    /// Home Assistant's "clear lockout" button (`PREFIX/lockout/clear`).
    case homeAssistantLockoutClear
    /// Home Assistant's action buttons (`PREFIX/action/set`).
    case homeAssistantAction
    /// Home Assistant as the admin screen (`home_assistant_admin`): the
    /// provisioning action selector (`PREFIX/admin/provision_action/set`),
    /// the label of the next sticker (`PREFIX/admin/provision_label/set`),
    /// the arm and cancel buttons (`PREFIX/admin/provision/set`), the tag
    /// selector (`PREFIX/admin/revoke_tag/set`) and the revoke button
    /// (`PREFIX/admin/revoke/set`).
    case homeAssistantProvisionAction, homeAssistantProvisionLabel, homeAssistantProvision
    case homeAssistantRevokeChoice, homeAssistantRevoke
    /// The lockdown switch (`PREFIX/admin/lockdown/set`: ON, OFF; docs/policy.md "Lockdown").
    case homeAssistantLockdown
    /// Enrolling a card number from HA's admin screen (issue 35,
    /// `PREFIX/admin/enroll_card/set`: `26:FACILITY:NUMBER`, `34:…`, `37:…` or
    /// `raw:BITS:HEX`), for the provisioning selector's action and label.
    case homeAssistantEnrollCard
    /// Home Assistant's Approve and Deny buttons (`PREFIX/approval/set`:
    /// `APPROVE` or `DENY`, optionally followed by a space and the code).
    /// Honoured when the waiting action lists `home_assistant` (its
    /// `approval.by`), whatever `home_assistant_open` says.
    case homeAssistantApproval

    /// One of the admin channels (`home_assistant_admin`).
    public var isHomeAssistantAdmin: Bool {
        switch self {
        case .homeAssistantProvisionAction, .homeAssistantProvisionLabel, .homeAssistantProvision,
            .homeAssistantRevokeChoice, .homeAssistantRevoke, .homeAssistantLockdown, .homeAssistantEnrollCard:
            return true
        default: return false
        }
    }

    public var source: CommandSource {
        switch self {
        case .native: return .native
        case .compat: return .compat
        default: return .homeAssistant
        }
    }

    /// The key a message on this channel is checked with (nil: none).
    public var keyName: CommandKey? {
        switch self {
        case .native: return .native
        case .compat: return .compat
        default: return nil
        }
    }
}

/// Who sent a remote command (events and audit rows spell it `rawValue`).
public enum CommandSource: String, Equatable, Hashable, Sendable, CaseIterable {
    case native, compat
    case homeAssistant = "homeassistant"
}

/// Which of the store's keys a command is checked with.
public enum CommandKey: Equatable, Hashable, Sendable {
    /// The HMAC key of native commands.
    case native
    /// The AES timestamp key of compat commands.
    case compat
}

/// One message on a command topic, as the transport received it.
public struct RemoteMessage: Equatable, Sendable {
    public var channel: RemoteChannel
    public var payload: [UInt8]
    public var retained: Bool
    public init(channel: RemoteChannel, payload: [UInt8], retained: Bool) {
        self.channel = channel
        self.payload = payload
        self.retained = retained
    }
}

/// The key the daemon found for a message's channel.
public enum RemoteKey: Equatable, Sendable {
    case key([UInt8])
    /// No key of that kind is configured.
    case absent
    /// The store could not be read (the reason, never key material).
    case unreadable(String)

    public init(_ bytes: [UInt8]?) { self = bytes.map { .key($0) } ?? .absent }

    /// The site command key as the door key of `device` (`CommandJudge.doorCommandKey`).
    public func doorCommandKey(device: String) -> RemoteKey {
        guard case .key(let site) = self else { return self }
        return .key(CommandJudge.doorCommandKey(siteKey: site, device: device))
    }
}

/// What the door's configuration says about remote commands.
public struct RemotePolicy: Equatable, Sendable {
    /// Compat mapping, freshness window, device id, number of actions.
    public var commands: CommandJudge
    /// Honour Home Assistant's lock, mode, lockout and action topics, which
    /// carry no MAC (`[mqtt] home_assistant_open`).
    public var homeAssistantOpen: Bool
    /// Honour Home Assistant's admin topics: arm and cancel provisioning,
    /// revoke a tag (`[mqtt] home_assistant_admin`).
    public var homeAssistantAdmin: Bool
    public init(commands: CommandJudge, homeAssistantOpen: Bool, homeAssistantAdmin: Bool = false) {
        self.commands = commands
        self.homeAssistantOpen = homeAssistantOpen
        self.homeAssistantAdmin = homeAssistantAdmin
    }
}

/// The verdict on one remote message.
public struct RemoteJudgement: Equatable, Sendable {
    /// Nil when the message is not a command at all (a device report on a
    /// shared compat topic, docs/formats.md §3): nothing to audit, nothing to do.
    public var outcome: RemoteOutcome?
    /// The replay record to persist before the command acts, when accepting
    /// it changed the record (a crash after the door opened must not revive
    /// the message). Nil when nothing is to be saved.
    public var replay: ReplayGuard?
    /// The command verdict with what was learnt on the way (MAC-checked
    /// commands only).
    public var verdict: CommandVerdict?
    /// An admin request from Home Assistant, allowed and parsed (the outcome
    /// is then nil): the daemon resolves it against its menu and audits it.
    public var admin: HomeAssistantAdminRequest?

    public init(
        outcome: RemoteOutcome?, replay: ReplayGuard? = nil, verdict: CommandVerdict? = nil,
        admin: HomeAssistantAdminRequest? = nil
    ) {
        self.outcome = outcome
        self.replay = replay
        self.verdict = verdict
        self.admin = admin
    }

    /// The outcome when the new replay record could not be saved: refused,
    /// since an accepted message whose record is lost could be replayed.
    public func replayNotSaved(_ reason: String) -> RemoteOutcome {
        let source = outcome.map(\.source) ?? .native
        return .rejected(code: "store", detail: "replay record not saved: \(reason)", source: source)
    }
}

extension RemoteOutcome {
    /// Which kind of command it was (the event's `source`).
    public var source: CommandSource {
        switch self {
        case .accepted(_, let s), .rejected(_, _, let s): return s
        }
    }

    static func accepted(_ target: CommandTarget, _ source: CommandSource) -> RemoteOutcome {
        .accepted(target, source: source)
    }

    static func rejected(_ code: String, _ detail: String, _ source: CommandSource) -> RemoteOutcome {
        .rejected(code: code, detail: detail, source: source)
    }
}

/// Every remote decision (docs/formats.md §3, §5, Home Assistant's topics): message +
/// key + replay record + clock → verdict + the new replay record. Pure; the
/// daemon reads the key and the record from the store and persists the new
/// record before submitting an accepted command to the door.
public enum RemoteJudge {
    public static func judge(
        _ message: RemoteMessage, policy: RemotePolicy, key: RemoteKey, replay: ReplayGuard, now: WallClock
    ) -> RemoteJudgement {
        let source = message.channel.source
        switch message.channel {
        case .native, .compat:
            let native = message.channel == .native
            // A device report on a shared topic (docs/formats.md §3) is not a command.
            if !native && message.payload.starts(with: Array(#"{"TT_ID""#.utf8)) {
                return RemoteJudgement(outcome: nil)
            }
            let bytes: [UInt8]?
            switch key {
            case .key(let k): bytes = k
            case .absent: bytes = nil
            case .unreadable(let why): return RemoteJudgement(outcome: .rejected("no_key", "store: \(why)", source))
            }
            var record = replay
            let verdict =
                native
                ? policy.commands.judgeNative(
                    payload: message.payload, retained: message.retained, key: bytes, now: now, replay: &record)
                : policy.commands.judgeCompat(
                    payload: message.payload, retained: message.retained, key: bytes, now: now, replay: &record)
            if let r = verdict.rejection {
                return RemoteJudgement(outcome: .rejected(r.code.rawValue, r.detail, source), verdict: verdict)
            }
            guard let target = verdict.target else {
                return RemoteJudgement(outcome: .rejected("malformed", "no target", source), verdict: verdict)
            }
            return RemoteJudgement(
                outcome: .accepted(target, source), replay: record == replay ? nil : record, verdict: verdict)
        case .homeAssistantLock:
            guard !message.retained else {
                return RemoteJudgement(outcome: .rejected("retained", "retained messages are ignored", source))
            }
            return RemoteJudgement(outcome: homeAssistantLock(message.payload, open: policy.homeAssistantOpen))
        case .homeAssistantMode, .homeAssistantLockoutClear, .homeAssistantAction:
            return RemoteJudgement(outcome: homeAssistantControl(message, policy: policy))
        case .homeAssistantProvisionAction, .homeAssistantProvisionLabel, .homeAssistantProvision,
            .homeAssistantRevokeChoice, .homeAssistantRevoke, .homeAssistantLockdown, .homeAssistantEnrollCard:
            return homeAssistantAdmin(message, policy: policy)
        case .homeAssistantApproval:
            return RemoteJudgement(outcome: homeAssistantApproval(message))
        }
    }

    /// `APPROVE` / `DENY` (HA's buttons: the pending request), or
    /// `APPROVE CODE` / `DENY CODE` (an automation naming the request).
    static func homeAssistantApproval(_ message: RemoteMessage) -> RemoteOutcome {
        let ha = CommandSource.homeAssistant
        guard !message.retained else { return .rejected("retained", "retained messages are ignored", ha) }
        let words = String(decoding: message.payload.prefix(64), as: UTF8.self).split(separator: " ")
        guard (1...2).contains(words.count), words[0] == "APPROVE" || words[0] == "DENY" else {
            return .rejected("malformed", "approval payload must be APPROVE or DENY, optionally with the code", ha)
        }
        let code = words.count == 2 ? String(words[1]).uppercased() : nil
        if let code, code.utf8.count != ApprovalDesk.codeLength {
            return .rejected("malformed", "the code has \(ApprovalDesk.codeLength) characters", ha)
        }
        return .accepted(.approval(code: code, approve: words[0] == "APPROVE"), ha)
    }

    /// `OPEN` / `UNLOCK` open (action 0) only with `home_assistant_open`;
    /// `LOCK` has its own answer: the strike locks by itself.
    static func homeAssistantLock(_ payload: [UInt8], open: Bool) -> RemoteOutcome {
        let ha = CommandSource.homeAssistant
        switch String(decoding: payload, as: UTF8.self) {
        case "OPEN", "UNLOCK":
            guard open else {
                return .rejected(
                    "ha_open_disabled", "[mqtt] home_assistant_open = false: HA may not open the door", ha)
            }
            return .accepted(.action(0), ha)
        case "LOCK":
            return .rejected("lock_is_automatic", "the strike locks by itself when its pulse ends", ha)
        default:
            return .rejected("malformed", "Home Assistant lock payload must be OPEN or UNLOCK", ha)
        }
    }

    /// Home Assistant's mode selector, "clear lockout" and action buttons:
    /// honoured only with `home_assistant_open = true` (HA holds no MAC key;
    /// these are as strong as opening), refused and audited otherwise.
    static func homeAssistantControl(_ message: RemoteMessage, policy: RemotePolicy) -> RemoteOutcome {
        let ha = CommandSource.homeAssistant
        guard !message.retained else { return .rejected("retained", "retained messages are ignored", ha) }
        guard policy.homeAssistantOpen else {
            return .rejected("ha_open_disabled", "[mqtt] home_assistant_open = false: HA may not act on the door", ha)
        }
        let text = String(decoding: message.payload.prefix(64), as: UTF8.self)
        switch message.channel {
        case .homeAssistantMode:
            guard let mode = DoorMode(rawValue: text) else {
                return .rejected("malformed", "mode must be normal, passage or lockdown", ha)
            }
            return .accepted(.mode(mode), ha)
        case .homeAssistantLockoutClear:
            return .accepted(.clearLockout, ha)
        default:
            let count = policy.commands.actionCount
            guard let index = Int(text), (0..<count).contains(index) else {
                return .rejected("unknown_action", "action must be 0…\(count - 1)", ha)
            }
            return .accepted(.action(index), ha)
        }
    }
}
