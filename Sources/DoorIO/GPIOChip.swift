#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import CDoorSafety
import CGPIOD
import Logging
import Synchronization

/// The consumer label every request carries (shown by `gpioinfo`, and in our
/// own EBUSY messages).
let gpioConsumer = "gatewayd"

/// Owner of one `struct gpiod_chip *` (DEVELOPERS.md "Conventions" §6). Lines found on it stay
/// valid while it lives; gpiod_chip_close releases them, so every line keeps
/// its chip, and the last to let go (the board's or the input thread) closes it.
// @unchecked: a libgpiod chip handle: lines are looked up on it only while the board is built (one thread), then it is only kept open until deinit.
final class GPIOChip: @unchecked Sendable {
    let pointer: OpaquePointer
    /// The chip's kernel name, e.g. `gpiochip0`.
    let name: String

    /// `spec` is a name (`gpiochip0`), a path (`/dev/gpiochip4`), a label
    /// (`pinctrl-rp1`) or a number — gpiod_chip_open_lookup tries each.
    init(_ spec: String) throws {
        guard !spec.isEmpty, let opened = gpiod_chip_open_lookup(spec) else {
            let code = spec.isEmpty ? ENOENT : errno
            // ENOENT: nothing by that name, path or label; ENODEV/ENOTTY: a path that is not a GPIO chip.
            if [ENOENT, ENODEV, ENOTTY].contains(code) {
                throw GPIOError.chipNotFound(spec: spec, available: Self.present())
            }
            throw GPIOError.call(function: "gpiod_chip_open_lookup", errno: code, subject: "chip '\(spec)'")
        }
        pointer = opened
        name = String(cString: gpiod_chip_name(pointer))
    }

    deinit { gpiod_chip_close(pointer) }

    /// Every chip as "name [label] (N lines)", for the not-found message
    /// (gpiod_chip_iter walks /dev/gpiochip*).
    static func present() -> [String] {
        guard let iter = gpiod_chip_iter_new() else { return [] }
        defer { gpiod_chip_iter_free(iter) }
        var chips: [String] = []
        while let chip = gpiod_chip_iter_next(iter) {
            chips.append(
                "\(String(cString: gpiod_chip_name(chip))) [\(String(cString: gpiod_chip_label(chip)))] (\(gpiod_chip_num_lines(chip)) lines)"
            )
        }
        return chips
    }

    /// gpiod_chip_get_line (offset) or gpiod_chip_find_line (name). Both
    /// return NULL for a missing line (EINVAL: offset out of range; ENOENT or
    /// no errno: no such name); other errnos (ENOMEM, EIO) are real failures.
    func line(_ spec: LineSpec) throws -> OpaquePointer {
        errno = 0
        let found: OpaquePointer?
        switch spec {
        case .offset(let n): found = gpiod_chip_get_line(pointer, n)
        case .name(let s): found = gpiod_chip_find_line(pointer, s)
        }
        if let found { return found }
        let code = errno
        if code == 0 || code == ENOENT || code == EINVAL { throw GPIOError.lineNotFound(chip: name, line: spec) }
        throw GPIOError.call(
            function: spec.isOffset ? "gpiod_chip_get_line" : "gpiod_chip_find_line",
            errno: code, subject: "line '\(spec)' on \(name)")
    }

    /// The EBUSY case: refresh the line info (gpiod_line_update) to name the
    /// current consumer.
    func busyError(_ line: OpaquePointer, _ spec: LineSpec) -> GPIOError {
        _ = gpiod_line_update(line)
        let consumer = gpiod_line_consumer(line).map { String(cString: $0) }
        return .lineBusy(chip: name, line: spec, consumer: consumer)
    }
}

/// Owner of one requested output line: a relay, an LED or the buzzer.
///
/// Requested with gpiod_line_request_output_flags at its safe value, so the
/// line is never at another level between request and first write; the
/// active-low flag makes the kernel invert, so values here are logical
/// (true = coil energised / LED on). Registered in the fatal-signal table
/// (CDoorSafety) while requested; deinit drives it safe, unregisters it and
/// releases it.
///
/// The request also carries the bias of the safe level (pull-up when the
/// safe level is electrically high, pull-down when low): Debian's
/// pinctrl-bcm2835 returns a released line to an input (bcm2835_pmx_free),
/// where its level is its pull — after every exit of the process, SIGKILL
/// included, and until the next request. With the bias the pull *is* the
/// locked level; without it GPIO17's reset pull-down would energise an
/// active-low relay whenever gatewayd is not running. A kernel that refuses
/// the bias (before 5.5: EINVAL) gets the request without it and a warning
/// naming the line (`pull` is then nil).
///
/// Written from several threads (the door queue drives a relay, the pattern
/// queue the indicators, `lockAll()` either from the daemon's stop path), so
/// the handle is used only under `handle`'s lock: libgpiod's line keeps the
/// last value written in its struct. The fatal-signal handler does not take
/// the lock (it cannot); it only writes the safe value.
final class OutputLine: Sendable {
    private struct Held {
        let line: OpaquePointer
        /// The value the line rests at once released (deinit, the crash
        /// handler, the bias): `safeValue`, or a fire alarm's released level
        /// while it holds (`rest(at:)`).
        var rest: Bool
    }
    private let chip: GPIOChip
    private let handle: Mutex<Held>
    let spec: LineSpec
    let activeLow: Bool
    /// The logical value that is safe: the locked level of a relay, off for an indicator.
    let safeValue: Bool
    /// The pull requested with the line (the safe level's), nil when the kernel refused it.
    let pull: BoardDescription.Bias?

    /// The bias that holds a released line at the safe level: the pull is
    /// electrical, so an active-low line whose safe logical value is false
    /// (coil off) is pulled up.
    static func pull(activeLow: Bool, safeValue: Bool) -> BoardDescription.Bias {
        safeValue != activeLow ? .pullUp : .pullDown
    }

    /// `restValue`: what the line is requested at and rests at once
    /// released, when not `safeValue` (a fire alarm's released level at start).
    init(
        chip: GPIOChip, spec: LineSpec, activeLow: Bool, safeValue: Bool, restValue: Bool? = nil, subject: String,
        logger: Logger
    ) throws {
        self.chip = chip
        self.spec = spec
        self.activeLow = activeLow
        self.safeValue = safeValue
        let restValue = restValue ?? safeValue
        let line = try chip.line(spec)
        let base = activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
        let wanted = Self.pull(activeLow: activeLow, safeValue: restValue)
        let bias =
            wanted == .pullUp
            ? Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP) : Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        let what = "\(subject) (line \(spec) on \(chip.name))"
        func request(_ flags: Int32) throws {
            try gpiodCall(
                "gpiod_line_request_output_flags", what,
                handle: { code in
                    code == EBUSY ? chip.busyError(line, spec) : nil
                }
            ) {
                gpiod_line_request_output_flags(line, gpioConsumer, flags, restValue ? 1 : 0)
            }
        }
        do {
            try request(base | bias)
            pull = wanted
        } catch GPIOError.call(_, let code, _) where Self.biasRefusals.contains(code) {
            // Kernels before 5.5 (uAPI v1 without bias flags) refuse the
            // flag; the line is still requested at its safe level, but once
            // released it sits at whatever pull it had.
            logger.warning(
                "kernel refused the \(wanted.rawValue) bias on an output; requested without it: while gatewayd is not running the line sits at its own pull, not at its safe level — fit a \(wanted.rawValue) resistor (board/wiring.md)",
                metadata: [
                    "output": "\(subject)", "line": "\(spec)", "chip": "\(chip.name)", "bias": "\(wanted.rawValue)",
                    "errno": "\(code)",
                ])
            try request(base)
            pull = nil
        }
        // Registered before the object is complete: a failure here releases
        // the line itself, and no deinit runs to release it twice.
        if door_safety_register(line, restValue ? 1 : 0) != 0 {
            gpiod_line_release(line)
            throw GPIOError.call(function: "door_safety_register", errno: ENOSPC, subject: subject)
        }
        handle = Mutex(Held(line: line, rest: restValue))
    }

    /// Drives the line to `value` and makes it the line's rest: the request's
    /// bias becomes `value`'s pull (gpiod_line_set_config: value and bias in
    /// one GPIOHANDLE_SET_CONFIG_IOCTL, Linux 5.5+) and the crash handler's
    /// value `value`, so a kill -9 or a crash leaves the line there. A kernel
    /// that refuses the new bias gets the value alone (nil returned: the rest
    /// after an exit is the old pull's); the crash value changes either way.
    @discardableResult
    func rest(at value: Bool, subject: @autoclosure () -> String) throws -> BoardDescription.Bias? {
        let wanted = Self.pull(activeLow: activeLow, safeValue: value)
        let flags =
            (activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0)
            | (wanted == .pullUp
                ? Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP) : Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN))
        let (configured, failure) = handle.withLock { held -> (Bool, Int32?) in
            held.rest = value
            _ = door_safety_set_value(held.line, value ? 1 : 0)
            while true {
                if gpiod_line_set_config(held.line, Int32(GPIOD_LINE_REQUEST_DIRECTION_OUTPUT), flags, value ? 1 : 0)
                    >= 0
                {
                    return (true, nil)
                }
                if errno != EINTR { break }
            }
            while true {
                if gpiod_line_set_value(held.line, value ? 1 : 0) >= 0 { return (false, nil) }
                if errno != EINTR { return (false, errno) }
            }
        }
        if let failure { throw GPIOError.call(function: "gpiod_line_set_value", errno: failure, subject: subject()) }
        return configured ? wanted : nil
    }

    /// What a kernel answers to a bias flag it cannot apply: EINVAL (uAPI v1
    /// before 5.5 knows no bias flags), EOPNOTSUPP, and the kernel-internal
    /// ENOTSUPP (524) some drivers let out.
    static let biasRefusals: Set<Int32> = [EINVAL, EOPNOTSUPP, 524]

    /// gpiod_line_set_value with a logical value.
    func set(_ value: Bool, subject: @autoclosure () -> String) throws {
        // gpiodCall's loop (EINTR retried, errno read on this thread right
        // after the call), with only the C call under the lock.
        let failure = handle.withLock { held -> Int32? in
            while true {
                if gpiod_line_set_value(held.line, value ? 1 : 0) >= 0 { return nil }
                if errno != EINTR { return errno }
            }
        }
        if let failure { throw GPIOError.call(function: "gpiod_line_set_value", errno: failure, subject: subject()) }
    }

    deinit {
        handle.withLock { held in
            _ = gpiod_line_set_value(held.line, held.rest ? 1 : 0)
            door_safety_unregister(held.line)
            gpiod_line_release(held.line)
        }
    }
}

/// Owner of one input line requested for both-edge events
/// (gpiod_line_request_both_edges_events_flags); the kernel queues edges on
/// its event file descriptor. Not Sendable: made on the board's thread, then
/// handed over whole to the input thread (`InputLoop`), the only one to use it.
final class EdgeInputLine {
    private let chip: GPIOChip
    private let line: OpaquePointer
    let spec: LineSpec
    let fd: Int32

    init(chip: GPIOChip, input: BoardDescription.Input, subject: String, logger: Logger) throws {
        self.chip = chip
        self.spec = input.line
        let line = try chip.line(input.line)
        let base = input.activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
        let bias: Int32
        switch input.bias {
        case .asIs: bias = 0
        case .disable: bias = Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE)
        case .pullUp: bias = Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        case .pullDown: bias = Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN)
        }
        let what = "\(subject) (line \(input.line) on \(chip.name))"
        func request(_ flags: Int32) throws {
            try gpiodCall(
                "gpiod_line_request_both_edges_events_flags", what,
                handle: { code in
                    code == EBUSY ? chip.busyError(line, input.line) : nil
                }
            ) { gpiod_line_request_both_edges_events_flags(line, gpioConsumer, flags) }
        }
        do {
            try request(base | bias)
        } catch GPIOError.call(_, let code, _) where bias != 0 && OutputLine.biasRefusals.contains(code) {
            // Kernels before 5.5 (uAPI v1 without bias flags) and chips that
            // cannot pull refuse the bias; use the board's own resistor.
            logger.warning(
                "bias not supported; requesting without it — fit an external resistor",
                metadata: [
                    "input": "\(subject)", "line": "\(input.line)", "bias": "\(input.bias.rawValue)",
                    "errno": "\(code)",
                ])
            try request(base)
        }
        self.line = line
        self.fd = gpiod_line_event_get_fd(line)
    }

    /// The logical level now (gpiod_line_get_value; true = active).
    func value() throws -> Bool {
        try gpiodCall("gpiod_line_get_value", "line \(spec) on \(chip.name)") { gpiod_line_get_value(line) } == 1
    }

    /// Read one queued edge (gpiod_line_event_read_fd): the logical level
    /// after it and the kernel's timestamp.
    func readEvent() throws -> (level: Bool, time: timespec) {
        var event = gpiod_line_event()
        try gpiodCall("gpiod_line_event_read_fd", "line \(spec) on \(chip.name)") {
            gpiod_line_event_read_fd(fd, &event)
        }
        return (event.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE), event.ts)
    }

    deinit { gpiod_line_release(line) }
}
