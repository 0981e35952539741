import CNATS
import DoorCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The fleet over NATS (docs/fleet.md): signed documents in a JetStream
/// key-value bucket instead of retained MQTT messages. Each door writes its
/// own key, `<site>.<device-id>` (its user may publish to that key's subject
/// only), and watches `<site>.*`. The bucket keeps each key's newest
/// documents, so a door that was off catches up from it when it connects,
/// as with retained messages; judging and applying stay the daemon's.
public struct NATSFleet: Sendable {
    public var bucket: String
    public var site: String
    public var handler: any FleetDocumentHandler
    /// Documents kept per key (JetStream's `max_msgs_per_subject`) when the door makes the bucket.
    public var history: UInt8

    public init(bucket: String, site: String, handler: any FleetDocumentHandler, history: UInt8 = 5) {
        self.bucket = bucket
        self.site = site
        self.handler = handler
        self.history = history
    }

    /// The key a door writes: `main-site.front-door`.
    public func key(device: String) -> String { Self.key(site: site, device: device) }
    public static func key(site: String, device: String) -> String { site + "." + device }
    /// The keys a door reads: every door's of the site.
    public var watched: String { Self.watched(site: site) }
    public static func watched(site: String) -> String { site + ".*" }
    /// How a document's origin is named in logs and audit rows: `kv:doorgateway-fleet/main-site.front-door`.
    public func source(_ key: String) -> String { Self.source(bucket: bucket, key: key) }
    public static func source(bucket: String, key: String) -> String { "kv:\(bucket)/\(key)" }
}

extension NATSLink {
    /// Writes this door's fleet document to its key, at once (not through the
    /// outbox: a push is answered now or refused). True once JetStream stored it.
    public func publishFleet(_ document: [UInt8]) -> Bool {
        guard let fleet, isConnected else { return false }
        let key = fleet.key(device: deviceID)
        return connection.withLock { c -> Bool in
            guard let kv = c.kv else {
                noteError("fleet: the bucket \(fleet.bucket) is not bound yet")
                return false
            }
            var revision: UInt64 = 0
            let s = kvStore_Put(&revision, kv, key, document, Int32(document.count))
            guard s == NATS_OK else {
                noteError("fleet: put \(fleet.source(key)): \(Self.lastError(s))")
                return false
            }
            log.info("fleet: wrote \(fleet.source(key)) (revision \(revision))")
            return true
        }
    }

    /// Watches the bucket anew: it sends every key's newest document again
    /// (what MQTT's re-subscription does with retained messages). False when
    /// not connected.
    public func refreshFleet() -> Bool {
        guard fleet != nil, isConnected else { return false }
        queue.update { $0.fleetRewatch = true }
        return true
    }

    /// Whether the fleet thread is watching the bucket now.
    public var fleetWatching: Bool { fleetWatch.withLock { $0 != nil } }

    /// The fleet thread: binds the bucket (making it when it is missing and
    /// the user may), watches `<site>.*`, and hands each document put there
    /// to the handler. A new watcher after each connection or reconnection and
    /// on `refreshFleet`; after a failure, again with a backoff of 1 s
    /// doubling to 60 s.
    func runFleet(_ fleet: NATSFleet) {
        var retryAt = ContinuousClock.now
        var backoff = 1
        while !queue.read({ $0.stopping }) {
            let rewatch = queue.update { q -> Bool in
                defer { q.fleetRewatch = false }
                return q.fleetRewatch
            }
            if rewatch {
                dropFleetWatcher()
                retryAt = .now
            }
            if fleetWatch.withLock({ $0 == nil }) {
                if isConnected && ContinuousClock.now >= retryAt {
                    if watchFleet(fleet) {
                        backoff = 1
                    } else {
                        retryAt = .now + .seconds(backoff)
                        backoff = min(backoff * 2, 60)
                    }
                } else {
                    _ = queue.wait(for: .milliseconds(250)) { $0.stopping || $0.fleetRewatch }
                }
                continue
            }
            if !nextFleetDocument(fleet) {
                dropFleetWatcher()
                retryAt = .now + .seconds(backoff)
                backoff = min(backoff * 2, 60)
            }
        }
        dropFleetWatcher()
    }

    /// Binds the bucket if needed and starts a watcher.
    private func watchFleet(_ fleet: NATSFleet) -> Bool {
        fleetWatch.withLock { watcher -> Bool in
            connection.withLock { c -> Bool in
                guard let js = c.js else {
                    noteError("fleet: no JetStream context on this connection")
                    return false
                }
                if c.kv == nil {
                    var kv: OpaquePointer?
                    var s = js_KeyValue(&kv, js, fleet.bucket)
                    if s == NATS_NOT_FOUND {
                        var cfg = kvConfig()
                        kvConfig_Init(&cfg)
                        cfg.History = fleet.history
                        s = fleet.bucket.withCString { name in
                            cfg.Bucket = name
                            return js_CreateKeyValue(&kv, js, &cfg)
                        }
                        if s == NATS_OK {
                            log.notice("fleet: made the bucket \(fleet.bucket) (history \(fleet.history))")
                        }
                    }
                    guard s == NATS_OK, let kv else {
                        noteError(
                            "fleet: bucket \(fleet.bucket): \(Self.lastError(s)) (does it exist, with JetStream "
                                + "on for this account, and may this user read it? docs/fleet.md)")
                        return false
                    }
                    c.kv = kv
                }
                var w: OpaquePointer?
                let s = kvStore_Watch(&w, c.kv, fleet.watched, nil)
                guard s == NATS_OK, let w else {
                    noteError("fleet: watch \(fleet.source(fleet.watched)): \(Self.lastError(s))")
                    return false
                }
                watcher = w
                log.info("fleet: watching \(fleet.source(fleet.watched))")
                return true
            }
        }
    }

    /// Waits up to 250 ms for the next entry and hands a put to the handler.
    /// False when the watcher failed (it is then made again).
    private func nextFleetDocument(_ fleet: NATSFleet) -> Bool {
        // The entry leaves the watcher's lock as an address: it is this thread's own (destroyed below).
        let (s, address) = fleetWatch.withLock { w -> (natsStatus, UInt) in
            guard let w else { return (NATS_OK, 0) }
            var entry: OpaquePointer?
            let s = kvWatcher_Next(&entry, w, 250)
            return (s, UInt(bitPattern: entry))
        }
        let entry = OpaquePointer(bitPattern: address)
        switch s {
        case NATS_OK:
            // No entry: the marker after the stored documents, or no watcher.
            guard let entry else { return true }
            defer { kvEntry_Destroy(entry) }
            // A deleted or purged key carries no document.
            guard kvEntry_Operation(entry) == kvOp_Put else { return true }
            let key = String(cString: kvEntry_Key(entry))
            let count = Int(kvEntry_ValueLen(entry))
            var bytes: [UInt8] = []
            if count > 0, let value = kvEntry_Value(entry) {
                bytes = Array(UnsafeRawBufferPointer(start: value, count: count))
            }
            fleet.handler.received(fleetDocument: bytes, topic: fleet.source(key), retained: true)
            return true
        case NATS_TIMEOUT:
            return true
        default:
            // Stopped by a teardown, or the consumer is gone.
            if isConnected { noteError("fleet: watching \(fleet.bucket): \(Self.lastError(s)); watching again") }
            return false
        }
    }

    /// Stops and destroys the watcher (its ephemeral consumer is deleted).
    func dropFleetWatcher() {
        fleetWatch.withLock { w in
            if let watcher = w { kvWatcher_Destroy(watcher) }
            w = nil
        }
    }
}
