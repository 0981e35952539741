/// Type Name Format of an NDEF record (NFC Forum NDEF 1.0 §3.2.6).
public enum TNF: UInt8, Sendable, Hashable, CaseIterable {
    case empty = 0, wellKnown = 1, media = 2, absoluteURI = 3, external = 4, unknown = 5, unchanged = 6, reserved = 7
}

/// One NDEF record. Chunked records are rejected when decoding.
public struct NDEFRecord: Equatable, Sendable, Hashable {
    public var tnf: TNF
    public var type: [UInt8]
    public var id: [UInt8]
    public var payload: [UInt8]

    public init(tnf: TNF, type: [UInt8], id: [UInt8] = [], payload: [UInt8]) {
        self.tnf = tnf
        self.type = type
        self.id = id
        self.payload = payload
    }

    /// Well-known URI record (RTD-URI) with the longest matching prefix code.
    public static func uri(_ uri: String) -> NDEFRecord {
        let (code, rest) = URIPrefix.split(uri)
        return NDEFRecord(tnf: .wellKnown, type: [0x55], payload: [code] + rest)
    }

    /// Well-known Text record (RTD-Text 1.0 §3.2), UTF-8; the language code
    /// (RFC 5646, ASCII) is cut to the 63 bytes the status byte can count.
    public static func text(_ text: String, language: String = "en") -> NDEFRecord {
        let lang = Array(language.utf8.prefix(63))
        return NDEFRecord(tnf: .wellKnown, type: [0x54], payload: [UInt8(lang.count)] + lang + Array(text.utf8))
    }

    /// NFC Forum external type, e.g. `doorgateway.example:tag`.
    public static func external(type: String, payload: [UInt8]) -> NDEFRecord {
        NDEFRecord(tnf: .external, type: Array(type.utf8), payload: payload)
    }

    /// Media-type record (RFC 2046 type, e.g. `text/plain`).
    public static func media(type: String, payload: [UInt8]) -> NDEFRecord {
        NDEFRecord(tnf: .media, type: Array(type.utf8), payload: payload)
    }

    public var isURI: Bool { tnf == .wellKnown && type == [0x55] }
    public var isText: Bool { tnf == .wellKnown && type == [0x54] }

    /// The URI of a URI record (nil for other records): the identifier code's
    /// prefix followed by the UTF-8 rest (RTD-URI 1.0 §3.2).
    public func uri() throws(NDEFError) -> String? {
        guard isURI else { return nil }
        guard let code = payload.first else { throw .invalidRecord("empty URI payload") }
        guard let prefix = URIPrefix.prefix(for: code) else { throw .badURICode(code) }
        guard let rest = String(validating: payload.dropFirst(), as: UTF8.self) else {
            throw .invalidUTF8("URI record")
        }
        return prefix + rest
    }

    /// Language and text of a Text record (nil for other records). Status byte
    /// (RTD-Text 1.0 §3.2.1): bit 7 = UTF-16, bit 6 reserved (must be 0), bits
    /// 5–0 = language code length.
    public func text() throws(NDEFError) -> (language: String, text: String)? {
        guard isText else { return nil }
        guard let status = payload.first else { throw .invalidRecord("empty Text payload") }
        let langLength = Int(status & 0x3F)
        guard status & 0x40 == 0 else { throw .invalidRecord("Text status bit 6 is reserved") }
        guard payload.count >= 1 + langLength else { throw .lengthBeyondData("Text language code") }
        guard let lang = String(validating: payload[1..<1 + langLength], as: UTF8.self) else {
            throw .invalidUTF8("Text language code")
        }
        let body = payload[(1 + langLength)...]
        if status & 0x80 == 0 {
            guard let t = String(validating: body, as: UTF8.self) else { throw .invalidUTF8("Text record") }
            return (lang, t)
        }
        return (lang, try Self.utf16(Array(body)))
    }

    /// UTF-16 text: big-endian unless a byte-order mark says otherwise.
    static func utf16(_ bytes: [UInt8]) throws(NDEFError) -> String {
        guard bytes.count % 2 == 0 else { throw .invalidText("odd UTF-16 length") }
        var units = [UInt16]()
        var little = false, start = 0
        if bytes.count >= 2 {
            if bytes[0] == 0xFF && bytes[1] == 0xFE {
                little = true; start = 2
            } else if bytes[0] == 0xFE && bytes[1] == 0xFF {
                start = 2
            }
        }
        var i = start
        while i < bytes.count {
            units.append(
                little ? UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8 : UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1]))
            i += 2
        }
        var out = ""
        for r in Unicode.UTF16.decode(units) {
            guard let s = r else { throw .invalidText("invalid UTF-16") }
            out.unicodeScalars.append(s)
        }
        return out
    }
}

extension Unicode.UTF16 {
    /// Decodes code units; nil entries mark invalid sequences.
    static func decode(_ units: [UInt16]) -> [Unicode.Scalar?] {
        var it = units.makeIterator()
        var decoder = Unicode.UTF16()
        var out = [Unicode.Scalar?]()
        loop: while true {
            switch decoder.decode(&it) {
            case .scalarValue(let s): out.append(s)
            case .emptyInput: break loop
            case .error: out.append(nil)
            }
        }
        return out
    }
}

/// RTD-URI identifier codes 0x00–0x23 (NFC Forum URI RTD 1.0 §3.2.2).
public enum URIPrefix {
    public static let table: [String] = [
        "", "http://www.", "https://www.", "http://", "https://", "tel:", "mailto:",
        "ftp://anonymous:anonymous@", "ftp://ftp.", "ftps://", "sftp://", "smb://", "nfs://", "ftp://",
        "dav://", "news:", "telnet://", "imap:", "rtsp://", "urn:", "pop:", "sip:", "sips:", "tftp:",
        "btspp://", "btl2cap://", "btgoep://", "tcpobex://", "irdaobex://", "file://", "urn:epc:id:",
        "urn:epc:tag:", "urn:epc:pat:", "urn:epc:raw:", "urn:epc:", "urn:nfc:",
    ]

    public static func prefix(for code: UInt8) -> String? { Int(code) < table.count ? table[Int(code)] : nil }

    /// The code of the longest prefix `uri` starts with (0x00 when none does,
    /// as for the `smp://` stickers, docs/formats.md §1) and the UTF-8 bytes that follow it.
    /// Compared byte for byte: every prefix is ASCII.
    public static func split(_ uri: String) -> (code: UInt8, rest: [UInt8]) {
        let bytes = Array(uri.utf8)
        var best = 0
        for (code, p) in table.enumerated() where bytes.starts(with: p.utf8) && p.utf8.count > table[best].utf8.count {
            best = code
        }
        return (UInt8(best), Array(bytes.dropFirst(table[best].utf8.count)))
    }
}
