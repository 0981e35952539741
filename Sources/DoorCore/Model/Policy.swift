/// Lockout (docs/design.md "Ownership"): counts only denials of stickers in our
/// format, per UID and globally, with a short cap. It never blocks the exit
/// button, remote commands or admin commands.
public struct LockoutPolicy: Equatable, Sendable, Hashable {
    public var enabled: Bool
    /// Denials of one UID within `window` that lock that UID out.
    public var perTagThreshold: Int
    /// Denials of any of our stickers within `window` that lock the reader out.
    public var globalThreshold: Int
    public var window: Duration
    /// First lockout length; each further lockout in a row doubles it up to `cap`.
    public var duration: Duration
    public var cap: Duration
    public init(
        enabled: Bool = true, perTagThreshold: Int = 3, globalThreshold: Int = 10,
        window: Duration = .seconds(60), duration: Duration = .seconds(30),
        cap: Duration = .seconds(300)
    ) {
        self.enabled = enabled
        self.perTagThreshold = perTagThreshold
        self.globalThreshold = globalThreshold
        self.window = window
        self.duration = duration
        self.cap = cap
    }
}

/// Button classification (the adapter debounces; the machine classifies):
/// a short press acts on release; a hold of `provisioningHold` arms
/// provisioning and never also opens.
public struct ButtonPolicy: Equatable, Sendable, Hashable {
    /// The action a short press runs (an exit request), or nil for none.
    public var exitAction: ActionIndex?
    /// Presses shorter than this are ignored as noise after debounce.
    public var minimumPress: Duration
    /// A press at least this long is a hold: it arms provisioning (when enabled).
    public var provisioningHold: Duration
    public init(
        exitAction: ActionIndex? = 0, minimumPress: Duration = .milliseconds(50),
        provisioningHold: Duration = .seconds(5)
    ) {
        self.exitAction = exitAction
        self.minimumPress = minimumPress
        self.provisioningHold = provisioningHold
    }
}

/// Provisioning (docs/design.md): a button hold arms the configured action unless
/// disabled; refused in lockdown; cancelled after `timeout`; one tag per arming.
public struct ProvisioningPolicy: Equatable, Sendable, Hashable {
    public var buttonArmed: Bool
    public var action: ActionIndex
    public var timeout: Duration
    /// Password-protect written stickers (docs/formats.md §4 PWD/PACK).
    public var protect: Bool
    /// NTAG AUTHLIM, the raw 3-bit field of ACCESS: 0 = unlimited failed
    /// PWD_AUTH attempts, 1…7 = at most 2^n failures before the tag locks.
    public var authLimit: Int
    public init(
        buttonArmed: Bool = true, action: ActionIndex = 0, timeout: Duration = .seconds(60),
        protect: Bool = false, authLimit: Int = 0
    ) {
        self.buttonArmed = buttonArmed
        self.action = action
        self.timeout = timeout
        self.protect = protect
        self.authLimit = authLimit
    }
}

/// Optional door contact: alarms when held open too long, or opened while no
/// grant is in progress (forced).
public struct DoorContactPolicy: Equatable, Sendable, Hashable {
    public var enabled: Bool
    /// The held-open alert (T2, `door_held_open`, Home Assistant's door
    /// alarm): `[door_contact] alert_s`, once `held_open_s`. Zero: off.
    public var heldOpenAfter: Duration
    /// After an action's last step, the door may still be opened for this long.
    public var openGrace: Duration
    /// The held-open warning at the door (T1: the `held_open` pattern, until
    /// the door closes): `[door_contact] warn_s`. Zero: off.
    public var warnAfter: Duration
    /// The held-open escalation to the site (T3, `door_held_open_escalated`):
    /// `[door_contact] escalate_s`. Zero: off.
    public var escalateAfter: Duration
    public init(
        enabled: Bool = false, heldOpenAfter: Duration = .seconds(30), openGrace: Duration = .seconds(10),
        warnAfter: Duration = .seconds(15), escalateAfter: Duration = .seconds(120)
    ) {
        self.enabled = enabled
        self.heldOpenAfter = heldOpenAfter
        self.openGrace = openGrace
        self.warnAfter = warnAfter
        self.escalateAfter = escalateAfter
    }
}

/// Everything the pure door machine needs to know from the configuration.
public struct DoorSettings: Equatable, Sendable, Hashable {
    public var outputs: [OutputDefinition]
    public var actions: [ActionDefinition]
    public var pulseLimits: PulseLimits
    public var patterns: [FeedbackKind: FeedbackPattern]
    public var lockout: LockoutPolicy
    public var button: ButtonPolicy
    public var provisioning: ProvisioningPolicy
    public var doorContact: DoorContactPolicy
    /// A tag left on the reader fires once: the same UID is ignored until it
    /// has been out of the field at least this long.
    public var sameTagQuiet: Duration
    /// Mode at start.
    public var initialMode: DoorMode
    /// The fire alarm at start: a reload carries the running door's (a new
    /// machine must not forget an alarm nobody has reset).
    public var initialFire: FireState = .normal
    /// What held that alarm (the input, the site's signal): each must clear
    /// before a reset relocks, across a reload too.
    public var initialFireSources: Set<String> = []
    /// The site's lockdown at start (the store's, docs/policy.md "Lockdown"):
    /// the machine starts in lockdown mode with it.
    public var initialLockdown: Lockdown? = nil
    /// `[[schedules]]` (docs/policy.md).
    public var schedules: [WeeklySchedule] = []
    /// `door.passage_schedule`: passage mode inside its windows, normal outside.
    public var passageSchedule: String?
    /// `[request_to_exit]` (docs/policy.md "Door contact"): what a request-to-exit press does.
    public var requestToExit = RequestToExitPolicy()

    public init(
        outputs: [OutputDefinition] = [OutputDefinition(name: "strike")],
        actions: [ActionDefinition]? = nil,
        pulseLimits: PulseLimits = PulseLimits(),
        patterns: [FeedbackKind: FeedbackPattern] = FeedbackPattern.defaultPatterns,
        lockout: LockoutPolicy = LockoutPolicy(),
        button: ButtonPolicy = ButtonPolicy(),
        provisioning: ProvisioningPolicy = ProvisioningPolicy(),
        doorContact: DoorContactPolicy = DoorContactPolicy(),
        sameTagQuiet: Duration = .seconds(1),
        initialMode: DoorMode = .normal
    ) {
        self.outputs = outputs
        self.actions = actions ?? Self.defaultActions(output: outputs.first?.name ?? "strike")
        self.pulseLimits = pulseLimits
        self.patterns = patterns
        self.lockout = lockout
        self.button = button
        self.provisioning = provisioning
        self.doorContact = doorContact
        self.sameTagQuiet = sameTagQuiet
        self.initialMode = initialMode
    }

    /// The phone app's four buttons, each a 3 s pulse of the one output.
    public static func defaultActions(output: String) -> [ActionDefinition] {
        (0..<4).map {
            ActionDefinition(index: $0, name: "action \($0)", steps: [.pulse(output: output, duration: .seconds(3))])
        }
    }

    public func action(_ index: ActionIndex) -> ActionDefinition? { actions.first { $0.index == index } }
    public func output(_ name: String) -> OutputDefinition? { outputs.first { $0.name == name } }
}
