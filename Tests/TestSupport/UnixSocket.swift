import Glibc

/// A Unix socket's address, for `bind` and `connect`.
public enum UnixSocket {
    /// `bind(2)` of `fd` to `path`: its result.
    public static func bind(_ fd: Int32, to path: String) -> Int32 { withAddress(path) { Glibc.bind(fd, $0, $1) } }

    /// `connect(2)` of `fd` to `path`: its result.
    public static func connect(_ fd: Int32, to path: String) -> Int32 {
        withAddress(path) { Glibc.connect(fd, $0, $1) }
    }

    static func withAddress(_ path: String, _ call: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { buf in
            for (i, c) in path.utf8.enumerated() { buf[i] = c }
        }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }
}
