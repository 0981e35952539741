#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif

/// Whole files on file descriptors (what `Data(contentsOf:)` and
/// `Data.write(to:)` did, without Foundation): the error is strerror's text.
enum Files {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ function: String) { description = "\(function): \(String(cString: strerror(errno)))" }
    }

    static func read(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("open") }
        defer { close(fd) }
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure("read")
            }
            if n == 0 { return out }
            out += buffer[0..<n]
        }
    }

    /// Writes `bytes` to `path`, replacing what it held (created 0644).
    static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure("open") }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure("write")
            }
            done += n
        }
    }
}
