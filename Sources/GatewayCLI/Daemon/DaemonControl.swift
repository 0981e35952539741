import DoorCore
import Foundation

extension Daemon {
    /// The control socket. The door keeps working without it (a person at
    /// the door needs no socket), so a failure is logged, not fatal.
    func startControl() {
        let server = ControlServer(path: configuration.controlSocket, adminGroup: configuration.control.adminGroup) {
            [self] request, peer in
            if request.method == "log.follow" { return .stream(try followAudit(after: request.params)) }
            let result = try answer(request.method, request.params)
            if Self.changesState.contains(request.method) {
                log.notice("control: \(request.method) by uid \(peer.uid) (pid \(peer.pid))")
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

    /// Methods whose use is logged with the caller (reads are not).
    static let changesState: Set<String> = [
        "open", "mode", "provision", "provision.cancel", "lockout.clear", "secrets.new", "secrets.rotate",
        "secrets.remove", "secrets.import", "secrets.export", "keys.new", "keys.import", "keys.export",
        "tags.revoke", "tags.expire", "tags.forget", "backup",
    ]
}
