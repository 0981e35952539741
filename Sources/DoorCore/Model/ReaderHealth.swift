/// The reader as the daemon last heard from it: status, telemetry and
/// `reader info` print `description` (`starting`, `ok`, `lost: <why>`).
public enum ReaderHealth: Equatable, Sendable, CustomStringConvertible {
    /// Not opened yet.
    case starting
    case ok
    /// The reader stopped answering; the reader loop is reopening it.
    case lost(String)

    public var isOK: Bool { self == .ok }

    public var description: String {
        switch self {
        case .starting: return "starting"
        case .ok: return "ok"
        case .lost(let why): return "lost: \(why)"
        }
    }
}
