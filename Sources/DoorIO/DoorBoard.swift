import DoorCore

/// Where the door's lines are wired: the adapter's input. The lead maps the
/// TOML configuration (GatewayConfig) onto it; the CLI builds it from flags.
public struct BoardDescription: Equatable, Sendable {
    /// `gpiochip0`, `/dev/gpiochip4`, a chip label such as `pinctrl-rp1`, or a number.
    public var chip: String
    public var outputs: [Output]
    public var indicators: [IndicatorLine]
    public var button: Input?
    public var doorContact: Input?
    /// The fire panel's contact (docs/policy.md "Fire alarm"): its edge into
    /// alarm releases every output whose `onFire` is `.release` on the input
    /// thread itself, before anything else hears of it.
    public var fireAlarm: Input?
    /// A request-to-exit button or PIR (docs/policy.md "Door contact").
    public var requestToExit: Input?

    public init(
        chip: String, outputs: [Output], indicators: [IndicatorLine] = [],
        button: Input? = nil, doorContact: Input? = nil, fireAlarm: Input? = nil
    ) {
        self.chip = chip
        self.outputs = outputs
        self.indicators = indicators
        self.button = button
        self.doorContact = doorContact
        self.fireAlarm = fireAlarm
    }

    /// A relay output. `activeLow`: the coil is energised when the line is
    /// physically low (most opto-isolated relay modules).
    public struct Output: Equatable, Sendable {
        public var name: String
        public var line: LineSpec
        public var activeLow: Bool
        public var lockedLevel: CoilLevel
        /// What a fire alarm does to it; nil: `FireBehaviour.standard(lockedLevel:)`.
        public var onFire: FireBehaviour?
        public init(
            name: String, line: LineSpec, activeLow: Bool = false, lockedLevel: CoilLevel = .deenergised,
            onFire: FireBehaviour? = nil
        ) {
            self.name = name
            self.line = line
            self.activeLow = activeLow
            self.lockedLevel = lockedLevel
            self.onFire = onFire
        }
        public var definition: OutputDefinition {
            OutputDefinition(name: name, lockedLevel: lockedLevel, onFire: onFire)
        }
    }

    /// An LED or an active buzzer, named as the patterns name it (`Indicator`).
    public struct IndicatorLine: Equatable, Sendable {
        public var name: String
        public var line: LineSpec
        public var activeLow: Bool
        public init(name: String, line: LineSpec, activeLow: Bool = false) {
            self.name = name
            self.line = line
            self.activeLow = activeLow
        }
    }

    /// A push button or door contact. `activeLow` with `.pullUp` is a switch
    /// to ground: pressed (active) reads physically low.
    public struct Input: Equatable, Sendable {
        public var line: LineSpec
        public var activeLow: Bool
        public var bias: Bias
        public var debounce: Duration
        public init(
            line: LineSpec, activeLow: Bool = true, bias: Bias = .pullUp, debounce: Duration = .milliseconds(30)
        ) {
            self.line = line
            self.activeLow = activeLow
            self.bias = bias
            self.debounce = debounce
        }
    }

    public enum Bias: String, Equatable, Sendable, CaseIterable {
        case asIs = "as-is", disable, pullUp = "pull-up", pullDown = "pull-down"
    }
}

/// A GPIO line by offset on its chip (`17`) or by line name (`GPIO17`).
public enum LineSpec: Equatable, Hashable, Sendable, CustomStringConvertible {
    case offset(UInt32)
    case name(String)

    /// All digits → an offset; anything else → a line name.
    public init(_ text: String) {
        if !text.isEmpty, text.allSatisfy(\.isASCII), let n = UInt32(text) {
            self = .offset(n)
        } else {
            self = .name(text)
        }
    }

    var isOffset: Bool { if case .offset = self { return true } else { return false } }

    public var description: String {
        switch self {
        case .offset(let n): return "\(n)"
        case .name(let s): return s
        }
    }
}

/// A physical input of the door.
public enum InputKind: String, Sendable, Hashable, CaseIterable {
    case button
    case doorContact = "door_contact"
    /// The fire panel's contact: active = in alarm (a supervised loop's cut wire too).
    case fireAlarm = "fire_alarm"
    /// A request-to-exit button or PIR: active = pressed (someone at the door, inside).
    case requestToExit = "request_to_exit"
}

/// A debounced edge of an input: `active` true = pressed (door open for a
/// contact), at the monotonic time the new level began. Classifying presses
/// (short, hold) is the state machine's job.
public struct InputEvent: Equatable, Sendable {
    public var input: InputKind
    public var active: Bool
    public var at: MonotonicInstant
    public init(input: InputKind, active: Bool, at: MonotonicInstant) {
        self.input = input
        self.active = active
        self.at = at
    }
}

/// One indicator line switched on or off.
public struct LineChange: Equatable, Hashable, Sendable, CustomStringConvertible {
    public var line: String
    public var on: Bool
    public init(line: String, on: Bool) {
        self.line = line
        self.on = on
    }
    public var description: String { "\(line)=\(on ? "on" : "off")" }
}

/// Every line's state as the board last set or saw it (`gatewayctl status`, tests).
public struct BoardSnapshot: Equatable, Sendable {
    public struct OutputLine: Equatable, Sendable {
        public var state: OutputState
        public var level: CoilLevel
    }
    public var outputs: [String: OutputLine]
    public var indicators: [String: Bool]
    public var inputs: [InputKind: Bool]
}

/// Errors of the board protocol that are not libgpiod's (those are `GPIOError`).
public enum DoorBoardError: Error, Equatable, CustomStringConvertible {
    case unknownOutput(String)
    case unknownIndicator(String)
    case duplicateName(String)

    public var description: String {
        switch self {
        case .unknownOutput(let n): return "no relay output named '\(n)' on this board"
        case .unknownIndicator(let n): return "no indicator line named '\(n)' on this board"
        case .duplicateName(let n): return "the board names '\(n)' twice"
        }
    }
}

/// The door's lines, real (`GPIOBoard`, libgpiod) or simulated
/// (`SimulatedBoard`) behind one protocol (DEVELOPERS.md "Conventions" §8).
public protocol DoorBoard: AnyObject, Sendable {
    var outputs: [OutputDefinition] { get }
    var indicatorNames: [String] { get }
    /// Drive a relay output; `.locked` is its configured locked level.
    func drive(_ output: String, _ state: OutputState) throws
    /// Switch indicator lines (LEDs, buzzer).
    func setIndicators(_ changes: [LineChange]) throws
    /// Every output to its locked level and every indicator off. Never throws:
    /// it is the error path; failures are logged.
    func lockAll()
    func snapshot() -> BoardSnapshot
    /// Debounced button / door-contact edges arrive here, on the board's input
    /// thread. Set before inputs matter; replaces any earlier handler.
    func setInputHandler(_ handler: @escaping @Sendable (InputEvent) -> Void)
    /// The machine's fire decision (`DoorEffect.fireHold`): true holds the
    /// fire outputs released (the board latched them itself on its input's
    /// edge already); false, after a reset, gives them back to `drive` —
    /// refused while the board's own fire input still reads alarm.
    func fireHold(_ released: Bool)
}

extension DoorBoard {
    /// A board without a fire input: the machine's drives move the outputs.
    public func fireHold(_ released: Bool) {}
}

extension BoardDescription {
    /// Names must be unique within outputs and within indicators.
    func validateNames() throws {
        var seen = Set<String>()
        for n in outputs.map(\.name) where !seen.insert(n).inserted { throw DoorBoardError.duplicateName(n) }
        seen = []
        for n in indicators.map(\.name) where !seen.insert(n).inserted { throw DoorBoardError.duplicateName(n) }
    }
}
