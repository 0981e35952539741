import ArgumentParser

/// `gatewayd`: the door daemon. The runtime arrives with the daemon issue.
public struct GatewayDaemon: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "gatewayd",
        abstract: "Run the DoorGateway door controller."
    )
    @Option(name: .shortAndLong, help: "Configuration file.")
    var config: String = "/etc/doorgateway/gateway.toml"

    public init() {}
    public func run() throws {
        throw ValidationError("the daemon runtime is not built yet")
    }
}
