import Arguments
import DoorCore
import GatewayControl
import Glibc

/// `gatewayctl tag sun-verify`: checks an NTAG 424 DNA SUN URL offline.
struct TagSUNVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sun-verify",
        abstract: "Decrypt and check an NTAG 424 DNA SUN URL (offline).",
        discussion: """
            Layouts: ?e=<PICCData>&c=<MAC> (NXP) and ?p=…&c=… (boltcard) with an empty MAC input; \
            ?picc_data=…&enc=…&cmac=… with the MAC over "<enc>&cmac=" (enc is decrypted too). \
            AES mode only (LRP is refused).
            Key files: the 16-byte key as 32 hex digits (either case; blanks and a final newline \
            are ignored, lines starting with # are comments), or exactly 16 raw bytes.
            Prints the UID, the SDM read counter and whether the MAC holds; it does not know the \
            last counter seen, so a replayed URL still verifies here.
            Exit status: 0 the MAC holds, 1 it does not, 2 the URL cannot be checked (malformed, \
            LRP, or PICCData that does not decrypt with the meta key; a wrong meta key may instead, \
            rarely, give 1 with a meaningless UID), 64 usage or key-file errors.
            """)

    @Argument(help: "The SUN URL as the tag presents it.")
    var url: String

    @Option(name: .customLong("meta-key-file"), help: "File holding K_SDMMetaRead (decrypts PICCData).")
    var metaKeyFile: String

    @Option(name: .customLong("file-key-file"), help: "File holding K_SDMFileRead (derives the MAC key).")
    var fileKeyFile: String

    @Flag(help: "Print JSON: uid (uppercase hex), counter (integer), mac_ok (boolean).")
    var json = false

    func run() throws {
        let metaKey = try Self.loadKey(metaKeyFile, option: "--meta-key-file")
        let fileKey = try Self.loadKey(fileKeyFile, option: "--file-key-file")
        let verdict: SUNURL.Verdict
        do {
            verdict = try SUNURL.parse(url).verify(metaReadKey: metaKey, fileReadKey: fileKey)
        } catch {
            if json {
                print(JSONValue.object([("error", .string("\(error)"))]).serialized)
            }
            printError("tag sun-verify: \(error)\n")
            throw ExitCode(2)
        }
        let uid = verdict.piccData.uid.map { Hex.encode($0, uppercase: true) }
        let counter = verdict.piccData.counter
        if json {
            var members: [(String, JSONValue)] = [
                ("uid", .optional(uid)), ("counter", counter.map { .int(Int64($0)) } ?? .null),
                ("mac_ok", .bool(verdict.macOK)),
            ]
            if let f = verdict.fileData { members.append(("file_data", .string(Hex.encode(f, uppercase: true)))) }
            print(JSONValue.object(members).serialized)
        } else {
            print("uid:     \(uid ?? "(not mirrored)")")
            print("counter: \(counter.map { "\($0)" } ?? "(not mirrored)")")
            print("mac:     \(verdict.macOK ? "ok" : "MISMATCH")")
            if let f = verdict.fileData { print("file data: \(Hex.encode(f, uppercase: true))") }
        }
        if !verdict.macOK { throw ExitCode(1) }
    }

    /// A key file: 32 hex digits (comments and blanks ignored) or 16 raw bytes.
    static func loadKey(_ path: String, option: String) throws -> [UInt8] {
        guard let data = Files.contents(path) else {
            throw ValidationError("\(option): cannot read \(path): \(String(cString: strerror(errno)))")
        }
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(whereSeparator: \.isNewline).map { String($0).trimmingBlanks }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        if lines.count == 1, lines[0].utf8.count == 32, let key = Hex.decode(lines[0]) { return key }
        if data.count == 16 { return data }
        throw ValidationError("\(option): \(path) must hold a 16-byte key as 32 hex digits (or 16 raw bytes)")
    }
}
