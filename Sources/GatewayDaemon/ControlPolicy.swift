import Arguments
import DoorCore
import GatewayConfig
import GatewayControl
import Glibc

extension ControlService {
    /// `provision`'s guest pass and schedule parameters (docs/policy.md).
    func guestLimits(_ p: [String: JSONValue], into job: inout ProvisioningJob) throws {
        if p["uses"] != nil {
            let uses = try p.int("uses")
            guard (1...100_000).contains(uses) else { throw DaemonError.request("uses must be 1…100000") }
            job.uses = uses
        }
        if p["valid_from"] != nil { job.validFrom = Int64(try p.int("valid_from")) }
        if p["valid_until"] != nil { job.validUntil = Int64(try p.int("valid_until")) }
        if let f = job.validFrom, let u = job.validUntil, u <= f {
            throw DaemonError.request("valid_until must be after valid_from")
        }
        if p["schedule"] != nil {
            let name = try p.string("schedule")
            guard configuration.door.schedules.contains(where: { $0.name == name }) else {
                throw DaemonError.request(
                    "no schedule named \"\(name.prefix(64))\" (schedules: \(configuration.door.schedules.map(\.name).joined(separator: ", ")))"
                )
            }
            job.schedule = name
        }
    }

    /// `policy.explain`: the daemon's configuration, zone and registry.
    func policyExplain(_ p: [String: JSONValue]) throws -> JSONValue {
        let zone = runtime.sync { runtime.zone }
        let text = try p.string("at")
        let (unix, note): (Int64, String?)
        do { (unix, note) = try Zones.parseTime(text, zone: zone) } catch {
            throw DaemonError.request("\(error)")
        }
        var tag: (TagUID, IssuedTagView?)?
        var revoked = false
        var lockedOutUntil: Int64?
        if let u = p["uid"] {
            guard let hex = u.stringValue, let uid = TagUID(hex: hex) else {
                throw DaemonError.request("uid must be 4, 7 or 10 bytes of hex")
            }
            let row = try store.issuedTag(uid)?.view
            tag = (uid, row)
            revoked = try store.isRevoked(uid: uid, signature: nil)
            // The door's lockout of this tag (or of every tag), as a wall-clock end.
            let (lockout, now) = runtime.sync {
                let now = runtime.now()
                return (runtime.machine.lockoutStatus(at: now.monotonic), now)
            }
            if let end = [lockout.globalUntil, lockout.tags[uid]].compactMap({ $0 }).max() {
                lockedOutUntil = now.wall.unixSeconds + end.since(now.monotonic).components.seconds + 1
            }
        }
        let passage = try explainedPassage(p, uid: tag?.0)  // Passage.swift's rule, issue 36
        do {
            return try PolicyExplain.explain(
                configuration: runtime.sync { runtime.configuration }, zone: zone, action: try p.int("action"),
                tag: tag, at: unix, note: note, registryConsulted: true, revoked: revoked,
                lockedOutUntil: lockedOutUntil, fire: runtime.sync { runtime.machine.fire },
                lockdown: runtime.sync { (runtime.machine.mode, runtime.machine.lockdown) }, passage: passage)
        } catch let error as PolicyExplain.Failure {
            throw DaemonError.request(error.description)
        }
    }
}
