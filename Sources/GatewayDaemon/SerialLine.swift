import Glibc

/// The serial adapter of an OSDP bus (issue 35): the one owner of the tty's file descriptor.
/// Opened raw (cfmakeraw: 8N1, no echo, no flow control, no line editing) at the bus's rate,
/// non-blocking, close-on-exec; `CLOCAL` so a missing modem line never blocks it. On a UART
/// whose driver drives an RS-485 transceiver from RTS (TIOCSRS485), half duplex is switched on
/// (RTS asserted while sending); a USB adapter turns its driver around itself and a pseudo-
/// terminal (the tests) has no such ioctl: both are fine. Frame timing (reply timeouts,
/// retries, a torn frame dropped at the next retry) is the control panel's (`ControlPanel`).
final class SerialLine {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let path: String
    let fd: Int32
    /// Whether the kernel took RS-485 half duplex (TIOCSRS485) for this line.
    private(set) var rs485 = false

    static func speed(_ baud: Int) -> speed_t? {
        switch baud {
        case 9600: return speed_t(B9600)
        case 19200: return speed_t(B19200)
        case 38400: return speed_t(B38400)
        case 57600: return speed_t(B57600)
        case 115200: return speed_t(B115200)
        default: return nil
        }
    }

    init(path: String, baud: Int) throws {
        guard let speed = Self.speed(baud) else { throw Failure(description: "\(path): \(baud) is not a serial rate") }
        var fd: Int32
        repeat { fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw Failure(description: "\(path): open: \(String(cString: strerror(errno)))") }
        var t = termios()
        guard tcgetattr(fd, &t) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "\(path): not a serial line (tcgetattr: \(why))")
        }
        cfmakeraw(&t)
        t.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD)
        t.c_cflag &= ~(tcflag_t(CSTOPB) | tcflag_t(CRTSCTS))
        cfsetispeed(&t, speed)
        cfsetospeed(&t, speed)
        guard tcsetattr(fd, TCSANOW, &t) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "\(path): tcsetattr: \(why)")
        }
        tcflush(fd, TCIOFLUSH)
        self.path = path
        self.fd = fd
        rs485 = Self.halfDuplex(fd)
    }

    deinit { close(fd) }

    /// struct serial_rs485 (linux/serial.h): flags, delays, padding — 32 bytes. TIOCSRS485 is
    /// asm-generic's 0x542F on both arm64 and x86_64.
    private static func halfDuplex(_ fd: Int32) -> Bool {
        let enabled: UInt32 = 1 << 0, rtsOnSend: UInt32 = 1 << 1
        var config = [UInt32](repeating: 0, count: 8)
        config[0] = enabled | rtsOnSend
        return config.withUnsafeMutableBytes { ioctl(fd, UInt(0x542F), $0.baseAddress!) } == 0
    }

    /// Writes all of `bytes` (waiting out a full buffer), then drains them onto the wire so the
    /// line turns around only after the last stop bit. False when the line is gone.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                offset += n
            } else if n < 0 && (errno == EAGAIN || errno == EINTR) {
                var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&pfd, 1, 20)
            } else {
                return false
            }
        }
        _ = tcdrain(fd)
        return true
    }

    /// Waits up to `milliseconds` for bytes and returns what came (empty: none). Nil when the
    /// line is gone (a USB adapter unplugged: EIO, or a hang-up).
    func read(waiting milliseconds: Int32) -> [UInt8]? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, max(0, milliseconds))
        if ready < 0 { return errno == EINTR ? [] : nil }
        if ready == 0 { return [] }
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n > 0 { return Array(buffer[0..<n]) }
        if n < 0 && (errno == EAGAIN || errno == EINTR) { return [] }
        // 0 with POLLHUP, or EIO: the other end is gone.
        return pfd.revents & Int16(POLLHUP | POLLERR) != 0 || n < 0 ? nil : []
    }
}
