#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Synchronization

// The few things GatewayCLI took from Foundation proper (NSLock, Thread,
// FileHandle, Process, trimmingCharacters, padding), without it: Foundation
// links ICU's 34 MB of Unicode data into the static binary (issue 12).
// FoundationEssentials (Data, URL, FileManager, ProcessInfo) carries none.

/// NSLock's `withLock` on Synchronization's `Mutex`.
final class Lock: Sendable {
    private let mutex = Mutex(())

    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try mutex.withLock { (_: inout Void) throws(E) -> T in try body() }
    }
}

/// A detached POSIX thread (what Foundation's `Thread { … }.start()` was).
enum Threads {
    struct StartError: Error, CustomStringConvertible {
        let name: String
        let errno: Int32
        var description: String { "cannot start thread \(name): \(String(cString: strerror(errno)))" }
    }

    private final class Body: Sendable {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts `body` on a new detached thread named `name` (at most 15
    /// bytes are shown by the kernel, as with `Thread.name`).
    static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws {
        var tid = pthread_t()
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        let rc = pthread_create(
            &tid, nil,
            { context in
                let body = Unmanaged<Body>.fromOpaque(context!).takeRetainedValue()
                // pthread_setname_np's job, through procfs (the kernel keeps 15 bytes).
                let comm = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
                if comm >= 0 {
                    FD.write(comm, body.name.utf8.prefix(15))
                    close(comm)
                }
                body.run()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw StartError(name: name, errno: rc)
        }
        pthread_detach(tid)
    }
}

/// Whole-buffer writes and reads on file descriptors (FileHandle's jobs).
enum FD {
    /// Writes all of `bytes` to `fd`, retrying on EINTR and short writes.
    @discardableResult
    static func write(_ fd: Int32, _ bytes: some Collection<UInt8>) -> Bool {
        let all = Array(bytes)
        var done = 0
        while done < all.count {
            let n = all.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, all.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            done += n
        }
        return true
    }

    static func write(_ fd: Int32, _ text: String) { write(fd, Array(text.utf8)) }

    /// Reads `fd` to its end; nil on a read error.
    static func readToEnd(_ fd: Int32) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { return out }
            out += buffer[0..<n]
        }
    }
}

/// Text on standard error (FileHandle.standardError.write).
func printError(_ text: String) { FD.write(2, text) }

extension StringProtocol {
    /// Without leading and trailing whitespace and newlines
    /// (`trimmingCharacters(in: .whitespacesAndNewlines)`).
    var trimmed: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }

    /// Without leading and trailing blanks: spaces and tabs, not newlines
    /// (`trimmingCharacters(in: .whitespaces)`).
    var trimmingBlanks: String {
        func blank(_ c: Character) -> Bool { c.isWhitespace && !c.isNewline }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }

}

extension String {
    /// Padded with spaces on the right to `width` characters, or cut to it
    /// (`padding(toLength:withPad: " ", startingAt: 0)`).
    func padded(to width: Int) -> String {
        count >= width ? String(prefix(width)) : self + String(repeating: " ", count: width - count)
    }

    /// The part before the last "/" (`NSString.deletingLastPathComponent`
    /// for the absolute and relative paths the daemon is given).
    var deletingLastPathComponent: String {
        var path = Substring(self)
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        if slash == path.startIndex { return "/" }
        var head = path[..<slash]
        while head.count > 1, head.hasSuffix("/") { head = head.dropLast() }
        return String(head)
    }
}

/// A child process started with posix_spawn (what Foundation's `Process` was
/// for the daemon's pn532-sim): the daemon's environment, every signal at its
/// default disposition and unblocked, standard output on /dev/null if asked,
/// no descriptor of the daemon's other than 0, 1 and 2.
final class ChildProcess {
    let pid: pid_t
    private let state = Mutex<Int32?>(nil)  // the wait status once reaped

    struct SpawnError: Error, CustomStringConvertible {
        let path: String
        let errno: Int32
        var description: String { "cannot start \(path): \(String(cString: strerror(errno)))" }
    }

    init(path: String, arguments: [String], discardOutput: Bool) throws {
        // The daemon's own descriptors (sockets, the store, the reader) stay
        // out of the child: marked close-on-exec before the spawn.
        Self.closeOnExecAbove2()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if discardOutput {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        // The daemon ignores SIGTERM/SIGINT/SIGHUP (it takes them through
        // dispatch); an ignored signal stays ignored across exec unless reset.
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child = pid_t()
        let rc = posix_spawn(&child, path, &actions, &attr, argv, environ)
        guard rc == 0 else { throw SpawnError(path: path, errno: rc) }
        pid = child
    }

    private static func closeOnExecAbove2() {
        guard let dir = opendir("/proc/self/fd") else { return }
        defer { closedir(dir) }
        let own = dirfd(dir)
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let fd = Int32(name), fd > 2, fd != own else { continue }
            let flags = fcntl(fd, F_GETFD)
            if flags >= 0 && flags & FD_CLOEXEC == 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    /// Reaps the child if it has exited (without blocking).
    var isRunning: Bool {
        state.withLock { status in
            guard status == nil else { return false }
            var s: Int32 = 0
            let r = waitpid(pid, &s, WNOHANG)
            if r == pid || (r < 0 && errno == ECHILD) {
                status = s
                return false
            }
            return true
        }
    }

    /// SIGTERM, as `Process.terminate()`.
    func terminate() {
        if isRunning { kill(pid, SIGTERM) }
    }

    /// Blocks until the child has exited and is reaped.
    func waitUntilExit() {
        state.withLock { status in
            guard status == nil else { return }
            var s: Int32 = 0
            while waitpid(pid, &s, 0) < 0 && errno == EINTR {}
            status = s
        }
    }
}

/// The process environment (`ProcessInfo.processInfo.environment`), read from `environ`.
enum Environment {
    static var current: [String: String] {
        var out: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let pair = String(cString: pointer)
            if let eq = pair.firstIndex(of: "=") {
                let name = String(pair[..<eq])
                // The first definition wins, as getenv(3) finds it.
                if out[name] == nil { out[name] = String(pair[pair.index(after: eq)...]) }
            }
            entry += 1
        }
        return out
    }
}

/// Files by path (FileManager's jobs the CLI and the daemon had), on POSIX calls.
enum Files {
    struct Failure: Error, CustomStringConvertible {
        let operation: String
        let path: String
        let errno: Int32
        var description: String { "\(operation) \(path): \(String(cString: strerror(errno)))" }
    }

    /// The whole file; nil when it cannot be opened or read.
    static func contents(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return FD.readToEnd(fd)
    }

    /// Creates or truncates `path` and writes `bytes` (mode for a new file: `mode` less the umask).
    static func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(operation: "open", path: path, errno: errno) }
        defer { close(fd) }
        guard FD.write(fd, bytes) else { throw Failure(operation: "write", path: path, errno: errno) }
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// A regular file this process may execute.
    static func isExecutable(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
    }

    /// `mkdir -p`: every missing directory of `path`, each with `mode` (less the umask).
    static func createDirectories(_ path: String, mode: mode_t = 0o755) throws {
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw Failure(operation: "mkdir", path: path, errno: ENOTDIR)
            }
            return
        }
        let parent = path.deletingLastPathComponent
        if !parent.isEmpty, parent != path { try createDirectories(parent, mode: mode) }
        guard mkdir(path, mode) == 0 || errno == EEXIST else {
            throw Failure(operation: "mkdir", path: path, errno: errno)
        }
    }

    /// The working directory (`FileManager.currentDirectoryPath`).
    static var currentDirectory: String {
        guard let cwd = getcwd(nil, 0) else { return "." }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    /// The path with every symbolic link resolved, or the path itself when it cannot be.
    static func resolvingSymlinks(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

extension String {
    /// The part after the last "/" (`URL.lastPathComponent` for a file path).
    var lastPathComponent: String {
        var path = Substring(self)
        while path.count > 1, path.hasSuffix("/") { path = path.dropLast() }
        guard let slash = path.lastIndex(of: "/") else { return String(path) }
        return path.count == 1 ? "/" : String(path[path.index(after: slash)...])
    }
}
