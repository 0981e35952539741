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
/// settings, the clock declaration and `[mqtt.commands]`' mapping and
/// tolerance; a reload that changes anything else (lines, reader, broker,
/// Home Assistant's powers, NATS, paths) is refused, naming it
/// (Daemon.restartRequired, issue 32 L-3).
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
            // Read at each remote command (StoreCommands); every other
            // `[mqtt]` key is fixed at start and a change refused (Daemon.restartRequired).
            running.mqtt.commandMapping = new.mqtt.commandMapping
            running.mqtt.toleranceSeconds = new.mqtt.toleranceSeconds
            return running
        }
    }
}
