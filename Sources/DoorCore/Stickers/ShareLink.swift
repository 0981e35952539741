/// The phone app's secret share link (docs/formats.md §2, its QR code):
/// `smpshare://secret?idx=<i>&key=<64 hex>&label=<percent-encoded, optional>`.
public struct ShareLink: Equatable, Sendable, Hashable {
    public static let prefix = "smpshare://secret?"
    public var action: Int
    public var key: [UInt8]
    public var label: String?

    public init(action: Int, key: [UInt8], label: String?) {
        self.action = action
        self.key = key
        self.label = label
    }

    /// The link text; the label is percent-encoded except RFC 3986 unreserved characters.
    public var text: String {
        var s = "\(Self.prefix)idx=\(action)&key=\(Hex.encode(key))"
        if let label { s += "&label=\(Self.percentEncode(label))" }
        return s
    }

    public static func parse(_ text: String) throws(ShareLinkError) -> ShareLink {
        let trimmed = text.trimmingASCIIWhitespace
        guard trimmed.hasPrefix(prefix) else { throw .notAShareLink }
        let parts = Array(trimmed.utf8).dropFirst(prefix.utf8.count).split(
            separator: UInt8(ascii: "&"),
            omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3 else { throw .malformed("expected idx, key and optionally label") }
        var fields: [String: ArraySlice<UInt8>] = [:]
        for part in parts {
            guard let eq = part.firstIndex(of: UInt8(ascii: "=")) else { throw .malformed("a parameter has no '='") }
            let name = String(decoding: part[part.startIndex..<eq], as: UTF8.self)
            guard ["idx", "key", "label"].contains(name), fields[name] == nil else {
                throw .malformed("unexpected or repeated parameter \(name.prefix(16))")
            }
            fields[name] = part[(eq + 1)...]
        }
        guard let idxText = fields["idx"], let idx = StickerURL.canonicalDecimal(idxText, maxDigits: 6) else {
            throw .malformed("idx is missing or not a plain decimal number")
        }
        guard let keyText = fields["key"], keyText.count == 64,
            let key = Hex.decode(String(decoding: keyText, as: UTF8.self))
        else {
            throw .malformed("key must be 64 hex digits")
        }
        var label: String?
        if let raw = fields["label"] { label = try percentDecode(raw) }
        return ShareLink(action: Int(idx), key: key, label: label)
    }

    static func percentEncode(_ s: String) -> String {
        var out = ""
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%" + Hex.encode([b], uppercase: true)
            }
        }
        return out
    }

    static func percentDecode(_ s: ArraySlice<UInt8>) throws(ShareLinkError) -> String {
        var bytes = [UInt8]()
        var i = s.startIndex
        while i < s.endIndex {
            let c = s[i]
            if c == UInt8(ascii: "%") {
                guard i + 2 < s.endIndex, let hi = Hex.nibble(s[i + 1]), let lo = Hex.nibble(s[i + 2]) else {
                    throw .malformed("bad percent escape in label")
                }
                bytes.append(hi << 4 | lo)
                i += 3
            } else if c == UInt8(ascii: "+") || c < 0x21 || c > 0x7E {
                throw .malformed("label is not percent-encoded")
            } else {
                bytes.append(c)
                i += 1
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .malformed("label is not UTF-8") }
        return text
    }
}

public enum ShareLinkError: Error, Equatable, Sendable, CustomStringConvertible {
    case notAShareLink
    case malformed(String)
    public var description: String {
        switch self {
        case .notAShareLink: return "not an smpshare://secret? link"
        case .malformed(let why): return "malformed share link: \(why)"
        }
    }
}

extension String {
    var trimmingASCIIWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\n" || f == "\r" || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\n" || l == "\r" || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
