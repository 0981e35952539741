import Arguments
import GatewayControl
import Glibc
import GatewayConfig
import GatewayMQTT
import RemoteSettings

/// `gatewayctl config …`: offline, no daemon needed.
struct ConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Check the configuration file, print an example, or the firmware's relay hold (config.txt).",
        subcommands: [ConfigCheck.self, ConfigExampleCommand.self, ConfigFirmwareCommand.self])
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

            The check is the door: the shipped broker listener lets one connection per identity \
            (use_username_as_clientid), so beside a running gatewayd it would take over the door's \
            session. It refuses while gatewayd's control socket answers: stop gatewayd first, or \
            give --while-running when the broker keeps the two apart (a password login on a \
            broker that leaves client ids alone).

            Where systemd runs and gatewayd.service is installed, the broker check runs inside \
            that unit's sandbox (systemd-run with the unit's user, network filters, file system \
            view and credentials, drop-ins included), so it reaches the broker exactly as gatewayd \
            would; without systemd it says so and checks from its own process \
            (--outside-sandbox does that on purpose).
            """)

    @Argument(help: "The file \(ConfigOptions.defaultHelp).")
    var file: String?

    @Flag(help: "Also check the broker: connect, and publish and receive on the door's own check topic.")
    var broker = false

    @Flag(help: "With --broker: check even though gatewayd runs (it may knock the door off the broker).")
    var whileRunning = false

    @Flag(help: "With --broker: check from this process, not inside gatewayd.service's sandbox.")
    var outsideSandbox = false

    @Option(
        help:
            "gatewayd's control socket, to see whether it runs (default: $RUNTIME_DIRECTORY/control.sock or /run/doorgateway/control.sock)."
    )
    var socket: String?

    @Option(help: "config.txt whose relay hold is compared with the file's (real board; when readable).")
    var configTxt: String = FirmwareFiles.configTxt

    func run() throws {
        let environment = Environment.current
        let path = ConfigOptions.path(file, environment: environment)
        let config = try ConfigOptions.load(file: path, environment: nil)
        print("ok: \(path)")
        config.summary.forEach { print("  \($0)") }
        for warning in config.warnings + Self.fileWarnings(config) { printError("warning: \(warning)\n") }
        if config.board == .real { FirmwareFiles.warnIfStale(config, configTxt: configTxt) }
        guard broker else { return }
        guard config.mqtt.enabled else {
            printError("broker: [mqtt] enabled = false: no broker to check\n")
            throw ExitCode(1)
        }
        if !whileRunning, let running = Self.runningDaemon(socket: socket) {
            printError(
                """
                broker: gatewayd is running (its control socket \(running) answers): the check connects \
                with the door's own identity, and the doors' broker listener allows one connection per \
                identity, so it would take over the door's session. Stop it first: \
                systemctl stop gatewayd && gatewayctl config check --broker; systemctl start gatewayd \
                (or --while-running, on a broker that keeps the two apart)

                """)
            throw ExitCode(1)
        }
        if environment[UnitSandbox.marker] == nil && !outsideSandbox {
            if let why = UnitSandbox.unavailable() {
                printError(
                    "broker: \(why): checking from gatewayctl's own process, outside \(UnitSandbox.unit)'s sandbox\n")
            } else {
                let absolute = path.hasPrefix("/") ? path : Files.currentDirectory + "/" + path
                print("broker: checking inside \(UnitSandbox.unit)'s sandbox (systemd-run with the unit's settings)")
                let failure = UnitSandbox.exec(
                    configFile: absolute,
                    check: ["config", "check", "--broker", "--while-running", "--config-txt", configTxt, absolute])
                printError("broker: \(failure): checking from gatewayctl's own process instead\n")
            }
        }
        var mqtt = config.mqtt
        mqtt.tls.keyFile = UnitSandbox.credentialPath(mqtt.tls.keyFile, environment: environment)
        mqtt.tls.certFile = UnitSandbox.credentialPath(mqtt.tls.certFile, environment: environment)
        mqtt.tls.caFile = UnitSandbox.credentialPath(mqtt.tls.caFile, environment: environment)
        do {
            for line in try BrokerCheck.run(
                configuration: mqtt, credentials: environment["CREDENTIALS_DIRECTORY"])
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
    /// The control socket's path when a gatewayd answers there; nil when none
    /// does (no socket, or nobody listening).
    static func runningDaemon(socket: String?) -> String? {
        let path = SocketOptions.path(socket)
        do {
            _ = try ControlClient(path: path)
            return path
        } catch ControlClientError.notRunning {
            return nil
        } catch {
            return path  // there, but not ours to use (permission): a daemon runs
        }
    }

    /// A password or token file readable by more than its owner and group
    /// (wider than 0640), or writable by its group: said, not refused.
    static func fileWarnings(_ config: GatewayConfiguration) -> [String] {
        var files: [(key: String, path: String?)] = []
        if config.mqtt.enabled { files.append(("mqtt.password_file", config.mqtt.passwordFile)) }
        if config.remote.transport == .nats {
            files += [("nats.password_file", config.nats.passwordFile), ("nats.token_file", config.nats.tokenFile)]
        }
        return files.compactMap { key, file -> String? in
            guard let file, file.hasPrefix("/") else { return nil }
            var info = stat()
            guard stat(file, &info) == 0 else { return "\(key) \(file): \(String(cString: strerror(errno)))" }
            let mode = info.st_mode & 0o7777
            guard mode & ~0o640 != 0 else { return nil }
            return "\(key) \(file) has mode \(String(mode, radix: 8)), wider than 0640: "
                + "chmod 0640 \(file) (owner root, group doorgateway)"
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

/// `gatewayctl config firmware`: the config.txt lines that hold each relay at
/// its locked level from power-on (FirmwareHold), printed, compared with what
/// config.txt holds, and with --write put there. gatewayd runs as an
/// unprivileged user and cannot write the boot partition (mounted root-only),
/// so a change of `active_low` or `locked_level` is carried to the firmware by
/// this command, run as root; the image's first boot runs it too.
struct ConfigFirmwareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "firmware",
        abstract: "Print (or --write) the config.txt lines that hold the relays locked from power-on.",
        discussion: """
            The Raspberry Pi firmware sets a pin from config.txt before Linux boots: \
            `gpio=17=op,dh,pu` holds GPIO17 high and pulls it up (the pull keeps the level \
            while no process holds the line). The level is the locked state's, from each \
            output's active_low and locked_level (active-low module with a strike: high; \
            active-high with a strike: low; a maglock the opposite). Prints the block to put in \
            config.txt and says on standard error whether config.txt holds it. With --write \
            (root) the block replaces any earlier one, and any gpio= line for those pins, in \
            config.txt and in /etc/default/raspi-firmware-custom (which Debian's raspi-firmware \
            copies into config.txt at every kernel upgrade). The firmware reads it at the next \
            power-on: reboot to apply it.
            """)

    @Argument(help: "The file \(ConfigOptions.defaultHelp).")
    var file: String?

    @Flag(help: "Write the block into config.txt and the raspi-firmware-custom file (root).")
    var write = false

    @Option(help: "The firmware's config.txt.")
    var configTxt: String = FirmwareFiles.configTxt

    @Option(help: "Debian raspi-firmware's custom settings, appended to config.txt at kernel upgrades (if present).")
    var custom: String = FirmwareFiles.custom

    func run() throws {
        let path = ConfigOptions.path(file)
        let config = try ConfigOptions.load(
            file: path, environment: nil, footer: "config firmware: no relay hold without a valid configuration")
        let holds: [FirmwareHold]
        do {
            holds = try config.firmwareHolds()
        } catch {
            printError("config firmware: \(path): \(error)\n")
            throw ExitCode(1)
        }
        print(FirmwareHold.block(holds).joined(separator: "\n"))
        if config.board == .sim {
            printError("config firmware: board.kind = \"sim\": nothing reads these pins on the simulated board\n")
        }
        guard write else {
            FirmwareFiles.report(holds, configTxt: configTxt)
            return
        }
        var failed = false
        for (target, required) in [(configTxt, true), (custom, false)] {
            if !required && !Files.exists(target) {
                printError("config firmware: no \(target) (not Debian's raspi-firmware): skipped\n")
                continue
            }
            do {
                printError("config firmware: \(try FirmwareFiles.write(holds, to: target))\n")
            } catch {
                printError("config firmware: \(error)\n")
                failed = true
            }
        }
        if failed { throw ExitCode(1) }
    }
}

/// Reading and rewriting the firmware's files for `config firmware` and `config check`.
enum FirmwareFiles {
    static let configTxt = "/boot/firmware/config.txt"
    static let custom = "/etc/default/raspi-firmware-custom"

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// For each relay whose hold `text` lacks: what it holds instead.
    static func stale(_ holds: [FirmwareHold], in text: String) -> [String] {
        holds.compactMap { h in
            let now = FirmwareHold.current(in: text, pin: h.pin)
            return now == h.line ? nil : "GPIO\(h.pin) (\(h.output)) is \(now ?? "not held")"
        }
    }

    /// What a stale hold costs: only the pull missing (a hold written before
    /// it carried one), or the level itself.
    static func consequence(_ holds: [FirmwareHold], in text: String) -> String {
        let pullOnly = holds.allSatisfy { h in
            let now = FirmwareHold.current(in: text, pin: h.pin)
            return now == h.line || now == h.lineWithoutPull
        }
        return pullOnly
            ? "the relay is driven locked from power-on but not pulled there: while gatewayd is not running only the pull gatewayd requested holds it (none on a kernel that refuses it)"
            : "from power-on until gatewayd starts the relay is not held locked"
    }

    /// Says on stderr whether `configTxt` holds the relays as they are configured.
    static func report(_ holds: [FirmwareHold], configTxt: String) {
        guard let bytes = Files.contents(configTxt) else {
            printError(
                "config firmware: cannot read \(configTxt) (\(String(cString: strerror(errno)))): "
                    + "compare by hand, or run as root\n")
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let stale = stale(holds, in: text)
        if stale.isEmpty {
            printError("config firmware: \(configTxt) holds these already\n")
        } else if consequence(holds, in: text).hasPrefix("from power-on") {
            printError(
                "config firmware: \(configTxt): \(stale.joined(separator: ", ")): the relay is not held locked "
                    + "from power-on; run `gatewayctl config firmware --write` as root, then reboot\n")
        } else {
            printError(
                "config firmware: \(configTxt): \(stale.joined(separator: ", ")): \(consequence(holds, in: text)); "
                    + "run `gatewayctl config firmware --write` as root, then reboot\n")
        }
    }

    /// `config check` on a real board: a warning (not an error: the file is
    /// valid) when a readable config.txt holds a relay otherwise.
    static func warnIfStale(_ config: GatewayConfiguration, configTxt: String) {
        guard let holds = try? config.firmwareHolds(), let bytes = Files.contents(configTxt) else { return }
        let text = String(decoding: bytes, as: UTF8.self)
        let stale = stale(holds, in: text)
        guard !stale.isEmpty else { return }
        printError(
            "warning: \(configTxt): \(stale.joined(separator: ", ")), not "
                + holds.map(\.line).joined(separator: " ")
                + ": \(consequence(holds, in: text)); "
                + "run `gatewayctl config firmware --write` as root, then reboot\n")
    }

    /// Rewrites `path` with the hold block: a new file beside it, flushed, then
    /// renamed over it (also on the FAT boot partition), so a power cut leaves
    /// the old file or the new one. Returns what it did.
    static func write(_ holds: [FirmwareHold], to path: String) throws -> String {
        guard let bytes = Files.contents(path) else {
            throw Failure(description: "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        let old = String(decoding: bytes, as: UTF8.self)
        let new: String
        do {
            new = try FirmwareHold.rewrite(old, holds: holds)
        } catch {
            throw Failure(description: "\(path): \(error)")
        }
        let was = stale(holds, in: old)
        guard new != old else { return "\(path) unchanged (holds these already)" }
        var info = stat()
        let mode = stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0o644
        let temporary = path + ".doorgateway-new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Files.Failure(operation: "open", path: temporary, errno: errno) }
        let written = FD.write(fd, Array(new.utf8)) && fsync(fd) == 0
        let writeErrno = errno
        close(fd)
        guard written else {
            unlink(temporary)
            throw Files.Failure(operation: "write", path: temporary, errno: writeErrno)
        }
        guard rename(temporary, path) == 0 else {
            let e = errno
            unlink(temporary)
            throw Files.Failure(operation: "rename", path: path, errno: e)
        }
        let directory = open(path.deletingLastPathComponent.isEmpty ? "." : path.deletingLastPathComponent, O_RDONLY)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
        return "wrote \(path)"
            + (was.isEmpty ? "" : " (was: \(was.joined(separator: ", ")))")
            + ": the firmware applies it at the next power-on (reboot)"
    }
}
