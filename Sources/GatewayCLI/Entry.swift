import Arguments
import GatewayControl
import GatewayCtl
import GatewayDaemon
import Glibc

/// The single static binary is multi-call: the name it is invoked as picks the
/// role. `gatewayd` is the daemon, `gatewayctl` the admin CLI; `gateway daemon …`
/// and `gateway ctl …` do the same from the plain name.
public enum Entry {
    public enum Role: Equatable { case daemon, ctl }

    /// Decide the role and the remaining arguments from `argv`.
    /// Returns nil when the plain `gateway` name is used without a role word.
    public static func route(_ argv: [String]) -> (Role, [String])? {
        let name = (argv.first.map { $0.lastPathComponent }) ?? "gateway"
        let rest = Array(argv.dropFirst())
        switch name {
        case "gatewayd": return (.daemon, rest)
        case "gatewayctl": return (.ctl, rest)
        default:
            guard let first = rest.first else { return nil }
            switch first {
            case "daemon", "gatewayd": return (.daemon, Array(rest.dropFirst()))
            case "ctl", "gatewayctl": return (.ctl, Array(rest.dropFirst()))
            default: return nil
            }
        }
    }

    public static let usage = """
        usage: gateway daemon [options]   (the same as running it as `gatewayd`)
               gateway ctl <command> …    (the same as running it as `gatewayctl`)
        """

    /// `gatewayctl --socket PATH --json status` as systemctl and docker take
    /// their global options: `--socket PATH`, `--socket=PATH` and `--json`
    /// given before the command move after it, where every command that
    /// talks to the daemon declares them (a command that does not says so).
    static func hoistingGlobalOptions(_ args: [String]) -> [String] {
        var leading: [String] = []
        var rest = args[...]
        while let first = rest.first {
            if first == "--json" || first.hasPrefix("--socket=") {
                leading.append(first)
                rest = rest.dropFirst()
            } else if first == "--socket", rest.count >= 2 {
                leading += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else {
                break
            }
        }
        guard !leading.isEmpty, !rest.isEmpty else { return args }
        // Before a `--` terminator, if any, so they stay options.
        if let dashes = rest.firstIndex(of: "--") {
            return Array(rest[..<dashes]) + leading + Array(rest[dashes...])
        }
        return Array(rest) + leading
    }

    /// Run the program; never returns.
    public static func main(_ argv: [String] = CommandLine.arguments) -> Never {
        guard let (role, args) = route(argv) else {
            if argv.dropFirst().first == "--help" || argv.dropFirst().first == "-h" {
                print(usage)
                exit(0)
            }
            printError(usage + "\n")
            exit(64)
        }
        switch role {
        case .ctl: GatewayCtl.main(hoistingGlobalOptions(args))
        case .daemon: GatewayDaemon.main(args)
        }
        exit(0)
    }
}
