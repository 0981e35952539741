/// One problem in a configuration file, naming the full dotted key and, when
/// known, the line.
public struct ConfigIssue: Equatable, Sendable, CustomStringConvertible {
    /// `outputs[1].locked_level`, `actions[0].steps[2].ms`; empty for a TOML syntax error.
    public var key: String
    public var line: Int?
    public var message: String
    public init(key: String, line: Int?, message: String) {
        self.key = key
        self.line = line
        self.message = message
    }
    /// `FILE:LINE: key: message` (`FILE: key: message` when the line is unknown).
    public func formatted(file: String) -> String {
        file + (line.map { ":\($0)" } ?? "") + ": " + description
    }
    public var description: String { (key.isEmpty ? "" : "\(key): ") + message }
}

/// Every problem found in one configuration file.
public struct ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    public var issues: [ConfigIssue]
    public init(issues: [ConfigIssue]) { self.issues = issues }
    public var description: String { issues.map { $0.formatted(file: "gateway.toml") }.joined(separator: "\n") }
}

/// A TOML document as plain values (`TOMLParser`), so the strict reader can
/// track which keys were used (any other key is an error).
indirect enum TOMLNode: Sendable {
    case table([(String, TOMLNode)])
    case array([TOMLNode])
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    /// Dates and times: valid TOML, never a valid value here.
    case other(String)

    /// Parses `source` as TOML 1.0. A syntax error is one issue without a
    /// key, with its line, and its column in the message.
    static func parse(_ source: String) -> Result<[(String, TOMLNode)], ConfigError> {
        TOMLParser.parse(source)
    }

    var typeName: String {
        switch self {
        case .table: return "a table"
        case .array: return "an array"
        case .string: return "a string"
        case .int: return "an integer"
        case .double: return "a number"
        case .bool: return "a boolean"
        case .other(let t): return "a \(t)"
        }
    }
}

/// Collects issues while reading; shared by every `TableReader` of one
/// document. Lines are looked up only when there is something to report.
final class IssueSink {
    private(set) var issues: [ConfigIssue] = []
    private let source: String
    private lazy var locator = KeyLocator(source: source)
    /// Every key path the reader asked for: the keys it knows.
    private(set) var askedKeys: [String] = []

    init(source: String) { self.source = source }

    func add(_ key: String, _ message: String) {
        issues.append(ConfigIssue(key: key, line: locator.line(of: key), message: message))
    }

    func asked(_ path: String) { askedKeys.append(path) }
}

/// Reads one table strictly: typed getters with defaults and ranges, and
/// `finish()` reporting every key that nothing asked for. A bad value is
/// reported and replaced by its default, so reading goes on and every
/// problem of the file is reported at once.
final class TableReader {
    let path: String
    private let members: [(String, TOMLNode)]
    let sink: IssueSink
    private var used: Set<String> = []

    init(path: String, members: [(String, TOMLNode)], sink: IssueSink) {
        self.path = path
        self.members = members
        self.sink = sink
    }

    func keyPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func node(_ key: String) -> TOMLNode? {
        used.insert(key)
        sink.asked(keyPath(key))
        return members.first { $0.0 == key }?.1
    }

    func has(_ key: String) -> Bool { members.contains { $0.0 == key } }

    /// The keys present in this table, in order (for tables keyed by the user).
    var keys: [String] { members.map(\.0) }

    func fail(_ key: String, _ message: String) { sink.add(keyPath(key), message) }

    func string(_ key: String, _ fallback: String, _ check: ((String) -> String?)? = nil) -> String {
        optionalString(key, check) ?? fallback
    }

    /// A string that has no default (nil when absent or bad).
    func optionalString(_ key: String, _ check: ((String) -> String?)? = nil) -> String? {
        guard let n = node(key) else { return nil }
        guard case .string(let s) = n else { fail(key, "expected a string, found \(n.typeName)"); return nil }
        if let why = check?(s) { fail(key, why); return nil }
        return s
    }

    func int(_ key: String, _ fallback: Int, _ range: ClosedRange<Int>) -> Int {
        optionalInt(key, range) ?? fallback
    }

    func optionalInt(_ key: String, _ range: ClosedRange<Int>) -> Int? {
        guard let n = node(key) else { return nil }
        guard case .int(let v) = n else { fail(key, "expected an integer, found \(n.typeName)"); return nil }
        guard range.contains(v) else {
            fail(key, "\(v) is out of range \(range.lowerBound)…\(range.upperBound)"); return nil
        }
        return v
    }

    func bool(_ key: String, _ fallback: Bool) -> Bool {
        guard let n = node(key) else { return fallback }
        guard case .bool(let v) = n else { fail(key, "expected true or false, found \(n.typeName)"); return fallback }
        return v
    }

    func choice<T: RawRepresentable & CaseIterable>(_ key: String, _ fallback: T) -> T where T.RawValue == String {
        optionalChoice(key) ?? fallback
    }

    func optionalChoice<T: RawRepresentable & CaseIterable>(_ key: String) -> T? where T.RawValue == String {
        guard let s = optionalString(key) else { return nil }
        guard let v = T(rawValue: s) else {
            fail(key, "\"\(s)\" is not one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
            return nil
        }
        return v
    }

    func stringList(_ key: String, _ fallback: [String], _ check: ((String) -> String?)? = nil) -> [String] {
        guard let n = node(key) else { return fallback }
        guard case .array(let items) = n else {
            fail(key, "expected an array of strings, found \(n.typeName)"); return fallback
        }
        var out: [String] = []
        for (i, item) in items.enumerated() {
            guard case .string(let s) = item else {
                fail("\(key)[\(i)]", "expected a string, found \(item.typeName)"); continue
            }
            if let why = check?(s) { fail("\(key)[\(i)]", why); continue }
            out.append(s)
        }
        return out
    }

    func table(_ key: String) -> TableReader? {
        guard let n = node(key) else { return nil }
        guard case .table(let m) = n else { fail(key, "expected a table, found \(n.typeName)"); return nil }
        return TableReader(path: keyPath(key), members: m, sink: sink)
    }

    /// An array of tables (`[[key]]`, or an array of inline tables).
    func tables(_ key: String) -> [TableReader]? {
        guard let n = node(key) else { return nil }
        guard case .array(let items) = n else {
            fail(key, "expected an array of tables, found \(n.typeName)"); return nil
        }
        var out: [TableReader] = []
        for (i, item) in items.enumerated() {
            guard case .table(let m) = item else {
                fail("\(key)[\(i)]", "expected a table, found \(item.typeName)"); continue
            }
            out.append(TableReader(path: "\(keyPath(key))[\(i)]", members: m, sink: sink))
        }
        return out
    }

    /// Reports keys nobody read: unknown keys are errors (docs/design.md "Ownership").
    func finish() {
        for (k, _) in members where !used.contains(k) {
            fail(k, "unknown key")
        }
    }
}
