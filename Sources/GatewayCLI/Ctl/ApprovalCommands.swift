import Arguments
import DoorCore
@preconcurrency import Glibc

/// `gatewayctl approve CODE` / `gatewayctl deny CODE`: answer the door's
/// approval request (docs/policy.md "Approval"). Exit 0 when the door took
/// the answer (opened, or denied the tap); exit 1 when it refused it
/// (no such request, already settled, timed out, or `gatewayctl` is not
/// among the action's approvers), with the reason.
struct ApproveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve", abstract: "Approve the waiting tap whose request shows CODE: the door opens.")
    @OptionGroup var socket: SocketOptions
    @Argument(help: "The request's code (six letters and digits).") var code: String
    func validate() throws { try ApprovalAnswerCall.validate(code) }
    func run() throws { try ApprovalAnswerCall.run(socket, code: code, approve: true) }
}

struct DenyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deny", abstract: "Deny the waiting tap whose request shows CODE (denied not_approved).")
    @OptionGroup var socket: SocketOptions
    @Argument(help: "The request's code (six letters and digits).") var code: String
    func validate() throws { try ApprovalAnswerCall.validate(code) }
    func run() throws { try ApprovalAnswerCall.run(socket, code: code, approve: false) }
}

enum ApprovalAnswerCall {
    static func validate(_ code: String) throws {
        guard code.utf8.count == ApprovalDesk.codeLength,
            code.uppercased().allSatisfy({ ApprovalDesk.alphabet.contains($0) })
        else {
            throw ValidationError("CODE is the \(ApprovalDesk.codeLength) letters and digits the request shows")
        }
    }

    static func run(_ socket: SocketOptions, code: String, approve: Bool) throws {
        let result = try socket.request(.approvalAnswer, [("code", .string(code)), ("approve", .bool(approve))])
        if socket.json {
            print(result.serialized)
        } else if case .string("refused")? = result["result"] {
            let reason = result["reason"].flatMap { if case .string(let s) = $0 { s } else { nil } } ?? "refused"
            fputs("gatewayctl: the door refused the answer: \(reason)\n", stderr)
        } else {
            print(result.pretty)
        }
        if case .string("refused")? = result["result"] { throw ExitCode(1) }
    }
}
