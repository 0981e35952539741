#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The threads of the transports (GatewayMQTT, GatewayNATS): each link runs
/// its network and committer threads itself, outside Dispatch's pool, and
/// hands work between them through a `Condition`; the committer's queue and
/// group commit are one `OutboxCommitter` (OutboxCommitter.swift) for both.

/// A value guarded by a pthread mutex with a condition variable on
/// CLOCK_MONOTONIC: what the committers and the shutdown handshakes wait on
/// (Synchronization's `Mutex` has no condition variable). Shareable only
/// for a Sendable `State`: what the closures return leaves the lock.
public final class Condition<State> {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var state: State

    public init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        #if canImport(Glibc)
            pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        cond.deallocate()
    }

    /// Runs `body` with the state locked, then wakes every waiter.
    public func update<T>(_ body: (inout State) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(cond)
            pthread_mutex_unlock(mutex)
        }
        return try body(&state)
    }

    /// Reads the state without waking anyone.
    public func read<T>(_ body: (State) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(state)
    }

    /// Waits until `ready` holds, then runs `body` on the state (locked).
    public func wait<T>(until ready: (State) -> Bool, then body: (inout State) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(state) { pthread_cond_wait(cond, mutex) }
        return try body(&state)
    }

    /// Waits until `ready` holds or `timeout` has passed; whether it holds.
    public func wait(for timeout: Duration, until ready: (State) -> Bool) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let (seconds, attoseconds) = timeout.components
        var nanoseconds = Int(deadline.tv_nsec) + Int(attoseconds / 1_000_000_000)
        deadline.tv_sec += Int(seconds) + nanoseconds / 1_000_000_000
        nanoseconds %= 1_000_000_000
        deadline.tv_nsec = nanoseconds
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready(state) {
            if pthread_cond_timedwait(cond, mutex, &deadline) == ETIMEDOUT { return ready(state) }
        }
        return true
    }
}

// @unchecked: `state` is read and written only with `mutex` (a pthread mutex, for its condition variable) held.
extension Condition: @unchecked Sendable where State: Sendable {}

/// A thread that could not be started (pthread_create's error).
public struct ThreadStartError: Error, CustomStringConvertible {
    public let name: String
    public let code: Int32
    public var description: String { "thread \(name): \(String(cString: strerror(code)))" }
}

/// Starts a detached thread named `name` (the kernel keeps 15 bytes) running `body`.
public func startThread(name: String, _ body: @escaping @Sendable () -> Void) throws(ThreadStartError) {
    final class Box {
        let name: String
        let body: @Sendable () -> Void
        init(_ name: String, _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
        &thread, nil,
        { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            nameThisThread(box.name)
            box.body()
            return nil
        }, box)
    guard rc == 0 else {
        Unmanaged<Box>.fromOpaque(box).release()
        throw ThreadStartError(name: name, code: rc)
    }
    pthread_detach(thread)
}

/// The threads a link starts besides its committer (MQTT's network thread;
/// NATS' manager and fleet threads), counted so `stop` can wait for every
/// one of them to end.
public final class ThreadGroup: Sendable {
    private let running = Condition(0)

    public init() {}

    /// Starts `body` on a thread of its own, counted until it returns.
    public func start(name: String, _ body: @escaping @Sendable () -> Void) throws(ThreadStartError) {
        running.update { $0 += 1 }
        var started = false
        defer { if !started { running.update { $0 -= 1 } } }
        try startThread(name: name) { [running] in
            body()
            running.update { $0 -= 1 }
        }
        started = true
    }

    /// Waits up to `timeout` for every thread to end; true when they did (or none ran).
    public func waitAll(within timeout: Duration) -> Bool {
        running.wait(for: timeout) { $0 == 0 }
    }
}

/// Names the calling thread (what `ps -L` and a core dump show) through
/// /proc: glibc's pthread_setname_np is not visible to Swift.
private func nameThisThread(_ name: String) {
    #if os(Linux)
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    #endif
}
