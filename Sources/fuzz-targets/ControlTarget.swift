#if canImport(Glibc)
    import Glibc
#endif
import DoorCore
#if DEBUG || FUZZING
    // Internal to the daemon; a release build without FUZZING cannot see it.
    @testable import GatewayControl
#endif

/// Bytes a client writes on the control socket: the daemon's own line
/// framing (a real socket pair), its request parser, the answers it would
/// send, and the parameter readers and value parsers its methods apply.
enum ControlTarget {
    static func run(_ data: [UInt8]) {
        #if DEBUG || FUZZING
            var fds: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
                expect(false, "socketpair: \(errno)")
                return
            }
            defer { close(fds[0]) }
            // Within the socket buffer, so one write needs no reader.
            let input = data.prefix(65_536)
            var sent = 0
            while sent < input.count {
                let n = input.dropFirst(sent).withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }
                guard n > 0 else { break }
                sent += n
            }
            close(fds[1])
            // A small limit (the daemon's is 64 KiB) so inputs reach the too-long path.
            let connection = LineConnection(fd: fds[0], maxLine: 512)
            var lines = 0
            while let line = connection.readLine() {
                lines += 1
                expect(lines <= input.count + 1, "more lines than bytes")
                guard case .line(let bytes) = line else { continue }
                expect(bytes.count <= 512 && !bytes.contains(0x0A), "a line over the limit or with a newline")
                if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                switch ControlServer.parse(bytes) {
                case .failure(let failure):
                    expect(failure.answer["ok"] == .bool(false), "a refusal that is not ok: false")
                    _ = failure.answer.serialized
                case .success(let request):
                    expect(request.id.stringValue != nil || request.id.intValue != nil, "an id that is not kept")
                    parameters(request.method, request.params)
                    _ = JSONValue.object([("id", request.id), ("ok", .bool(true)), ("result", .null)]).serialized
                    _ = ControlServer.error(request.id, "failed", "fuzz").serialized
                }
            }
        #else
            _ = data
        #endif
    }

    #if DEBUG || FUZZING
        /// What the methods of ControlMethods.swift and ControlRegistry.swift
        /// read from `params`: the typed readers, then the value parsers.
        static func parameters(_ method: String, _ p: [String: JSONValue]) {
            for key in p.keys {
                _ = try? p.string(key)
                _ = try? p.int(key)
                _ = try? p.double(key, default: 0)
                _ = try? p.bool(key)
            }
            if let uid = try? p.string("uid") { _ = TagUID(hex: uid) }
            if let dump = p["dump"]?.stringValue, let bytes = Hex.decode(dump) { _ = try? TagImage(dump: bytes) }
            if let link = try? p.string("link") { _ = try? ShareLink.parse(link) }
            if let key = try? p.string("key") { _ = Hex.decode(key.filter { !$0.isWhitespace }) }
            if let sig = p["signature"]?.stringValue { _ = Hex.decode(sig) }
            if let mode = try? p.string("mode") { _ = DoorMode(rawValue: mode) }
            if let pattern = try? p.string("pattern") { _ = FeedbackKind(rawValue: pattern) }
            if method == "sim.tap", let url = try? p.string("url") {
                _ = try? TagImage.make(type: .ntag213, uid: Vectors.uid, message: NDEFMessage(records: [.uri(url)]))
            }
            _ = max(1, min((try? p.int("limit", default: 20)) ?? 20, 100_000))
            _ = max(0, min((try? p.double("hold", default: 0.1)) ?? 0.1, 60))
            _ = p["tear_after"]?.intValue
        }
    #endif
}
