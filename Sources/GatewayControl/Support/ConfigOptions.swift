import Arguments
import GatewayConfig

/// `--config FILE`, and the one way every command reads a configuration
/// file: the default when none is named (`$CONFIGURATION_DIRECTORY/
/// gateway.toml` under systemd, else /etc/doorgateway/gateway.toml),
/// systemd's state and runtime directories applied, and an invalid file
/// refused with each issue on standard error as `FILE:LINE: key: message`.
/// gatewayd, `config check` and `config firmware` (which name the file
/// otherwise) and `policy explain --config` load through `load(file:…)`.
package struct ConfigOptions: ParsableArguments {
    package static let defaultHelp =
        "(default: $CONFIGURATION_DIRECTORY/gateway.toml, else /etc/doorgateway/gateway.toml)"

    @Option(help: "The configuration file \(ConfigOptions.defaultHelp).")
    package var config: String?

    package init() {}

    /// `--config`, else the default file.
    package func path(environment: [String: String] = Environment.current) -> String {
        Self.path(config, environment: environment)
    }

    package static func path(_ file: String?, environment: [String: String] = Environment.current) -> String {
        file ?? GatewayConfiguration.defaultFile(environment: environment)
    }

    /// The file `--config` names (or the default), as the daemon reads it.
    package func load(environment: [String: String] = Environment.current) throws -> GatewayConfiguration {
        try Self.load(file: path(environment: environment), environment: environment)
    }

    /// Loads `file`; with `environment`, systemd's directories (`STATE_DIRECTORY`,
    /// `RUNTIME_DIRECTORY`) win over its `[paths]` as they do for gatewayd. An
    /// invalid file: each issue on standard error (after `prefix`), then
    /// `footer`, and `ExitCode(exitCode)` thrown.
    package static func load(
        file: String, environment: [String: String]?, prefix: String = "", footer: String? = nil,
        exitCode: Int32 = 1
    ) throws -> GatewayConfiguration {
        do {
            let configuration = try GatewayConfiguration.load(file: file)
            return environment.map { configuration.applying(environment: $0) } ?? configuration
        } catch {
            printError(error.issues.map { prefix + $0.formatted(file: file) + "\n" }.joined())
            if let footer { printError(footer + "\n") }
            throw ExitCode(exitCode)
        }
    }
}
