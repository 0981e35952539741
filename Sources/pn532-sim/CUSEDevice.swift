#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif
import CPseudoTerminal

/// A character device served from user space through `/dev/cuse` (CUSE,
/// fs/fuse/cuse.c), speaking the FUSE protocol of linux/fuse.h directly:
/// CUSE_INIT names the device (`DEVNAME=`, devtmpfs creates the node), then
/// each read(2) of the channel is one request — OPEN, READ, WRITE, IOCTL,
/// RELEASE — answered by one write(2). Ioctls are unrestricted
/// (CUSE_UNRESTRICTED_IOCTL): the kernel sends the bare command and
/// argument, and the server asks for the user memory it needs with
/// FUSE_IOCTL_RETRY, which is how SPI_IOC_MESSAGE's buffers are reached.
final class CUSEDevice {
    enum Request {
        case open(unique: UInt64, flags: UInt32)
        case read(unique: UInt64, fh: UInt64, size: Int)
        case write(unique: UInt64, fh: UInt64, data: [UInt8])
        /// `input`: the user memory asked for so far (nothing on the first
        /// call); `outputSize`: the output memory asked for.
        case ioctl(unique: UInt64, fh: UInt64, command: UInt32, argument: UInt64, input: [UInt8], outputSize: Int)
        case release(unique: UInt64, fh: UInt64)
        /// Answered by the channel itself (ENOSYS, or nothing for INTERRUPT).
        case other
    }

    let fd: Int32
    let path: String
    private var buffer = [UInt8](repeating: 0, count: 128 * 1024 + 4096)
    private static let maxTransfer: UInt32 = 128 * 1024

    /// Opens /dev/cuse and registers `path` (/dev/NAME); returns once the
    /// node exists.
    init(path: String) throws {
        guard path.hasPrefix("/dev/"), path.count > 5 else {
            throw SystemError("cuse", "\(path): not under /dev", errno: EINVAL)
        }
        let fd = open("/dev/cuse", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open", "/dev/cuse (modprobe cuse)") }
        self.fd = fd
        self.path = path
        do {
            try handshake(name: String(path.dropFirst(5)))
        } catch {
            close(fd)
            throw error
        }
        // devtmpfs creates the node after the device is added.
        for _ in 0..<200 {
            if access(path, F_OK) == 0 { return }
            usleep(10_000)
        }
        close(fd)
        throw SystemError("cuse", "\(path) did not appear", errno: ENOENT)
    }

    deinit { close(fd) }

    private func handshake(name: String) throws {
        let n = try readRequest()
        let header = buffer.withUnsafeBytes { $0.loadUnaligned(as: fuse_in_header.self) }
        guard n >= MemoryLayout<fuse_in_header>.size + MemoryLayout<cuse_init_in>.size,
            header.opcode == UInt32(CUSE_INIT.rawValue)
        else { throw SystemError("cuse", "first request is not CUSE_INIT", errno: EPROTO) }
        let request = buffer.withUnsafeBytes {
            $0.loadUnaligned(fromByteOffset: MemoryLayout<fuse_in_header>.size, as: cuse_init_in.self)
        }
        var out = cuse_init_out()
        out.major = UInt32(FUSE_KERNEL_VERSION)
        out.minor = min(request.minor, 31)
        out.flags = UInt32(CUSE_UNRESTRICTED_IOCTL)
        out.max_read = Self.maxTransfer
        out.max_write = Self.maxTransfer
        out.dev_major = 0  // any free major
        out.dev_minor = 0
        var payload = Self.bytes(of: out)
        payload += Array("DEVNAME=\(name)".utf8) + [0]
        try reply(header.unique, payload)
    }

    private func readRequest() throws -> Int {
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n >= 0 { return n }
            if errno == EINTR || errno == ENOENT { continue }  // ENOENT: an interrupted request went away
            throw SystemError("read", "/dev/cuse")
        }
    }

    /// The next request (blocks until one comes; the caller polls `fd`).
    func next() throws -> Request {
        let n = try readRequest()
        let hsize = MemoryLayout<fuse_in_header>.size
        guard n >= hsize else { return .other }
        let header = buffer.withUnsafeBytes { $0.loadUnaligned(as: fuse_in_header.self) }
        func body<T>(_: T.Type) -> T { buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: hsize, as: T.self) } }
        switch header.opcode {
        case UInt32(FUSE_OPEN.rawValue):
            return .open(unique: header.unique, flags: body(fuse_open_in.self).flags)
        case UInt32(FUSE_READ.rawValue):
            let r = body(fuse_read_in.self)
            return .read(unique: header.unique, fh: r.fh, size: Int(r.size))
        case UInt32(FUSE_WRITE.rawValue):
            let w = body(fuse_write_in.self)
            let start = hsize + MemoryLayout<fuse_write_in>.size
            let end = min(n, start + Int(w.size))
            return .write(unique: header.unique, fh: w.fh, data: Array(buffer[start..<max(start, end)]))
        case UInt32(FUSE_IOCTL.rawValue):
            let i = body(fuse_ioctl_in.self)
            let start = hsize + MemoryLayout<fuse_ioctl_in>.size
            let end = min(n, start + Int(i.in_size))
            return .ioctl(
                unique: header.unique, fh: i.fh, command: i.cmd, argument: i.arg,
                input: Array(buffer[start..<max(start, end)]), outputSize: Int(i.out_size))
        case UInt32(FUSE_RELEASE.rawValue):
            return .release(unique: header.unique, fh: body(fuse_release_in.self).fh)
        case UInt32(FUSE_INTERRUPT.rawValue):
            return .other  // every request is answered at once: nothing to interrupt
        default:
            try reply(header.unique, error: ENOSYS)
            return .other
        }
    }

    /// Answers request `unique`: `error` (an errno) or the payload.
    func reply(_ unique: UInt64, error: Int32 = 0, _ payload: [UInt8] = []) throws {
        var header = fuse_out_header()
        header.unique = unique
        header.error = -error
        let body = error == 0 ? payload : []
        header.len = UInt32(MemoryLayout<fuse_out_header>.size + body.count)
        let message = Self.bytes(of: header) + body
        let n = message.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        // ENOENT: the request was interrupted and is gone; not our failure.
        if n < 0 && errno != ENOENT { throw SystemError("write", "/dev/cuse reply") }
    }

    func replyOpen(_ unique: UInt64, fh: UInt64) throws {
        var out = fuse_open_out()
        out.fh = fh
        out.open_flags = UInt32(FOPEN_NONSEEKABLE)
        try reply(unique, Self.bytes(of: out))
    }

    func replyWrite(_ unique: UInt64, count: Int) throws {
        var out = fuse_write_out()
        out.size = UInt32(count)
        try reply(unique, Self.bytes(of: out))
    }

    /// The ioctl's result and the bytes for its output memory.
    func replyIoctl(_ unique: UInt64, result: Int32, output: [UInt8] = []) throws {
        var out = fuse_ioctl_out()
        out.result = result
        try reply(unique, Self.bytes(of: out) + output)
    }

    /// Asks the kernel to call again with these user memory ranges copied in
    /// (`input`) and made writable (`output`).
    func retryIoctl(_ unique: UInt64, input: [(UInt64, Int)], output: [(UInt64, Int)]) throws {
        var out = fuse_ioctl_out()
        out.flags = UInt32(FUSE_IOCTL_RETRY)
        out.in_iovs = UInt32(input.count)
        out.out_iovs = UInt32(output.count)
        var payload = Self.bytes(of: out)
        for (base, len) in input + output {
            var v = fuse_ioctl_iovec()
            v.base = base
            v.len = UInt64(len)
            payload += Self.bytes(of: v)
        }
        try reply(unique, payload)
    }

    static func bytes<T>(of value: T) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }
}
