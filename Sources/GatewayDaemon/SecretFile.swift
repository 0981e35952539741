#if canImport(Glibc)
    import Glibc
#endif

// Secrets named in gateway.toml (MQTT's password, NATS' password or token),
// read once at start; never logged.

/// A password or token named in gateway.toml: an absolute path, or a bare
/// name read from `credentials` (`$CREDENTIALS_DIRECTORY`). One line, at most
/// 4 KiB; a final newline is not part of it. Errors name the key and the
/// file, never the content.
enum SecretFile {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func contents(key: String, _ file: String, credentials: String?) throws -> String {
        let path: String
        if file.hasPrefix("/") {
            path = file
        } else if let credentials, !credentials.isEmpty {
            path = credentials + "/" + file
        } else {
            throw Failure(
                description: "\(key) \"\(file)\" names a systemd credential, but there is no "
                    + "$CREDENTIALS_DIRECTORY (give gatewayd LoadCredential=\(file):/etc/doorgateway/\(file), "
                    + "or use an absolute path)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            throw Failure(description: "\(key) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4097)
        while bytes.count <= 4096 {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw Failure(description: "\(key) \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= 4096 else { throw Failure(description: "\(key) \(path): larger than 4 KiB") }
        if bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        guard !bytes.isEmpty else { throw Failure(description: "\(key) \(path) is empty") }
        guard !bytes.contains(where: { $0 == 0 || $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) else {
            throw Failure(description: "\(key) \(path) must hold one line: the secret")
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
