/// Best-effort line numbers for dotted key paths such as
/// `outputs[1].locked_level` or `actions[0].steps[2].ms`: a small scanner over
/// the TOML text (headers, `[[array]]` tables, dotted keys, inline tables and
/// arrays, strings and comments) that records where each path is written.
/// It runs only on text TOMLParser has accepted, and on anything else it stops
/// early; it never decides validity.
struct KeyLocator {
    private(set) var lines: [String: Int] = [:]

    init(source: String) {
        var scanner = Scanner(bytes: Array(source.utf8))
        scanner.run()
        lines = scanner.found
    }

    /// The line of `path`, else of its nearest written ancestor (the table
    /// a missing key belongs in).
    func line(of path: String) -> Int? {
        var p = Substring(path)
        while !p.isEmpty {
            if let l = lines[String(p)] { return l }
            guard let cut = p.lastIndex(where: { $0 == "." || $0 == "[" }) else { return nil }
            p = p[..<cut]
        }
        return nil
    }
}

private struct Scanner {
    let bytes: [UInt8]
    var pos = 0
    var line = 1
    var found: [String: Int] = [:]
    /// How many `[[name]]` tables each resolved array path has seen.
    var arrayCounts: [String: Int] = [:]
    var table = ""
    var failed = false
    static let maxDepth = 32

    init(bytes: [UInt8]) { self.bytes = bytes }

    var current: UInt8? { pos < bytes.count ? bytes[pos] : nil }

    mutating func advance() {
        if current == UInt8(ascii: "\n") { line += 1 }
        pos += 1
    }

    mutating func record(_ path: String, _ l: Int) {
        if found[path] == nil { found[path] = l }
    }

    static func join(_ a: String, _ b: String) -> String { a.isEmpty ? b : "\(a).\(b)" }

    mutating func run() {
        while !failed {
            skipBlank(newlines: true)
            guard let c = current else { return }
            if c == UInt8(ascii: "[") {
                header()
            } else {
                keyValue(in: table, depth: 0)
            }
        }
    }

    /// Spaces and tabs, comments, and (if asked) newlines.
    mutating func skipBlank(newlines: Bool) {
        while let c = current {
            if c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") || c == UInt8(ascii: "\r")
                || (newlines && c == UInt8(ascii: "\n"))
            {
                advance()
            } else if c == UInt8(ascii: "#") {
                while let d = current, d != UInt8(ascii: "\n") { advance() }
            } else {
                return
            }
        }
    }

    /// `[a.b]` or `[[a.b]]`: sets the current table path.
    mutating func header() {
        let headerLine = line
        advance()
        let isArray = current == UInt8(ascii: "[")
        if isArray { advance() }
        guard let keys = dottedKey() else { failed = true; return }
        var resolved = ""
        for k in keys.dropLast() { resolved = resolve(Self.join(resolved, k)) }
        var path = Self.join(resolved, keys.last!)
        if isArray {
            let n = arrayCounts[path, default: 0]
            arrayCounts[path] = n + 1
            record(path, headerLine)
            path += "[\(n)]"
        } else {
            path = resolve(path)
        }
        record(path, headerLine)
        table = path
        while let c = current, c != UInt8(ascii: "\n") { advance() }
    }

    /// A path naming an array of tables means its latest element.
    func resolve(_ path: String) -> String {
        guard let n = arrayCounts[path] else { return path }
        return "\(path)[\(n - 1)]"
    }

    /// `key = value` inside `prefix`.
    mutating func keyValue(in prefix: String, depth: Int) {
        let keyLine = line
        guard let keys = dottedKey() else { failed = true; return }
        var path = prefix
        for k in keys {
            path = Self.join(path, k)
            record(path, keyLine)
        }
        skipBlank(newlines: false)
        guard current == UInt8(ascii: "=") else { failed = true; return }
        advance()
        value(at: path, depth: depth)
    }

    /// Bare or quoted keys separated by dots.
    mutating func dottedKey() -> [String]? {
        var keys: [String] = []
        while true {
            skipBlank(newlines: false)
            guard let c = current else { return nil }
            if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                let start = pos + 1
                skipString()
                guard !failed else { return nil }
                keys.append(String(decoding: bytes[start..<max(start, pos - 1)], as: UTF8.self))
            } else {
                let start = pos
                while let d = current, Check.isBare(d) { advance() }
                guard pos > start else { return nil }
                keys.append(String(decoding: bytes[start..<pos], as: UTF8.self))
            }
            skipBlank(newlines: false)
            guard current == UInt8(ascii: ".") else { return keys }
            advance()
        }
    }

    mutating func value(at path: String, depth: Int) {
        guard depth < Self.maxDepth else { failed = true; return }
        skipBlank(newlines: false)
        guard let c = current else { return }
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            skipString()
        case UInt8(ascii: "["):
            advance()
            var index = 0
            while !failed {
                skipBlank(newlines: true)
                guard let d = current else { failed = true; return }
                if d == UInt8(ascii: "]") { advance(); return }
                record("\(path)[\(index)]", line)
                value(at: "\(path)[\(index)]", depth: depth + 1)
                skipBlank(newlines: true)
                if current == UInt8(ascii: ",") {
                    advance(); index += 1
                } else if current != UInt8(ascii: "]") {
                    failed = true
                }
            }
        case UInt8(ascii: "{"):
            advance()
            // TOML 1.0 keeps an inline table on one line; following one that
            // does not costs nothing here.
            while !failed {
                skipBlank(newlines: true)
                guard let d = current else { failed = true; return }
                if d == UInt8(ascii: "}") { advance(); return }
                keyValue(in: path, depth: depth + 1)
                skipBlank(newlines: true)
                if current == UInt8(ascii: ",") { advance() } else if current != UInt8(ascii: "}") { failed = true }
            }
        default:
            // Numbers, booleans, dates: up to a delimiter.
            let start = pos
            while let d = current,
                !(d == UInt8(ascii: ",") || d == UInt8(ascii: "]") || d == UInt8(ascii: "}")
                    || d == UInt8(ascii: "\n") || d == UInt8(ascii: "#"))
            { advance() }
            if pos == start { failed = true }
        }
    }

    /// A basic or literal string, single- or multi-line; leaves `pos` after
    /// the closing quote.
    mutating func skipString() {
        guard let quote = current else { failed = true; return }
        let triple = pos + 2 < bytes.count && bytes[pos + 1] == quote && bytes[pos + 2] == quote
        if triple { advance(); advance() }
        advance()
        while let c = current {
            if c == UInt8(ascii: "\\") && quote == UInt8(ascii: "\"") {
                advance()
                advance()
                continue
            }
            if c == quote {
                if !triple { advance(); return }
                if pos + 2 < bytes.count && bytes[pos + 1] == quote && bytes[pos + 2] == quote {
                    // Up to two more quotes may belong to the content (`""""`).
                    while pos + 3 < bytes.count && bytes[pos + 3] == quote { advance() }
                    advance(); advance(); advance()
                    return
                }
            }
            if c == UInt8(ascii: "\n") && !triple { failed = true; return }
            advance()
        }
        failed = true
    }
}
