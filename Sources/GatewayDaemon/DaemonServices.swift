import DoorCore
import GatewayConfig
import GatewayControl
import Synchronization

/// One part of the running door (swift-service-lifecycle's Service, without
/// the package): started in its list's order, stopped in reverse, told of
/// each reload that was applied.
struct DoorService: Sendable {
    let name: String
    var start: @Sendable () -> Void = {}
    var stop: @Sendable () -> Void = {}
    /// A reload the daemon applies: the configuration now in effect and its zone.
    var reloaded: @Sendable (GatewayConfiguration, TimeZoneRules) -> Void = { _, _ in }
    /// Stops before the reverse order begins: the door runtime, so that no tap
    /// or command arriving while the others stop (the transport flushes for up
    /// to 2 s) moves the relay after the stop began.
    var stopsFirst = false
}

/// The daemon's services in order (ServiceGroup's rule): `start` starts them
/// one after the other; `stop` stops those that started — any `stopsFirst`
/// one first, then the rest in reverse — once, from whichever thread asks
/// first; a service not yet started when the stop began is never started.
final class ServiceList: Sendable {
    private struct State {
        var services: [DoorService] = []
        var started = 0
        var stopping = false
    }
    private let state = Mutex(State())

    /// The list, before `start`.
    func set(_ services: [DoorService]) { state.withLock { $0.services = services } }

    var names: [String] { state.withLock { $0.services.map(\.name) } }

    func start() {
        var index = 0
        while true {
            let next = state.withLock { s -> DoorService? in
                guard !s.stopping, index < s.services.count else { return nil }
                return s.services[index]
            }
            guard let next else { return }
            next.start()
            index += 1
            state.withLock { $0.started = max($0.started, index) }
        }
    }

    /// Stops the started services; returns their names in the order stopped
    /// (empty when a stop already ran).
    @discardableResult
    func stop() -> [String] {
        let started = state.withLock { s -> [DoorService] in
            guard !s.stopping else { return [] }
            s.stopping = true
            return Array(s.services.prefix(s.started))
        }
        let order = started.filter(\.stopsFirst) + started.filter { !$0.stopsFirst }.reversed()
        for service in order { service.stop() }
        return order.map(\.name)
    }

    /// A reload applied: each service in order.
    func reloaded(_ configuration: GatewayConfiguration, zone: TimeZoneRules) {
        let services = state.withLock { $0.stopping ? [] : $0.services }
        for service in services { service.reloaded(configuration, zone) }
    }
}

extension Daemon {
    /// The door's services, in start order: the outputs (locked at init, the
    /// first thing made), the store's audit writer, the door runtime, the
    /// reader (and its pn532-sim child), the remote transport, the control
    /// socket, the timers. Stopped in reverse, the runtime first (it stops
    /// acting), the outputs last (locked again as the last step).
    func makeServices() -> [DoorService] {
        [
            DoorService(name: "outputs", start: { [board] in board.lockAll() }, stop: { [board] in board.lockAll() }),
            // The store was opened at init; every event handed to the writer is committed before exit.
            DoorService(name: "audit writer", stop: { [auditWriter] in auditWriter.flush() }),
            DoorService(
                name: "door runtime", start: { [runtime] in runtime.start() },
                stop: { [runtime] in runtime.shutdown() },
                reloaded: { [runtime] configuration, zone in runtime.reload(configuration, zone: zone) },
                stopsFirst: true),
            DoorService(
                name: "reader",
                start: { [self, runtime, readerLoop] in
                    // [[readers]] without a PN532: libnfc is not opened (issue 35).
                    guard hasPN532 else { return }
                    readerLoop.start { [runtime] in runtime.readerReport($0) }
                },
                stop: { [self, readerLoop, simulator] in
                    if hasPN532 { readerLoop.stop() }
                    simulator?.stop()
                }),
            // Issue 35: an outdoor Wiegand reader (OutdoorReaders.swift; none unless set).
            wiegandService(),
            DoorService(
                name: "osdp readers", start: { [self] in startOSDPReaders() },
                stop: { [osdpReaders] in osdpReaders.stop() }),
            DoorService(
                name: "transport", start: { [self] in startRemote() }, stop: { [self] in stopRemote() },
                reloaded: { [self] _, _ in redrawDiscovery() }),
            DoorService(name: "control socket", start: { [self] in startControl() }, stop: { [self] in stopControl() }),
            DoorService(
                name: "timers",
                start: { [self] in
                    startWatchdog()
                    startAuditRetention()
                    startAuditRetry()
                },
                stop: { [self] in
                    cancel(.retention)
                    cancel(.auditRetry)
                }),
        ]
    }
}
