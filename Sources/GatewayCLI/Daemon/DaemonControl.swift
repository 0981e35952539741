import DoorCore
import Glibc

extension Daemon {
    /// The control socket. The door keeps working without it (a person at
    /// the door needs no socket), so a failure is logged, not fatal.
    func startControl() {
        let server = ControlServer(path: configuration.controlSocket, adminGroup: configuration.control.adminGroup) {
            [self] request, peer in
            guard let method = ControlMethod(rawValue: request.method) else {
                throw DaemonError.request("unknown method \(request.method)")
            }
            if method == .logFollow { return .stream(try followAudit(after: request.params)) }
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
        } catch {
            log.error("control socket unavailable: \(error)")
        }
    }

    func stopControl() { control?.stop() }
}
