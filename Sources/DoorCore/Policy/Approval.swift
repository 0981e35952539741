/// Consent-first approval (issue 27; docs/policy.md "Approval"): a tap
/// that would open an action that needs approval becomes a request with a
/// short random code; an approver the action lists answers it within the
/// timeout, or it is denied. DoorMachine keeps one `ApprovalDesk`; the
/// action's `approval = { timeout_s, by }` (GatewayConfig) turns it on.

/// Who may answer a request, by the way the answer arrives.
public enum Approver: String, Sendable, Hashable, CaseIterable {
    case homeAssistant = "home_assistant"
    /// A native command signed with the phone's command key, naming the request.
    case phone
    case gatewayctl
}

/// An action's `approval = { timeout_s = 120, by = ["home_assistant", "phone", "gatewayctl"] }`.
public struct ApprovalPolicy: Hashable, Sendable {
    /// `timeout_s` accepted by the configuration: long enough to reach a
    /// phone, short enough that a visitor is still at the door.
    public static let timeoutRange: ClosedRange<Int> = 10...900
    public var timeout: Duration
    public var by: Set<Approver>
    public init(timeout: Duration = .seconds(120), by: Set<Approver> = Set(Approver.allCases)) {
        self.timeout = timeout
        self.by = by
    }
}

/// One request: what the approver is shown, and until when it may answer.
public struct ApprovalRequest: Equatable, Sendable {
    /// Counts up per desk; never reused.
    public var id: UInt64
    /// Six characters the approver sees and `gatewayctl approve CODE` names.
    public var code: String
    public var uid: TagUID
    public var action: ActionIndex
    public var policy: ApprovalPolicy
    public var created: MonotonicInstant
    public var deadline: MonotonicInstant
    /// Where the tap came from (`tag`, `reader:NAME`): the approved grant names
    /// it, so an entry reader's approved visitor counts as in (occupancy).
    public var source: String = "tag"
}

/// The requests of one door: at most one pending; a second tap replaces it.
/// Times are monotonic (a wall clock step cannot stretch or end a wait).
public struct ApprovalDesk: Sendable {
    /// Letters and digits a person reads without confusing them (no 0/O, 1/I/L).
    public static let alphabet = Array("ABCDEFGHJKMNPQRSTUVWXYZ23456789")
    public static let codeLength = 6
    /// Codes of settled requests remembered to tell a replay from a code never issued.
    public static let remembered = 64

    public private(set) var pending: ApprovalRequest?
    private var nextID: UInt64 = 1
    private var settled: [String] = []

    public init() {}

    /// A code from random bytes (rejection sampling: no bias); nil when the
    /// bytes run out first (give 32: that happens with probability < 10⁻²⁰).
    public static func code(from random: [UInt8]) -> String? {
        let limit = UInt8(256 / alphabet.count * alphabet.count)
        var out: [Character] = []
        for b in random where b < limit {
            out.append(alphabet[Int(b) % alphabet.count])
            if out.count == codeLength { return String(out) }
        }
        return nil
    }

    public enum Opened: Equatable, Sendable {
        /// The new request, and the one it replaced (denied `replaced`).
        case waiting(ApprovalRequest, replaced: ApprovalRequest?)
        /// The random bytes gave no code (never in practice): deny.
        case noCode
    }

    /// A tap that would be granted for an action needing approval.
    public mutating func open(
        uid: TagUID, action: ActionIndex, policy: ApprovalPolicy, random: [UInt8], at now: MonotonicInstant,
        source: String = "tag"
    ) -> Opened {
        guard var code = Self.code(from: random) else { return .noCode }
        // A code equal to one just settled would read as its replay: draw again from the rest.
        var rest = random
        while settled.contains(code) || pending?.code == code {
            rest = Array(rest.dropFirst())
            guard let next = Self.code(from: rest) else { return .noCode }
            code = next
        }
        let replaced = pending
        if let replaced { remember(replaced.code) }
        let request = ApprovalRequest(
            id: nextID, code: code, uid: uid, action: action, policy: policy, created: now,
            deadline: now + policy.timeout, source: source)
        nextID += 1
        pending = request
        return .waiting(request, replaced: replaced)
    }

    /// An answer to the pending request whatever its code (Home Assistant's
    /// buttons carry none): `no_request` when nothing waits.
    public mutating func answerPending(
        approve: Bool, by approver: Approver, at now: MonotonicInstant
    ) -> Outcome {
        guard let request = pending else { return .refused("no_request", expired: nil) }
        return answer(code: request.code, approve: approve, by: approver, at: now)
    }

    /// The pending request ends without an answer (replaced, lockdown).
    public mutating func cancel() -> ApprovalRequest? {
        let p = pending
        settle()
        return p
    }

    public enum Outcome: Equatable, Sendable {
        /// Open the action; audit who approved.
        case approved(ApprovalRequest, by: Approver)
        /// Denied by the approver: `not_approved`.
        case denied(ApprovalRequest, by: Approver)
        /// The answer changes nothing. Reasons: `unknown_request` (no such
        /// code was issued), `replayed` (its request is settled), `expired`
        /// (past the deadline: the request is denied `not_approved`),
        /// `wrong_transport` (the action does not list this approver; the
        /// request keeps waiting for one it does).
        case refused(String, expired: ApprovalRequest?)
    }

    /// An approver's answer naming `code` (case-insensitive).
    public mutating func answer(
        code given: String, approve: Bool, by approver: Approver, at now: MonotonicInstant
    ) -> Outcome {
        let code = given.uppercased()
        guard let request = pending, Self.equal(request.code, code) else {
            return .refused(settled.contains(code) ? "replayed" : "unknown_request", expired: nil)
        }
        if now >= request.deadline {
            settle()
            return .refused("expired", expired: request)
        }
        guard request.policy.by.contains(approver) else { return .refused("wrong_transport", expired: nil) }
        settle()
        return approve ? .approved(request, by: approver) : .denied(request, by: approver)
    }

    /// The pending request once its deadline has passed (denied
    /// `not_approved`), or nil.
    public mutating func expire(at now: MonotonicInstant) -> ApprovalRequest? {
        guard let request = pending, now >= request.deadline else { return nil }
        settle()
        return request
    }

    private mutating func settle() {
        if let p = pending { remember(p.code) }
        pending = nil
    }

    private mutating func remember(_ code: String) {
        settled.append(code)
        if settled.count > Self.remembered { settled.removeFirst(settled.count - Self.remembered) }
    }

    /// Compares every character whatever differs first.
    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for (p, q) in zip(x, y) { diff |= p ^ q }
        return diff == 0
    }
}
