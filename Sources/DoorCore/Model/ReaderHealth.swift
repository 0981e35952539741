/// The reader as the daemon last heard from it (and as NFCReader keeps it):
/// status, telemetry and `reader info` print `description` (`starting`, `ok`,
/// `degraded: <why>`, `lost: <why>`).
public enum ReaderHealth: Equatable, Sendable, CustomStringConvertible {
    /// Not opened yet.
    case starting
    case ok
    /// Working, but the last operation failed at the reader level.
    case degraded(String)
    /// The reader stopped answering; the reader loop is reopening it.
    case lost(String)

    public var isOK: Bool { self == .ok }

    public var description: String {
        switch self {
        case .starting: return "starting"
        case .ok: return "ok"
        case .degraded(let why): return "degraded: \(why)"
        case .lost(let why): return "lost: \(why)"
        }
    }
}
