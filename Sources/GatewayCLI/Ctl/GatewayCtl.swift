import Arguments
import DoorCore

/// `gatewayctl`: the admin CLI. Offline commands (config, tag, otp) need no daemon.
public struct GatewayCtl: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "gatewayctl",
        abstract: "Administer a DoorGateway door controller.",
        version: "gateway \(GatewayVersion.string)",
        subcommands: [
            StatusCommand.self, OpenCommand.self, ModeCommand.self, ProvisionCommand.self, LockoutCommand.self,
            FeedbackCommand.self, SecretsCommand.self, KeysCommand.self, TagsCommand.self, LogCommand.self,
            BackupCommand.self, RestoreCommand.self, ClockCommand.self, SimCommand.self, FleetCommand.self,
            ReaderCommand.self, TagCommand.self, OTPCommand.self, GPIOCommand.self, ConfigCommand.self,
            CredsCommand.self,
            VersionCommand.self,
        ]
    )
    public init() {}
}

struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "version", abstract: "Print the version.")
    func run() throws { print("gateway \(GatewayVersion.string)") }
}
