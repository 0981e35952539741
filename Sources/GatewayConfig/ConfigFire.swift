import DoorCore

// `[fire_alarm]` (docs/policy.md "Fire alarm", board/wiring.md "Fire alarm
// and request-to-exit"): the fire panel's dry contact on a GPIO line.

extension GatewayConfiguration {
    /// The fire-alarm input. In alarm, every output whose `on_fire` is
    /// `release` unlocks at once and stays so until the input clears and an
    /// operator resets (`gatewayctl fire reset`).
    public struct FireAlarm: Equatable, Sendable {
        /// The line; `activeLow` true when the line reads low in alarm (`alarm_level = "low"`).
        public var input: Input
        /// A wire break must read as alarm: the line's own pull is its alarm
        /// level (a normally-closed loop held at the other level while
        /// closed). Checked against `bias` and `alarm_level`.
        public var supervised: Bool
        public init(input: Input, supervised: Bool = true) {
            self.input = input
            self.supervised = supervised
        }
    }

    /// The longest debounce the fire input takes: the release must follow
    /// the panel's edge within 100 ms (docs/reliability.md).
    public static let fireDebounceLimit = 50

    /// `[fire_alarm]`: nil when absent. `alarm_level` (default "high": a
    /// normally-closed loop to ground with the pull-up; the panel opening it
    /// and a cut wire both read high), `bias` (default "pull-up"),
    /// `debounce_ms` (default 20, at most 50), `supervised` (default true).
    static func readFireAlarm(_ root: TableReader, _ lines: inout LineRegistry) -> FireAlarm? {
        guard let t = root.table("fire_alarm") else { return nil }
        let line = readLine(t, &lines)
        let level = t.choice("alarm_level", LineLevel.high)
        let bias = t.choice("bias", LineBias.pullUp)
        let debounce = t.int("debounce_ms", 20, 0...fireDebounceLimit)
        let supervised = t.bool("supervised", true)
        if supervised {
            switch bias {
            case .pullUp where level == .low, .pullDown where level == .high:
                let reads = bias == .pullUp ? "high" : "low"
                t.fail(
                    "alarm_level",
                    "\"\(level.rawValue)\" with bias \"\(bias.rawValue)\": a cut wire reads \(reads), which would be "
                        + "taken as no alarm; wire the panel's contact normally closed with alarm_level = \"\(reads)\" "
                        + "(board/wiring.md), or set supervised = false")
            case .asIs, .disable:
                t.fail(
                    "bias",
                    "\"\(bias.rawValue)\" leaves what a cut wire reads to the wiring, which the door cannot check; "
                        + "use \"pull-up\" or \"pull-down\", or supervised = false with an external pull resistor "
                        + "to the alarm level (board/wiring.md)")
            default:
                break
            }
        }
        t.finish()
        return FireAlarm(
            input: Input(
                line: line ?? .offset(0), activeLow: level == .low, bias: bias, debounceMilliseconds: debounce),
            supervised: supervised)
    }
}
