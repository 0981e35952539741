import DoorCore
import GatewayConfig
import GatewayControl
import GatewayStore
import Glibc
import Logging
import RemoteLink

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

/// What the daemon hands alike to its services (the control socket, the
/// remote transport and its site commands, the OSDP readers, the timers):
/// made once in `Daemon.init`.
struct ServiceParts: Sendable {
    let log: Logger
    /// The configuration in effect (the daemon's one owner).
    let live: LiveConfiguration
    let environment: [String: String]
    let store: GatewayStore
    let runtime: DoorRuntime
    let auditWriter: AuditWriter
    /// When gatewayd started (`status`'s and telemetry's uptime).
    let started: MonotonicInstant
}

/// A service made with the daemon's `ServiceParts`: their names read as its own.
protocol MadeWithParts {
    var parts: ServiceParts { get }
}

extension MadeWithParts {
    var log: Logger { parts.log }
    var live: LiveConfiguration { parts.live }
    var configuration: GatewayConfiguration { parts.live.current }
    var environment: [String: String] { parts.environment }
    var store: GatewayStore { parts.store }
    var runtime: DoorRuntime { parts.runtime }
    var auditWriter: AuditWriter { parts.auditWriter }
    var started: MonotonicInstant { parts.started }
}

/// The daemon's services in order (ServiceGroup's rule): `start` starts them
/// one after the other; `stop` stops those that started — any `stopsFirst`
/// one first, then the rest in reverse — once; a service not yet started when
/// the stop began is never started.
///
/// Every stopper waits for that one stop to end (issue 34): SIGTERM while a
/// start that cannot go on stops, SIGTERM and SIGINT, return only once the
/// audit writer flushed and the outputs are locked, so no process exits
/// halfway through the stop. A stop from another thread while a service is
/// starting waits for that start to return and stops that service too; a
/// stop from the starting thread itself (the control socket it cannot own)
/// does not wait for its own start.
final class ServiceList: Sendable {
    private enum Phase: Sendable, Equatable {
        case running
        case stopping(by: pthread_t)
        case stopped([String])
    }
    private struct State: Sendable {
        var services: [DoorService] = []
        var started = 0
        /// The thread starting `services[started]`, while it does.
        var startingOn: pthread_t?
        /// A stop was asked: no further service starts (the stopper may be waiting for the one starting).
        var stopAsked = false
        var phase = Phase.running
    }
    private let state = Condition(State())

    /// What `stop` did: the services in the order they stopped (the same for
    /// every caller), and whether this call ran the stop (the caller that
    /// exits) or waited for another's.
    struct Stopped: Equatable {
        let order: [String]
        let ranHere: Bool
    }

    /// The list, before `start`.
    func set(_ services: [DoorService]) { state.update { $0.services = services } }

    var names: [String] { state.read { $0.services.map(\.name) } }

    /// Starts the services in order; false when a stop began before the last one started.
    @discardableResult
    func start() -> Bool {
        var index = 0
        while true {
            let next = state.update { s -> DoorService?? in
                guard s.phase == .running, !s.stopAsked else { return .some(nil) }
                guard index < s.services.count else { return nil }
                s.startingOn = pthread_self()
                return s.services[index]
            }
            guard let next else { return true }
            guard let next else { return false }
            next.start()
            index += 1
            state.update {
                $0.started = max($0.started, index)
                $0.startingOn = nil
            }
        }
    }

    /// Stops the started services, once; returns their names in the order stopped.
    @discardableResult
    func stop() -> [String] { stopOnce().order }

    /// Stops the started services, or waits for the stop another thread runs to end.
    func stopOnce() -> Stopped {
        let me = pthread_self()
        state.update { $0.stopAsked = true }
        let mine = state.wait(until: { s in
            // Another thread's service start finishes first: that service is then stopped too.
            guard s.phase == .running, let starter = s.startingOn else { return true }
            return pthread_equal(starter, me) != 0
        }) { s -> [DoorService]? in
            guard s.phase == .running else { return nil }
            s.phase = .stopping(by: me)
            return Array(s.services.prefix(s.started))
        }
        guard let mine else {
            return state.wait(until: { s in
                switch s.phase {
                case .running: return false  // not reached: a stop began
                case .stopped: return true
                // A service's own stop asking again: the stop it is part of goes on.
                case .stopping(let by): return pthread_equal(by, me) != 0
                }
            }) { s in
                guard case .stopped(let order) = s.phase else { return Stopped(order: [], ranHere: false) }
                return Stopped(order: order, ranHere: false)
            }
        }
        let order = mine.filter(\.stopsFirst) + mine.filter { !$0.stopsFirst }.reversed()
        for service in order { service.stop() }
        let names = order.map(\.name)
        state.update { $0.phase = .stopped(names) }
        return Stopped(order: names, ranHere: true)
    }

    /// A reload applied: each service in order.
    func reloaded(_ configuration: GatewayConfiguration, zone: TimeZoneRules) {
        let services = state.read { $0.phase == .running ? $0.services : [] }
        for service in services { service.reloaded(configuration, zone) }
    }
}

extension Daemon {
    /// The door's services, in start order: the outputs (locked at init, the
    /// first thing made), the store's audit writer, the door runtime, the
    /// reader (and its pn532-sim child), the remote transport, the control
    /// socket, the timers. Stopped in reverse, the runtime first (it stops
    /// acting), the outputs last (locked again as the last step).
    /// Whether the door has a PN532 (`[[readers]]` may list none; without it, the PN532 of `[reader]`).
    var hasPN532: Bool { configuration.readers.contains { $0.kind == .pn532 } }

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
            // Issue 35: the outdoor readers (OutdoorReaders.swift, OSDPDoor.swift; none unless set).
            outdoor.wiegandService(),
            outdoor.osdpService,
            remote.service,
            control.service { [self] in stopAfterFailure() },
            timers.service,
        ]
    }
}
