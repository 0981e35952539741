import Arguments
import DoorCore
import GatewayControl
@preconcurrency import Glibc
import GatewayStore
import NFCReader

/// `gatewayctl reader …`: a person checking a reader over ssh with the daemon stopped.
struct ReaderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reader", abstract: "Check a PN532 reader directly (with gatewayd stopped), or ask the daemon.",
        subcommands: [ReaderScan.self, ReaderWrite.self, ReaderInfo.self, ReaderBench.self, ReaderOSDP.self])
}

struct ReaderScan: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Wait for one tag and print its UID, type, capacity, lock and protection state and NDEF records.",
        discussion: "Exit status: 0 a tag was read, 1 no tag within the timeout, 2 reader error.")
    @Option(help: "libnfc connstring, e.g. pn532_i2c:/dev/i2c-1 or pn532_uart:/dev/ttyS1.") var device: String
    @Option(help: "Seconds to wait for a tag.") var timeout: Double = 10
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let reader = NFCReader(connstring: device)
        do {
            try reader.open()
            guard let tag = try reader.waitForTag(timeout: .milliseconds(Int64(max(0, timeout) * 1000)), identify: true)
            else {
                fputs("gatewayctl: no tag within \(timeout) s\n", stderr)
                throw ExitCode(1)
            }
            let details = try reader.details(of: tag)
            print(json ? Self.json(tag, details).serialized : Self.text(tag, details))
        } catch let e as ReaderError {
            fputs("gatewayctl: \(e)\n", stderr)
            throw ExitCode(2)
        }
    }

    static func records(_ tag: TagRead) -> [JSONValue] {
        (tag.message?.records ?? []).map { r in
            var f: [(String, JSONValue)] = [
                ("tnf", .string("\(r.tnf)")), ("type", .string(String(decoding: r.type, as: UTF8.self))),
            ]
            if let uri = (try? r.uri()) ?? nil { f.append(("uri", .string(uri))) }
            if let text = (try? r.text()) ?? nil {
                f.append(("text", .string(text.text))); f.append(("language", .string(text.language)))
            }
            f.append(("payload_hex", .string(Hex.encode(r.payload))))
            return .object(f)
        }
    }

    static func json(_ tag: TagRead, _ d: TagDetails) -> JSONValue {
        .object([
            ("uid", .string(tag.uid.hex)), ("type", .optional(tag.type?.rawValue)),
            ("capacity", tag.type.map { .int($0.ndefCapacity) } ?? .null),
            ("ndef_bytes", tag.ndef.map { .int($0.count) } ?? .null),
            ("content", .string(tag.content.map { $0 == .blank ? "blank" : "message" } ?? "undecodable")),
            ("read_only", .bool(d.readOnly)), ("locked_pages", .int(d.lockedPages)),
            ("password_protected_from_page", d.protectedFrom.map { .int($0) } ?? .null),
            ("records", .array(records(tag))), ("error", .optional(tag.decodeError)),
        ])
    }

    static func text(_ tag: TagRead, _ d: TagDetails) -> String {
        var lines = [
            "uid:       \(tag.uid.hex)",
            "type:      \(tag.type?.rawValue ?? "unknown")"
                + (tag.type.map { ", \($0.ndefCapacity) bytes of NDEF memory" } ?? ""),
            "lock:      " + (d.readOnly ? "read-only" : "writable")
                + (d.lockedPages > 0 ? ", \(d.lockedPages) pages locked" : ""),
            "password:  " + (d.protectedFrom.map { "writes protected from page \($0)" } ?? "none"),
        ]
        switch tag.content {
        case .blank?: lines.append("content:   blank")
        case .message(let m)?:
            lines.append("content:   \(m.records.count) record(s), \(tag.ndef?.count ?? 0) bytes")
            for (i, r) in records(tag).enumerated() {
                lines.append(
                    "  [\(i)] "
                        + [r["uri"], r["text"]].compactMap { $0?.stringValue }.joined(separator: " ").ifEmpty(
                            "\(r["tnf"]?.stringValue ?? "") \(r["type"]?.stringValue ?? "")"))
            }
        case nil: lines.append("content:   undecodable: \(tag.decodeError ?? "")")
        }
        return lines.joined(separator: "\n")
    }
}

struct ReaderWrite: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "write",
        abstract: "Write a URL, NDEF bytes or a dump's message to the tag on the reader, read it back and verify it.",
        discussion:
            "Only a blank tag or one of our stickers unless --overwrite. Exit 0 written and verified, 1 refused or failed, 2 no reader."
    )
    @Option(help: "libnfc connstring.") var device: String
    @Option(help: "A URL to write as one URI record.") var url: String?
    @Option(help: "An NDEF message as hex.") var ndef: String?
    @Option(help: "A tag dump file (its pages from page 0, 4 bytes each) whose message to write.") var dump: String?
    @Flag(help: "Password-protect writes with NTAG PWD/PACK derived from the device key.") var protect = false
    @Flag(help: "Write over foreign content.") var overwrite = false
    @Option(help: "The state directory holding the store (for --protect).") var stateDir: String?
    @Option(help: "AUTHLIM for --protect (0–7, 0 = unlimited).") var authLimit = 0
    @Option(help: "Seconds to wait for a tag.") var timeout: Double = 10

    func validate() throws {
        guard [url, ndef, dump].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give one of --url, --ndef and --dump")
        }
        guard (0...7).contains(authLimit) else { throw ValidationError("--auth-limit is 0…7") }
    }

    func message() throws -> NDEFMessage {
        if let url { return NDEFMessage(records: [.uri(url)]) }
        if let ndef {
            guard let bytes = Hex.decode(ndef) else { throw ValidationError("--ndef must be hex") }
            do { return try NDEFMessage.decode(bytes) } catch { throw ValidationError("--ndef: \(error)") }
        }
        guard let data = Files.contents(dump!) else {
            throw ValidationError("cannot read \(dump!)")
        }
        do { return try TagImage(dump: Array(data)).message() } catch { throw ValidationError("\(dump!): \(error)") }
    }

    func run() throws {
        let message = try message()
        var deviceKey: [UInt8]?
        if protect {
            let dir =
                stateDir ?? Environment.current["STATE_DIRECTORY"]?.split(separator: ":").first.map(
                    String.init)
                ?? "/var/lib/doorgateway"
            do {
                var st = stat()
                if lstat(dir, &st) != 0 && errno == ENOENT {
                    // No state directory yet (a bench write before any gatewayd):
                    // a fresh one of this user's own, made here (mkdir, not
                    // "exists already"), holds the device key gatewayd takes over.
                    guard mkdir(dir, 0o700) == 0 else {
                        throw StoreError.cannotCreate(path: dir, String(cString: strerror(errno)))
                    }
                    deviceKey = try GatewayStore(stateDirectory: dir).ensureDeviceKey(now: Int64(time(nil))) {
                        try Crypto.randomBytes(32)
                    }
                } else {
                    // gatewayd's store: read only (it makes the device key at its
                    // first start); a root tool never creates, migrates or chmods
                    // the daemon's files (issue 32 M-1).
                    guard let key = try GatewayStore.forRootTool(stateDirectory: dir).key(KeyName.device) else {
                        throw StoreError.notFound("no device key in the store yet; start gatewayd once, it makes it")
                    }
                    deviceKey = key
                }
            } catch {
                fputs("gatewayctl: the device key: \(error)\n", stderr)
                throw ExitCode(1)
            }
        }
        let reader = NFCReader(connstring: device)
        do {
            try reader.open()
        } catch {
            fputs("gatewayctl: \(error)\n", stderr)
            throw ExitCode(2)
        }
        do {
            guard let tag = try reader.waitForTag(timeout: .milliseconds(Int64(max(0, timeout) * 1000))) else {
                fputs("gatewayctl: no tag within \(timeout) s\n", stderr)
                throw ExitCode(1)
            }
            let options = WriteOptions(
                overwrite: overwrite, password: deviceKey.map { NTAGPassword.derive(deviceKey: $0, uid: tag.uid) },
                protect: protect,
                authLimit: authLimit)
            let report = try reader.write(message, to: tag.uid, options: options)
            print(
                "written and verified: \(report.bytes) bytes on \(report.type.rawValue) \(report.uid.hex)"
                    + (report.protected ? ", password-protected" : ""))
        } catch let e as ReaderError {
            fputs("gatewayctl: \(e)\n", stderr)
            throw ExitCode(e.readerLost ? 2 : 1)
        }
    }
}

struct ReaderInfo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info", abstract: "The daemon's reader: connstring, health, last error.")
    @OptionGroup var socket: SocketOptions
    func run() throws { try socket.call(.readerInfo) }
}

extension String {
    fileprivate func ifEmpty(_ other: String) -> String { isEmpty ? other : self }
}
