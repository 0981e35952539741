/// What the door writes to a factory NTAG 424 DNA: its keys and its SUN
/// template (issue 26 "Provisioning a factory 424 at the door"). Pure: the
/// reader performs it (NFCReader.provisionNTAG424).
extension NTAG424 {
    /// The version the door gives every key it sets (factory keys are version 0), so
    /// GetKeyVersion tells after a tear which keys the tag already holds.
    public static let doorKeyVersion: UInt8 = 1

    /// A tag's five application keys (DS §8.2.1), from the site master key:
    /// - 0 (AppMasterKey), 3, 4 and 1 (SDM file read: the SUN MAC, SDMCtrRet): diversified by UID;
    /// - 2 (SDM meta read: decrypts PICCData) is one key for the site: the UID is known only
    ///   after decrypting (AN12196 §4.4.2).
    public struct DoorKeys: Equatable, Sendable {
        public var keys: [[UInt8]]

        public init(masterKey: [UInt8], uid: [UInt8]) throws {
            keys = try (0..<5).map { n in
                n == 2
                    ? try NTAG424.siteMetaReadKey(masterKey: masterKey)
                    : try NTAG424.tagKey(masterKey: masterKey, uid: uid, keyNumber: UInt8(n))
            }
        }

        public subscript(_ n: Int) -> [UInt8] { keys[n] }
        public static let metaRead = 2
        public static let fileRead = 1
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
