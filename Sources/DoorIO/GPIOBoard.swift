#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import CDoorSafety
import DoorCore
import Logging

/// The door's lines through libgpiod v1 — the only code that touches it.
///
/// Order at start: relay outputs first, each requested at its locked level
/// (so they never glitch), then indicators (off), then inputs. Every exit
/// path leaves the relays locked: `lockAll()`, deinit (each `OutputLine`
/// drives itself safe before release), and the fatal-signal handler
/// (`RelaySafety.installCrashHandler()`) for crashes. Every output is
/// requested with the pull of its locked level, so once released (any exit,
/// SIGKILL too) the line stays there while gatewayd is not running.
public final class GPIOBoard: DoorBoard, Sendable {
    public let outputs: [OutputDefinition]
    public let indicatorNames: [String]
    private let chip: GPIOChip
    private let relayLines: [String: OutputLine]
    private let indicatorLines: [String: OutputLine]
    private let state: BoardState
    private let logger: Logger
    /// The input thread; nil when the board has no inputs.
    private let monitor: WakeableThread?
    /// The fire alarm's latch and the outputs it releases; nil without `[fire_alarm]`.
    private let fire: FireRelease?

    public init(_ description: BoardDescription, logger: Logger) throws {
        try description.validateNames()
        self.logger = logger
        chip = try GPIOChip(description.chip)
        // The fire input before the outputs: with it in alarm already (a
        // restart during an alarm), the outputs it releases are requested at
        // their released level and never pass through locked.
        var fireLine: EdgeInputLine?
        if let input = description.fireAlarm {
            fireLine = try EdgeInputLine(
                chip: self.chip, input: input, subject: InputKind.fireAlarm.rawValue, logger: logger)
        }
        let fireAtStart = try fireLine?.value() ?? false
        var relays: [String: OutputLine] = [:]
        for o in description.outputs {
            let released = fireLine != nil && o.definition.onFire == .release && fireAtStart
            relays[o.name] = try OutputLine(
                chip: chip, spec: o.line, activeLow: o.activeLow,
                safeValue: o.lockedLevel == .energised,
                restValue: released ? o.lockedLevel.opposite == .energised : nil,
                subject: "output '\(o.name)'", logger: logger)
        }
        var indicators: [String: OutputLine] = [:]
        for i in description.indicators {
            indicators[i.name] = try OutputLine(
                chip: chip, spec: i.line, activeLow: i.activeLow,
                safeValue: false, subject: "indicator '\(i.name)'", logger: logger)
        }
        // The pull of each output, for the start-up line (nil: the kernel refused it).
        let pulls = relays.mapValues(\.pull).merging(indicators.mapValues(\.pull)) { a, _ in a }
        outputs = description.outputs.map(\.definition)
        indicatorNames = description.indicators.map(\.name)
        relayLines = relays
        indicatorLines = indicators
        let inputs = [
            (InputKind.button, description.button), (.doorContact, description.doorContact),
            (.requestToExit, description.requestToExit),
        ]
        .compactMap { kind, input in input.map { (kind, $0) } }
        state = BoardState(
            outputs: outputs, indicators: indicatorNames,
            inputs: inputs.map(\.0) + (fireLine == nil ? [] : [.fireAlarm]))
        let chip = self.chip, state = self.state
        if let fireLine, let fireInput = description.fireAlarm {
            let release = FireRelease(
                guarded: description.outputs.filter { $0.definition.onFire == .release }.compactMap { o in
                    relays[o.name].map { FireRelease.Guarded(definition: o.definition, line: $0) }
                }, inputActive: fireAtStart, state: state, logger: logger)
            fire = release
            if fireAtStart {
                state.recordInput(.fireAlarm, active: true)
                logger.critical(
                    "fire alarm input in alarm at start: outputs requested released",
                    metadata: ["outputs": "\(release.names.joined(separator: ","))"])
            }
            var watched = try inputs.map { kind, input in
                (
                    kind, try EdgeInputLine(chip: chip, input: input, subject: kind.rawValue, logger: logger),
                    input.debounce
                )
            }
            watched.append((.fireAlarm, fireLine, fireInput.debounce))
            // The fire edge releases on the input thread, then goes where every edge goes.
            monitor = try InputMonitor.start(
                inputs: watched, logger: logger,
                deliver: { event in
                    if event.input == .fireAlarm { release.input(event.active) }
                    state.deliver(event)
                })
        } else {
            fire = nil
            monitor = try InputMonitor.start(
                inputs: try inputs.map { kind, input in
                    (
                        kind, try EdgeInputLine(chip: chip, input: input, subject: kind.rawValue, logger: logger),
                        input.debounce
                    )
                },
                logger: logger, deliver: { state.deliver($0) })
        }
        logConfiguration(description, pulls: pulls)
        if let warning = RelaySafety.persistWarning() { logger.warning("\(warning)") }
    }

    deinit {
        monitor?.stop()  // joins the input thread before its lines go
        logger.info("gpio board closed; outputs locked")
    }

    public func drive(_ output: String, _ newState: OutputState) throws {
        guard let line = relayLines[output], let definition = outputs.first(where: { $0.name == output }) else {
            throw DoorBoardError.unknownOutput(output)
        }
        let level = definition.level(for: newState)
        if try fire?.drive(output, newState) != true {
            try line.set(level == .energised, subject: "output '\(output)'")
            state.recordOutput(definition, newState)
        }
        logger.debug("output \(output) → \(newState.rawValue) (\(level.rawValue))")
    }

    public func fireHold(_ released: Bool) { fire?.hold(released) }

    public func setIndicators(_ changes: [LineChange]) throws {
        for change in changes {
            guard let line = indicatorLines[change.line] else { throw DoorBoardError.unknownIndicator(change.line) }
            try line.set(change.on, subject: "indicator '\(change.line)'")
            state.recordIndicator(change.line, on: change.on)
        }
        if !changes.isEmpty { logger.trace("indicators \(changes.map(\.description).joined(separator: " "))") }
    }

    public func lockAll() {
        for definition in outputs {
            do {
                // A fire alarm's outputs stay released (FireRelease): locked is remembered, not applied.
                if try fire?.drive(definition.name, .locked) == true { continue }
                try relayLines[definition.name]?.set(
                    definition.lockedLevel == .energised, subject: "output '\(definition.name)'")
                state.recordOutput(definition, .locked)
            } catch {
                logger.error("could not lock output \(definition.name): \(error)")
            }
        }
        for name in indicatorNames {
            do {
                try indicatorLines[name]?.set(false, subject: "indicator '\(name)'")
                state.recordIndicator(name, on: false)
            } catch {
                logger.error("could not switch off indicator \(name): \(error)")
            }
        }
        if let fire, fire.isLatched {
            logger.notice(
                "all outputs locked but the fire alarm's, held released: \(fire.names.joined(separator: ","))")
        } else {
            logger.notice("all outputs locked")
        }
    }

    public func snapshot() -> BoardSnapshot { state.snapshot }

    /// With the fire input in alarm when the handler is set (a start during
    /// an alarm: no edge will come), the handler hears of it at once.
    public func setInputHandler(_ handler: @escaping @Sendable (InputEvent) -> Void) {
        state.setHandler(handler)
        if let fire, fire.inputActive { handler(InputEvent(input: .fireAlarm, active: true, at: MonotonicClock.now())) }
    }

    /// DEVELOPERS.md "Conventions" §13: the effective wiring, once, at start.
    private func logConfiguration(_ d: BoardDescription, pulls: [String: BoardDescription.Bias?]) {
        func pull(_ name: String) -> String { (pulls[name] ?? nil).map { " \($0.rawValue)" } ?? " no pull" }
        let outs = d.outputs.map {
            "\($0.name)=line \($0.line)\($0.activeLow ? " active-low" : ""), locked \($0.lockedLevel.rawValue)\(pull($0.name))"
        }
        let inds = d.indicators.map { "\($0.name)=line \($0.line)\($0.activeLow ? " active-low" : "")\(pull($0.name))" }
        func input(_ i: BoardDescription.Input?) -> String {
            i.map {
                "line \($0.line)\($0.activeLow ? " active-low" : "") bias \($0.bias.rawValue) debounce \($0.debounce)"
            } ?? "none"
        }
        logger.info(
            "gpio board ready",
            metadata: [
                "chip": "\(chip.name) (\(d.chip))", "outputs": "\(outs.joined(separator: "; "))",
                "indicators": "\(inds.joined(separator: "; "))",
                "button": "\(input(d.button))", "door_contact": "\(input(d.doorContact))",
                "request_to_exit": "\(input(d.requestToExit))",
                "fire_alarm":
                    "\(input(d.fireAlarm))\(fire.map { ", releases \($0.names.joined(separator: ","))" } ?? "")",
            ])
    }
}

/// The input thread: waits in poll(2) on the inputs' edge-event descriptors
/// and a wake-up pipe — no busy polling — feeds each edge to its
/// `Debouncer`, and sleeps only until the next debounce deadline.
enum InputMonitor {
    /// Starts the thread; nil when there are no inputs.
    static func start(
        inputs: [(InputKind, EdgeInputLine, Duration)], logger: Logger,
        deliver: @escaping @Sendable (InputEvent) -> Void
    ) throws -> WakeableThread? {
        guard !inputs.isEmpty else { return nil }
        var tracked: [InputLoop.Tracked] = []
        for (kind, line, debounce) in inputs {
            tracked.append(
                .init(kind: kind, line: line, debouncer: Debouncer(interval: debounce, initial: try line.value())))
        }
        return try WakeableThread.start(name: "input") { wakeRead in
            InputLoop(wakeRead: wakeRead, inputs: tracked, logger: logger, deliver: deliver)
        }
    }
}

/// The state the input thread owns. Not Sendable: made by `InputMonitor.start`,
/// then handed over whole to the input thread (pthread_create's argument),
/// which alone uses it from then on.
private final class InputLoop: WakeableLoop {
    struct Tracked {
        var kind: InputKind
        var line: EdgeInputLine
        var debouncer: Debouncer
    }
    private let wakeRead: Int32
    private var inputs: [Tracked]
    private let logger: Logger
    private let deliver: @Sendable (InputEvent) -> Void

    init(wakeRead: Int32, inputs: [Tracked], logger: Logger, deliver: @escaping @Sendable (InputEvent) -> Void) {
        self.wakeRead = wakeRead
        self.inputs = inputs
        self.logger = logger
        self.deliver = deliver
    }

    deinit { close(wakeRead) }

    func run() -> String? {
        _ = door_safety_altstack_for_current_thread()
        var fds =
            [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            + inputs.map { pollfd(fd: $0.line.fd, events: Int16(POLLIN), revents: 0) }
        while true {
            let now = MonotonicClock.now()
            for i in inputs.indices {
                if let edge = inputs[i].debouncer.advance(to: now) { report(i, edge) }
            }
            let timeout =
                inputs.compactMap(\.debouncer.deadline).min().map { deadline -> Int32 in
                    Int32(clamping: (deadline.since(now).nanosecondsClamped + 999_999) / 1_000_000)
                } ?? -1
            if poll(&fds, nfds_t(fds.count), timeout) < 0 {
                if errno == EINTR { continue }
                logger.error("input thread stops: poll failed, errno \(errno)")
                return nil
            }
            if fds[0].revents != 0 { return nil }
            for i in inputs.indices {
                let revents = fds[i + 1].revents
                if revents & Int16(POLLIN) != 0 {
                    do {
                        let (level, ts) = try inputs[i].line.readEvent()
                        // Kernels before 5.7 stamp v1 events with CLOCK_REALTIME:
                        // never let a stamp lie in the future.
                        let at = min(MonotonicInstant(timespec: ts), MonotonicClock.now())
                        for edge in inputs[i].debouncer.sample(level, at: at) { report(i, edge) }
                    } catch {
                        logger.error("\(inputs[i].kind.rawValue): \(error)")
                    }
                } else if revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                    logger.error("\(inputs[i].kind.rawValue): event descriptor failed; input no longer watched")
                    fds[i + 1].fd = -1
                }
            }
        }
    }

    private func report(_ index: Int, _ edge: Debouncer.Edge) {
        deliver(InputEvent(input: inputs[index].kind, active: edge.active, at: edge.at))
    }
}
