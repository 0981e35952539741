#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Synchronization

/// The state a `WakeableThread` runs: it owns the wake-up pipe's read end
/// (and closes it in its deinit), waits in poll(2) on it beside its own
/// descriptors, and returns from `run()` once a byte arrives on it (nil),
/// or earlier with why it cannot go on.
protocol WakeableLoop: AnyObject {
    func run() -> String?
}

/// One thread that waits in poll(2) and a wake-up pipe to end it: the
/// GPIO input thread (`GPIOBoard`) and a Wiegand reader's (`WiegandReader`).
/// The loop is handed over whole to the new thread (pthread_create's
/// argument), which alone uses it from then on.
final class WakeableThread: Sendable {
    private let wakeWrite: Int32
    /// The thread until `stop()` has taken it (to join or detach it).
    private let thread: Mutex<pthread_t?>

    /// Opens the wake-up pipe, makes the loop with its read end and starts
    /// the thread; `name` names the pipe and the thread in an error
    /// ("input" → "input wake-up pipe", "input thread"). When the loop ends
    /// on its own (a why, not the wake-up), `ended` is told on the thread,
    /// after the loop and what it owns are released (the caller may request
    /// its lines again).
    static func start(
        name: String, loop makeLoop: (_ wakeRead: Int32) -> any WakeableLoop,
        ended: (@Sendable (String) -> Void)? = nil
    ) throws -> WakeableThread {
        var fds: [Int32] = [-1, -1]
        _ = try gpiodCall("pipe", "\(name) wake-up pipe") { pipe(&fds) }
        // The loop owns the read end (its deinit closes it) and its lines.
        let handover = Handover(makeLoop(fds[0]), ended: ended)
        var tid = pthread_t()
        let context = Unmanaged.passRetained(handover).toOpaque()
        let rc = pthread_create(
            &tid, nil,
            { context in
                var handover: Handover? = Unmanaged<Handover>.fromOpaque(context!).takeRetainedValue()
                let why = handover?.loop.run()
                let ended = handover?.ended
                // The loop (its lines) goes before the caller is told.
                handover = nil
                if let why, let ended { ended(why) }
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Handover>.fromOpaque(context).release()
            close(fds[1])
            throw GPIOError.call(function: "pthread_create", errno: rc, subject: "\(name) thread")
        }
        return WakeableThread(wakeWrite: fds[1], thread: tid)
    }

    /// The loop on its way to the new thread (a class, for Unmanaged).
    private final class Handover {
        let loop: any WakeableLoop
        let ended: (@Sendable (String) -> Void)?
        init(_ loop: any WakeableLoop, ended: (@Sendable (String) -> Void)?) {
            self.loop = loop
            self.ended = ended
        }
    }

    private init(wakeWrite: Int32, thread: pthread_t) {
        self.wakeWrite = wakeWrite
        self.thread = Mutex(thread)
    }

    /// Wakes the thread and waits for it to end. Once; later calls return at once.
    func stop() {
        guard let thread = thread.withLock({ $0.take() }) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        // A handler may drop the last reference to the owner on the thread
        // itself: it cannot join itself, it ends on the wake-up.
        if pthread_equal(thread, pthread_self()) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    deinit {
        stop()
        close(wakeWrite)
    }
}
