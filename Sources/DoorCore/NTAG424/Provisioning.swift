/// What the door writes to a factory NTAG 424 DNA: its keys and its SUN
/// template (issue 26 "Provisioning a factory 424 at the door"). Pure: the
/// reader performs it (NFCReader.provisionNTAG424).
extension NTAG424 {
    /// The version of the keys of a tag provisioned before issues were salted
    /// (`KeyIssue.legacy`; factory keys are version 0), so GetKeyVersion tells
    /// after a tear which keys the tag already holds.
    public static let doorKeyVersion: UInt8 = 1

    /// One issue of a tag's keys: a random salt the chip cannot choose, drawn by
    /// the door for each provisioning (and each reissue), and the key version
    /// the tag's keys 0, 1, 3 and 4 carry for it. The keys are a function of
    /// the site master key, the UID *and* the salt, so a chip that claimed a
    /// UID once holds keys for that issue only: a reissue draws a new salt and
    /// every copy of the earlier keys stops opening wherever the new row is.
    /// Stored in the registry row and carried by the fleet. The salt is not a
    /// secret (the master key is); it is never chosen by a tag.
    public struct KeyIssue: Equatable, Hashable, Sendable {
        /// 16 random bytes; nil for a tag provisioned before salts (the legacy
        /// derivation, version 1).
        public var salt: [UInt8]?
        /// 1 (legacy) or 2…255 (salted); never 0, the factory version.
        public var version: UInt8

        public init(salt: [UInt8]?, version: UInt8) {
            self.salt = salt
            self.version = version
        }

        /// A tag provisioned before salts: keys from the master key and the UID alone.
        public static let legacy = KeyIssue(salt: nil, version: doorKeyVersion)

        public static let saltLength = 16

        /// A fresh issue following `previous` (nil: the tag's first): a new
        /// random salt, and a version other than the previous one's and 0
        /// (2…255, wrapping), so GetKeyVersion tells the two issues apart.
        public static func next(after previous: KeyIssue?, salt: [UInt8]) -> KeyIssue {
            let v = previous.map { $0.version >= 2 && $0.version < 255 ? $0.version + 1 : 2 } ?? 2
            return KeyIssue(salt: salt, version: v)
        }

        /// Whether the salt and version are ones the door could have made.
        public var isWellFormed: Bool {
            switch salt {
            case nil: return version == doorKeyVersion
            case let s?: return s.count == Self.saltLength && version >= 2
            }
        }
    }

    /// A tag's five application keys (DS §8.2.1), from the site master key:
    /// - 0 (AppMasterKey), 3, 4 and 1 (SDM file read: the SUN MAC, SDMCtrRet): diversified by UID;
    /// - 2 (SDM meta read: decrypts PICCData) is one key for the site: the UID is known only
    ///   after decrypting (AN12196 §4.4.2).
    public struct DoorKeys: Equatable, Sendable {
        public var keys: [[UInt8]]

        /// `issue`: the row's issue (`KeyIssue.legacy` for a tag provisioned before salts).
        public init(masterKey: [UInt8], uid: [UInt8], issue: KeyIssue) throws {
            let issueKey = try NTAG424.issueKey(masterKey: masterKey, issue: issue)
            keys = try (0..<5).map { n in
                n == 2
                    ? try NTAG424.siteMetaReadKey(masterKey: masterKey)
                    : try NTAG424.tagKey(masterKey: issueKey, uid: uid, keyNumber: UInt8(n))
            }
        }

        public subscript(_ n: Int) -> [UInt8] { keys[n] }
        public static let metaRead = 2
        public static let fileRead = 1
    }

    /// The key a tag's keys 0, 1, 3 and 4 are diversified from for `issue`: the
    /// master key itself for a legacy issue; else AN10922 of the master key with
    /// `M = salt(16) ‖ "DoorGateway key"` (31 bytes).
    public static func issueKey(masterKey: [UInt8], issue: KeyIssue) throws -> [UInt8] {
        guard let salt = issue.salt else { return masterKey }
        guard salt.count == KeyIssue.saltLength else {
            throw Failure.length("key salt", expected: KeyIssue.saltLength, got: salt.count)
        }
        return try diversifyAN10922(masterKey: masterKey, input: salt + Array("DoorGateway key".utf8))
    }

    /// Key `keyNumber` of the tag `uid` for `issue` (key 2 is the site's meta-read key).
    public static func tagKey(masterKey: [UInt8], uid: [UInt8], keyNumber: UInt8, issue: KeyIssue) throws -> [UInt8] {
        if keyNumber == UInt8(DoorKeys.metaRead) { return try siteMetaReadKey(masterKey: masterKey) }
        return try tagKey(masterKey: try issueKey(masterKey: masterKey, issue: issue), uid: uid, keyNumber: keyNumber)
    }

    /// K_SDMMetaRead of a site: AN10922 with `M = "DoorGateway SDM meta"` (no UID).
    public static func siteMetaReadKey(masterKey: [UInt8]) throws -> [UInt8] {
        try diversifyAN10922(masterKey: masterKey, input: Array("DoorGateway SDM meta".utf8))
    }

    /// The NDEF file with a SUN URL, and the file settings that mirror into it.
    public struct SUNTemplate: Equatable, Sendable {
        /// The whole NDEF file content: NLEN ‖ one URI record.
        public var file: [UInt8]
        public var piccDataOffset: Int
        public var macOffset: Int
        /// ChangeFileSettings data (DS Table 69): SDM on, CommMode.Plain; Read free, Write/RW/Change
        /// key 0; UID + counter mirrored as ASCII in PICCData (key 2); MAC with key 1 over an
        /// empty input (the `e=…&c=…` layout); SDMCtrRet key 1.
        public var settings: [UInt8]

        /// `base` is the URL up to the query (`https://door.example/t`); the template appends
        /// `?e=<32>&c=<16>` (or `&e=` when `base` already has a query).
        public init(base: String) throws {
            let prefixes: [(String, UInt8)] = [
                ("https://www.", 0x02), ("http://www.", 0x01), ("https://", 0x04), ("http://", 0x03),
            ]
            var code: UInt8 = 0x00
            var rest = base
            for (p, c) in prefixes where base.hasPrefix(p) {
                code = c
                rest = String(base.dropFirst(p.count))
                break
            }
            let joiner = rest.contains("?") ? "&" : "?"
            let head = Array((rest + joiner + "e=").utf8)
            let text =
                head + [UInt8](repeating: 0x30, count: 32) + Array("&c=".utf8) + [UInt8](repeating: 0x30, count: 16)
            let payload = [code] + text
            guard payload.count <= 255 - 4, 2 + 4 + payload.count <= 256 else {
                throw Failure.length("SUN template", expected: 256, got: 2 + 4 + payload.count)
            }
            let record = [0xD1, 0x01, UInt8(payload.count), 0x55] + payload
            file = [0x00, UInt8(record.count)] + record
            piccDataOffset = 2 + 4 + 1 + head.count
            macOffset = piccDataOffset + 32 + 3
            func le24(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16)] }
            settings = [0x40, 0x00, 0xE0, 0xC1, 0xF1, 0x21] + le24(piccDataOffset) + le24(macOffset) + le24(macOffset)
        }
    }
}
