#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import CDoorSafety
import CGPIOD
import DoorCore
import Logging

/// Where a Wiegand reader is wired (issue 35): its two data lines on a GPIO
/// chip, the frame gap, and the name its reads carry (`reader:NAME`).
public struct WiegandLines: Equatable, Sendable {
    public var name: String
    public var chip: String
    public var d0: LineSpec
    public var d1: LineSpec
    public var frameGap: Duration
    /// The card frame length and keypad burst the reader is set to (nil: any), `WiegandDecoder`'s.
    public var cardBits: Int?
    public var keypadBurst: Int?
    public init(
        name: String, chip: String, d0: LineSpec, d1: LineSpec, frameGap: Duration = .milliseconds(50),
        cardBits: Int? = nil, keypadBurst: Int? = nil
    ) {
        self.name = name
        self.chip = chip
        self.d0 = d0
        self.d1 = d1
        self.frameGap = frameGap
        self.cardBits = cardBits
        self.keypadBurst = keypadBurst
    }
}

/// A Wiegand reader on two GPIO input lines through libgpiod v1 (issue 35):
/// each line requested for falling-edge events with the pull-up Wiegand's
/// open-collector outputs need, the kernel stamping each edge; one thread
/// waits in poll(2) on both and a wake-up pipe, merges the queued edges of
/// both lines in timestamp order, and feeds the pure `WiegandDecoder`; a
/// frame ends when no edge came for the frame gap. Frames go to `deliver`
/// on that thread. A failed poll(2) or edge read ends the thread, its lines
/// released, and `failed` says why (on that thread, never after `stop`):
/// the caller reports the reader offline and starts it again.
public final class WiegandReader: Sendable {
    private let thread: WakeableThread

    /// Requests both lines and starts the thread.
    public static func start(
        _ lines: WiegandLines, logger: Logger, deliver: @escaping @Sendable (WiegandDecoder.Frame) -> Void,
        failed: @escaping @Sendable (String) -> Void = { _ in }
    ) throws -> WiegandReader {
        let chip = try GPIOChip(lines.chip)
        let d0 = try FallingEdgeLine(chip: chip, spec: lines.d0, subject: "wiegand '\(lines.name)' D0")
        let d1 = try FallingEdgeLine(chip: chip, spec: lines.d1, subject: "wiegand '\(lines.name)' D1")
        // The lines go with the loop before `failed` is told (it requests them again).
        let thread = try WakeableThread.start(
            name: "wiegand",
            loop: { wakeRead in
                WiegandLoop(
                    wakeRead: wakeRead, d0: d0, d1: d1,
                    decoder: WiegandDecoder(
                        frameGap: lines.frameGap, cardBits: lines.cardBits, keypadBurst: lines.keypadBurst),
                    deliver: deliver)
            }, ended: failed)
        logger.info(
            "wiegand reader '\(lines.name)': D0 \(lines.d0), D1 \(lines.d1) on \(chip.name), frame gap \(lines.frameGap)"
        )
        return WiegandReader(thread: thread)
    }

    private init(thread: WakeableThread) { self.thread = thread }

    /// Wakes the thread and waits for it to end (its lines are then released). Once.
    public func stop() { thread.stop() }
}

/// One input line requested for falling-edge events with a pull-up.
final class FallingEdgeLine {
    private let chip: GPIOChip
    private let line: OpaquePointer
    let fd: Int32
    let subject: String

    init(chip: GPIOChip, spec: LineSpec, subject: String) throws {
        self.chip = chip
        self.subject = subject
        let line = try chip.line(spec)
        let what = "\(subject) (line \(spec) on \(chip.name))"
        func request(_ flags: Int32) throws {
            _ = try gpiodCall(
                "gpiod_line_request_falling_edge_events_flags", what,
                handle: { code in code == EBUSY ? chip.busyError(line, spec) : nil }
            ) { gpiod_line_request_falling_edge_events_flags(line, gpioConsumer, flags) }
        }
        do {
            try request(Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP))
        } catch GPIOError.call(_, let code, _) where OutputLine.biasRefusals.contains(code) {
            // No bias on this kernel or chip: the board's (or the level shifter's) pull-ups hold the lines.
            try request(0)
        }
        self.line = line
        fd = gpiod_line_event_get_fd(line)
    }

    /// Whether the line's chip is still there: gpiod_line_update's line-info ioctl on the chip
    /// fails (ENODEV) once the chip is gone, whatever poll(2) on the event file says.
    func checkPresent() throws {
        _ = try gpiodCall("gpiod_line_update", subject) { gpiod_line_update(line) }
    }

    /// One queued edge's kernel timestamp (ns).
    func readEdge() throws -> UInt64 {
        var event = gpiod_line_event()
        _ = try gpiodCall("gpiod_line_event_read_fd", subject) { gpiod_line_event_read_fd(fd, &event) }
        return UInt64(max(event.ts.tv_sec, 0)) * 1_000_000_000 + UInt64(max(event.ts.tv_nsec, 0))
    }

    deinit { gpiod_line_release(line) }
}

/// The reader thread's state; handed over whole to it at pthread_create.
private final class WiegandLoop: WakeableLoop {
    private let wakeRead: Int32
    private let d0: FallingEdgeLine
    private let d1: FallingEdgeLine
    private var decoder: WiegandDecoder
    private let deliver: @Sendable (WiegandDecoder.Frame) -> Void

    init(
        wakeRead: Int32, d0: FallingEdgeLine, d1: FallingEdgeLine, decoder: WiegandDecoder,
        deliver: @escaping @Sendable (WiegandDecoder.Frame) -> Void
    ) {
        self.wakeRead = wakeRead
        self.d0 = d0
        self.d1 = d1
        self.decoder = decoder
        self.deliver = deliver
    }

    deinit { close(wakeRead) }

    /// Until `stop` (nil) or a failure (why).
    func run() -> String? {
        _ = door_safety_altstack_for_current_thread()
        let gapMs = Int32(clamping: (decoder.frameGap.nanosecondsClamped + 999_999) / 1_000_000)
        var fds = [
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
            pollfd(fd: d0.fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: d1.fd, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            // In a frame, wait at most the gap: no edge for that long ends it. Idle, a second,
            // then a look at the chip: its removal may not wake poll (Linux 6.1's line event files).
            let n = poll(&fds, 3, decoder.inFrame ? gapMs : 1000)
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                return "poll failed, errno \(code)"
            }
            if fds[0].revents != 0 { return nil }
            if n == 0 {
                if decoder.inFrame {
                    for frame in decoder.end() { deliver(frame) }
                } else {
                    // Idle for a second: the chip still there? (Its removal need not wake poll.)
                    do { try d0.checkPresent() } catch { return "\(error)" }
                }
                continue
            }
            // Every edge queued on either line now, in kernel time order.
            var edges: [(WiegandDecoder.Line, UInt64)] = []
            var ready = fds
            while true {
                for (i, line) in [(1, WiegandDecoder.Line.d0), (2, .d1)] where ready[i].revents & Int16(POLLIN) != 0 {
                    do {
                        edges.append((line, try (i == 1 ? d0 : d1).readEdge()))
                    } catch {
                        return "\(error)"
                    }
                }
                for i in 1...2 where ready[i].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                    return "\(i == 1 ? d0.subject : d1.subject)'s event descriptor failed (the GPIO chip gone?)"
                }
                ready[0].fd = -1
                for i in ready.indices { ready[i].revents = 0 }
                guard poll(&ready, 3, 0) > 0, edges.count < 4096 else { break }
            }
            for (line, at) in edges.sorted(by: { $0.1 < $1.1 }) {
                for frame in decoder.pulse(line, at: at) { deliver(frame) }
            }
        }
    }
}
