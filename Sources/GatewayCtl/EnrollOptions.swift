import Arguments
import DoorCore
import GatewayControl

/// What `tags enroll-uid` and `tags enroll-card` take besides the credential:
/// the action, a label and an optional end of validity.
struct EnrollOptions: ParsableArguments {
    @Option(help: "Action index.") var action: Int
    @Option(help: "Label stored in the registry.") var label = ""
    @Option(help: "Valid until (UTC: YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds).") var until: String?

    /// `--until` a date the daemon takes; each command checks it after its credential.
    func validateUntil() throws {
        if let until, parseUTCDate(until) == nil {
            throw ValidationError("--until: give YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds")
        }
    }

    /// The request's parameters: the credential's, then these.
    func parameters(_ credential: (String, JSONValue)) -> [(String, JSONValue)] {
        var p: [(String, JSONValue)] = [credential, ("action", .int(action)), ("label", .string(label))]
        if let u = until.flatMap(parseUTCDate) { p.append(("valid_until", .int(Int(u)))) }
        return p
    }
}
