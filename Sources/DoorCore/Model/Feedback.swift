/// The feedback a door gives, by meaning. Patterns for each are data
/// (`FeedbackPattern`), configurable; `defaultPatterns` gives the stock set.
public enum FeedbackKind: String, Sendable, Hashable, Codable, CaseIterable {
    case granted
    case denied
    case lockedOut = "locked_out"
    case provisioningArmed = "provisioning_armed"
    case tagWritten = "tag_written"
    case writeFailed = "write_failed"
    case readerFault = "reader_fault"
    case heartbeat
    /// A tap waits for an approver (docs/policy.md "Approval"); repeats until answered.
    case awaitingApproval = "awaiting_approval"
    /// The door is held open past `[door_contact] warn_s`; repeats until it closes.
    case heldOpen = "held_open"
}

/// One step of a pattern: which indicator lines are on, for how long.
/// Lines not named are off during the step.
public struct PatternStep: Equatable, Sendable, Hashable {
    public var on: Set<String>
    public var duration: Duration
    public init(on: Set<String>, duration: Duration) {
        self.on = on
        self.duration = duration
    }
    public static func off(_ d: Duration) -> PatternStep { PatternStep(on: [], duration: d) }
}

/// On/off sequences for the LED and buzzer lines. A pattern with a higher
/// priority preempts a lesser one; a repeating pattern loops until replaced or
/// stopped. Every line is off when a pattern ends.
public struct FeedbackPattern: Equatable, Sendable, Hashable {
    public var steps: [PatternStep]
    public var repeats: Bool
    public var priority: Int
    public init(steps: [PatternStep], repeats: Bool = false, priority: Int) {
        self.steps = steps
        self.repeats = repeats
        self.priority = priority
    }
    /// The lines this pattern ever turns on.
    public var lines: Set<String> { steps.reduce(into: []) { $0.formUnion($1.on) } }
    /// Total length of one pass.
    public var passDuration: Duration { steps.reduce(.zero) { $0 + $1.duration } }
}

/// Indicator line names the stock patterns use: a bi-colour LED (amber = both)
/// and an active buzzer. A board maps these names to GPIO lines.
public enum Indicator {
    public static let green = "green"
    public static let red = "red"
    public static let buzzer = "buzzer"
}

extension FeedbackPattern {
    /// The stock patterns (the Foundation issue's list):
    /// granted = two short beeps 0.2 s apart and a green double blink (the
    /// door's equivalent of the phone's NFC-only double vibration); denied = one
    /// long beep and red; locked out; provisioning armed = fast amber blink;
    /// tag written = three short beeps; write failed; reader fault = slow red
    /// blink; idle heartbeat.
    public static let defaultPatterns: [FeedbackKind: FeedbackPattern] = {
        let g = Indicator.green, r = Indicator.red, b = Indicator.buzzer
        func ms(_ v: Int) -> Duration { .milliseconds(v) }
        return [
            .granted: FeedbackPattern(
                steps: [
                    PatternStep(on: [g, b], duration: ms(100)), .off(ms(100)),
                    PatternStep(on: [g, b], duration: ms(100)), .off(ms(100)),
                ], priority: 60),
            .denied: FeedbackPattern(
                steps: [
                    PatternStep(on: [r, b], duration: ms(800)), PatternStep(on: [r], duration: ms(400)),
                ], priority: 60),
            .lockedOut: FeedbackPattern(
                steps: [
                    PatternStep(on: [r, b], duration: ms(150)), PatternStep(on: [r], duration: ms(150)),
                    PatternStep(on: [r, b], duration: ms(150)), PatternStep(on: [r], duration: ms(150)),
                    PatternStep(on: [r, b], duration: ms(150)), PatternStep(on: [r], duration: ms(1000)),
                ], priority: 70),
            .provisioningArmed: FeedbackPattern(
                steps: [
                    PatternStep(on: [g, r], duration: ms(100)), .off(ms(100)),
                ], repeats: true, priority: 40),
            .tagWritten: FeedbackPattern(
                steps: [
                    PatternStep(on: [g, b], duration: ms(80)), PatternStep(on: [g], duration: ms(80)),
                    PatternStep(on: [g, b], duration: ms(80)), PatternStep(on: [g], duration: ms(80)),
                    PatternStep(on: [g, b], duration: ms(80)), PatternStep(on: [g], duration: ms(400)),
                ], priority: 80),
            .writeFailed: FeedbackPattern(
                steps: [
                    PatternStep(on: [r, b], duration: ms(300)), PatternStep(on: [r], duration: ms(150)),
                    PatternStep(on: [r, b], duration: ms(300)), PatternStep(on: [r], duration: ms(600)),
                ], priority: 80),
            .readerFault: FeedbackPattern(
                steps: [
                    PatternStep(on: [r], duration: ms(1000)), .off(ms(1000)),
                ], repeats: true, priority: 20),
            .heartbeat: FeedbackPattern(
                steps: [
                    PatternStep(on: [g], duration: ms(50)), .off(ms(4950)),
                ], repeats: true, priority: 0),
            // Green with a short chirp, once a second: "someone is being asked".
            .awaitingApproval: FeedbackPattern(
                steps: [
                    PatternStep(on: [g, b], duration: ms(60)), PatternStep(on: [g], duration: ms(440)),
                    .off(ms(500)),
                ], repeats: true, priority: 50),
            // Red with the buzzer, once a second, until the door closes (docs/policy.md "Door contact").
            .heldOpen: FeedbackPattern(
                steps: [
                    PatternStep(on: [r, b], duration: ms(250)), PatternStep(on: [r], duration: ms(250)),
                    .off(ms(500)),
                ], repeats: true, priority: 45),
        ]
    }()
}
