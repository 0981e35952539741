import DoorCore
import DoorIO
import GatewayConfig
import GatewayControl
import GatewayStore
import Glibc
import Logging
import Synchronization

/// The control socket as one of the daemon's services: it owns the socket's
/// server and answers its methods (ControlMethods.swift, and beside it the
/// registry, policy, approval and fleet ones) from the door runtime, the
/// store, the reader and the remote transport it is handed.
final class ControlService: Sendable, MadeWithParts {
    let parts: ServiceParts
    let readerLoop: ReaderLoop
    let simulator: SimulatorChild?
    let simulatedBoard: SimulatedBoard?
    let simulatorControl: String?
    let remote: RemoteService
    /// The OSDP readers (`reader.osdp.install`, `reader.osdp.status`).
    let osdpReaders: OSDPReaders
    let notify: SDNotify
    private let server = Mutex<ControlServer?>(nil)

    init(
        parts: ServiceParts, readerLoop: ReaderLoop, simulator: SimulatorChild?, simulatedBoard: SimulatedBoard?,
        simulatorControl: String?, remote: RemoteService, osdpReaders: OSDPReaders, notify: SDNotify
    ) {
        self.parts = parts
        self.readerLoop = readerLoop
        self.simulator = simulator
        self.simulatedBoard = simulatedBoard
        self.simulatorControl = simulatorControl
        self.remote = remote
        self.osdpReaders = osdpReaders
        self.notify = notify
    }

    /// Its place in the daemon's service list; `refuse` stops gatewayd when
    /// the socket cannot be made safe (the daemon's `stopAfterFailure`).
    func service(refuse: @escaping @Sendable () -> Never) -> DoorService {
        DoorService(name: "control socket", start: { [self] in start(refuse: refuse) }, stop: { [self] in stop() })
    }

    /// The control socket. The door keeps working without it (a person at
    /// the door needs no socket), so a failure to bind is logged, not fatal.
    /// A socket whose mode or owner cannot be made right (security review
    /// L7) is: gatewayd stops, outputs locked, with the reason.
    func start(refuse: @Sendable () -> Never) {
        let server = ControlServer(path: configuration.controlSocket, adminGroup: configuration.control.adminGroup) {
            [self] request, peer in
            guard let method = ControlMethod(rawValue: request.method) else {
                throw DaemonError.request("unknown method \(request.method)")
            }
            if method == .logFollow { return .stream(try followAudit(after: request.params)) }
            if method == .backup {
                let stream = try backupStream(request.params)
                log.notice("control: backup by uid \(peer.uid) (pid \(peer.pid)), streamed to gatewayctl")
                return .chunks(stream)
            }
            // A change answers once the events it raised are in the audit log
            // (the door queue has handed them on, the writer committed them):
            // the log then shows what gatewayctl just did, as before the audit
            // commit moved after the relay onto its own queue.
            defer { if method.changesState { runtime.committed() } }
            let result = try answer(method, request.params, peer: peer)
            if method.changesState {
                log.notice("control: \(method.rawValue) by uid \(peer.uid) (pid \(peer.pid))")
            }
            return .value(result)
        }
        do {
            let warning = try server.start()
            self.server.withLock { $0 = server }
            log.info("control socket \(configuration.controlSocket) (admin group \(configuration.control.adminGroup))")
            if let warning { log.warning("\(warning)") }
            // Security review L7: the udev rules give these groups the relay and
            // the reader; say who can reach them without being an admin.
            let me = Accounts.load().users.first { $0.uid == getuid() }?.name ?? "doorgateway"
            for (group, users) in Accounts.load().hardwareAccessOutsideAdmins(
                daemonUser: me, adminGroup: configuration.control.adminGroup)
            {
                log.warning(
                    "group \(group) gives \(users.joined(separator: ", ")) the door's hardware without [control] admin_group: they can drive the relay or the reader directly (docs/security.md L7)"
                )
            }
        } catch let error as ControlServer.OwnershipFailure {
            log.critical("refusing to start: \(error)")
            notify.send("STATUS=refusing to start: \(error)")
            refuse()
        } catch {
            log.error("control socket unavailable: \(error)")
        }
    }

    func stop() { server.withLock { $0 }?.stop() }
}
