/// A request or startup failure of the daemon, as the control socket reports it.
package enum DaemonError: Error, CustomStringConvertible {
    case startup(String)
    case simulator(String)
    case request(String)
    package var description: String {
        switch self {
        case .startup(let m): return m
        case .simulator(let m): return "simulator: \(m)"
        case .request(let m): return m
        }
    }
}
