import DoorCore

/// The door's feedback on an OSDP reader (issue 35): a pattern of the door's lines (green,
/// red, buzzer; `FeedbackPattern`) as osdp_LED and osdp_BUZ commands, so the reader outside
/// shows what the door decided. The LED's temporary pattern takes the pattern's colour (green,
/// red, amber when both), its first lit run as the on time, the dark run after it as the off
/// time, and the whole pass as its timer; the buzzer beeps as often as the pattern's buzzer
/// starts, as long as its first beep and the gap after it. Times are in OSDP's 100 ms units,
/// rounded, never 0 for something that is on. A repeating pattern (the heartbeat, the
/// approval wait, a reader fault) is the door's ambient state, not an answer to a tap: nothing.
public enum ReaderFeedback {
    public static func commands(for pattern: FeedbackPattern, reader: UInt8 = 0) -> [Command] {
        guard !pattern.repeats, !pattern.steps.isEmpty else { return [] }
        func units(_ d: Duration) -> Int { Int((d.millisecondsClamped + 50) / 100) }
        func lit(_ step: PatternStep) -> Bool { step.on.contains(Indicator.green) || step.on.contains(Indicator.red) }
        var commands: [Command] = []
        let lines = pattern.lines
        let colour: LEDCommand.Color? =
            lines.contains(Indicator.green)
            ? (lines.contains(Indicator.red) ? .amber : .green) : (lines.contains(Indicator.red) ? .red : nil)
        if let colour, let first = pattern.steps.firstIndex(where: lit) {
            let onRun = pattern.steps[first...].prefix(while: lit)
            let offRun = pattern.steps[(first + onRun.count)...].prefix { !lit($0) }
            let on = max(1, units(onRun.reduce(.zero) { $0 + $1.duration }))
            let off = units(offRun.reduce(.zero) { $0 + $1.duration })
            commands.append(
                .led(
                    LEDCommand(
                        reader: reader, led: 0,
                        temporary: .init(
                            control: 2, onTime: UInt8(clamping: on), offTime: UInt8(clamping: off), onColor: colour,
                            offColor: .black, timer: UInt16(clamping: max(1, units(pattern.passDuration)))))))
        }
        let buzzing = pattern.steps.map { $0.on.contains(Indicator.buzzer) }
        let starts = buzzing.indices.filter { buzzing[$0] && ($0 == 0 || !buzzing[$0 - 1]) }
        if let first = starts.first {
            let beep = pattern.steps[first...].prefix { $0.on.contains(Indicator.buzzer) }
            let gap = pattern.steps[(first + beep.count)...].prefix { !$0.on.contains(Indicator.buzzer) }
            commands.append(
                .buzzer(
                    BuzzerCommand(
                        reader: reader, tone: 2,
                        onTime: UInt8(clamping: max(1, units(beep.reduce(.zero) { $0 + $1.duration }))),
                        offTime: UInt8(
                            clamping: starts.count > 1 ? max(1, units(gap.reduce(.zero) { $0 + $1.duration })) : 0),
                        count: UInt8(clamping: starts.count))))
        }
        return commands
    }
}
