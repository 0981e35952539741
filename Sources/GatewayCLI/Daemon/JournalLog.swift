@preconcurrency import Glibc
import Logging

/// Log lines on stderr with sd-daemon(3) priority prefixes (`<3>` error … `<7>`
/// debug), which journald turns into priorities; a terminal shows them as-is.
/// Callers never pass secrets: keys and stickers' signatures are not logged.
struct JournalLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let label: String

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    func log(event: LogEvent) {
        let (level, message) = (event.level, event.message)
        var all = metadata
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let context =
            all.isEmpty
            ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        // One write per line so concurrent threads never interleave inside a line.
        let text = "<\(Self.priority(level))>\(label): \(message)\(context)\n"
        fputs(text, stderr)
    }
}
