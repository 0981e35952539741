import DoorCore

extension GatewayConfiguration {
    /// An action's consent-first approval (docs/policy.md "Approval"):
    ///
    ///     [[actions]]
    ///     index = 0
    ///     approval = { timeout_s = 120, by = ["home_assistant", "phone", "gatewayctl"] }
    ///
    /// `timeout_s` must lie in `ApprovalPolicy.timeoutRange` (refused, not
    /// clamped: a door that silently waited longer or shorter than its owner
    /// wrote would surprise both the visitor and the owner); `by` names at
    /// least one approver, each one the door knows.
    static func readApproval(_ action: TableReader) -> ApprovalPolicy? {
        guard action.has("approval") else { return nil }
        guard let t = action.table("approval") else { return nil }
        let range = ApprovalPolicy.timeoutRange
        var timeout = 120
        if let n = t.node("timeout_s") {
            if case .int(let v) = n, !range.contains(v) {
                t.fail(
                    "timeout_s",
                    "\(v) s is outside \(range.lowerBound)…\(range.upperBound): long enough to reach the approver, short enough that the visitor is still at the door"
                )
            } else if let v = t.optionalInt("timeout_s", range) {
                timeout = v
            }
        }
        let names = Approver.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        let by = t.stringList("by", Approver.allCases.map(\.rawValue)) { name in
            Approver(rawValue: name) == nil ? "\"\(name.prefix(32))\" is not an approver (approvers: \(names))" : nil
        }
        if t.has("by") && by.isEmpty {
            t.fail("by", "names no approver: nobody could open the door (approvers: \(names))")
        }
        if !t.has("by") { t.fail("by", "is required: who may approve, from \(names)") }
        t.finish()
        return ApprovalPolicy(timeout: .seconds(timeout), by: Set(by.compactMap(Approver.init(rawValue:))))
    }
}
