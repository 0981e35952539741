#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension MulticastDNS {
    public enum ResolveError: Error, Equatable, CustomStringConvertible {
        case badName(String)
        case socket(String)
        /// Nobody answered within the attempts.
        case noAnswer(name: String, attempts: Int, milliseconds: Int)

        public var description: String {
            switch self {
            case .badName(let why): return why
            case .socket(let why): return "multicast DNS: \(why)"
            case .noAnswer(let name, let attempts, let ms):
                return
                    "\(name): no multicast DNS answer (\(attempts) queries to \(MulticastDNS.group):\(MulticastDNS.port), "
                    + "\(ms) ms); is the host up and on this network?"
            }
        }
    }

    /// The IPv4 addresses of `host` (a `*.local` name): a one-shot query
    /// (RFC 6762 §5.1) from an ephemeral port, sent on every IPv4 interface
    /// that is up and does multicast (or by the routing table when there is
    /// none), `attempts` times, each answer waited for up to `waitMilliseconds`.
    /// The first response naming `host` wins. Blocking; call it off any
    /// thread that must stay responsive.
    ///
    /// One socket per interface, bound to the interface's address: Linux
    /// sends a multicast datagram from a socket bound to a local address out
    /// of that address's interface (ip_route_output_key_hash_rcu), so the
    /// query leaves the right interface even where IP_MULTICAST_IF is not
    /// available (QEMU's user-mode emulation before 10.0 refuses it, and the
    /// kernel then routes 224.0.0.251 by the table: "Network is unreachable"
    /// on a link without a default route). IP_MULTICAST_IF is still set.
    public static func resolveIPv4(
        _ host: String, attempts: Int = 3, waitMilliseconds: Int = 1000
    ) throws(ResolveError) -> [String] {
        let id = UInt16.random(in: 1...UInt16.max)
        let question: [UInt8]
        do { question = try query(for: host, type: .a, id: id) } catch { throw .badName("\(host): \(error)") }
        let interfaces = multicastInterfaces()
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for interface in interfaces.isEmpty ? [nil] : interfaces.map(Optional.some) {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            guard fd >= 0 else { throw .socket("socket: \(String(cString: strerror(errno)))") }
            sockets.append(fd)
            var ttl: UInt8 = 255
            var loop: UInt8 = 1
            _ = setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_TTL, &ttl, socklen_t(1))
            _ = setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_LOOP, &loop, socklen_t(1))
            if var address = interface {
                var local = sockaddr_in()
                local.sin_family = sa_family_t(AF_INET)
                local.sin_addr = address
                let bound = withUnsafePointer(to: &local) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                // An address that vanished since getifaddrs: this interface is skipped.
                if bound != 0 {
                    sockets.removeLast()
                    close(fd)
                    continue
                }
                _ = setsockopt(
                    fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &address, socklen_t(MemoryLayout<in_addr>.size))
            }
        }
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_port = port.bigEndian
        destination.sin_addr.s_addr = inet_addr(group)
        for _ in 0..<attempts {
            var sent = false
            var failure = "no interface"
            for fd in sockets {
                let n = question.withUnsafeBytes { q in
                    withUnsafePointer(to: &destination) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(fd, q.baseAddress, q.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
                if n == question.count { sent = true } else { failure = String(cString: strerror(errno)) }
            }
            if !sent { throw .socket("cannot send to \(group):\(port): \(failure)") }
            if let found = awaitAnswer(sockets, host: host, milliseconds: waitMilliseconds), !found.isEmpty {
                return found
            }
        }
        throw .noAnswer(name: canonical(host), attempts: attempts, milliseconds: attempts * waitMilliseconds)
    }

    /// Reads datagrams on any of `sockets` until one names `host` or
    /// `milliseconds` pass.
    private static func awaitAnswer(_ sockets: [Int32], host: String, milliseconds: Int) -> [String]? {
        let until = ContinuousClock.now + .milliseconds(milliseconds)
        var buffer = [UInt8](repeating: 0, count: 9000)
        var polled = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        while true {
            let left = until - ContinuousClock.now
            guard left > .zero else { return nil }
            let ms = Int(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1
            for i in polled.indices { polled[i].revents = 0 }
            let ready = poll(&polled, nfds_t(polled.count), Int32(ms))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return nil }
            for p in polled where p.revents & Int16(POLLIN) != 0 {
                let n = buffer.withUnsafeMutableBytes { recv(p.fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { continue }
                guard let response = try? parse(Array(buffer[0..<n])) else { continue }
                let found = response.ipv4Addresses(of: host)
                if !found.isEmpty { return found }
            }
        }
    }

    /// The IPv4 address of every interface that is up, does multicast and is
    /// not loopback (getifaddrs: no NSS).
    static func multicastInterfaces() -> [in_addr] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var out: [in_addr] = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            let flags = entry.pointee.ifa_flags
            guard flags & UInt32(IFF_UP) != 0, flags & UInt32(IFF_MULTICAST) != 0,
                flags & UInt32(IFF_LOOPBACK) == 0,
                let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET)
            else { continue }
            let inet = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            if !out.contains(where: { $0.s_addr == inet.s_addr }) { out.append(inet) }
        }
        return out
    }
}
