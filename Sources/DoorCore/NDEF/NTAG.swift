/// NXP NTAG213/215/216 memory maps (NTAG213/215/216 data sheet rev. 3.2, §8.5).
public enum NTAGType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ntag213 = "NTAG213", ntag215 = "NTAG215", ntag216 = "NTAG216"

    public var description: String { rawValue }

    /// Total pages (4 bytes each).
    public var pages: Int {
        switch self { case .ntag213: return 45; case .ntag215: return 135; case .ntag216: return 231 }
    }
    public var dumpSize: Int { pages * 4 }
    /// User memory bytes (pages 4…), the NDEF data area size in the CC.
    public var userBytes: Int {
        switch self { case .ntag213: return 144; case .ntag215: return 504; case .ntag216: return 888 }
    }
    /// The data area size the factory CC announces (byte 2 × 8): NXP ships
    /// 0x12 / 0x3E / 0x6D, i.e. 144 / 496 / 872 bytes, a little under the
    /// user memory of the 215 and 216.
    public var ccDataAreaSize: Int {
        switch self { case .ntag213: return 144; case .ntag215: return 496; case .ntag216: return 872 }
    }
    public static let firstUserPage = 4
    public var lastUserPage: Int { Self.firstUserPage + userBytes / 4 - 1 }
    public var dynamicLockPage: Int { lastUserPage + 1 }
    public var cfg0Page: Int { lastUserPage + 2 }
    public var cfg1Page: Int { lastUserPage + 3 }
    public var pwdPage: Int { lastUserPage + 4 }
    public var packPage: Int { lastUserPage + 5 }

    /// GET_VERSION answer: 00 04 04 02 01 00 <size> 03.
    public var versionResponse: [UInt8] {
        let size: UInt8
        switch self { case .ntag213: size = 0x0F; case .ntag215: size = 0x11; case .ntag216: size = 0x13 }
        return [0x00, 0x04, 0x04, 0x02, 0x01, 0x00, size, 0x03]
    }

    /// Identifies an NTAG21x from its GET_VERSION answer (vendor NXP, type NTAG, subtype 50 pF).
    public init?(versionResponse v: [UInt8]) {
        guard v.count == 8, v[1] == 0x04, v[2] == 0x04 else { return nil }
        switch v[6] {
        case 0x0F: self = .ntag213
        case 0x11: self = .ntag215
        case 0x13: self = .ntag216
        default: return nil
        }
    }

    public init?(dumpSize: Int) {
        guard let t = Self.allCases.first(where: { $0.dumpSize == dumpSize }) else { return nil }
        self = t
    }
}

/// A whole tag image: pages from page 0, 4 bytes each (COMPAT §6 dump files,
/// the layout `nfc-mfultralight` reads and writes).
public struct TagImage: Equatable, Sendable, Hashable {
    public var type: NTAGType
    public var bytes: [UInt8]

    /// Parses a dump file: 180/540/924 bytes; the UID's check bytes must match.
    public init(dump: [UInt8]) throws(NDEFError) {
        guard let t = NTAGType(dumpSize: dump.count) else {
            throw .badDump("\(dump.count) bytes; an NTAG213/215/216 dump is 180/540/924 bytes")
        }
        type = t
        bytes = dump
        let bcc0 = 0x88 ^ dump[0] ^ dump[1] ^ dump[2], bcc1 = dump[4] ^ dump[5] ^ dump[6] ^ dump[7]
        guard dump[3] == bcc0, dump[8] == bcc1 else { throw .badDump("UID check bytes (BCC0/BCC1) do not match") }
    }

    /// The factory layout of a fresh tag with `uid`, holding `message` (an
    /// empty NDEF message when nil — a blank sticker).
    public init(type: NTAGType, uid: TagUID, message: NDEFMessage? = nil) throws(NDEFError) {
        guard uid.bytes.count == 7 else { throw .badDump("an NTAG21x UID is 7 bytes") }
        let u = uid.bytes
        var b = [UInt8](repeating: 0, count: type.dumpSize)
        b[0...3] = [u[0], u[1], u[2], 0x88 ^ u[0] ^ u[1] ^ u[2]]
        b[4...7] = [u[3], u[4], u[5], u[6]]
        b[8...11] = [u[3] ^ u[4] ^ u[5] ^ u[6], 0x48, 0x00, 0x00]
        b[12...15] = ArraySlice(CapabilityContainer(dataAreaSize: type.ccDataAreaSize).bytes)
        let tlv = message.map(Type2.ndefTLV) ?? [0x03, 0x00, 0xFE]
        guard tlv.count <= type.ccDataAreaSize else { throw .oversized(needed: tlv.count, capacity: type.ccDataAreaSize) }
        b.replaceSubrange(16..<16 + tlv.count, with: tlv)
        let d = type.dynamicLockPage * 4
        b[d...(d + 3)] = [0x00, 0x00, 0x00, 0xBD]
        let c0 = type.cfg0Page * 4, c1 = type.cfg1Page * 4
        b[c0...(c0 + 3)] = [0x04, 0x00, 0x00, 0xFF]  // MIRROR, RFUI, MIRROR_PAGE, AUTH0 = 0xFF (no protection)
        b[c1...(c1 + 3)] = [0x00, 0x05, 0x00, 0x00]  // ACCESS, RFUI, RFUI, RFUI
        self.type = type
        bytes = b
    }

    public var uid: TagUID { TagUID([bytes[0], bytes[1], bytes[2], bytes[4], bytes[5], bytes[6], bytes[7]]) }

    public func page(_ n: Int) -> [UInt8] { Array(bytes[(n * 4)..<(n * 4 + 4)]) }

    public func capabilityContainer() throws(NDEFError) -> CapabilityContainer { try CapabilityContainer(page(3)) }

    /// The NDEF data area: from page 4, as long as the CC says (bounded by user memory).
    public func dataArea() throws(NDEFError) -> [UInt8] {
        let size = min(try capabilityContainer().dataAreaSize, type.userBytes)
        return Array(bytes[16..<(16 + size)])
    }

    /// The first NDEF message on the tag.
    public func message() throws(NDEFError) -> NDEFMessage { try Type2.message(inArea: dataArea()) }

    /// DESIGN.md "blank": no NDEF TLV, or an empty NDEF message.
    public func isBlank() throws(NDEFError) -> Bool {
        guard let v = try Type2.firstNDEFValue(dataArea()) else { return true }
        return v.isEmpty
    }

    /// Static lock bits (page 2, bytes 2–3) set for any user page, or a read-only CC.
    public var isLocked: Bool {
        bytes[10] != 0 || bytes[11] != 0 || ((try? capabilityContainer().readOnly) ?? false)
    }

    /// AUTH0: the first page protected by the password (≥ pages means none).
    public var auth0: Int { Int(bytes[type.cfg0Page * 4 + 3]) }
}
