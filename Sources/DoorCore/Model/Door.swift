// The door's vocabulary (docs/design.md "Vocabulary"): actions, outputs, modes.

/// An action index, `0…N-1`: a sticker's `idx`, `gatewayctl --action N`.
public typealias ActionIndex = Int

/// The logical state of a relay output. The physical level each maps to is
/// the output's `lockedLevel` (and its opposite), applied by the GPIO adapter.
public enum OutputState: String, Sendable, Hashable, Codable, CaseIterable {
    case locked, unlocked
}

/// The electrical state of a relay coil. A fail-secure strike is locked when
/// de-energised; a maglock is locked when energised.
public enum CoilLevel: String, Sendable, Hashable, Codable, CaseIterable {
    case deenergised = "deenergised"
    case energised = "energised"
    public var opposite: CoilLevel { self == .energised ? .deenergised : .energised }
}

/// A relay output as the door logic sees it: a name, its locked level and
/// what a fire alarm does to it. Where it is wired (chip, line, active-low)
/// is the board configuration's.
public struct OutputDefinition: Equatable, Sendable, Hashable {
    public var name: String
    public var lockedLevel: CoilLevel
    /// `on_fire` (docs/policy.md "Fire alarm"): released while the alarm holds, or kept as it is.
    public var onFire: FireBehaviour
    /// `onFire` nil: `FireBehaviour.standard(lockedLevel:)`.
    public init(name: String, lockedLevel: CoilLevel = .deenergised, onFire: FireBehaviour? = nil) {
        self.name = name
        self.lockedLevel = lockedLevel
        self.onFire = onFire ?? .standard(lockedLevel: lockedLevel)
    }
    public func level(for state: OutputState) -> CoilLevel {
        state == .locked ? lockedLevel : lockedLevel.opposite
    }
}

/// What an output does while the fire alarm holds (`on_fire`).
public enum FireBehaviour: String, Sendable, Hashable, Codable, CaseIterable {
    /// Unlocked at the alarm's edge and held so until the input clears and an operator resets.
    case release
    /// Left to the door's other rules (a fail-secure strike: egress is its lever's, not the coil's).
    case keep

    /// The default: an output locked while energised (a maglock, a fail-safe
    /// strike) is released — releasing it only takes its power away, the
    /// state it falls into without power anyway. An output locked while
    /// de-energised (a fail-secure strike) is kept: releasing it would hold
    /// its coil energised for as long as the alarm lasts, which a strike is
    /// not rated for, and the codes let a fail-secure strike stay locked from
    /// outside because the lever opens it from inside. Either can be said
    /// explicitly.
    public static func standard(lockedLevel: CoilLevel) -> FireBehaviour {
        lockedLevel == .energised ? .release : .keep
    }
}

/// The fire alarm as the door holds it (docs/policy.md "Fire alarm").
public enum FireState: String, Sendable, Hashable, Codable, CaseIterable {
    /// No alarm: the door's other rules decide.
    case normal
    /// The input is in alarm: the `release` outputs stand unlocked.
    case alarm
    /// The input cleared; the outputs stay released until an operator resets (`gatewayctl fire reset`).
    case cleared
}

/// One step of an action: unlock an output for a while then lock it again, or wait.
public enum OutputStep: Equatable, Sendable, Hashable {
    /// Drive `output` unlocked for `duration` (clamped by `PulseLimits`), then locked.
    case pulse(output: String, duration: Duration)
    /// Do nothing for `duration` before the next step.
    case wait(Duration)
}

/// A numbered thing the door can do. A plain door is one pulse; the ESP32's
/// open–stop–close is pulse(open), wait 10 s, pulse(stop), wait 50 s, pulse(close).
public struct ActionDefinition: Equatable, Sendable, Hashable {
    public var index: ActionIndex
    public var name: String
    public var steps: [OutputStep]
    /// The `[[schedules]]` name this action is limited to (docs/policy.md), or nil.
    public var schedule: String?
    /// The credentials a tap may open it with (`credentials = [...]`, docs/ntag424.md).
    public var credentials: Set<CredentialKind> = Set(CredentialKind.defaults)
    /// Consent-first (docs/policy.md "Approval"): a tap that would open
    /// this action waits for an approver's yes instead; nil opens at once.
    public var approval: ApprovalPolicy?
    /// `lockdown_exempt` (docs/policy.md "Lockdown"): its credentials still open in lockdown.
    public var lockdownExempt = false
    /// Anti-passback at a door with an entry and an exit reader (`passback`, issue 36).
    public var passback: PassbackRule = .off
    public init(
        index: ActionIndex, name: String, steps: [OutputStep], schedule: String? = nil,
        approval: ApprovalPolicy? = nil
    ) {
        self.index = index
        self.name = name
        self.steps = steps
        self.schedule = schedule
        self.approval = approval
    }
}

/// Relay pulses are clamped to this range whatever the configuration or a
/// command says (safety: a strike coil is not rated for continuous current).
public struct PulseLimits: Equatable, Sendable, Hashable {
    public var minimum: Duration
    public var maximum: Duration
    public init(minimum: Duration = .milliseconds(50), maximum: Duration = .seconds(10)) {
        self.minimum = minimum
        self.maximum = maximum
    }
    /// The hard ceiling no configuration may raise `maximum` above.
    public static let absoluteMaximum: Duration = .seconds(30)
    public func clamp(_ d: Duration) -> Duration {
        let hi = min(maximum, Self.absoluteMaximum)
        return max(minimum, min(hi, d))
    }
}

/// Door modes (docs/design.md): normal; passage = outputs held unlocked (office
/// hours); lockdown = only the exit button and admin commands open.
public enum DoorMode: String, Sendable, Hashable, Codable, CaseIterable {
    case normal, passage, lockdown
}
