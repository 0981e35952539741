/// Secure Unique NFC (SUN) messages in AES mode: PICCData, the SDM session
/// keys and SDMMAC (DS §9.3). The tag mirrors these into its NDEF file;
/// anyone can read them without a key, so SUN alone is open to pre-play
/// (notes §6) — the door pairs it with EV2 authentication.
extension NTAG424 {
    /// Decrypted PICCData (DS §9.3.4): `PICCDataTag ‖ UID? ‖ SDMReadCtr? ‖ random`.
    public struct PICCData: Equatable, Sendable {
        public var tag: UInt8
        /// The 7-byte UID, when mirrored (PICCDataTag bit 7).
        public var uid: [UInt8]?
        /// SDMReadCtr, when mirrored (PICCDataTag bit 6).
        public var counter: UInt32?

        public init(tag: UInt8, uid: [UInt8]?, counter: UInt32?) {
            self.tag = tag
            self.uid = uid
            self.counter = counter
        }

        /// The plaintext block the tag encrypts: tag, UID, counter LSB first, then `random` padding.
        public func block(random: [UInt8]) -> [UInt8] {
            var b = [tag] + (uid ?? []) + (counter.map(NTAG424.counterBytes) ?? [])
            b += random.prefix(16 - b.count)
            return b
        }
    }

    /// Decrypts the 16-byte encrypted PICCData with K_SDMMetaRead (AES-CBC, IV 0).
    /// LRP mode (24 bytes) and a block that does not decode as PICCData (a
    /// wrong key, most often) are refused.
    public static func decryptPICCData(metaReadKey: [UInt8], encrypted: [UInt8]) throws -> PICCData {
        if encrypted.count == 24 { throw Failure.piccData("24 bytes is LRP mode, which the door does not support") }
        try check(encrypted, 16, "encrypted PICCData")
        let p = try cbc(.decrypt, key: metaReadKey, encrypted)
        let tag = p[0]
        let hasUID = tag & 0x80 != 0, hasCounter = tag & 0x40 != 0
        // Bits 5–4 are RFU (0); bits 3–0 are the UID length: 7 when mirrored, else 0. A wrong key
        // still passes this by chance (3 in 256): the MAC, not this check, decides.
        guard tag & 0x30 == 0, tag & 0x0F == (hasUID ? 7 : 0) else {
            throw Failure.piccData(
                "PICCDataTag \(Hex.encode([tag], uppercase: true)) is not valid (wrong SDMMetaRead key?)")
        }
        guard hasUID || hasCounter else { throw Failure.piccData("neither UID nor counter is mirrored") }
        var i = 1
        var uid: [UInt8]?
        if hasUID {
            uid = Array(p[i..<(i + 7)])
            i += 7
        }
        let counter = hasCounter ? counterValue(Array(p[i..<(i + 3)])) : nil
        return PICCData(tag: tag, uid: uid, counter: counter)
    }

    /// The SDM session-vector prefix and its UID and counter, zero-padded to whole blocks (DS §9.3.9.1).
    static func sdmVector(_ prefix: [UInt8], uid: [UInt8]?, counter: UInt32?) -> [UInt8] {
        var v = prefix + [0x00, 0x01, 0x00, 0x80] + (uid ?? []) + (counter.map(counterBytes) ?? [])
        while v.count % 16 != 0 { v.append(0) }
        return v
    }

    /// KSesSDMFileReadMAC = CMAC(K_SDMFileRead, SV2), SV2 = 3CC3 0001 0080 ‖ UID ‖ SDMReadCtr.
    public static func sdmSessionMACKey(fileReadKey: [UInt8], uid: [UInt8]?, counter: UInt32?) throws -> [UInt8] {
        try cmac(key: fileReadKey, sdmVector([0x3C, 0xC3], uid: uid, counter: counter))
    }

    /// KSesSDMFileReadENC = CMAC(K_SDMFileRead, SV1), SV1 = C33C 0001 0080 ‖ UID ‖ SDMReadCtr.
    public static func sdmSessionENCKey(fileReadKey: [UInt8], uid: [UInt8]?, counter: UInt32?) throws -> [UInt8] {
        try cmac(key: fileReadKey, sdmVector([0xC3, 0x3C], uid: uid, counter: counter))
    }

    /// SDMMAC: MACt(KSesSDMFileReadMAC, the ASCII bytes from SDMMACInputOffset
    /// to SDMMACOffset − 1) — empty for the `e=…&c=…` layout (DS §9.3.8.1).
    public static func sdmMAC(fileReadKey: [UInt8], uid: [UInt8]?, counter: UInt32?, input: [UInt8]) throws -> [UInt8] {
        try macT(key: try sdmSessionMACKey(fileReadKey: fileReadKey, uid: uid, counter: counter), input)
    }

    /// The IV of SDM encrypted file data: E(KSesSDMFileReadENC, SDMReadCtr ‖ 0^13).
    public static func sdmFileDataIV(sessionENCKey: [UInt8], counter: UInt32) throws -> [UInt8] {
        try ecbEncrypt(key: sessionENCKey, counterBytes(counter) + [UInt8](repeating: 0, count: 13))
    }

    /// SDMENCFileData, encrypted or decrypted (whole blocks; the tag mirrors it as hex).
    public static func sdmFileData(
        _ direction: Crypto.Direction, fileReadKey: [UInt8], uid: [UInt8]?, counter: UInt32, data: [UInt8]
    ) throws -> [UInt8] {
        let ke = try sdmSessionENCKey(fileReadKey: fileReadKey, uid: uid, counter: counter)
        let iv = try sdmFileDataIV(sessionENCKey: ke, counter: counter)
        guard data.count % 16 == 0, !data.isEmpty else {
            throw Failure.length("SDM encrypted file data", expected: 16, got: data.count)
        }
        return try cbc(direction, key: ke, iv: iv, data)
    }
}
