import ArgumentParser
import Foundation
import GatewayConfig

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
            """)

    @Argument(help: "The file (default: $CONFIGURATION_DIRECTORY/gateway.toml, else /etc/doorgateway/gateway.toml).")
    var file: String?

    func run() throws {
        let path = file ?? GatewayConfiguration.defaultFile(environment: ProcessInfo.processInfo.environment)
        do {
            let config = try GatewayConfiguration.load(file: path)
            print("ok: \(path)")
            config.summary.forEach { print("  \($0)") }
        } catch {
            let text = error.issues.map { $0.formatted(file: path) + "\n" }.joined()
            FileHandle.standardError.write(Data(text.utf8))
            throw ExitCode(1)
        }
    }
}

struct ConfigExampleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "example", abstract: "Print a complete, commented configuration file with every default.")

    @Option(help: "The board the example is for: sim or pi.")
    var board: ConfigExample.Board = .pi

    func run() throws { print(ConfigExample.text(board: board), terminator: "") }
}
