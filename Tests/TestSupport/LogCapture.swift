import Logging
import Synchronization

/// Every log line, to assert on (and to check no secret is ever in one);
/// DEVELOPERS.md "Conventions" §12: tests read logs through a handler. The one copy for every
/// test target.
public final class LogCapture: Sendable {
    private let lines = Mutex<[(level: Logger.Level, message: String)]>([])
    public init() {}
    public var logger: Logger {
        var logger = Logger(label: "test", factory: { _ in Handler(capture: self) })
        logger.logLevel = .trace
        return logger
    }
    /// "level message" lines.
    public var all: [String] { lines.withLock { $0.map { "\($0.level) \($0.message)" } } }
    /// The messages alone.
    public var messages: [String] { lines.withLock { $0.map(\.message) } }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            capture.lines.withLock { $0.append((event.level, "\(event.message)")) }
        }
    }
}
