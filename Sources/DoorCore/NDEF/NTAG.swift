/// NXP NTAG213/215/216 memory maps (NTAG213/215/216 data sheet rev. 3.2, §8.5).
public enum NTAGType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case ntag213 = "NTAG213", ntag215 = "NTAG215", ntag216 = "NTAG216"

    public var description: String { rawValue }

    /// Total pages (4 bytes each).
    public var pages: Int {
        switch self {
        case .ntag213: return 45
        case .ntag215: return 135
        case .ntag216: return 231
        }
    }
    public var dumpSize: Int { pages * 4 }
    /// User memory bytes (pages 4 to `lastUserPage`).
    public var userBytes: Int {
        switch self {
        case .ntag213: return 144
        case .ntag215: return 504
        case .ntag216: return 888
        }
    }
    /// The data area size the factory CC announces (byte 2 × 8): NXP ships
    /// 0x12 / 0x3E / 0x6D, i.e. 144 / 496 / 872 bytes, a little under the
    /// user memory of the 215 and 216.
    public var ccDataAreaSize: Int {
        switch self {
        case .ntag213: return 144
        case .ntag215: return 496
        case .ntag216: return 872
        }
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
        switch self {
        case .ntag213: size = 0x0F
        case .ntag215: size = 0x11
        case .ntag216: size = 0x13
        }
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

    /// Bytes an NDEF TLV (with its Terminator) may take: the data area the
    /// factory CC announces, which is what readers honour. docs/formats.md §4: a v2
    /// sticker's 134 bytes fit NTAG213's 144.
    public var ndefCapacity: Int { ccDataAreaSize }

    /// Throws `.oversized` unless `tlv` (from `Type2.ndefTLV`) fits this tag.
    public func checkFits(_ tlv: [UInt8]) throws(NDEFError) {
        guard tlv.count <= ndefCapacity else { throw .oversized(needed: tlv.count, capacity: ndefCapacity) }
    }

    /// User pages locked by dynamic lock bytes 0–1 (data sheet §8.5.3): bit k
    /// (byte 0 bits 0–7, then byte 1) locks pages 16 + g·k ..< 16 + g·(k+1),
    /// g = 2 on the NTAG213 and 16 on the 215/216, cut at the last user page.
    public func dynamicallyLockedPages(_ lockBytes: [UInt8]) -> [Int] {
        guard lockBytes.count >= 2 else { return [] }
        let group = self == .ntag213 ? 2 : 16
        let bits = Int(lockBytes[0]) | Int(lockBytes[1]) << 8
        var pages: [Int] = []
        for k in 0..<16 where bits >> k & 1 == 1 {
            let first = 16 + group * k
            if first <= lastUserPage { pages += first...min(first + group - 1, lastUserPage) }
        }
        return pages
    }

    public init?(dumpSize: Int) {
        guard let t = Self.allCases.first(where: { $0.dumpSize == dumpSize }) else { return nil }
        self = t
    }
}

/// The static lock bytes, page 2 bytes 2–3 (NTAG213/215/216 data sheet
/// §8.5.2). Byte 2: bits 0–2 are block-lock bits (they freeze lock bits, not
/// pages), bit 3 locks page 3 (the CC), bits 4–7 lock pages 4–7; byte 3 bits
/// 0–7 lock pages 8–15. Locking is one-way: a set bit cannot be cleared.
public struct StaticLock: Equatable, Sendable, Hashable {
    /// Page 2 byte 2 (block-lock bits, L-CC, L4–L7) and byte 3 (L8–L15).
    public var lock0: UInt8
    public var lock1: UInt8

    public init(_ lock0: UInt8, _ lock1: UInt8) {
        self.lock0 = lock0
        self.lock1 = lock1
    }

    /// From page 2 as read (BCC1, internal, lock 0, lock 1).
    public init?(page2: [UInt8]) {
        guard page2.count >= 4 else { return nil }
        self.init(page2[2], page2[3])
    }

    /// Pages made read-only, in order (3 = the CC).
    public var lockedPages: [Int] {
        // Two typed filters: Swift 6.0 cannot type-check the one-expression
        // form "in reasonable time" (the aarch64 build uses 6.0.3).
        let low: [Int] = (3...7).filter { (p: Int) -> Bool in lock0 >> p & 1 == 1 }
        let high: [Int] = (8...15).filter { (p: Int) -> Bool in lock1 >> (p - 8) & 1 == 1 }
        return low + high
    }
}

/// A whole tag image: pages from page 0, 4 bytes each (docs/formats.md §6 dump files,
/// the layout `nfc-mfultralight` reads and writes).
public struct TagImage: Equatable, Sendable, Hashable {
    public var type: NTAGType
    public var bytes: [UInt8]

    /// Parses a dump file: 180/540/924 bytes give NTAG213/215/216. Both UID
    /// check bytes must match (ISO 14443-3 cascade BCC: BCC0 = 0x88 ^ UID0 ^
    /// UID1 ^ UID2, BCC1 = UID3 ^ UID4 ^ UID5 ^ UID6). A mismatch is an error,
    /// not a warning: a real NTAG cannot answer anticollision with a wrong BCC,
    /// so the file is corrupt or edited, and v2 stickers are bound to the UID it
    /// would hand over.
    public init(dump: [UInt8]) throws(NDEFError) {
        guard let t = NTAGType(dumpSize: dump.count) else {
            throw .badDump("\(dump.count) bytes; an NTAG213/215/216 dump is 180/540/924 bytes")
        }
        let bcc0 = 0x88 ^ dump[0] ^ dump[1] ^ dump[2], bcc1 = dump[4] ^ dump[5] ^ dump[6] ^ dump[7]
        guard dump[3] == bcc0 else { throw .badBCC(index: 0, expected: bcc0, found: dump[3]) }
        guard dump[8] == bcc1 else { throw .badBCC(index: 1, expected: bcc1, found: dump[8]) }
        type = t
        bytes = dump
    }

    private init(type: NTAGType, bytes: [UInt8]) {
        self.type = type
        self.bytes = bytes
    }

    /// The factory layout of an NTAG21x with `uid` (data sheet §8.5: UID and
    /// BCCs, internal byte 0x48, static locks clear, CC E1 10 size 00, dynamic
    /// lock bytes 00 00 00 BD, CFG0 04 00 00 FF — AUTH0 0xFF, no password —,
    /// CFG1 00 05 00 00, PWD and PACK read as zeros), holding `message` (the
    /// empty message when nil: a blank sticker, TLV 03 00 FE). Reproduces
    /// the dumps of Tests/Fixtures/compat.json byte for byte (docs/formats.md §6).
    public static func make(type: NTAGType, uid: TagUID, message: NDEFMessage? = nil) throws(NDEFError) -> TagImage {
        guard uid.bytes.count == 7 else { throw .badDump("an NTAG21x UID is 7 bytes, not \(uid.bytes.count)") }
        let u = uid.bytes
        let tlv = try Type2.ndefTLV(message ?? NDEFMessage(records: []))
        try type.checkFits(tlv)
        var b = [UInt8](repeating: 0, count: type.dumpSize)
        b[0...3] = [u[0], u[1], u[2], 0x88 ^ u[0] ^ u[1] ^ u[2]]
        b[4...7] = [u[3], u[4], u[5], u[6]]
        b[8...11] = [u[3] ^ u[4] ^ u[5] ^ u[6], 0x48, 0x00, 0x00]
        b[12...15] = ArraySlice(CapabilityContainer(dataAreaSize: type.ccDataAreaSize).bytes)
        b.replaceSubrange(16..<16 + tlv.count, with: tlv)
        let d = type.dynamicLockPage * 4, c0 = type.cfg0Page * 4, c1 = type.cfg1Page * 4
        b[d...(d + 3)] = [0x00, 0x00, 0x00, 0xBD]
        b[c0...(c0 + 3)] = [0x04, 0x00, 0x00, 0xFF]  // MIRROR, RFUI, MIRROR_PAGE, AUTH0
        b[c1...(c1 + 3)] = [0x00, 0x05, 0x00, 0x00]  // ACCESS, RFUI, RFUI, RFUI
        return TagImage(type: type, bytes: b)
    }

    /// UID0–2 from page 0, UID3–6 from page 1.
    public var uid: TagUID { TagUID([bytes[0], bytes[1], bytes[2], bytes[4], bytes[5], bytes[6], bytes[7]]) }

    /// Page `n` (4 bytes); empty past the last page.
    public func page(_ n: Int) -> [UInt8] {
        guard n >= 0, n < type.pages else { return [] }
        return Array(bytes[(n * 4)..<(n * 4 + 4)])
    }

    public func capabilityContainer() throws(NDEFError) -> CapabilityContainer { try CapabilityContainer(page(3)) }

    /// The NDEF data area: from page 4, as long as the CC says, bounded by user memory.
    public func dataArea() throws(NDEFError) -> [UInt8] {
        let size = min(try capabilityContainer().dataAreaSize, type.userBytes)
        return Array(bytes[16..<(16 + size)])
    }

    /// The first NDEF message on the tag.
    public func message() throws(NDEFError) -> NDEFMessage { try Type2.message(inArea: dataArea()) }

    /// Blank (docs/design.md: no NDEF TLV or an empty message) or a message.
    public func content() throws(NDEFError) -> TagContent { try Type2.content(ofArea: dataArea()) }

    public func isBlank() throws(NDEFError) -> Bool { try content() == .blank }

    public var staticLock: StaticLock { StaticLock(bytes[10], bytes[11]) }

    /// Pages 3… that can no longer be written: static and dynamic lock bits.
    public var lockedPages: [Int] {
        staticLock.lockedPages + type.dynamicallyLockedPages(page(type.dynamicLockPage))
    }

    /// Whether the NDEF area cannot be rewritten: a locked CC or user page, or a
    /// CC that does not grant write access.
    public var isLocked: Bool {
        !lockedPages.isEmpty || ((try? capabilityContainer().readOnly) ?? false)
    }

    /// AUTH0: the first page protected by the password (≥ pages means none).
    public var auth0: Int { Int(bytes[type.cfg0Page * 4 + 3]) }
}
