import DoorCore
import Synchronization

/// What Home Assistant's side of the daemon (its discovery and the admin
/// screen, docs/home-assistant.md) needs of the MQTT link: its topics, the
/// retained documents it keeps and re-sends at each connect, and the
/// discovery entries. `MQTTLink` implements it; the daemon holds the
/// protocol, never the link's class.
public protocol HomeAssistantLink: AnyObject, Sendable {
    var topics: MQTTTopics { get }
    /// A retained document on `topic`, kept and re-sent after every connect
    /// (an empty payload clears the topic on the broker, also after a reconnect).
    func publishKept(topic: String, payload: [UInt8])
    /// Removes the retained message on `topic` (an empty retained publish)
    /// when connected; false when not.
    @discardableResult func clearRetained(topic: String) -> Bool
    /// Replaces the discovery entries with the same topics (adding new ones)
    /// and, when connected with discovery on, publishes them.
    func updateDiscovery(_ entries: [(topic: String, payload: [UInt8])])
    /// Replaces every discovery entry and, when connected, announces them:
    /// the offered ones published, the catalog's others emptied.
    func replaceDiscovery(_ entries: [(topic: String, payload: [UInt8])])
}

/// Home Assistant MQTT discovery as the link keeps it: the daemon's entries
/// (replaced by topic), announced retained at each connect and when HA says
/// `online`; entities the configuration does not offer (all of them with
/// discovery off) get an empty retained config, which removes them from HA.
final class HomeAssistantDiscovery: Sendable {
    let enabled: Bool
    let deviceID: String
    private let entries = Mutex<[(topic: String, payload: [UInt8])]>([])
    /// Keeps an entry published at connect from overtaking a newer one published meanwhile.
    private let order = Mutex(())

    init(enabled: Bool, deviceID: String) {
        self.enabled = enabled
        self.deviceID = deviceID
    }

    var all: [(topic: String, payload: [UInt8])] {
        get { entries.withLock { $0 } }
        set { entries.withLock { $0 = newValue } }
    }

    /// Every offered entry to `send`, and an empty config for the catalog's others.
    func announce(_ send: (String, [UInt8]) -> Void) {
        order.withLock { _ in announceLocked(send) }
    }

    private func announceLocked(_ send: (String, [UInt8]) -> Void) {
        let offered = enabled ? all : []
        for d in offered { send(d.topic, d.payload) }
        var live = Set(offered.map(\.topic))
        for (component, object) in Payloads.discoveryCatalog {
            let topic = Payloads.discoveryTopic(device: deviceID, component: component, object: object)
            if live.insert(topic).inserted { send(topic, []) }
        }
        // Entries the catalog cannot list (an outdoor reader's, named by it): emptied with discovery off.
        for d in all where live.insert(d.topic).inserted { send(d.topic, []) }
    }

    /// Replaces the entries with the same topics (adding new ones); sends
    /// them when `connected` and discovery is on.
    func update(_ changed: [(topic: String, payload: [UInt8])], connected: () -> Bool, send: (String, [UInt8]) -> Void)
    {
        order.withLock { _ in
            entries.withLock { s in
                for e in changed {
                    if let i = s.firstIndex(where: { $0.topic == e.topic }) {
                        s[i] = e
                    } else {
                        s.append(e)
                    }
                }
            }
            guard enabled, connected() else { return }
            for e in changed { send(e.topic, e.payload) }
        }
    }

    /// Replaces every entry; announces them when `connected`.
    func replace(_ all: [(topic: String, payload: [UInt8])], connected: () -> Bool, send: (String, [UInt8]) -> Void) {
        order.withLock { _ in
            entries.withLock { $0 = all }
            guard connected() else { return }
            announceLocked(send)
        }
    }
}
