import DoorCore
import Glibc

/// gatewayctl's side of the control socket.
package final class ControlClient {
    private let connection: LineConnection
    private var nextID = 0

    package init(path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ControlClientError.io("socket: \(String(cString: strerror(errno)))") }
        guard var addr = UnixAddress(path) else {
            close(fd)
            throw ControlClientError.io("socket path too long: \(path)")
        }
        if addr.withSockaddr({ connect(fd, $0, $1) }) != 0 {
            let e = errno
            close(fd)
            switch e {
            case ENOENT, ECONNREFUSED: throw ControlClientError.notRunning(path)
            case EACCES, EPERM:
                throw ControlClientError.io(
                    "permission denied on \(path): run as root or as a member of the admin group")
            default: throw ControlClientError.io("\(path): \(String(cString: strerror(e)))")
            }
        }
        var tv = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        connection = LineConnection(fd: fd, maxLine: 64 << 20)
    }

    deinit { close(connection.fd) }

    /// Sends a request. A refused peer gets one error line and the
    /// connection closes, so a failed send still reads what is waiting.
    private func send(_ method: ControlMethod, _ params: JSONValue) {
        nextID += 1
        let request = JSONValue.object([("id", .int(nextID)), ("method", .string(method.rawValue)), ("params", params)])
        connection.send(request)
    }

    private func readAnswer() throws -> JSONValue {
        guard case .line(let bytes)? = connection.readLine() else {
            throw ControlClientError.io("the daemon closed the connection without an answer")
        }
        let answer = try JSONValue.parse(bytes, maxDepth: 32, maxBytes: 64 << 20)
        if answer["ok"]?.boolValue == false {
            let error = answer["error"]
            throw ControlClientError.refused(
                code: error?["code"]?.stringValue ?? "error",
                message: error?["message"]?.stringValue ?? "request failed")
        }
        return answer
    }

    /// One request, its result (or the daemon's error, thrown).
    package func call(_ method: ControlMethod, _ params: JSONValue = .object([])) throws -> JSONValue {
        send(method, params)
        return try readAnswer()["result"] ?? .null
    }

    /// A finite stream (`backup`): `onEvent` for each event until the
    /// daemon's closing answer (its result). Each read keeps the 30 s timeout.
    package func chunks(
        _ method: ControlMethod, _ params: JSONValue = .object([]), onEvent: (JSONValue) throws -> Void
    ) throws -> JSONValue {
        send(method, params)
        while true {
            let answer = try readAnswer()
            guard let event = answer["event"] else { return answer["result"] ?? .null }
            try onEvent(event)
        }
    }

    /// A streaming request: `onEvent` for each event until the daemon stops.
    package func follow(
        _ method: ControlMethod, _ params: JSONValue = .object([]), onEvent: (JSONValue) -> Void
    ) throws {
        var tv = timeval(tv_sec: 0, tv_usec: 0)  // no timeout while following
        setsockopt(connection.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        send(method, params)
        while true {
            let answer = try readAnswer()
            guard let event = answer["event"] else { return }
            onEvent(event)
        }
    }
}

package enum ControlClientError: Error, CustomStringConvertible {
    case notRunning(String)
    case refused(code: String, message: String)
    case io(String)
    package var description: String {
        switch self {
        case .notRunning(let path):
            return "gatewayd is not running (no socket at \(path)); start it with systemctl start gatewayd"
        case .refused(_, let message): return message
        case .io(let m): return m
        }
    }
}
