import Arguments
import DoorCore
import GatewayConfig
import GatewayControl
import GatewayNATS
import Glibc

/// `gatewayctl creds …`: the door's NATS credentials (user JWT and nkey
/// seed) in the state directory; offline, no daemon needed (a running
/// gatewayd reads the JWT file again at each reconnect). The seed is never printed.
struct CredsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "creds", abstract: "Install and inspect the door's NATS credentials (JWT + nkey seed).",
        subcommands: [CredsImport.self, CredsStatus.self])
}

/// Where the configuration puts the credential files.
struct CredsLocation: ParsableArguments {
    @OptionGroup var config: ConfigOptions

    func files() throws -> NATSCredentialFiles {
        let c = try config.load()
        let f = c.nats.credentialPaths(stateDirectory: c.paths.stateDirectory)
        return NATSCredentialFiles(jwtPath: f.jwt, seedPath: f.seed)
    }
}

struct CredsImport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Install a .creds file (JWT and seed) or a bare user JWT (for the seed already installed).",
        discussion: """
            The JWT must parse, its `sub` must be the public key of the door's nkey seed (the one \
            in the file, or the installed one), and its `exp` must be in the future. Each file is \
            written to a temporary file (mode 0600), synced and renamed over the old one. `-` reads \
            standard input.
            """)

    @OptionGroup var location: CredsLocation
    @Argument(help: "A .creds file or a file holding a user JWT; - for standard input.")
    var file: String

    func run() throws {
        let files = try location.files()
        let fd = file == "-" ? 0 : open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            printError("creds import: \(file): \(String(cString: strerror(errno)))\n")
            throw ExitCode(1)
        }
        let bytes = FD.readToEnd(fd)
        if fd != 0 { close(fd) }
        guard let bytes, bytes.count <= 65_536 else {
            printError("creds import: \(file): unreadable or over 64 KiB\n")
            throw ExitCode(1)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        do {
            let jwt = try files.install(text, now: Int64(time(nil)))
            print("installed: \(files.jwtPath)")
            print("subject: \(jwt.subject)")
            print("expires: \(jwt.expires.map { UTCTime.iso8601($0) } ?? "never")")
        } catch {
            printError("creds import: refused: \(error)\n")
            throw ExitCode(1)
        }
    }
}

struct CredsStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Print the state of the installed credentials: subject, expiry, seconds left.")

    @OptionGroup var location: CredsLocation

    func run() throws {
        let files = try location.files()
        let s = files.state(now: Int64(time(nil)))
        print("state: \(s.kind.rawValue)")
        print("jwt: \(files.jwtPath)")
        print("seed: \(files.seedPath)")
        if let subject = s.subject { print("subject: \(subject)") }
        if let exp = s.expires {
            print("expires: \(UTCTime.iso8601(exp))")
        } else if s.subject != nil {
            print("expires: never")
        }
        if let left = s.expiresIn { print("expires_in_s: \(left)") }
        if let problem = s.problem { print("problem: \(problem)") }
        if s.kind != .ok { throw ExitCode(1) }
    }
}
