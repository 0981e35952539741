#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif
import CPseudoTerminal

/// A failed system call: the C function and its errno (DEVELOPERS.md "Conventions" §7).
struct SystemError: Error, CustomStringConvertible {
    let function: String
    let errno: Int32
    let detail: String

    init(_ function: String, _ detail: String = "", errno: Int32 = Glibc.errno) {
        self.function = function
        self.errno = errno
        self.detail = detail
    }

    var description: String {
        "\(function)\(detail.isEmpty ? "" : " \(detail)"): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// The master side of a pseudo-terminal whose slave plays the PN532's
/// serial port (posix_openpt(3), grantpt(3), unlockpt(3), ptsname_r(3)).
/// The master is in raw mode (cfmakeraw(3)) and non-blocking.
final class PseudoTerminal {
    let master: Int32
    let slavePath: String

    init() throws {
        var name = [CChar](repeating: 0, count: 128)
        var failed: UnsafePointer<CChar>?
        let fd = door_pty_open(&name, name.count, &failed)
        guard fd >= 0 else { throw SystemError(failed.map { String(cString: $0) } ?? "posix_openpt") }
        do {
            slavePath = String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            try Self.makeRaw(fd, "master")
            guard fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0 else {
                throw SystemError("fcntl", "O_NONBLOCK")
            }
        } catch {
            close(fd)
            throw error
        }
        master = fd
        try resetSlave()
    }

    deinit { close(master) }

    static func makeRaw(_ fd: Int32, _ what: String) throws {
        var t = termios()
        guard tcgetattr(fd, &t) == 0 else { throw SystemError("tcgetattr", what) }
        cfmakeraw(&t)
        guard tcsetattr(fd, TCSANOW, &t) == 0 else { throw SystemError("tcsetattr", what) }
    }

    /// Puts the slave back in raw mode. This also clears libnfc's CCLAIMED
    /// flag (c_iflag bit 31, libnfc `uart_open`), which a host killed before
    /// `uart_close` restored the settings would leave set, so that the next
    /// host is not told "Serial port already claimed".
    func resetSlave() throws {
        let fd = open(slavePath, O_RDWR | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { throw SystemError("open", slavePath) }
        defer { close(fd) }
        try Self.makeRaw(fd, slavePath)
    }

    /// Reads what the host wrote; nil when no host has the slave open (EIO).
    func read() throws -> [UInt8]? {
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = Glibc.read(master, &buf, buf.count)
            if n >= 0 { return Array(buf[0..<n]) }
            switch errno {
            case EINTR: continue
            case EAGAIN: return []
            case EIO: return nil
            default: throw SystemError("read", "pty master")
            }
        }
    }

    /// Writes all of `bytes`; bytes written while no host is there are lost, as on a wire.
    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
            if n >= 0 { offset += n; continue }
            switch errno {
            case EINTR: continue
            case EAGAIN:
                var p = pollfd(fd: master, events: Int16(POLLOUT), revents: 0)
                _ = poll(&p, 1, 100)
            case EIO: return
            default: throw SystemError("write", "pty master")
            }
        }
    }
}
