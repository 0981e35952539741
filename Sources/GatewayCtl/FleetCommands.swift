import Arguments
import DoorCore
import GatewayControl
@preconcurrency import Glibc

/// `gatewayctl fleet …` (docs/fleet.md): the site's shared revocations and
/// issued tags. The private site key stays in this process: `push`
/// (FleetPush.swift) makes the document here from the door's store, shows
/// what it changes, signs it, and hands gatewayd only the signed document.
struct FleetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet", abstract: "Revocations and issued tags shared by the site's doors (docs/fleet.md).",
        subcommands: [Status.self, Push.self, Pull.self, Keygen.self])

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract:
                "Site, applied version, origin, when, entries skipped, a document not applied yet, and the last refused document and why."
        )
        @OptionGroup var socket: SocketOptions
        func run() throws { try socket.call(.fleetStatus) }
    }

    struct Pull: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pull", abstract: "Read the retained documents again now, then show the status.")
        @OptionGroup var socket: SocketOptions
        func run() throws {
            _ = try socket.request(.fleetPull)
            usleep(1_000_000)
            try socket.call(.fleetStatus)
        }
    }

    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract:
                "Make a site key (Ed25519) or with --box a site box key (X25519): the private key into a new 0600 file, the public key printed."
        )
        @Option(help: "The new private key file (must not exist).") var out: String
        @Flag(help: "A site box key (X25519) for [fleet] box_key_file, instead of the signing key.") var box = false
        func run() throws {
            do {
                if box {
                    let key = try Crypto.SiteBox.generatePrivateKey()
                    try SiteKeyFile.create(out, seed: key)
                    print(Hex.encode(try Crypto.SiteBox.publicKey(privateKey: key)))
                    return
                }
                let seed = try Crypto.Ed25519.generateSeed()
                try SiteKeyFile.create(out, seed: seed)
                print(Hex.encode(try Crypto.Ed25519.publicKey(seed: seed)))
            } catch {
                fputs("gatewayctl: \(error)\n", stderr)
                throw ExitCode(1)
            }
        }
    }
}
