import DoorCore

/// One line on pn532-sim's control socket. Each is answered with one line,
/// `ok …` or `error …`.
public enum ControlCommand: Equatable, Sendable {
    /// `insert [UID] [IMAGE|ntag213|ntag215|ntag216]`: put a tag in the
    /// field — a dump file, or a blank tag of the type; the UID (7 bytes hex)
    /// overrides the image's, and is random when neither gives one.
    case insert(uid: TagUID?, image: String?, type: NTAGType?)
    /// `insert ntag424 [UID]`: a factory-fresh NTAG 424 DNA (all keys zero, empty
    /// NDEF file) enters the field; random UID unless given.
    case insertNTAG424(uid: TagUID?)
    /// `ntag424-fault keeps-keys|card-uid UID|versions V0,…,V4|off`: the NTAG 424
    /// DNA in the field (or the one `reinsert` brings back) lies: it acknowledges
    /// ChangeKey but keeps its old keys, its GetCardUID names another UID, or
    /// its GetKeyVersion names the given versions.
    /// For tests of provisioning's verification; `off` makes it honest again.
    case ntag424Fault(NTAG424Application.Fault?)
    /// `ntag424-changekeys`: how many ChangeKey commands the NTAG 424 DNA in the
    /// field (else the one that left it last) has received.
    case ntag424ChangeKeys
    /// `stash`: keep a copy of the NTAG 424 DNA in the field (else the one that
    /// left it last), keys, files and counter as they are now.
    case stash
    /// `unstash`: the stashed NTAG 424 DNA enters the field (as `insert`).
    case unstash
    /// `remove`: the tag leaves the field.
    case remove
    /// `reinsert`: the tag that last left the field comes back, memory and counters intact.
    case reinsert
    /// `tear-after N`: the tag leaves the field after N more exchanges; with
    /// no tag in the field, the next tag inserted or reinserted leaves after
    /// N exchanges from its arrival.
    case tearAfter(Int)
    /// `mute`: the chip stops answering.
    case mute
    /// `hang`: the chip ACKs commands but never answers them.
    case hang
    /// `nad`: the next answer with a status byte libnfc checks for a NAD
    /// (PowerDown, InDataExchange, InCommunicateThru, InSelect, …) has bit 7
    /// set: libnfc 1.8.0 calls `abort()` on it.
    case nad
    /// `mi-empty`: the next InDataExchange answer has MI (40h) set and the
    /// host's continuation is answered with no status byte: libnfc 1.8.0
    /// copies SIZE_MAX bytes (SIGSEGV).
    case miEmpty
    /// `unmute`: back to normal after `mute`, `hang` or an unsent `nad` / `mi-empty`.
    case unmute
    /// `dump [PATH]`: the tag image as hex, or written to PATH.
    case dump(path: String?)
    /// `stats [reset]`: frame and byte counters, or reset them.
    case stats(reset: Bool)
    /// `status`: power, RF field, busy command and tag in one line.
    case status
    /// `absent` / `present`: the chip leaves the I2C or SPI bus (its address
    /// is not acknowledged, MISO floats high) or comes back.
    case absent(Bool)

    public static func parse(_ line: String) throws(ControlError) -> ControlCommand {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
        guard let verb = words.first else { throw .empty }
        let args = Array(words.dropFirst())
        func noArgs(_ c: ControlCommand) throws(ControlError) -> ControlCommand {
            guard args.isEmpty else { throw .usage(verb) }
            return c
        }
        switch verb {
        case "insert" where args.contains(where: { $0.lowercased() == "ntag424" }):
            let rest = args.filter { $0.lowercased() != "ntag424" }
            guard rest.count <= 1 else { throw .usage(verb) }
            guard let text = rest.first else { return .insertNTAG424(uid: nil) }
            guard let u = TagUID(hex: text), u.bytes.count == 7 else { throw .badUID(text) }
            return .insertNTAG424(uid: u)
        case "insert":
            var uid: TagUID?, image: String?, type: NTAGType?
            for a in args {
                if let t = NTAGType.allCases.first(where: { $0.rawValue.lowercased() == a.lowercased() }), type == nil {
                    type = t
                } else if uid == nil, image == nil, a.count >= 14, a.allSatisfy({ $0.isHexDigit || $0 == ":" }) {
                    guard let u = TagUID(hex: a), u.bytes.count == 7 else { throw .badUID(a) }
                    uid = u
                } else if image == nil {
                    image = a
                } else {
                    throw .usage(verb)
                }
            }
            if image != nil && type != nil { throw .usage(verb) }
            return .insert(uid: uid, image: image, type: type)
        case "ntag424-fault":
            switch args.map({ $0.lowercased() }).first {
            case "keeps-keys" where args.count == 1: return .ntag424Fault(.keepsKeys)
            case "off" where args.count == 1: return .ntag424Fault(nil)
            case "card-uid" where args.count == 2:
                guard let u = TagUID(hex: args[1]), u.bytes.count == 7 else { throw .badUID(args[1]) }
                return .ntag424Fault(.cardUID(u.bytes))
            case "versions" where args.count == 2:
                let parts = args[1].split(separator: ",").compactMap { UInt8($0) }
                guard parts.count == 5 else { throw .usage(verb) }
                return .ntag424Fault(.keyVersions(parts))
            default: throw .usage(verb)
            }
        case "ntag424-changekeys": return try noArgs(.ntag424ChangeKeys)
        case "stash": return try noArgs(.stash)
        case "unstash": return try noArgs(.unstash)
        case "remove": return try noArgs(.remove)
        case "reinsert": return try noArgs(.reinsert)
        case "tear-after":
            guard args.count == 1, let n = Int(args[0]), n >= 0 else { throw .usage(verb) }
            return .tearAfter(n)
        case "mute": return try noArgs(.mute)
        case "absent": return try noArgs(.absent(true))
        case "present": return try noArgs(.absent(false))
        case "hang": return try noArgs(.hang)
        case "nad": return try noArgs(.nad)
        case "mi-empty": return try noArgs(.miEmpty)
        case "unmute": return try noArgs(.unmute)
        case "dump":
            guard args.count <= 1 else { throw .usage(verb) }
            return .dump(path: args.first)
        case "stats":
            guard args.isEmpty || args == ["reset"] else { throw .usage(verb) }
            return .stats(reset: !args.isEmpty)
        case "status": return try noArgs(.status)
        default: throw .unknown(verb)
        }
    }
}

public enum ControlError: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case unknown(String)
    case usage(String)
    case badUID(String)

    public var description: String {
        switch self {
        case .empty: return "empty command"
        case .unknown(let v):
            return
                "unknown command '\(v)' (insert, ntag424-fault, ntag424-changekeys, stash, unstash, remove, reinsert, tear-after, mute, hang, nad, mi-empty, unmute, dump, stats, status, absent, present)"
        case .usage(let v): return "usage: \(ControlError.usageText[v] ?? v)"
        case .badUID(let u): return "UID '\(u)' is not 7 bytes of hex"
        }
    }

    static let usageText = [
        "insert": "insert [UID] [IMAGE|ntag213|ntag215|ntag216]",
        "ntag424-fault": "ntag424-fault keeps-keys|card-uid UID|versions V0,V1,V2,V3,V4|off", "remove": "remove",
        "reinsert": "reinsert",
        "tear-after": "tear-after N", "mute": "mute", "hang": "hang", "nad": "nad", "mi-empty": "mi-empty",
        "unmute": "unmute",
        "dump": "dump [PATH]", "stats": "stats [reset]", "status": "status", "absent": "absent", "present": "present",
    ]
}

extension NTAG21x {
    /// A tag from a dump image, with `uid` written over the image's (and its
    /// check bytes BCC0/BCC1 recomputed) when given.
    public init(image: TagImage, uid: TagUID?) throws(NDEFError) {
        guard let uid else {
            self.init(image: image)
            return
        }
        guard uid.bytes.count == 7 else { throw .badDump("an NTAG21x UID is 7 bytes") }
        var b = image.bytes
        let u = uid.bytes
        b[0...3] = [u[0], u[1], u[2], 0x88 ^ u[0] ^ u[1] ^ u[2]]
        b[4...8] = [u[3], u[4], u[5], u[6], u[3] ^ u[4] ^ u[5] ^ u[6]]
        self.init(image: try TagImage(dump: b))
    }

    /// A random NXP UID (manufacturer byte 04h, ISO/IEC 14443-3 §6.5.4).
    public static func randomUID<G: RandomNumberGenerator>(using rng: inout G) -> TagUID {
        TagUID([0x04] + (0..<6).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }
}
