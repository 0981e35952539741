import Arguments
import Dispatch
import DoorCore
import DoorIO
@preconcurrency import Glibc
import Dispatch
import Logging
import Synchronization

/// `gatewayctl gpio …`: drive the door's lines directly through libgpiod,
/// without the daemon — for checking wiring over ssh and for the real-kernel
/// VM test (scripts/gpio-vm/gateway-checks.sh). Stop gatewayd first: the
/// lines can have one owner only.
struct GPIOCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gpio",
        abstract: "Check relay, LED, buzzer and button wiring directly (no daemon).",
        subcommands: [GPIOPulseCommand.self, GPIOWatchCommand.self, GPIOSampleCommand.self]
    )
}

/// Options shared by the gpio commands.
struct GPIOOptions: ParsableArguments {
    @Option(help: "GPIO chip: name (gpiochip0), path (/dev/gpiochip4), label (pinctrl-rp1) or number.")
    var chip: String

    @Flag(name: .shortAndLong, help: "Log every line change to stderr.")
    var verbose = false

    var logger: Logger {
        var logger = Logger(label: "gatewayctl.gpio", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .trace : .warning
        return logger
    }
}

/// Print and flush at once: scripts wait for these lines.
func emit(_ line: String) {
    print(line)
    fflush(stdout)
}

struct GPIOPulseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pulse",
        abstract: "Request a relay output at its locked level, then pulse it once.",
        discussion: """
            Prints `ready` once the lines are requested (the relay is then at its locked \
            level), `pulse-start MS` and `pulse-end MS length-ms N` (monotonic milliseconds), \
            and `pattern-end` after an optional feedback pattern. SIGTERM or SIGINT locks \
            every output and exits with 128+signal.
            """
    )

    @OptionGroup var gpio: GPIOOptions

    @Option(help: "The relay line: offset or line name.")
    var output: String

    @Flag(help: "The coil is energised when the line is low.")
    var activeLow = false

    @Option(help: "Coil level that locks the door: deenergised (fail-secure strike) or energised (maglock).")
    var lockedLevel: String = CoilLevel.deenergised.rawValue

    @Option(help: "Pulse length in ms (clamped to 50…10000).")
    var ms: Int = 500

    @Option(help: "Wait this long (ms) between `ready` and the pulse.")
    var delayMs: Int = 0

    @Option(help: "An LED line, as LINE or NAME=LINE (unnamed LEDs are green, then red).")
    var led: [String] = []

    @Option(help: "The active buzzer line.")
    var buzzer: String?

    @Option(
        help:
            "Play this feedback pattern after the pulse (\(FeedbackKind.allCases.map(\.rawValue).joined(separator: ", ")))."
    )
    var pattern: String?

    @Option(help: .hidden)
    var trapAfterMs: Int?

    @Option(help: .hidden)
    var overflowAfterMs: Int?

    @Option(help: .hidden)
    var lingerMs: Int = 0

    func validate() throws {
        guard CoilLevel(rawValue: lockedLevel) != nil else {
            throw ValidationError("--locked-level must be deenergised or energised, not '\(lockedLevel)'")
        }
        if let pattern, FeedbackKind(rawValue: pattern) == nil {
            throw ValidationError("unknown --pattern '\(pattern)'")
        }
        _ = try indicators()
    }

    func indicators() throws -> [BoardDescription.IndicatorLine] {
        var unnamed = [Indicator.green, Indicator.red][...]
        var lines: [BoardDescription.IndicatorLine] = []
        for spec in led {
            let parts = spec.split(separator: "=", maxSplits: 1).map(String.init)
            let name: String
            if parts.count == 2 {
                name = parts[0]
            } else if let next = unnamed.popFirst() {
                name = next
            } else {
                throw ValidationError("more than two unnamed --led lines; name them NAME=LINE")
            }
            lines.append(.init(name: name, line: LineSpec(parts.last!)))
        }
        if let buzzer { lines.append(.init(name: Indicator.buzzer, line: LineSpec(buzzer))) }
        return lines
    }

    func run() throws {
        let logger = gpio.logger
        try RelaySafety.installCrashHandler()
        let relay = BoardDescription.Output(
            name: "relay", line: LineSpec(output), activeLow: activeLow,
            lockedLevel: CoilLevel(rawValue: lockedLevel)!)
        let board = try GPIOBoard(
            BoardDescription(chip: gpio.chip, outputs: [relay], indicators: try indicators()),
            logger: logger)
        let signals = lockOnTermination(board, linger: .milliseconds(lingerMs))
        emit("ready")
        if delayMs > 0 { MonotonicClock.sleep(for: .milliseconds(delayMs)) }

        let requested = Duration.milliseconds(ms)
        let length = PulseLimits().clamp(requested)
        if length != requested { logger.warning("pulse clamped to \(length.millisecondsClamped) ms") }
        // Timed from when the drive returns, so the line is unlocked for at
        // least `length`.
        try board.drive(relay.name, .unlocked)
        let start = MonotonicClock.now()
        emit("pulse-start \(start.milliseconds)")
        if let trapAfterMs {
            MonotonicClock.sleep(for: .milliseconds(trapAfterMs))
            triggerRuntimeTrap()
        }
        if let overflowAfterMs {
            MonotonicClock.sleep(for: .milliseconds(overflowAfterMs))
            emit("overflow \(exhaustStack(0))")
        }
        MonotonicClock.sleep(until: start + length)
        try board.drive(relay.name, .locked)
        let end = MonotonicClock.now()
        emit("pulse-end \(end.milliseconds) length-ms \(end.since(start).millisecondsClamped)")

        if let kind = pattern.flatMap(FeedbackKind.init(rawValue:)),
            let feedback = FeedbackPattern.defaultPatterns[kind]
        {
            let driver = PatternDriver(board: board, logger: logger)
            driver.play(feedback)
            MonotonicClock.sleep(for: feedback.passDuration + .milliseconds(20))
            driver.stop()
            emit("pattern-end")
        }
        // The VM checks sample the line from sysfs: without a linger, the
        // locked level lasts only from this drive to the release at exit
        // (well under a millisecond) and a sampler can miss it.
        if lingerMs > 0 { MonotonicClock.sleep(for: .milliseconds(lingerMs)) }
        withExtendedLifetime(signals) {}
    }

    /// A real Swift runtime trap (array index out of range): SIGILL on
    /// x86_64, SIGTRAP on arm64. The VM test proves the crash handler locks.
    private func triggerRuntimeTrap() {
        let empty: [Int] = []
        let index = trapAfterMs ?? 0  // never a valid index of an empty array
        emit("trap \(empty[index])")
    }
}

/// Unbounded recursion with a 4 KiB frame: SIGSEGV on the stack guard page,
/// which the crash handler can only catch on its alternate stack.
@inline(never)
private func exhaustStack(_ depth: Int) -> Int {
    withUnsafeTemporaryAllocation(of: Int.self, capacity: 512) { frame in
        frame.initialize(repeating: depth)
        return exhaustStack(depth + 1) &+ frame[depth % 512]
    }
}

/// SIGTERM/SIGINT: lock every output, then exit 128+signal (the graceful
/// path; crashes are `RelaySafety`'s). `linger` keeps the lines requested a
/// little longer so a test can read the locked level before release.
func lockOnTermination(_ board: DoorBoard, linger: Duration = .zero) -> [DispatchSourceSignal] {
    [SIGTERM, SIGINT].map { sig in
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: DispatchQueue(label: "gatewayctl.signal"))
        source.setEventHandler {
            board.lockAll()
            emit("signal \(sig): outputs locked")
            if linger > .zero { MonotonicClock.sleep(for: linger) }
            exit(128 + sig)
        }
        source.activate()
        return source
    }
}

struct GPIOWatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print each debounced button (and door contact) edge with its monotonic time.",
        discussion:
            "Prints `ready`, then `button pressed MS` / `button released MS` (or `door_contact open|closed MS`)."
    )

    @OptionGroup var gpio: GPIOOptions

    @Option(help: "The push-button line: offset or line name.")
    var button: String

    @Flag(inversion: .prefixedNo, help: "Pressed reads low (a switch to ground with a pull-up).")
    var activeLow = true

    @Option(help: "Bias: \(BoardDescription.Bias.allCases.map(\.rawValue).joined(separator: ", ")).")
    var bias: String = BoardDescription.Bias.pullUp.rawValue

    @Option(help: "A level must be stable this long (ms) to count.")
    var debounceMs: Int = 30

    @Option(help: "An optional door-contact line (active = open).")
    var doorContact: String?

    @Option(help: "Exit after this many edges.")
    var count: Int?

    func validate() throws {
        guard BoardDescription.Bias(rawValue: bias) != nil else { throw ValidationError("unknown --bias '\(bias)'") }
        guard debounceMs >= 0 else { throw ValidationError("--debounce-ms must not be negative") }
    }

    func run() throws {
        let input = { (line: String) in
            BoardDescription.Input(
                line: LineSpec(line), activeLow: activeLow, bias: BoardDescription.Bias(rawValue: bias)!,
                debounce: .milliseconds(debounceMs))
        }
        let board = try GPIOBoard(
            BoardDescription(
                chip: gpio.chip, outputs: [], button: input(button),
                doorContact: doorContact.map(input)), logger: gpio.logger)
        let done = DispatchSemaphore(value: 0)
        let left = Mutex(count ?? Int.max)
        board.setInputHandler { event in
            let word =
                event.input == .button ? (event.active ? "pressed" : "released") : (event.active ? "open" : "closed")
            emit("\(event.input.rawValue) \(word) \(event.at.milliseconds)")
            if left.withLock({
                $0 -= 1; return $0 == 0
            }) {
                done.signal()
            }
        }
        let signals = lockOnTermination(board)
        emit("ready")
        done.wait()
        withExtendedLifetime(signals) {}
    }
}

/// Hidden test tool for the VM checks: read a gpio-sim sysfs value file in a
/// tight loop and print `MICROSECONDS VALUE` at start and on every change, so the
/// checks see pulses and glitches at sub-millisecond resolution whatever
/// shell the VM has.
struct GPIOSampleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sample", shouldDisplay: false)

    @Option(help: "The file to sample, e.g. /sys/devices/platform/gpio-sim.0/gpiochip1/sim_gpio0/value.")
    var file: String

    @Option(help: "Sample for this long (ms).")
    var durationMs: Int = 3000

    func run() throws {
        let fd = open(file, O_RDONLY)
        guard fd >= 0 else { throw ValidationError("cannot open \(file): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let end = MonotonicClock.now() + .milliseconds(durationMs)
        var last: UInt8 = 0
        var buffer = [UInt8](repeating: 0, count: 8)
        while true {
            let now = MonotonicClock.now()
            if now >= end { break }
            guard pread(fd, &buffer, buffer.count, 0) > 0 else { continue }
            if buffer[0] != last {
                last = buffer[0]
                emit("\(now.nanoseconds / 1000) \(UnicodeScalar(last))")
            }
            usleep(100)  // ~0.2 ms resolution without starving a one-CPU VM
        }
        emit("\(MonotonicClock.now().nanoseconds / 1000) end")
    }
}
