/// A SUN URL as a tag mirrors it, in one of the layouts the door knows
/// (notes §1 "URL layouts"):
/// - `…?e=<32 hex>&c=<16 hex>` (NXP) and `…?p=<32>&c=<16>` (boltcard): the
///   MAC input is empty (SDMMACInputOffset = SDMMACOffset);
/// - `…?picc_data=<32>&enc=<32·n>&cmac=<16>`: the MAC covers the URL's ASCII
///   from the first character of `enc`'s value up to `cmac`'s value, i.e.
///   `"<ENC>&cmac="`; `enc` is SDMENCFileData.
public struct SUNURL: Equatable, Sendable {
    public var encryptedPICCData: [UInt8]
    public var mac: [UInt8]
    /// The bytes SDMMAC is computed over.
    public var macInput: [UInt8]
    public var encryptedFileData: [UInt8]?

    public enum Layout: String, Sendable { case e, p, piccData = "picc_data" }
    public var layout: Layout

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ d: String) { description = d }
    }

    public static func parse(_ url: String) throws -> SUNURL {
        let bytes = Array(url.utf8)
        guard let q = bytes.firstIndex(of: UInt8(ascii: "?")) else {
            throw ParseError("no query: expected ?e=…&c=…, ?p=…&c=… or ?picc_data=…&enc=…&cmac=…")
        }
        // name → (value, offset of the value's first byte in the URL)
        var fields: [String: (value: String, offset: Int)] = [:]
        var start = q + 1
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
            let part = bytes[start..<end]
            if let eq = part.firstIndex(of: UInt8(ascii: "=")) {
                let name = String(decoding: part[..<eq], as: UTF8.self)
                let value = String(decoding: part[(eq + 1)...], as: UTF8.self)
                guard fields[name] == nil else { throw ParseError("parameter \(name) appears twice") }
                fields[name] = (value, eq + 1)
            }
            start = end + 1
        }
        func hex(_ name: String, _ count: Int?) throws -> [UInt8] {
            guard let v = fields[name]?.value else { throw ParseError("missing parameter \(name)") }
            guard let b = Hex.decode(v), !b.isEmpty else { throw ParseError("\(name) is not hex") }
            if let count, b.count != count {
                if name != "c" && name != "cmac" && b.count == 24 {
                    throw ParseError("\(name) is 24 bytes: LRP mode, which the door does not support")
                }
                throw ParseError("\(name) must be \(count * 2) hex digits, got \(v.utf8.count)")
            }
            return b
        }
        if fields["picc_data"] != nil {
            let picc = try hex("picc_data", 16)
            let enc = try hex("enc", nil)
            guard enc.count % 16 == 0 else { throw ParseError("enc must be a multiple of 32 hex digits") }
            let mac = try hex("cmac", 8)
            let from = fields["enc"]!.offset, to = fields["cmac"]!.offset
            guard from < to else { throw ParseError("enc must come before cmac") }
            return SUNURL(
                encryptedPICCData: picc, mac: mac, macInput: Array(bytes[from..<to]), encryptedFileData: enc,
                layout: .piccData)
        }
        let name = fields["e"] != nil ? "e" : fields["p"] != nil ? "p" : nil
        guard let name else { throw ParseError("no e=, p= or picc_data= parameter") }
        if fields["e"] != nil && fields["p"] != nil { throw ParseError("both e= and p= given") }
        let picc = try hex(name, 16)
        let mac = try hex("c", 8)
        return SUNURL(
            encryptedPICCData: picc, mac: mac, macInput: [], encryptedFileData: nil,
            layout: name == "e" ? .e : .p)
    }

    /// What verification found: the UID and counter from PICCData and whether the MAC holds.
    public struct Verdict: Equatable, Sendable {
        public var piccData: NTAG424.PICCData
        public var macOK: Bool
        /// SDMENCFileData decrypted (only when the MAC holds).
        public var fileData: [UInt8]?
    }

    /// Decrypts PICCData with K_SDMMetaRead and checks SDMMAC with K_SDMFileRead
    /// (constant-time compare). Throws only when PICCData cannot be decrypted.
    public func verify(metaReadKey: [UInt8], fileReadKey: [UInt8]) throws -> Verdict {
        let picc = try NTAG424.decryptPICCData(metaReadKey: metaReadKey, encrypted: encryptedPICCData)
        let expected = try NTAG424.sdmMAC(
            fileReadKey: fileReadKey, uid: picc.uid, counter: picc.counter, input: macInput)
        let ok = Crypto.constantTimeEqual(expected, mac)
        var file: [UInt8]?
        if ok, let enc = encryptedFileData, let counter = picc.counter {
            file = try NTAG424.sdmFileData(
                .decrypt, fileReadKey: fileReadKey, uid: picc.uid, counter: counter, data: enc)
        }
        return Verdict(piccData: picc, macOK: ok, fileData: file)
    }
}
