import Glibc

/// Sends one line to a pn532-sim control socket and returns its answer line.
package enum SimulatorControl {
    package static func send(_ line: String, to socketPath: String) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw DaemonError.simulator("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        guard var addr = UnixAddress(socketPath) else { throw DaemonError.simulator("socket path too long") }
        guard addr.withSockaddr({ connect(fd, $0, $1) }) == 0 else {
            throw DaemonError.simulator("cannot reach pn532-sim at \(socketPath): \(String(cString: strerror(errno)))")
        }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let connection = LineConnection(fd: fd, maxLine: 64 << 20)
        guard connection.send(line: line) else { throw DaemonError.simulator("write to pn532-sim failed") }
        guard case .line(let bytes)? = connection.readLine() else {
            throw DaemonError.simulator("pn532-sim gave no answer")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix("ok") else { throw DaemonError.simulator(text) }
        return text
    }
}
