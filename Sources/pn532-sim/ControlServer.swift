#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// The control socket: a Unix stream socket taking one command a line and
/// answering one line each (socket(7), unix(7)). Non-blocking; the
/// simulator's poll loop drives it.
final class ControlServer {
    let path: String
    let listener: Int32
    private(set) var clients: [Int32: [UInt8]] = [:]

    /// The client side, for `pn532-sim --send`: sends `line` to the server
    /// at `path` and returns its one-line answer.
    static func send(_ line: String, to path: String) throws -> String {
        var addr = try address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket") }
        defer { close(fd) }
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else { throw SystemError("connect", path) }
        let bytes = Array((line + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw SystemError("write", path) }
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while answer.count < 1 << 20 {
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 || byte == 0x0A { break }
            answer.append(byte)
        }
        return String(decoding: answer, as: UTF8.self)
    }

    private static func address(_ path: String) throws -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard path.utf8.count < capacity else {
            throw SystemError("bind", "\(path): longer than \(capacity - 1) bytes", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { buf in
            for (i, c) in path.utf8.enumerated() { buf[i] = c }
        }
        return addr
    }

    init(path: String) throws {
        var addr = try Self.address(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SystemError("socket") }
        unlink(path)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 8) == 0 else {
            let e = SystemError(bound == 0 ? "listen" : "bind", path)
            close(fd)
            throw e
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.path = path
        listener = fd
        var st = stat()
        bound_ = stat(path, &st) == 0 ? (st.st_dev, st.st_ino) : nil
    }

    /// The socket file this server bound (device, inode): a successor started
    /// at the same path while this one exits (gatewayd restarted after a
    /// crash) must keep its own socket.
    private var bound_: (dev_t, ino_t)?

    deinit {
        for fd in clients.keys { close(fd) }
        close(listener)
        var st = stat()
        if let (dev, ino) = bound_, stat(path, &st) == 0, st.st_dev == dev, st.st_ino == ino { unlink(path) }
    }

    var descriptors: [Int32] { [listener] + clients.keys.sorted() }

    func accept() {
        while true {
            let fd = Glibc.accept(listener, nil, nil)
            guard fd >= 0 else { return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            clients[fd] = []
        }
    }

    /// Reads from a client: the complete lines it sent, and whether it
    /// closed its side (the caller answers, then drops it).
    func readLines(_ fd: Int32) -> (lines: [String], closed: Bool) {
        var buf = [UInt8](repeating: 0, count: 1024)
        var closed = false
        while true {
            let n = read(fd, &buf, buf.count)
            if n > 0 {
                clients[fd, default: []] += buf[0..<n]
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { break }
            closed = true  // EOF or error
            break
        }
        var pending = clients[fd] ?? []
        var lines: [String] = []
        while let nl = pending.firstIndex(of: 0x0A) {
            lines.append(String(decoding: pending[..<nl], as: UTF8.self))
            pending.removeSubrange(...nl)
        }
        if closed && !pending.isEmpty { lines.append(String(decoding: pending, as: UTF8.self)) }
        clients[fd] = closed ? [] : pending
        return (lines, closed)
    }

    func reply(_ fd: Int32, _ line: String) {
        var bytes = Array((line + "\n").utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n > 0 { bytes = bytes.dropFirst(n); continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 100)
                continue
            }
            return
        }
    }

    func drop(_ fd: Int32) {
        if clients.removeValue(forKey: fd) != nil { close(fd) }
    }
}
