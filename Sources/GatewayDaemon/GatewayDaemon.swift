import Arguments
import DoorCore
import DoorIO
import GatewayControl
@preconcurrency import Glibc
import GatewayConfig
import GatewayStore
import Logging

/// `gatewayd`: the door controller. Start order (docs/design.md, issue "daemon"):
/// crash handler → configuration → board with every output requested at its
/// locked level → store → reader, MQTT, control socket → READY=1.
public struct GatewayDaemon: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "gatewayd",
        abstract: "Run the DoorGateway door controller.",
        discussion: """
            Reads /etc/doorgateway/gateway.toml ($CONFIGURATION_DIRECTORY/gateway.toml under \
            systemd) unless --config names a file. SIGTERM/SIGINT lock every output and exit; \
            SIGHUP reloads the configuration; one that changes a setting read at start only (the \
            lines, the reader, the transport, [fleet], [control], [paths]) is refused, naming each \
            (restart gatewayd to apply those).
            """,
        version: "gateway \(GatewayVersion.string)")

    @Option(name: .shortAndLong, help: "The configuration file \(ConfigOptions.defaultHelp).")
    var config: String?

    public init() {}

    public func run() throws {
        MallocArenas.limitToOne()  // before any other thread allocates
        let env = Environment.current
        LoggingSystem.bootstrap { JournalLogHandler(label: $0) }
        var log = Logger(label: "gatewayd")
        log.logLevel = env["GATEWAYD_DEBUG"] == nil ? .info : .debug
        do {
            try RelaySafety.installCrashHandler()
        } catch {
            log.critical("\(error)")
            throw ExitCode(70)
        }
        let path = ConfigOptions.path(config, environment: env)
        // An invalid file: before the board, so no line is requested and every
        // relay stays as the firmware (config.txt's gpio= hold) or its pull left it.
        let configuration = try ConfigOptions.load(
            file: path, environment: env, prefix: "gatewayd: ",
            footer:
                "gatewayd: not started, no GPIO line touched: fix \(path) (`gatewayctl config check`), then restart",
            exitCode: 78)  // EX_CONFIG
        let daemon: Daemon
        do {
            daemon = try Daemon(configuration: configuration, configPath: path, environment: env, log: log)
        } catch {
            log.critical("cannot start: \(error)")
            throw ExitCode(71)
        }
        daemon.run()
    }
}
