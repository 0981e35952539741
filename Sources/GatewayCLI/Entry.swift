import ArgumentParser
import Foundation

/// The single static binary is multi-call: the name it is invoked as picks the
/// role. `gatewayd` is the daemon, `gatewayctl` the admin CLI; `gateway daemon …`
/// and `gateway ctl …` do the same from the plain name.
public enum Entry {
    public enum Role: Equatable { case daemon, ctl }

    /// Decide the role and the remaining arguments from `argv`.
    /// Returns nil when the plain `gateway` name is used without a role word.
    public static func route(_ argv: [String]) -> (Role, [String])? {
        let name = (argv.first.map { URL(fileURLWithPath: $0).lastPathComponent }) ?? "gateway"
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

    /// Run the program; never returns.
    public static func main(_ argv: [String] = CommandLine.arguments) -> Never {
        guard let (role, args) = route(argv) else {
            if argv.dropFirst().first == "--help" || argv.dropFirst().first == "-h" {
                print(usage)
                exit(0)
            }
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(64)
        }
        switch role {
        case .ctl: GatewayCtl.main(args)
        case .daemon: GatewayDaemon.main(args)
        }
        exit(0)
    }
}
