import DoorCore
import Glibc
import Synchronization

/// A request on the control socket: one JSON object per line,
/// `{"id": …, "method": "…", "params": {…}}`.
package struct ControlRequest {
    var id: JSONValue
    package var method: String
    package var params: [String: JSONValue]
}

/// What a method answers: one result, or a stream of events written as
/// `{"id": …, "event": …}` lines until the client goes away (`log --follow`).
package enum ControlAnswer {
    case value(JSONValue)
    /// Called again and again on the client's thread; returns the next
    /// events (possibly none) and how long to wait before asking again.
    case stream(() throws -> [JSONValue])
    /// A finite stream (`backup`): each value is sent as an event at once,
    /// nil ends it with `{"ok": true, "result": {}}`; an error on the way is
    /// the usual error answer. The connection then takes the next request.
    case chunks(() throws -> JSONValue?)
}

/// Who is on the other end (SO_PEERCRED).
package struct Peer: Equatable {
    package var pid: Int32
    package var uid: UInt32
    var gid: UInt32
}

/// The daemon's control socket: newline-delimited JSON over a Unix stream
/// socket, a thread per client (they are few and short-lived), SO_PEERCRED
/// admission of root, the daemon's own user and members of the admin group.
/// Malformed lines get an error answer and the connection stays usable.
///
/// Bounded, so a flood of clients cannot take the door's threads or file
/// descriptors (the reader, the store and MQTT need them): at most
/// `maxClients` at once (the next is answered `busy` and closed), and a
/// client silent for `idleSeconds` while a request is awaited, or not
/// reading what it is sent for as long, is closed.
///
/// The accept thread and the client threads share only `state`; each client
/// thread owns its connection (`LineConnection`), and `stop` only shuts the
/// descriptors down to wake them.
package final class ControlServer: Sendable {
    static let maxLine = 64 * 1024
    static let maxClients = 32
    static let idleSeconds = 10
    let path: String
    let adminGroup: String
    /// Where users and groups are read: /etc/passwd and /etc/group, never NSS.
    let passwdPath: String
    let groupPath: String
    /// Called on the client threads, several at once.
    private let handler: @Sendable (ControlRequest, Peer) throws -> ControlAnswer
    private struct State {
        var listener: Int32 = -1
        /// The descriptors of the clients being served.
        var clients: Set<Int32> = []
        var stopping = false
    }
    private let state = Mutex(State())

    package init(
        path: String, adminGroup: String, passwdPath: String = Accounts.passwdPath,
        groupPath: String = Accounts.groupPath,
        handler: @escaping @Sendable (ControlRequest, Peer) throws -> ControlAnswer
    ) {
        self.path = path
        self.adminGroup = adminGroup
        self.passwdPath = passwdPath
        self.groupPath = groupPath
        self.handler = handler
    }

    /// The admin group as /etc/group has it now. `isAdmitted` reads the files
    /// again for each connection, so a member added with `adduser` is admitted
    /// without a restart.
    func adminGroupEntry() -> Accounts.Group? {
        Accounts.load(passwd: passwdPath, group: groupPath).group(named: adminGroup)
    }

    /// The socket's mode and owner could not be made what they must be
    /// (docs/security.md "L7"): gatewayd refuses to start rather than run
    /// with a socket admins cannot reach or others can.
    package struct OwnershipFailure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Binds the socket. Returns a warning when the admin group is not in
    /// /etc/group: the door works and root (and gatewayd's own user) can still
    /// use gatewayctl, so this is not a reason to stop.
    ///
    /// Security review L7: the socket's file never exists with more access
    /// than 0660 less the umask (`fchmod` on the socket before `bind`: Linux
    /// gives the new node the socket inode's mode less the umask,
    /// net/unix/af_unix.c `unix_bind`), its directory must be writable by
    /// nobody else (or sticky), so nobody can swap the node between `bind`
    /// and the ownership calls, the node is checked to be our socket, and
    /// every `chown`/`chmod` result is checked: any failure throws
    /// `OwnershipFailure`.
    @discardableResult
    package func start() throws -> String? {
        let dir = path.deletingLastPathComponent
        try Files.createDirectories(dir, mode: 0o755)
        try Self.checkPrivateDirectory(dir.isEmpty ? "." : dir)
        unlink(path)  // a stale socket from a crashed run
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonError.startup("control socket: \(String(cString: strerror(errno)))") }
        guard var addr = UnixAddress(path) else {
            close(fd)
            throw DaemonError.startup("control socket path too long: \(path)")
        }
        guard fchmod(fd, 0o660) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw OwnershipFailure(description: "control socket \(path): fchmod 0660 before bind: \(why)")
        }
        let bound = addr.withSockaddr { bind(fd, $0, $1) }
        guard bound == 0, listen(fd, 64) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw DaemonError.startup("control socket \(path): \(why)")
        }
        // Root and the admin group may connect; SO_PEERCRED decides per request.
        let group = adminGroupEntry()
        do {
            try own(group: group)
        } catch {
            close(fd)
            unlink(path)
            throw error
        }
        state.withLock { $0.listener = fd }
        do {
            try Threads.detach(name: "gatewayd.control") { [self] in acceptLoop(fd) }
        } catch {
            state.withLock { $0.listener = -1 }
            close(fd)
            unlink(path)
            throw DaemonError.startup("control socket: \(error)")
        }
        guard group == nil else { return nil }
        return "control.admin_group: group \"\(adminGroup)\" is not in \(groupPath); "
            + "only root and gatewayd's own user (uid \(getuid())) may use gatewayctl "
            + "(create it with `addgroup --system \(adminGroup)`)"
    }

    /// A directory only this user (or root) may add to, rename in or delete
    /// from: owned by us or root, not a symlink, and not group- or
    /// world-writable unless sticky.
    static func checkPrivateDirectory(_ dir: String) throws {
        var st = stat()
        guard lstat(dir, &st) == 0 else {
            throw OwnershipFailure(description: "control socket directory \(dir): \(String(cString: strerror(errno)))")
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw OwnershipFailure(description: "control socket directory \(dir) is not a directory (a symlink?)")
        }
        guard st.st_uid == geteuid() || st.st_uid == 0 else {
            throw OwnershipFailure(
                description:
                    "control socket directory \(dir) belongs to uid \(st.st_uid), not gatewayd (uid \(geteuid())) or root"
            )
        }
        guard st.st_mode & 0o022 == 0 || st.st_mode & S_ISVTX != 0 else {
            throw OwnershipFailure(
                description:
                    "control socket directory \(dir) is writable by others (mode 0\(String(st.st_mode & 0o7777, radix: 8))): "
                    + "they could replace the socket; make it 0755 (RuntimeDirectoryMode=)")
        }
    }

    /// The bound node, checked to be our socket, given the admin group and
    /// 0660; each call's result checked, then the outcome read back.
    private func own(group: Accounts.Group?) throws {
        func failure(_ what: String) -> OwnershipFailure {
            OwnershipFailure(description: "control socket \(path): \(what): \(String(cString: strerror(errno)))")
        }
        var st = stat()
        guard lstat(path, &st) == 0 else { throw failure("lstat after bind") }
        guard st.st_mode & S_IFMT == S_IFSOCK, st.st_uid == geteuid() else {
            throw OwnershipFailure(description: "control socket \(path) is not the socket gatewayd just bound")
        }
        if let group {
            guard fchownat(AT_FDCWD, path, uid_t.max, group.gid, AT_SYMLINK_NOFOLLOW) == 0 else {
                throw OwnershipFailure(
                    description:
                        "control socket \(path): chown to group \(adminGroup) (gid \(group.gid)) failed: "
                        + "\(String(cString: strerror(errno))) (gatewayd's user must be a member of [control] admin_group)"
                )
            }
        }
        // Not a symlink (checked above) in a directory nobody else may change.
        guard chmod(path, 0o660) == 0 else { throw failure("chmod 0660") }
        guard lstat(path, &st) == 0 else { throw failure("lstat after chmod") }
        guard st.st_mode & 0o777 == 0o660, group.map({ st.st_gid == $0.gid }) ?? true else {
            throw OwnershipFailure(
                description:
                    "control socket \(path) is mode 0\(String(st.st_mode & 0o777, radix: 8)) group \(st.st_gid) after chown/chmod, not 0660 group \(group.map { String($0.gid) } ?? "-")"
            )
        }
    }

    package func stop() {
        let fd = state.withLock { s -> Int32 in
            s.stopping = true
            // Under the lock: a client thread takes its descriptor out of the
            // set before closing it, so none of these is closed (or its number
            // reused) yet. shutdown(2) wakes the client thread; it never blocks.
            for c in s.clients { shutdown(c, Int32(SHUT_RDWR)) }
            defer { s.listener = -1 }  // closed once, however often stop runs
            return s.listener
        }
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
        unlink(path)
    }

    private func acceptLoop(_ fd: Int32) {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                if state.withLock({ $0.stopping }) { return }
                usleep(10_000)
                continue
            }
            let admitted = state.withLock { s -> Bool in
                guard s.clients.count < Self.maxClients else { return false }
                s.clients.insert(client)
                return true
            }
            guard admitted else {
                // Best effort, never blocking the accept loop.
                _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
                LineConnection(fd: client, maxLine: Self.maxLine).send(
                    Self.error(.null, "busy", "\(Self.maxClients) clients are connected; try again"))
                close(client)
                continue
            }
            var timeout = timeval(tv_sec: Self.idleSeconds, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            do {
                try Threads.detach(name: "gatewayd.client") { [self] in
                    serve(client)
                    state.withLock { _ = $0.clients.remove(client) }
                    close(client)
                }
            } catch {
                state.withLock { _ = $0.clients.remove(client) }
                close(client)
            }
        }
    }

    private func serve(_ fd: Int32) {
        guard let peer = Self.peer(fd) else { return }
        let connection = LineConnection(fd: fd, maxLine: Self.maxLine)
        guard isAdmitted(peer) else {
            connection.send(Self.error(.null, "forbidden", "uid \(peer.uid) is not root or in group \(adminGroup)"))
            return
        }
        while let line = connection.readLine() {
            let request: ControlRequest
            switch line {
            case .tooLong:
                connection.send(Self.error(.null, "too_large", "a request line is at most \(Self.maxLine) bytes"))
                continue
            case .line(let bytes):
                if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                switch Self.parse(bytes) {
                case .failure(let failure):
                    connection.send(failure.answer)
                    continue
                case .success(let r): request = r
                }
            }
            do {
                switch try handler(request, peer) {
                case .value(let v):
                    connection.send(.object([("id", request.id), ("ok", .bool(true)), ("result", v)]))
                case .stream(let next):
                    while !state.withLock({ $0.stopping }) {
                        for event in try next() {
                            guard connection.send(.object([("id", request.id), ("event", event)])) else { return }
                        }
                        guard connection.isOpen() else { return }
                        usleep(200_000)
                    }
                    return
                case .chunks(let next):
                    while let event = try next() {
                        guard connection.send(.object([("id", request.id), ("event", event)])) else { return }
                    }
                    connection.send(.object([("id", request.id), ("ok", .bool(true)), ("result", .object([]))]))
                }
            } catch {
                connection.send(Self.error(request.id, "failed", "\(error)"))
            }
        }
    }

    static func parse(_ bytes: [UInt8]) -> Result<ControlRequest, ControlFailure> {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes, maxDepth: 8, maxBytes: maxLine)
        } catch {
            return .failure(ControlFailure(answer: Self.error(.null, "bad_request", "\(error)")))
        }
        guard value.objectValue != nil else {
            return .failure(ControlFailure(answer: Self.error(.null, "bad_request", "a request is a JSON object")))
        }
        let id = value["id"] ?? .null
        switch id {
        case .string, .int: break
        default:
            return .failure(
                ControlFailure(answer: Self.error(.null, "bad_request", "id must be a string or an integer")))
        }
        guard let method = value["method"]?.stringValue else {
            return .failure(ControlFailure(answer: Self.error(id, "bad_request", "method must be a string")))
        }
        var params: [String: JSONValue] = [:]
        if let p = value["params"] {
            guard let object = p.objectValue else {
                return .failure(ControlFailure(answer: Self.error(id, "bad_request", "params must be an object")))
            }
            for (k, v) in object { params[k] = v }
        }
        return .success(ControlRequest(id: id, method: method, params: params))
    }

    static func error(_ id: JSONValue, _ code: String, _ message: String) -> JSONValue {
        .object([
            ("id", id), ("ok", .bool(false)),
            ("error", .object([("code", .string(code)), ("message", .string(message))])),
        ])
    }

    static func peer(_ fd: Int32) -> Peer? {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (socket(7)); Glibc's
        // module hides it behind _GNU_SOURCE, so it is read as its three fields.
        var cred: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var len = socklen_t(MemoryLayout.size(ofValue: cred))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0, len == 12 else { return nil }
        return Peer(pid: cred.pid, uid: cred.uid, gid: cred.gid)
    }

    /// Root, the daemon's own user, and members (primary or listed in
    /// /etc/group) of the admin group. Never through NSS: see `Accounts`.
    func isAdmitted(_ peer: Peer) -> Bool {
        if peer.uid == 0 || peer.uid == getuid() { return true }
        let accounts = Accounts.load(passwd: passwdPath, group: groupPath)
        guard let group = accounts.group(named: adminGroup) else { return false }
        return accounts.isMember(uid: peer.uid, gid: peer.gid, of: group)
    }
}

struct ControlFailure: Error {
    var answer: JSONValue
}

/// A `sockaddr_un` for a path.
package struct UnixAddress {
    var storage = sockaddr_un()
    package init?(_ path: String) {
        storage.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: storage.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
    }
    package mutating func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}

/// Bounded line reading and whole-line writing on a stream socket.
package final class LineConnection {
    package enum Line { case line([UInt8]), tooLong }
    let fd: Int32
    let maxLine: Int
    private var buffer: [UInt8] = []
    private var discarding = false

    package init(fd: Int32, maxLine: Int) {
        self.fd = fd
        self.maxLine = maxLine
    }

    /// The next line (without its newline); nil at end of stream.
    package func readLine() -> Line? {
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            if let nl = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                if discarding || line.count > maxLine {
                    discarding = false
                    return .tooLong
                }
                return .line(line)
            }
            if buffer.count > maxLine {
                // Drop what is buffered and the rest of this line, then answer once.
                buffer.removeAll()
                discarding = true
            }
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            buffer += chunk[0..<n]
        }
    }

    /// Writes one JSON line (MSG_NOSIGNAL: a vanished client is an error
    /// return, not SIGPIPE); false when the peer is gone.
    @discardableResult
    package func send(_ value: JSONValue) -> Bool { send(line: value.serialized) }

    /// Writes one text line.
    @discardableResult
    package func send(line: String) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    /// Whether the peer still has the connection open (for streams).
    func isOpen() -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, 0) >= 0 else { return false }
        if p.revents & Int16(POLLHUP | POLLERR) != 0 { return false }
        if p.revents & Int16(POLLIN) != 0 {
            var b: UInt8 = 0
            return recv(fd, &b, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
        }
        return true
    }
}
