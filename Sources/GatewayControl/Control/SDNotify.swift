import Glibc

/// sd_notify(3) without libsystemd: datagrams to `$NOTIFY_SOCKET` (a path, or
/// an abstract name starting with `@`). A no-op when the variable is unset.
package struct SDNotify {
    let socketPath: String?
    /// Half of `WATCHDOG_USEC` when the watchdog is on for this process.
    package let watchdogInterval: Duration?

    package static func fromEnvironment(_ env: [String: String] = Environment.current) -> SDNotify {
        var interval: Duration?
        if let usec = env["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0,
            env["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true
        {
            interval = .microseconds(Int64(clamping: usec / 2))
        }
        return SDNotify(socketPath: env["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }, watchdogInterval: interval)
    }

    @discardableResult
    package func send(_ message: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(socketPath.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let payload = Array(message.utf8)
        let sent = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, payload, payload.count, Int32(MSG_NOSIGNAL), $0, length)
            }
        }
        return sent == payload.count
    }
}
