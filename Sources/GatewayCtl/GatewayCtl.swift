#if canImport(Glibc)
    import Glibc
#endif
import Arguments
import DoorCore
import GatewayControl

/// `gatewayctl`: the admin CLI. Offline commands (config, tag, otp) need no daemon.
public struct GatewayCtl: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "gatewayctl",
        abstract: "Administer a DoorGateway door controller.",
        version: "gateway \(GatewayVersion.string)",
        subcommands: [
            StatusCommand.self, OpenCommand.self, ModeCommand.self, ProvisionCommand.self, LockoutCommand.self,
            FireCommand.self, LockdownCommand.self, OccupancyCommand.self, PassbackCommand.self,
            FeedbackCommand.self, SecretsCommand.self, KeysCommand.self, TagsCommand.self, LogCommand.self,
            BackupCommand.self, RestoreCommand.self, ClockCommand.self, SimCommand.self, FleetCommand.self,
            ReaderCommand.self, TagCommand.self, OTPCommand.self, GPIOCommand.self, ConfigCommand.self,
            CredsCommand.self, PolicyCommand.self, ApproveCommand.self, DenyCommand.self, PinsCommand.self,
            VersionCommand.self,
        ]
    )
    public init() {}
}

struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version", abstract: "Print the version (--verbose: what this binary was built from).")

    @Flag(help: "Also print BUILDINFO: the compiler and every C library linked in, with versions and checksums.")
    var verbose = false

    func run() throws {
        print("gateway \(GatewayVersion.string)")
        guard verbose else { return }
        let report = BuildInfo.report()
        print(report.text, terminator: report.text.hasSuffix("\n") ? "" : "\n")
        if let note = report.note { print(note) }
    }
}

/// BUILDINFO (scripts/buildinfo.sh): written beside the static binaries and
/// shipped in the package's doc directory. Its `binary gateway sha256 …` line
/// is checked against the running executable, so a BUILDINFO left over from
/// another build is called out rather than believed.
enum BuildInfo {
    static let places = ["/usr/share/doc/doorgateway/BUILDINFO"]

    struct Report {
        var text: String
        var note: String?
    }

    static func report(executable: String? = selfExecutable(), extraPlaces: [String] = places) -> Report {
        var candidates: [String] = []
        if let executable { candidates.append(executable.deletingLastPathComponent + "/BUILDINFO") }
        candidates += extraPlaces
        let digest = executable.flatMap(sha256Hex(ofFile:))
        var fallback: Report?
        for path in candidates {
            guard let bytes = Files.contents(path) else { continue }
            let text = String(decoding: bytes, as: UTF8.self)
            let listed = listedDigests(text)
            if let digest, listed.contains(digest) {
                return Report(text: text, note: "BUILDINFO: \(path) (its gateway line matches this binary)")
            }
            if fallback == nil {
                fallback = Report(
                    text: text,
                    note: "BUILDINFO: \(path) — warning: written for another build (no binary line matches this "
                        + "executable's SHA-256 \(digest ?? "unknown"))")
            }
        }
        return fallback
            ?? Report(
                text: "BUILDINFO: none found (looked in \(candidates.joined(separator: ", ")))",
                note: "this binary was not built by scripts/static.sh or scripts/static-arm64.sh (a development build)")
    }

    /// The SHA-256s on `binary gateway sha256 <hex>` lines.
    static func listedDigests(_ text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard words.count == 4, words[0] == "binary", words[1] == "gateway", words[2] == "sha256" else {
                return nil
            }
            return String(words[3])
        }
    }

    static func selfExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Lowercase hex SHA-256 of a file read in 1 MiB chunks; nil when it cannot be read.
    static func sha256Hex(ofFile path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let hasher = Crypto.SHA256Stream()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return nil }
            if n == 0 { break }
            chunk.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        return Hex.encode(hasher.finish())
    }
}
