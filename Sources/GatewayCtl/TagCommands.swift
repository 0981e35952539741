import Arguments
import DoorCore
import GatewayControl
import Glibc

/// `gatewayctl tag …`. `inspect` is offline: it judges signatures and
/// origin only (the issued-tag registry is the daemon's).
struct TagCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tag", abstract: "Inspect stickers and NTAG 424 DNA SUN URLs.",
        subcommands: [TagInspect.self, TagSUNVerify.self])
}

struct TagInspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Decode a sticker and judge its signature (offline).",
        discussion: """
            INPUT is a sticker URL (smp://action?…), the hex of an NDEF TLV area, or a tag dump \
            file (180/540/924 bytes; it supplies its own UID).
            Exit status: 0 valid, 1 invalid, 2 cannot decide (no secret given, or a v2 sticker \
            without a UID).
            """)

    @Argument(help: "URL, NDEF TLV hex, or dump file.")
    var input: String

    @Option(name: .customLong("secret"), help: "A sticker secret as 64 hex digits (throwaway test values only).")
    var secrets: [String] = []

    @Option(name: .customLong("secret-file"), help: "A file holding secrets, one per line as 64 hex digits.")
    var secretFiles: [String] = []

    @Option(help: "Origin of the given secrets: imported (phone) or generated (gateway).")
    var origin: SecretOrigin = .imported

    @Option(help: "The tag's UID in hex (7 bytes for NTAG21x).")
    var uid: String?

    @Flag(help: "Print JSON.")
    var json = false

    @Option(help: .hidden)
    var actions: Int = 256

    func validate() throws {
        if let uid, TagUID(hex: uid) == nil { throw ValidationError("--uid must be 4, 7 or 10 bytes of hex") }
    }

    func run() throws {
        let keys = try loadSecrets()
        let decoded: DecodedTag
        do {
            decoded = try DecodedTag(input: input)
        } catch let error as NDEFError {
            emit(source: nil, records: [], uid: nil, fields: nil, verdict: nil, error: error.description)
            throw ExitCode(1)
        }
        let uid = decoded.uid ?? self.uid.flatMap(TagUID.init(hex:))
        let url: String
        do {
            url = try decoded.url()
        } catch {
            emit(
                source: decoded.source, records: decoded.records, uid: uid, fields: nil, verdict: nil,
                error: "\(error)")
            throw ExitCode(1)
        }
        let secrets = keys.enumerated().map {
            StickerSecret(
                id: Int64($0.offset + 1), action: (try? StickerURL.parse(url).action) ?? 0,
                key: $0.element, origin: origin)
        }
        let verdict = StickerJudge.judge(url, uid: uid, secrets: secrets, actionCount: actions)
        emit(
            source: decoded.source, records: decoded.records, uid: uid, fields: try? StickerURL.parse(url),
            verdict: verdict, error: nil, url: url)
        switch verdict.outcome {
        case .valid: return
        case .invalid: throw ExitCode(1)
        case .undecided: throw ExitCode(2)
        }
    }

    func loadSecrets() throws -> [[UInt8]] {
        var texts = secrets.map { ("--secret", $0) }
        for file in secretFiles {
            guard let data = Files.contents(file) else {
                throw ValidationError("cannot read secret file \(file)")
            }
            texts += String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline)
                .map { String($0).trimmingBlanks }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
                .map { (file, $0) }
        }
        return try texts.map { source, text in
            guard text.utf8.count == 64, let key = Hex.decode(text) else {
                throw ValidationError("\(source): a secret is 64 hex digits")
            }
            return key
        }
    }

    func emit(
        source: String?, records: [NDEFRecord], uid: TagUID?, fields: StickerURL?, verdict: StickerVerdict?,
        error: String?, url: String? = nil
    ) {
        if json {
            var members: [(String, JSONValue)] = [("source", .optional(source))]
            members.append(("uid", .optional(uid?.hex)))
            members.append(("records", .array(records.map(Self.recordJSON))))
            members.append(("url", .optional(url)))
            if let f = fields {
                var fm: [(String, JSONValue)] = [
                    ("version", .string(f.version.rawValue)), ("idx", .int(f.action)),
                    ("ts", .int(f.timestamp)), ("written", .string(UTCTime.iso8601(f.timestamp))),
                    ("sig", .string(Hex.encode(f.signature))),
                ]
                if let u = f.uidBinding { fm.append(("u", .string(Base64URL.encode(u)))) }
                members.append(("fields", .object(fm)))
            }
            if let verdict {
                members.append(
                    (
                        "verdict",
                        .object([
                            ("outcome", .string(verdict.outcome.rawValue)),
                            ("reason", .string(verdict.reason.rawValue)),
                            ("description", .string(verdict.description)),
                            ("secret", verdict.secretID.map { .int($0) } ?? .null),
                        ])
                    ))
            }
            if let error { members.append(("error", .string(error))) }
            print(JSONValue.object(members).serialized)
            return
        }
        if let source { print("source:  \(source)") }
        if let uid { print("uid:     \(uid.hex)") }
        for (n, r) in records.enumerated() { print("record \(n + 1): \(Self.describe(r))") }
        if let url { print("url:     \(url)") }
        if let f = fields {
            print("version: \(f.version.rawValue)")
            print("idx:     \(f.action)")
            print("ts:      \(f.timestamp) (\(UTCTime.iso8601(f.timestamp)))")
            print("sig:     \(Hex.encode(f.signature))")
            if let u = f.uidBinding { print("u:       \(Base64URL.encode(u))") }
        }
        if let verdict {
            let secret = verdict.secretID.map { " (secret #\($0))" } ?? ""
            print("verdict: \(verdict.outcome.rawValue) — \(verdict.reason.rawValue): \(verdict.description)\(secret)")
        }
        if let error { print("error:   \(error)") }
    }

    static func describe(_ r: NDEFRecord) -> String {
        if let uri = try? r.uri() { return "URI \(uri)" }
        if let t = try? r.text() { return "Text [\(t.language)] \(t.text)" }
        let type = String(decoding: r.type, as: UTF8.self)
        return "TNF \(r.tnf) type \(type) payload \(r.payload.count) bytes"
    }

    static func recordJSON(_ r: NDEFRecord) -> JSONValue {
        var m: [(String, JSONValue)] = [
            ("tnf", .string("\(r.tnf)")), ("type", .string(String(decoding: r.type, as: UTF8.self))),
        ]
        if let uri = try? r.uri() {
            m.append(("uri", .string(uri)))
        } else if let t = try? r.text() {
            m.append(("language", .string(t.language))); m.append(("text", .string(t.text)))
        } else {
            m.append(("payload", .string(Hex.encode(r.payload))))
        }
        return .object(m)
    }
}

/// What `tag inspect` was given, decoded.
struct DecodedTag {
    var source: String
    var uid: TagUID?
    var records: [NDEFRecord] = []
    var message: NDEFMessage?
    var directURL: String?

    init(input: String) throws {
        if input.includes("://") {
            source = "url"
            directURL = input
            return
        }
        if input.utf8.count % 2 == 0, let bytes = Hex.decode(input), !bytes.isEmpty {
            source = "ndef-tlv"
            message = try Type2.message(inArea: bytes)
        } else if let data = Files.contents(input) {
            let image = try TagImage(dump: [UInt8](data))
            source = "dump \(image.type)"
            uid = image.uid
            message = try image.message()
        } else {
            throw NDEFError.badDump("\(input) is not a URL, NDEF TLV hex or a readable dump file")
        }
        records = message?.records ?? []
    }

    func url() throws -> String {
        if let directURL { return directURL }
        return try message!.firstURI()
    }
}

extension SecretOrigin: ExpressibleByArgument {}
