import Dispatch
import DoorCore
import GatewayControl
import GatewayStore
import Glibc
import NFCReader
import Synchronization

// Provisioning an NTAG 424 DNA at the door (docs/ntag424.md "Provisioning at
// the door"). The shape is the sticker's: armed by the button or `provision`,
// the machine picks the tag and asks for the write; before any key leaves the
// door, the registry is asked about the UID: one it holds in any state (or
// revoked) gets nothing unless the operator armed `--reissue` with that UID
// (docs/ntag424.md "Re-issuing a tag"). The reader loop then runs
// `provisionNTAG424` with the site master key and the key issue plan (a
// random salt per issue, stored before it is used); only when the reader has
// verified the tag (SUN read with the new keys, EV2 with the new key 0) is
// the registry row written — pending, made active by its
// `provisioning_written` audit row — with its key issue and the verifying
// read's SUN counter. Any failure (a tear at any step) writes no row; the tag
// is left in a state `provisionNTAG424` resumes from and `resetNTAG424` undoes.

/// Why an NTAG 424 job did not finish: an audit reason code and the detail.
struct NTAG424JobFailure: Error, Equatable, CustomStringConvertible {
    /// `tag_lost`, `foreign_content`, `not_ntag424`, `not_verified`, `wrong_tag`, `no_tag`, `tag_error`,
    /// `reader`; from the door's side `revoked`, `already_registered` and `registry_unavailable`.
    var reason: String
    var detail: String
    var description: String { "\(reason): \(detail)" }

    init(_ reason: String, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    init(_ error: Error) {
        switch error as? ReaderError {
        case .tagLost?: self.init("tag_lost", "\(error)")
        case .foreignContent?: self.init("foreign_content", "\(error)")
        case .notNTAG424?: self.init("not_ntag424", "\(error)")
        case .status?: self.init("tag_error", "\(error)")
        case .notVerified?: self.init("not_verified", "\(error)")
        case .wrongTag?: self.init("wrong_tag", "\(error)")
        default: self.init("reader", "\(error)")
        }
    }
}

/// A tag the reader provisioned and verified: the SUN counter of the
/// verifying read and the key issue the tag now holds.
struct NTAG424Issued: Equatable, Sendable {
    var counter: UInt32
    var issue: NTAG424.KeyIssue
}

/// A reset the reader finished: the UID, and whether the tag proved the door's key 0.
struct NTAG424ResetDone: Equatable, Sendable {
    var uid: TagUID
    var provedKey0: Bool
}

/// The NTAG 424 side of the reader port (LibnfcReaderPort).
protocol NTAG424ReaderPort: AnyObject {
    func provisionNTAG424(masterKey: [UInt8], base: String, plan: NTAG424IssuePlan) throws -> NTAG424Provisioned?
    func resetNTAG424(masterKey: [UInt8], issue: (TagUID) -> NTAG424.KeyIssue?) throws -> (
        uid: TagUID, provedKey0: Bool
    )?
}

extension LibnfcReaderPort: NTAG424ReaderPort {
    func provisionNTAG424(masterKey: [UInt8], base: String, plan: NTAG424IssuePlan) throws -> NTAG424Provisioned? {
        try reader.provisionNTAG424(masterKey: masterKey, base: base, plan: plan)
    }
    func resetNTAG424(masterKey: [UInt8], issue: (TagUID) -> NTAG424.KeyIssue?) throws -> (
        uid: TagUID, provedKey0: Bool
    )? {
        try reader.resetNTAG424Proving(masterKey: masterKey, issue: issue)
    }
}

/// What the reader loop runs for the NTAG 424 in the field. Holds the site
/// master key: never logged or described.
enum NTAG424Job: CustomStringConvertible {
    /// `plan` names `uid`: the reader sends nothing to another tag.
    case provision(uid: TagUID, masterKey: [UInt8], base: String, plan: NTAG424IssuePlan)
    /// `issue` (on the reader thread) gives the registry's key issue of the UID found.
    /// `done` is called on the reader thread.
    case reset(
        masterKey: [UInt8], issue: @Sendable (TagUID) -> NTAG424.KeyIssue?,
        done: @Sendable (Result<NTAG424ResetDone, NTAG424JobFailure>) -> Void)

    var description: String {
        switch self {
        case .provision(let uid, _, _, _): return "provision \(uid.hex)"
        case .reset: return "reset"
        }
    }

    /// On the reader thread: the report to deliver (reset answers its caller instead).
    func run(on reader: TagReaderPort) -> ReaderLoop.Report? {
        let port = reader as? NTAG424ReaderPort
        switch self {
        case .provision(let uid, let key, let base, let plan):
            guard let port else {
                return .ntag424Provisioned(uid: uid, .failure(.init("reader", "this reader cannot speak ISO-DEP")))
            }
            do {
                guard let done = try port.provisionNTAG424(masterKey: key, base: base, plan: plan) else {
                    return .ntag424Provisioned(uid: uid, .failure(.init("no_tag", "no tag in the field")))
                }
                guard done.uid == uid else {
                    return .ntag424Provisioned(
                        uid: uid, .failure(.init("wrong_tag", "\(done.uid.hex) answered instead of \(uid.hex)")))
                }
                return .ntag424Provisioned(uid: uid, .success(NTAG424Issued(counter: done.counter, issue: done.issue)))
            } catch {
                return .ntag424Provisioned(uid: uid, .failure(NTAG424JobFailure(error)))
            }
        case .reset(let key, let issue, let done):
            guard let port else {
                done(.failure(.init("reader", "this reader cannot speak ISO-DEP")))
                return nil
            }
            do {
                guard let reset = try port.resetNTAG424(masterKey: key, issue: issue) else {
                    done(.failure(.init("no_tag", "no tag in the field")))
                    return nil
                }
                done(.success(NTAG424ResetDone(uid: reset.uid, provedKey0: reset.provedKey0)))
            } catch {
                done(.failure(NTAG424JobFailure(error)))
            }
            return nil
        }
    }
}

extension DoorRuntime {
    /// The SUN template's URL base: what a phone opens when it reads the tag.
    static let ntag424Base = "https://doorgateway.invalid/t"

    /// On `queue`, from `beginWrite`: the machine chose the 424 `uid` for `job`.
    /// A UID the registry holds in any state, or has revoked, gets no key
    /// material (`already_registered`, `revoked`) — unless the operator armed
    /// `--reissue` naming it; then the tag must prove the row's key 0 (or be
    /// factory) and gets keys of a fresh issue.
    func beginNTAG424(_ job: ProvisioningJob, uid: TagUID) {
        let wall = Int64(time(nil))
        do {
            if try store.isRevoked(uid: uid, signature: nil) { throw RegistryError.revoked(uid.hex) }
            let row = try store.issuedTag(uid)
            if let row, job.reissue != uid {
                throw NTAG424JobFailure(
                    "already_registered",
                    "the registry holds \(uid.hex) (\(row.kind?.rawValue ?? "sticker"), \(row.state.rawValue)): "
                        + "nothing sent; re-issue it by name with `gatewayctl provision --reissue \(uid.hex)`")
            }
            let replacing = row?.kind == .ntag424 ? (row?.keyIssue ?? .legacy) : nil
            // Generated once, the first time the door needs it (or from the fleet).
            let site = try store.ensureNTAG424SiteKey(now: wall)
            let next = NTAG424.KeyIssue.next(after: replacing, salt: []).version
            let resume = try store.ntag424Attempt(uid: uid).flatMap { $0.version == next ? $0 : nil }
            var plan = NTAG424IssuePlan(
                uid: uid, replacing: replacing, resume: resume,
                fresh: { [store] in try store.newNTAG424Attempt(uid: uid, following: replacing, now: wall) })
            // Re-issuing a tag that opens now: it must prove its key 0; a factory chip only after a reset.
            if let row, row.kind == .ntag424, row.state == .active || row.state == .pending {
                plan.factoryAllowed = false
            }
            ntag424Job = job
            reader?.requestNTAG424(.provision(uid: uid, masterKey: site.key, base: Self.ntag424Base, plan: plan))
        } catch {
            var why = NTAG424JobFailure("registry_unavailable", "\(error)")
            if case RegistryError.revoked? = error as? RegistryError { why = NTAG424JobFailure("revoked", "\(error)") }
            if let refused = error as? NTAG424JobFailure { why = refused }
            log.warning("provisioning NTAG 424 \(uid.hex) refused: \(why)")
            submit(.writeResult(uid: uid, .failed(why.reason)))
        }
    }

    /// On `queue`: the reader's verdict on the provisioning it ran. The row is
    /// written only now, after the reader verified the tag.
    func ntag424Provisioned(uid: TagUID, _ result: Result<NTAG424Issued, NTAG424JobFailure>) {
        guard let job = ntag424Job, job.uid == uid else { return }
        ntag424Job = nil
        switch result {
        case .failure(let why):
            log.warning("provisioning NTAG 424 \(uid.hex) did not finish (no row written): \(why)")
            submit(.writeResult(uid: uid, .failed(why.reason)))
        case .success(let done):
            let counter = done.counter
            do {
                let previous = try store.recordProvisionedNTAG424(
                    uid: uid, action: job.action, label: job.label,
                    limits: TagLimits(
                        validFrom: job.validFrom, validUntil: job.validUntil, uses: job.uses, schedule: job.schedule),
                    issue: done.issue, counter: counter, now: Int64(time(nil)))
                if let previous, previous >= counter {
                    log.notice(
                        "NTAG 424 \(uid.hex) provisioned again: its SUN counter starts over (\(previous) → \(counter))")
                }
                submit(.writeResult(uid: uid, .written))
            } catch {
                // The tag is provisioned but has no row: it opens nothing; the next attempt re-verifies it and commits.
                log.error("registry: NTAG 424 \(uid.hex) verified but not recorded: \(error)")
                var reason = "registry_unavailable"
                // Revoked while it was being provisioned (gatewayctl, the fleet).
                if case RegistryError.revoked? = error as? RegistryError { reason = "revoked" }
                submit(.writeResult(uid: uid, .failed(reason)))
            }
        }
    }

    /// `gatewayctl provision reset` (a control thread): returns the door's NTAG
    /// 424 in the field to factory keys, marks its row, audits `tag_reset`.
    func resetNTAG424(by caller: String, timeout: Duration = .seconds(15)) throws -> (uid: TagUID, rowMarked: Bool) {
        guard let site = try store.ntag424SiteKey() else {
            throw DaemonError.request("this door holds no NTAG 424 site key: no tag of ours to reset")
        }
        guard sync({ machine.provisioning == .idle && ntag424Job == nil }) else {
            throw DaemonError.request("provisioning is armed or running; cancel it first")
        }
        let answer = Mutex<Result<NTAG424ResetDone, NTAG424JobFailure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        reader?.requestNTAG424(
            .reset(
                masterKey: site.key,
                issue: { [store] uid in
                    guard let row = try? store.issuedTag(uid), row.kind == .ntag424 else { return nil }
                    return row.keyIssue ?? .legacy
                }
            ) { result in
                answer.withLock { $0 = result }
                done.signal()
            })
        let ms = Int(timeout.components.seconds) * 1000
        guard done.wait(timeout: .now() + .milliseconds(ms)) == .success, let result = answer.withLock({ $0 }) else {
            throw DaemonError.request("the reader did not answer within \(ms / 1000) s")
        }
        switch result {
        case .failure(let why):
            log.warning("NTAG 424 reset did not finish: \(why)")
            throw DaemonError.request("reset did not finish (\(why)); present the tag again and repeat")
        case .success(let done):
            let uid = done.uid
            // Only a tag that proved the door's key 0 is the row's tag: a chip that was
            // already at factory keys (a clone claiming the UID) leaves the row as it is.
            let marked = done.provedKey0 ? try store.markNTAG424Reset(uid: uid) : false
            let detail =
                !done.provedKey0
                ? "already at factory keys: row left as it is" : marked ? "row marked failed" : "no active row"
            note(DoorEvent(.tagReset, uid: uid, source: caller), detail: detail)
            return (uid, marked)
        }
    }
}
