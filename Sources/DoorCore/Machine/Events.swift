/// What the door machine is told. Validation of stickers and commands
/// happens before (it needs secrets and the registry); the machine gets the outcome.
public enum DoorInput: Equatable, Sendable {
    case tagArrived(TagPresentation)
    case tagDeparted(TagUID)
    /// A debounced button edge from the I/O adapter (its time is the event's `now`).
    case button(pressed: Bool)
    /// The door contact changed (when one is configured).
    case doorContact(open: Bool)
    case timerFired(TimerID)
    case remoteCommand(RemoteOutcome)
    case admin(AdminRequest)
    /// An approver's answer arriving outside the remote-command path
    /// (`gatewayctl approve|deny CODE` over the control socket).
    case approval(ApprovalAnswer)
    case writeResult(uid: TagUID, WriteOutcome)
    case readerFault(String)
    case readerRecovered
    /// The store's answer to a `DoorEffect.store` request of the tap being decided.
    case storeAnswered(StoreAnswer)
    /// The fire-alarm input's debounced level (true = alarm; a supervised
    /// loop's wire break reads as alarm). The board has already released
    /// its `release` outputs when this arrives (docs/policy.md "Fire alarm").
    case fireAlarm(active: Bool)
    /// The request-to-exit input's edge (`[inputs.request_to_exit]`, docs/policy.md "Door contact").
    case requestToExit(pressed: Bool)
    /// Start or end the site's lockdown (Lockdown.swift).
    case lockdown(LockdownRequest)
    /// The site's fire alarm (a signed site command, SiteCommand.swift): as the
    /// door's own input, `by` the command's signer.
    case siteFire(active: Bool, by: String)
}

/// A tag in the field, classified (docs/design.md "blank", "ours", foreign) and judged.
public struct TagPresentation: Equatable, Sendable {
    public enum Content: String, Equatable, Sendable { case blank, ours, foreign }
    public var uid: TagUID
    public var content: Content
    public var verdict: AccessVerdict
    /// What the verdict still needs from the store (`TapDecision`); none for a denial.
    public var needs: StoreNeeds
    /// The reader that read it, when the door names its readers (issue 35):
    /// the events of this tap carry it as their `source`.
    public var reader: String?
    /// A card number from an outdoor reader (`TapFacts.card`) or a keypad code
    /// (`TapFacts.pinCode`): one event, never "present" on a reader, never
    /// written by provisioning.
    public var cardRead: Bool
    /// A grant that holds only once the card's PIN is typed on the same
    /// reader (`"card+pin"`): the keypad desk holds it (`KeypadDesk`), the
    /// machine never sees it before.
    public var pinRequired = false
    public init(
        uid: TagUID, content: Content, verdict: AccessVerdict, needs: StoreNeeds = StoreNeeds(),
        reader: String? = nil, cardRead: Bool = false
    ) {
        self.uid = uid
        self.content = content
        self.verdict = verdict
        self.needs = needs
        self.reader = reader
        self.cardRead = cardRead
    }

    /// The events' `source` for this tap: `reader:NAME` for a named reader, else `tag`.
    public var source: String { reader.map { "reader:\($0)" } ?? "tag" }

    /// This verdict for the tap `other` was: its reader and kind of read kept.
    public func from(_ other: TagPresentation) -> TagPresentation {
        var p = self
        p.reader = other.reader
        p.cardRead = other.cardRead
        return p
    }
}

public enum AccessVerdict: Equatable, Sendable {
    /// `reason` is the sticker verdict code, e.g. `valid_v2`.
    case grant(action: ActionIndex, reason: String)
    /// Denials of stickers in our format count toward lockout; foreign tags do not.
    case deny(reason: String, countsTowardLockout: Bool)
}

public enum RemoteOutcome: Equatable, Sendable {
    case accepted(CommandTarget, source: CommandSource)
    case rejected(code: String, detail: String, source: CommandSource)
}

/// An answer to an approval request (docs/policy.md "Approval").
public struct ApprovalAnswer: Equatable, Hashable, Sendable {
    /// The request's code; nil answers the pending request (Home Assistant's buttons).
    public var code: String?
    public var approve: Bool
    /// The transport it came over, checked against the action's `by`.
    public var by: Approver
    /// Who, for the audit log (the control socket's user, the broker account, the key).
    public var who: String
    public init(code: String?, approve: Bool, by: Approver, who: String) {
        self.code = code
        self.approve = approve
        self.by = by
        self.who = who
    }
}

public enum AdminRequest: Equatable, Sendable {
    case open(ActionIndex)
    case setMode(DoorMode)
    /// `door.passage_schedule` reached an edge (docs/policy.md): audited with source `schedule`.
    case scheduledMode(DoorMode)
    case armProvisioning(ProvisioningJob)
    case cancelProvisioning
    case clearLockout
    case playFeedback(FeedbackKind)
    /// `gatewayctl fire reset`: ends a fire alarm whose input has cleared; `who` is audited.
    case fireReset(who: String)
}

/// What provisioning writes on the next suitable tag.
public struct ProvisioningJob: Equatable, Hashable, Sendable {
    public var action: ActionIndex
    public var label: String
    public var protect: Bool
    /// Overwrite foreign content (only when the admin said so).
    public var overwrite: Bool
    /// Set when a tag is chosen.
    public var uid: TagUID?
    /// A guest pass or a scheduled tag (docs/policy.md): when it starts and
    /// ends (Unix seconds), how many opens it has, and its schedule.
    public var validFrom: Int64? = nil
    public var validUntil: Int64? = nil
    public var uses: Int? = nil
    public var schedule: String? = nil
    /// `provision --reissue UID`: the one tag this job may give new keys to
    /// although the registry holds its UID (docs/ntag424.md "Re-issuing a
    /// tag"). Only an operator names it; a button hold never does. Any other
    /// tag presented while armed is refused and the job stays armed.
    public var reissue: TagUID? = nil
    public init(
        action: ActionIndex, label: String = "", protect: Bool = false, overwrite: Bool = false, uid: TagUID? = nil
    ) {
        self.action = action
        self.label = label
        self.protect = protect
        self.overwrite = overwrite
        self.uid = uid
    }
}

public enum WriteOutcome: Equatable, Sendable {
    case written
    case failed(String)
}

/// Timers the machine asks for. Each carries a generation so a firing that
/// was cancelled or replaced meanwhile is recognised and ignored.
public enum TimerID: Hashable, Sendable {
    /// Step `step` of action run `run` ended.
    case step(run: Int, step: Int)
    case buttonHold(press: Int)
    case provisioningTimeout(arming: Int)
    case lockoutEnd(generation: Int)
    case doorHeldOpen(generation: Int)
    /// The approval request `id` reached its deadline.
    case approvalTimeout(id: UInt64)
}

/// What the machine asks the runtime to do (DEVELOPERS.md "Conventions" §1).
public enum DoorEffect: Equatable, Sendable {
    case drive(output: String, OutputState)
    case feedback(FeedbackKind)
    case stopFeedback(FeedbackKind)
    case startTimer(TimerID, after: Duration)
    case cancelTimer(TimerID)
    case emit(DoorEvent)
    case writeTag(ProvisioningJob)
    /// Publish the device report (compat command 5).
    case publishReport
    /// A store action a tap needs (`StoreRequest`); the runtime answers the
    /// counter and the guest use with `DoorInput.storeAnswered` at once.
    case store(StoreRequest)
    /// Hold the `release` outputs released (true) at the board — its latch,
    /// the released level's bias and crash value — or give them back to the
    /// machine's drives (false, after a reset). The board latches by itself
    /// on its input's edge; this tells it what the machine decided.
    case fireHold(Bool)
    /// Save what a restart must keep of the fire alarm (FireLatch.swift):
    /// after the outputs moved, each time it changes.
    case saveFire(FireLatch)
}

/// An event for the audit log and MQTT: kind, reason and context.
public struct DoorEvent: Equatable, Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case started
        case accessGranted = "access_granted", accessDenied = "access_denied"
        case exitRequest = "exit_request", adminOpen = "admin_open"
        case actionCompleted = "action_completed", actionCancelled = "action_cancelled"
        case remoteAccepted = "remote_accepted", remoteRejected = "remote_rejected"
        case provisioningArmed = "provisioning_armed", provisioningWriting = "provisioning_writing"
        case provisioningWritten = "provisioning_written", provisioningFailed = "provisioning_failed"
        case provisioningRefused = "provisioning_refused", provisioningCancelled = "provisioning_cancelled"
        case lockout, lockoutEnded = "lockout_ended", lockoutCleared = "lockout_cleared"
        case modeChanged = "mode_changed"
        case readerFault = "reader_fault", readerRecovered = "reader_recovered"
        case doorOpened = "door_opened", doorClosed = "door_closed"
        case doorForcedOpen = "door_forced_open", doorHeldOpen = "door_held_open"
        case configurationReloaded = "configuration_reloaded"
        /// A tag revoked (Home Assistant's admin screen, `gatewayctl tags revoke`).
        case tagRevoked = "tag_revoked"
        /// A tag's expiry set (`gatewayctl tags expire`).
        case tagExpirySet = "tag_expiry_set"
        /// A tag's registry row deleted (`gatewayctl tags forget`).
        case tagForgotten = "tag_forgotten"
        /// An NTAG 424 DNA returned to factory keys (`gatewayctl provision reset`).
        case tagReset = "tag_reset"
        /// Consent-first approval (docs/policy.md "Approval"): a request was
        /// made (with its `code`), answered yes or no, timed out, cancelled
        /// (replaced by a newer tap, lockdown), or an answer was refused.
        case approvalRequested = "approval_requested", approvalGranted = "approval_granted"
        case approvalDenied = "approval_denied", approvalTimedOut = "approval_timed_out"
        case approvalCancelled = "approval_cancelled", approvalRefused = "approval_refused"
        /// The fire alarm (docs/policy.md "Fire alarm"): the input went into
        /// alarm, the input cleared, an operator reset it (`who`), or a reset
        /// was refused (`reason`: `input_active`, `no_alarm`).
        case fireAlarm = "fire_alarm", fireCleared = "fire_cleared", fireReset = "fire_reset"
        case fireResetRefused = "fire_reset_refused"
        case lockdownStarted = "lockdown_started", lockdownEnded = "lockdown_ended"
        case lockdownRefused = "lockdown_refused"
        case siteCommandRefused = "site_command_refused"
        /// A duress PIN was typed (issue 35): the door opened as asked, and
        /// this silent alarm goes out (MQTT/NATS, Home Assistant); the reader
        /// shows nothing different.
        case duress
        /// The door contact's stages and alarms (docs/policy.md "Door
        /// contact", DoorContact.swift): held open past T1 (the pattern at
        /// the door) and T3 (the site); the door closed on an alarm
        /// (`reason`: `forced_open`, `held_open`); a request to exit that
        /// only shunted the next opening.
        case doorHeldOpenWarning = "door_held_open_warning", doorHeldOpenEscalated = "door_held_open_escalated"
        case doorAlarmCleared = "door_alarm_cleared", requestToExit = "request_to_exit"
        /// `gatewayctl passback reset` (issue 36): a credential's passage (or every one) forgotten.
        case passbackReset = "passback_reset"
    }
    public var kind: Kind
    public var reason: String?
    public var action: ActionIndex?
    public var uid: TagUID?
    public var source: String?
    /// An approval request's code (approval events only).
    public var code: String?
    /// Who answered an approval request (the socket's user, the broker
    /// account, the key), beside `source`, the transport.
    public var who: String?

    public init(
        _ kind: Kind, reason: String? = nil, action: ActionIndex? = nil, uid: TagUID? = nil, source: String? = nil,
        code: String? = nil, who: String? = nil
    ) {
        self.kind = kind
        self.reason = reason
        self.action = action
        self.uid = uid
        self.source = source
        self.code = code
        self.who = who
    }

    /// Events that name a tap, which carry the tag's label when
    /// `label_in_events` is on: access and approval events with a UID.
    public var carriesLabel: Bool {
        uid != nil
            && [
                .accessGranted, .accessDenied, .approvalRequested, .approvalGranted, .approvalDenied, .approvalTimedOut,
            ]
            .contains(kind)
    }

    /// The audit row's detail for an approval event: the code and who answered.
    public var approvalDetail: String? {
        guard code != nil || who != nil else { return nil }
        return [code.map { "code=\($0)" }, who.map { "by=\($0)" }].compactMap { $0 }.joined(separator: " ")
    }

    /// Where the door was opened from, when this event records an open of any
    /// kind — a sticker, the exit button, an admin, a remote command that ran
    /// an action (not the device report of compat command 5) — or nil. Home Assistant's "last
    /// access" sensor follows these.
    public var accessSource: String? {
        Self.accessSource(kind: kind.rawValue, action: action, source: source)
    }

    /// The same for a stored audit row's fields. A remote command that ran an
    /// action carries it; the device report does not.
    public static func accessSource(kind: String, action: ActionIndex?, source: String?) -> String? {
        switch Kind(rawValue: kind) {
        case .accessGranted?: return source ?? "tag"
        case .exitRequest?: return source ?? "button"
        case .adminOpen?: return source ?? "admin"
        case .remoteAccepted? where action != nil: return source ?? "remote"
        default: return nil
        }
    }

    /// The kinds `accessSource` can name.
    public static let accessKinds: [Kind] = [.accessGranted, .exitRequest, .adminOpen, .remoteAccepted]
}
