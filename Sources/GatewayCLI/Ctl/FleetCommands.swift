import Arguments
import DoorCore
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
            abstract: "Site, applied version, origin, when, and the last refused document and why.")
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

/// The operator's site key file: 64 hex digits (the Ed25519 seed) and a
/// newline, mode 0600. Read only when private; never printed or logged.
enum SiteKeyFile {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func read(_ path: String) throws -> [UInt8] {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw Failure(description: "site key \(path): \(String(cString: strerror(errno)))")
        }
        guard st.st_mode & S_IFMT == S_IFREG else { throw Failure(description: "site key \(path): not a file") }
        guard st.st_mode & 0o077 == 0 else {
            throw Failure(
                description:
                    "site key \(path) is readable by others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it"
            )
        }
        guard let f = fopen(path, "r") else {
            throw Failure(description: "site key \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(f) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = fread(&buffer, 1, buffer.count, f)
        defer { for i in buffer.indices { buffer[i] = 0 } }
        let text = String(decoding: buffer.prefix(n), as: UTF8.self).trimmingWhitespace
        guard let seed = Hex.decode(text), seed.count == Crypto.Ed25519.seedLength else {
            throw Failure(description: "site key \(path): 64 hex digits expected (`gatewayctl fleet keygen`)")
        }
        return seed
    }

    static func create(_ path: String, seed: [UInt8]) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(description: "\(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array((Hex.encode(seed) + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else {
            throw Failure(description: "\(path): \(String(cString: strerror(errno)))")
        }
    }

    static func userName() -> String {
        guard let pw = getpwuid(getuid()), let name = pw.pointee.pw_name else { return "uid\(getuid())" }
        return String(cString: name)
    }
}

extension String {
    fileprivate var trimmingWhitespace: String {
        let bytes = Array(utf8)
        let isSpace = { (b: UInt8) in b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }
        guard let start = bytes.firstIndex(where: { !isSpace($0) }), let end = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: bytes[start...end], as: UTF8.self)
    }
}
