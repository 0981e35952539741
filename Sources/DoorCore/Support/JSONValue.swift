/// A JSON value with ordered object keys and a serializer that never escapes
/// `/` (URLs stay readable: `gatewayctl … --json`, MQTT payloads). Pure and
/// Foundation-free.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.double(x), .double(y)): return x == y
        case let (.string(x), .string(y)): return x == y
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    // Disfavoured so that `.int(x)` with an Int64 picks the enum case: Swift 6.0
    // (the aarch64 build) otherwise reports "ambiguous use of 'int'".
    @_disfavoredOverload
    public static func int<I: BinaryInteger>(_ v: I) -> JSONValue { .int(Int64(clamping: v)) }
    public static func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }

    /// Compact serialization (no spaces), keys in the given order.
    public var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? String(d) : "null"
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let items):
            out += "["
            for (i, v) in items.enumerated() {
                if i > 0 { out += "," }
                v.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (k, v)) in members.enumerated() {
                if i > 0 { out += "," }
                Self.writeString(k, to: &out)
                out += ":"
                v.write(to: &out)
            }
            out += "}"
        }
    }

    private static let hexDigits = Array("0123456789abcdef")

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        // Runs that need no escape are appended whole, not scalar by scalar
        // (this writes every control answer and MQTT payload).
        let scalars = s.unicodeScalars
        var run = scalars.startIndex
        var i = run
        while i != scalars.endIndex {
            let scalar = scalars[i]
            let escape: String?
            switch scalar {
            case "\"": escape = "\\\""
            case "\\": escape = "\\\\"
            case "\n": escape = "\\n"
            case "\r": escape = "\\r"
            case "\t": escape = "\\t"
            case _ where scalar.value < 0x20:
                let v = Int(scalar.value)
                escape = "\\u00" + String(hexDigits[v >> 4]) + String(hexDigits[v & 0xF])
            default: escape = nil
            }
            if let escape {
                out += Substring(scalars[run..<i])
                out += escape
                run = scalars.index(after: i)
            }
            i = scalars.index(after: i)
        }
        out += Substring(scalars[run..<i])
        out += "\""
    }
}

/// UTC timestamps without Foundation's locale machinery (which would pull ICU
/// into the static binary).
public enum UTCTime {
    /// `2025-09-24T04:02:20Z` for a Unix time in seconds. Total over Int64:
    /// years past 9999 print in full and years before 0 with a minus sign
    /// (proleptic Gregorian), so Int64.min is `-292277022657-01-27T08:29:52Z`
    /// and Int64.max `292277026596-12-04T15:30:07Z`, never a trap (a signed
    /// fleet `valid_until` or a control-socket `tags.expire` can be either).
    public static func iso8601(_ unix: Int64) -> String {
        // Floor division by quotient and remainder: `unix - 86_399` overflowed
        // for Int64.min. |days| < 2^47, so nothing below overflows.
        var days = unix / 86_400
        var secs = unix % 86_400
        if secs < 0 {
            days -= 1
            secs += 86_400
        }
        let (y, m, d) = civil(fromDays: days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let year = y >= 0 && y < 10_000 ? String(repeating: "0", count: 4 - String(y).count) + String(y) : String(y)
        return "\(year)-\(two(m))-\(two(d))T\(two(secs / 3600)):\(two(secs % 3600 / 60)):\(two(secs % 60))Z"
    }

    /// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian).
    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

extension JSONValue {
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// An integer, also from a double with no fraction (JSON has one number type).
    public var intValue: Int? {
        switch self {
        case .int(let i): return Int(exactly: i)
        case .double(let d) where d.rounded() == d && abs(d) < 9.0e15: return Int(d)
        default: return nil
        }
    }
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    public var objectValue: [(String, JSONValue)]? { if case .object(let o) = self { return o } else { return nil } }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
}
