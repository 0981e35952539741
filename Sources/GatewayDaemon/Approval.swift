import DoorCore
import GatewayControl
import GatewayConfig
import RemoteLink
import GatewayStore

/// Consent-first approval's daemon glue (docs/policy.md "Approval"): the
/// control socket's `approval.answer` (`gatewayctl approve|deny CODE`) and
/// what the MQTT transport is told. The decisions are DoorMachine's.
extension ControlService {
    /// `gatewayctl approve CODE` / `deny CODE`: answered with what the door
    /// did — `approved`, `denied`, or `refused` with the reason
    /// (`unknown_request`, `replayed`, `expired`, `wrong_transport`).
    func answerApproval(_ p: [String: JSONValue], peer: Peer) throws -> JSONValue {
        let code = try p.string("code").uppercased()
        guard code.utf8.count == ApprovalDesk.codeLength,
            code.allSatisfy({ ApprovalDesk.alphabet.contains($0) })
        else {
            throw DaemonError.request(
                "a code is \(ApprovalDesk.codeLength) letters and digits, as the approval request shows it")
        }
        let approve = try p.bool("approve")
        let events = runtime.handleNow(
            .approval(ApprovalAnswer(code: code, approve: approve, by: .gatewayctl, who: "uid=\(peer.uid)")))
        var fields: [(String, JSONValue)] = [("code", .string(code))]
        if let e = events.first(where: { $0.kind == .approvalRefused }) {
            fields.append(("result", .string("refused")))
            fields.append(("reason", .optional(e.reason)))
        } else if let e = events.first(where: { $0.kind == .approvalGranted }) {
            fields.append(("result", .string("approved")))
            fields.append(("action", e.action.map { .int($0) } ?? .null))
        } else {
            fields.append(("result", .string("denied")))
        }
        return .object(fields)
    }

    /// `status`'s `approval`: the waiting request (its code, action, UID
    /// and the time left), or null.
    static func approvalStatus(_ machine: DoorMachine, now: MonotonicInstant) -> JSONValue {
        guard let r = machine.pendingApproval else { return .null }
        return .object([
            ("code", .string(r.code)), ("action", .int(r.action)), ("uid", .string(r.uid.hex)),
            ("remaining_ms", .int(Int(max(.zero, r.deadline.since(now)).millisecondsClamped))),
        ])
    }
}

extension RemoteService {
    /// MQTT: HA's approval entity and buttons are offered when an action
    /// needs approval (the buttons when one lists `home_assistant`).
    static func approvalDiscovery(_ configuration: GatewayConfiguration) -> (entity: Bool, buttons: Bool) {
        let policies = configuration.door.actions.compactMap(\.approval)
        return (!policies.isEmpty, policies.contains { $0.by.contains(.homeAssistant) })
    }

    /// Each approval event also goes where the transport has a place of its
    /// own for them (MQTT: `…/approval`, for HA's event entity; NATS: none,
    /// the requests are events on `P.D.event`), with the tag's label when
    /// `label_in_events` gives one (also when no action asks for approval at
    /// start: a reload may add one). Other events are not looked at.
    static func approvalPublisher(
        _ link: any RemoteTransport, uidText: @escaping @Sendable (TagUID) -> String?,
        label: (@Sendable (TagUID) -> String?)?
    ) -> @Sendable (DoorEvent, Int64) -> Void {
        return { event, time in
            guard LinkPayloads.approvalEventTypes.contains(event.kind) else { return }
            link.publishApproval(
                event, at: time, uidText: event.uid.flatMap(uidText),
                label: label.flatMap { l in event.uid.flatMap(l) })
        }
    }
}
