import DoorCore
import GatewayControl
import Glibc

extension Daemon {
    /// The control socket. The door keeps working without it (a person at
    /// the door needs no socket), so a failure to bind is logged, not fatal.
    /// A socket whose mode or owner cannot be made right (security review
    /// L7) is: gatewayd stops, outputs locked, with the reason.
    func startControl() {
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
            control = server
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
            stopAfterFailure()
        } catch {
            log.error("control socket unavailable: \(error)")
        }
    }

    func stopControl() { control?.stop() }
}
