import GatewayConfig
import GatewayControl
import Synchronization

/// The configuration in effect, and its only owner (issue 25 §3).
///
/// The daemon, the door runtime and the remote command judge all read the
/// configuration from here, from any thread. A reload changes it in one
/// place, on the door queue, at the moment the door machine restarts on the
/// new settings, so `open --action`, `provision`, remote commands and taps
/// never disagree about which actions exist.
///
/// It holds what *runs*, not what the file says: a reload applies the door
/// settings and the clock declaration; lines, reader, broker and paths stay
/// as they were started until a restart (Daemon.reload says so), and status
/// keeps showing those.
final class LiveConfiguration: Sendable {
    private let value: Mutex<GatewayConfiguration>

    init(_ configuration: GatewayConfiguration) {
        value = Mutex(configuration)
    }

    var current: GatewayConfiguration { value.withLock { $0 } }

    /// Applies what a reload can apply to the running door and returns the
    /// configuration now in effect.
    @discardableResult
    func applyReload(_ new: GatewayConfiguration) -> GatewayConfiguration {
        value.withLock { running in
            running.door = new.door
            running.declareClockSynchronised = new.declareClockSynchronised
            running.timeZone = new.timeZone
            return running
        }
    }
}
