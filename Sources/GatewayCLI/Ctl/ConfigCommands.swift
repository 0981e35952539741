import Arguments
import Glibc
import GatewayConfig
import GatewayMQTT

/// `gatewayctl config …`: offline, no daemon needed.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Check the configuration file or print an example.",
        subcommands: [ConfigCheck.self, ConfigExampleCommand.self])
}

extension ConfigExample.Board: ExpressibleByArgument {}

struct ConfigCheck: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Load a configuration file strictly and report every problem.",
        discussion: """
            Prints `ok: FILE` and the effective configuration, one line per section; or each \
            problem as `FILE:LINE: key: message` on standard error, and exits 1.

            With --broker it also connects to the MQTT broker as the door (its certificate) and \
            sends one message around its own `<topic_prefix>/check` topic: under MQTT 3.1.1 a \
            broker acknowledges a publish its ACL denies, so only the round trip shows that the \
            ACL lets the door use its prefix. Run it as root: the door's key is readable by root \
            only (with a systemd credential path, while gatewayd runs).
            """)

    @Argument(help: "The file (default: $CONFIGURATION_DIRECTORY/gateway.toml, else /etc/doorgateway/gateway.toml).")
    var file: String?

    @Flag(help: "Also check the broker: connect, and publish and receive on the door's own check topic.")
    var broker = false

    func run() throws {
        let environment = Environment.current
        let path = file ?? GatewayConfiguration.defaultFile(environment: environment)
        let config: GatewayConfiguration
        do {
            config = try GatewayConfiguration.load(file: path)
            print("ok: \(path)")
            config.summary.forEach { print("  \($0)") }
            for warning in config.warnings + Self.fileWarnings(config) { printError("warning: \(warning)\n") }
        } catch {
            let text = error.issues.map { $0.formatted(file: path) + "\n" }.joined()
            printError(text)
            throw ExitCode(1)
        }
        guard broker else { return }
        guard config.mqtt.enabled else {
            printError("broker: [mqtt] enabled = false: no broker to check\n")
            throw ExitCode(1)
        }
        do {
            for line in try BrokerCheck.run(
                configuration: config.mqtt, credentials: environment["CREDENTIALS_DIRECTORY"])
            {
                print(line)
            }
        } catch {
            printError("broker: \(error)\n")
            throw ExitCode(1)
        }
    }
}

extension ConfigCheck {
    /// The password file readable by more than its owner and group (wider
    /// than 0640), or writable by its group: said, not refused.
    static func fileWarnings(_ config: GatewayConfiguration) -> [String] {
        guard config.mqtt.enabled, let file = config.mqtt.passwordFile, file.hasPrefix("/") else { return [] }
        var info = stat()
        guard stat(file, &info) == 0 else {
            return ["mqtt.password_file \(file): \(String(cString: strerror(errno)))"]
        }
        let mode = info.st_mode & 0o7777
        guard mode & ~0o640 != 0 else { return [] }
        return [
            "mqtt.password_file \(file) has mode \(String(mode, radix: 8)), wider than 0640: "
                + "chmod 0640 \(file) (owner root, group doorgateway)"
        ]
    }
}

struct ConfigExampleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example", abstract: "Print a complete, commented configuration file with every default.")

    @Option(help: "The board the example is for: sim or pi.")
    var board: ConfigExample.Board = .pi

    func run() throws { print(ConfigExample.text(board: board), terminator: "") }
}
