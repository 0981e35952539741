/// A TOML 1.0 parser in plain Swift (no Foundation): strict, iterative over
/// the document's statements, recursive only inside values, where nesting is
/// capped at `maxDepth`. Tables keep their keys in file order; dates and
/// times are checked, then kept as `.other`. The first problem ends parsing
/// with its line and column.
///
/// Checked against Python's `tomllib` (a strict TOML 1.0 parser) by
/// `TOMLDifferentialTests`; three rules are TOML's where tomllib differs:
/// integers must fit 64 bits, a UTF-8 byte-order mark may start the file,
/// and nothing nests deeper than `maxDepth`.
struct TOMLParser {
    static let maxDepth = 128

    struct Failure: Error {
        var offset: Int
        var message: String
    }

    /// A table while the document is being read.
    final class Table {
        var keys: [String] = []
        var index: [[UInt8]: Int] = [:]
        var values: [Value] = []
        let level: Int
        /// Defined by a `[header]`, or by dotted keys of a finished section:
        /// neither a header nor a dotted key may define it again.
        var explicit = false
        init(level: Int) { self.level = level }

        func find(_ key: [UInt8]) -> Int? { index[key] }
        func add(_ key: [UInt8], _ name: String, _ value: Value) {
            index[key] = values.count
            keys.append(name)
            values.append(value)
        }
        var node: TOMLNode {
            .table(zip(keys, values).map { ($0, $1.node) })
        }
    }

    /// `[[name]]` tables.
    final class TableArray {
        var tables: [Table] = []
        let level: Int
        init(level: Int) { self.level = level }
    }

    enum Value {
        case table(Table)
        case tableArray(TableArray)
        /// A scalar, an array value or an inline table: immutable.
        case fixed(TOMLNode)

        var node: TOMLNode {
            switch self {
            case .table(let t): return t.node
            case .tableArray(let a): return .array(a.tables.map(\.node))
            case .fixed(let n): return n
            }
        }
    }

    let bytes: [UInt8]
    var pos = 0

    init(_ source: String) {
        bytes = Array(source.utf8)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { pos = 3 }
    }

    // MARK: Errors

    func fail(_ message: String, at offset: Int? = nil) -> Failure {
        Failure(offset: offset ?? pos, message: message)
    }

    /// What stands at `offset`, for a message.
    func describe(_ offset: Int) -> String {
        guard offset < bytes.count else { return "the end of the file" }
        let c = bytes[offset]
        switch c {
        case B.newline: return "the end of the line"
        case B.cr: return "a carriage return without a line feed"
        case 0..<0x20, 0x7F: return "the control character U+\(hex(UInt32(c), 4))"
        case 0x21..<0x7F: return "'\(Character(Unicode.Scalar(c)))'"
        case B.space: return "a space"
        default:
            let scalar = scalarAt(offset)
            if scalar == 0x85 || scalar == 0x2028 || scalar == 0x2029 { return "a Unicode line separator" }
            return "U+\(hex(scalar, 4))"
        }
    }

    /// `expected …, saw …`, or what alone says enough (a NUL byte, a Unicode
    /// line separator).
    func unexpected(_ expected: String, at offset: Int? = nil) -> Failure {
        let at = offset ?? pos
        if at < bytes.count {
            if bytes[at] == 0 { return fail("a NUL byte", at: at) }
            let s = scalarAt(at)
            if s == 0x85 || s == 0x2028 || s == 0x2029 {
                return fail("a Unicode line separator outside a string", at: at)
            }
        }
        return fail("expected \(expected), saw \(describe(at))", at: at)
    }

    func scalarAt(_ offset: Int) -> UInt32 {
        var it = bytes[offset...].makeIterator()
        var decoder = UTF8()
        if case .scalarValue(let s) = decoder.decode(&it) { return s.value }
        return 0xFFFD
    }

    /// Line and column (in characters, from 1) of `offset`.
    func place(of offset: Int) -> (line: Int, column: Int) {
        let end = min(offset, bytes.count)
        var line = 1
        var lineStart = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        for k in 0..<end where bytes[k] == B.newline {
            line += 1
            lineStart = k + 1
        }
        var column = 1
        if lineStart < end { for k in lineStart..<end where bytes[k] & 0xC0 != 0x80 { column += 1 } }
        return (line, column)
    }

    // MARK: Document

    static func parse(_ source: String) -> Result<[(String, TOMLNode)], ConfigError> {
        var parser = TOMLParser(source)
        do {
            let root = try parser.document()
            guard case .table(let members) = root.node else { return .success([]) }
            return .success(members)
        } catch {
            let (line, column) = parser.place(of: error.offset)
            return .failure(
                ConfigError(issues: [
                    ConfigIssue(key: "", line: line, message: "TOML syntax error at column \(column): \(error.message)")
                ]))
        }
    }

    var current: UInt8? { pos < bytes.count ? bytes[pos] : nil }
    func at(_ k: Int) -> UInt8? { k < bytes.count ? bytes[k] : nil }

    mutating func skipBlanks() {
        while let c = current, c == B.space || c == B.tab { pos += 1 }
    }

    /// A line break (`\n` or `\r\n`) at `pos`: its length, else 0.
    func lineBreak(at k: Int) -> Int {
        if at(k) == B.newline { return 1 }
        if at(k) == B.cr && at(k + 1) == B.newline { return 2 }
        return 0
    }

    /// A comment from `#` to the end of the line (not the break).
    mutating func skipComment() throws(Failure) {
        guard current == B.hash else { return }
        pos += 1
        while let c = current {
            if lineBreak(at: pos) > 0 { return }
            if c < 0x20 && c != B.tab || c == 0x7F {
                throw c == 0 ? fail("a NUL byte") : fail("\(describe(pos)) in a comment")
            }
            pos += 1
        }
    }

    mutating func document() throws(Failure) -> Table {
        let root = Table(level: 0)
        var table = root
        var pending: [Table] = []
        while true {
            skipBlanks()
            guard let c = current else { break }
            let n = lineBreak(at: pos)
            if n > 0 { pos += n; continue }
            if c == B.hash {
                try skipComment()
            } else if c == B.openBracket {
                for t in pending { t.explicit = true }
                pending.removeAll()
                table = try header(root)
            } else if c == B.quote || c == B.apostrophe || Self.isBare(c) {
                try keyValue(in: table, pending: &pending)
            } else {
                throw unexpected("a key, a [table] or a comment")
            }
            skipBlanks()
            try skipComment()
            guard current != nil else { break }
            let m = lineBreak(at: pos)
            guard m > 0 else { throw unexpected("a new line after a statement") }
            pos += m
        }
        return root
    }

    /// `[a.b]` or `[[a.b]]`: the table it opens.
    mutating func header(_ root: Table) throws(Failure) -> Table {
        let isArray = at(pos + 1) == B.openBracket
        pos += isArray ? 2 : 1
        skipBlanks()
        guard let c = current, c == B.quote || c == B.apostrophe || Self.isBare(c) else {
            throw fail("a table header starts with a key (a letter, digit, '-', '_' or a quote)")
        }
        let keyStart = pos
        let keys = try dottedKey()
        if isArray {
            guard current == B.closeBracket && at(pos + 1) == B.closeBracket else {
                throw unexpected("']]' at the end of an array-of-tables header")
            }
        } else {
            guard current == B.closeBracket else { throw unexpected("']' at the end of a table header") }
        }
        var table = root
        for (key, name) in keys.dropLast() {
            table = try descendForHeader(table, key, name, keys, at: keyStart)
        }
        guard let (key, name) = keys.last else { throw fail("a table header without a key", at: keyStart) }
        let path = Self.path(keys)
        if let i = table.find(key) {
            switch table.values[i] {
            case .table(let t):
                guard !isArray else {
                    throw fail("[[\(path)]]: '\(path)' is already a table, not an array of tables", at: keyStart)
                }
                guard !t.explicit else { throw fail("table [\(path)] is defined twice", at: keyStart) }
                t.explicit = true
                table = t
            case .tableArray(let a):
                guard isArray else {
                    throw fail("[\(path)]: '\(path)' is already an array of tables", at: keyStart)
                }
                try checkDepth(a.level + 1, at: keyStart)
                let t = Table(level: a.level + 1)
                a.tables.append(t)
                table = t
            case .fixed(let n):
                throw fail("'\(path)' is already \(n.typeName), defined by a value", at: keyStart)
            }
        } else if isArray {
            try checkDepth(table.level + 2, at: keyStart)
            let a = TableArray(level: table.level + 1)
            let t = Table(level: table.level + 2)
            a.tables.append(t)
            table.add(key, name, .tableArray(a))
            table = t
        } else {
            try checkDepth(table.level + 1, at: keyStart)
            let t = Table(level: table.level + 1)
            t.explicit = true
            table.add(key, name, .table(t))
            table = t
        }
        pos += isArray ? 2 : 1
        return table
    }

    /// A header's parent key: a table (made if missing), or the last table of an array of tables.
    func descendForHeader(
        _ table: Table, _ key: [UInt8], _ name: String, _ keys: [([UInt8], String)], at keyStart: Int
    ) throws(Failure) -> Table {
        guard let i = table.find(key) else {
            try checkDepth(table.level + 1, at: keyStart)
            let t = Table(level: table.level + 1)
            table.add(key, name, .table(t))
            return t
        }
        switch table.values[i] {
        case .table(let t): return t
        case .tableArray(let a):
            guard let last = a.tables.last else { throw fail("an empty array of tables", at: keyStart) }
            return last
        case .fixed(let n):
            throw fail("'\(name)' in [\(Self.path(keys))] is already \(n.typeName), defined by a value", at: keyStart)
        }
    }

    func checkDepth(_ level: Int, at offset: Int? = nil) throws(Failure) {
        guard level <= Self.maxDepth else {
            throw fail("tables and arrays nested deeper than \(Self.maxDepth) levels", at: offset)
        }
    }

    static func path(_ keys: [([UInt8], String)]) -> String {
        keys.map { k in
            k.0.allSatisfy(isBare) && !k.0.isEmpty ? k.1 : "\"\(k.1)\""
        }.joined(separator: ".")
    }

    /// `key = value` into `table` (a section's table, or an inline table's).
    /// Tables made or crossed by a dotted key are noted in `pending`: they
    /// count as defined once the section ends.
    mutating func keyValue(in table: Table, pending: inout [Table], inline: Bool = false)
        throws(Failure)
    {
        let keyStart = pos
        let keys = try dottedKey()
        guard current == B.equals else { throw unexpected("'=' after a key") }
        pos += 1
        skipBlanks()
        var parent = table
        for (key, name) in keys.dropLast() {
            if let i = parent.find(key) {
                switch parent.values[i] {
                case .table(let t) where !t.explicit || inline:
                    parent = t
                    pending.append(t)
                case .table, .tableArray:
                    throw fail("'\(Self.path(keys))': the dotted key adds to a table defined elsewhere", at: keyStart)
                case .fixed(let n):
                    throw fail("'\(Self.path(keys))': '\(name)' is already \(n.typeName)", at: keyStart)
                }
            } else {
                try checkDepth(parent.level + 1, at: keyStart)
                let t = Table(level: parent.level + 1)
                parent.add(key, name, .table(t))
                pending.append(t)
                parent = t
            }
        }
        guard let (key, name) = keys.last else { throw fail("a key-value pair without a key", at: keyStart) }
        let v = try value(level: parent.level + 1)
        guard parent.find(key) == nil else { throw fail("key '\(Self.path(keys))' is defined twice", at: keyStart) }
        parent.add(key, name, .fixed(v))
    }

    /// Bare or quoted keys separated by dots, with blanks around the dots;
    /// leaves `pos` after the blanks that follow.
    mutating func dottedKey() throws(Failure) -> [([UInt8], String)] {
        var keys: [([UInt8], String)] = []
        while true {
            guard let c = current else { throw unexpected("a key") }
            var key: [UInt8]
            if c == B.quote {
                if at(pos + 1) == B.quote && at(pos + 2) == B.quote {
                    throw fail("a key cannot be a multi-line string")
                }
                key = try basicString()
            } else if c == B.apostrophe {
                if at(pos + 1) == B.apostrophe && at(pos + 2) == B.apostrophe {
                    throw fail("a key cannot be a multi-line string")
                }
                key = try literalString()
            } else if Self.isBare(c) {
                let start = pos
                while let d = current, Self.isBare(d) { pos += 1 }
                key = Array(bytes[start..<pos])
            } else {
                throw unexpected("a key (a letter, digit, '-', '_' or a quote)")
            }
            keys.append((key, String(decoding: key, as: UTF8.self)))
            skipBlanks()
            guard current == B.dot else { return keys }
            pos += 1
            skipBlanks()
        }
    }

    static func isBare(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x5F
    }

    // MARK: Values

    /// A value at `level` (the level an array or inline table here would have).
    mutating func value(level: Int) throws(Failure) -> TOMLNode {
        guard let c = current else { throw unexpected("a value") }
        switch c {
        case B.quote:
            if at(pos + 1) == B.quote && at(pos + 2) == B.quote {
                return .string(String(decoding: try multilineString(literal: false), as: UTF8.self))
            }
            return .string(String(decoding: try basicString(), as: UTF8.self))
        case B.apostrophe:
            if at(pos + 1) == B.apostrophe && at(pos + 2) == B.apostrophe {
                return .string(String(decoding: try multilineString(literal: true), as: UTF8.self))
            }
            return .string(String(decoding: try literalString(), as: UTF8.self))
        case B.openBracket:
            return try array(level: level)
        case B.openBrace:
            return try inlineTable(level: level)
        case UInt8(ascii: "t"):
            guard word("true") else { throw unexpected("a value") }
            return .bool(true)
        case UInt8(ascii: "f"):
            guard word("false") else { throw unexpected("a value") }
            return .bool(false)
        case B.zero...B.nine:
            if isDigits(pos, 4) && at(pos + 4) == B.minus { return try dateTime() }
            if isDigits(pos, 2) && at(pos + 2) == B.colon {
                try time()
                return .other("time")
            }
            return try number()
        case B.plus, B.minus, UInt8(ascii: "i"), UInt8(ascii: "n"):
            return try number()
        default:
            throw unexpected("a value")
        }
    }

    mutating func word(_ w: String) -> Bool {
        let n = w.utf8.count
        guard pos + n <= bytes.count, bytes[pos..<pos + n].elementsEqual(w.utf8) else { return false }
        pos += n
        return true
    }

    /// Blanks, line breaks and comments, as allowed between array items.
    mutating func skipArraySpace() throws(Failure) {
        while true {
            skipBlanks()
            let n = lineBreak(at: pos)
            if n > 0 {
                pos += n
            } else if current == B.hash {
                try skipComment()
            } else {
                return
            }
        }
    }

    mutating func array(level: Int) throws(Failure) -> TOMLNode {
        try checkDepth(level)
        pos += 1
        var items: [TOMLNode] = []
        while true {
            try skipArraySpace()
            if current == B.closeBracket { pos += 1; return .array(items) }
            items.append(try value(level: level + 1))
            try skipArraySpace()
            if current == B.closeBracket { pos += 1; return .array(items) }
            guard current == B.comma else { throw unexpected("',' or ']' in an array") }
            pos += 1
        }
    }

    mutating func inlineTable(level: Int) throws(Failure) -> TOMLNode {
        try checkDepth(level)
        pos += 1
        let table = Table(level: level)
        var pending: [Table] = []
        skipBlanks()
        if current == B.closeBrace { pos += 1; return table.node }
        while true {
            guard let c = current, c == B.quote || c == B.apostrophe || Self.isBare(c) else {
                if current == B.closeBrace { throw fail("a comma before '}' (an inline table takes none)") }
                throw unexpected(lineBreak(at: pos) > 0 ? "a key (an inline table is on one line)" : "a key")
            }
            try keyValue(in: table, pending: &pending, inline: true)
            skipBlanks()
            if current == B.closeBrace { pos += 1; return table.node }
            guard current == B.comma else {
                throw unexpected(
                    lineBreak(at: pos) > 0
                        ? "',' or '}' (an inline table is on one line)" : "',' or '}' in an inline table")
            }
            pos += 1
            skipBlanks()
        }
    }

    // MARK: Strings

    /// A control character other than tab in a string, and (single-line)
    /// a line break: refused.
    func checkStringByte(_ c: UInt8, multiline: Bool) throws(Failure) {
        guard c < 0x20 || c == 0x7F, c != B.tab else { return }
        if c == 0 { throw fail("a NUL byte") }
        if c == B.newline || (c == B.cr && lineBreak(at: pos) == 2) {
            if !multiline { throw fail("a string ends on its line (use \"\"\" for more lines)") }
            return
        }
        throw fail("\(describe(pos)) in a string (write it as an escape)")
    }

    /// `"…"`, with escapes; `pos` on the opening quote.
    mutating func basicString() throws(Failure) -> [UInt8] {
        pos += 1
        var out: [UInt8] = []
        while true {
            guard let c = current else { throw fail("an unterminated string") }
            if c == B.quote { pos += 1; return out }
            if c == B.backslash {
                try escape(into: &out, multiline: false)
                continue
            }
            try checkStringByte(c, multiline: false)
            out.append(c)
            pos += 1
        }
    }

    /// `'…'`, verbatim.
    mutating func literalString() throws(Failure) -> [UInt8] {
        pos += 1
        let start = pos
        while true {
            guard let c = current else { throw fail("an unterminated string") }
            if c == B.apostrophe {
                pos += 1
                return Array(bytes[start..<pos - 1])
            }
            try checkStringByte(c, multiline: false)
            pos += 1
        }
    }

    /// `"""…"""` or `'''…'''`: a line break right after the opening quotes is
    /// dropped, `\r\n` reads as `\n`, and up to two quotes may end the content.
    mutating func multilineString(literal: Bool) throws(Failure) -> [UInt8] {
        let quote = literal ? B.apostrophe : B.quote
        let opening = pos
        pos += 3
        pos += lineBreak(at: pos)
        var out: [UInt8] = []
        while true {
            guard let c = current else { throw fail("an unterminated multi-line string", at: opening) }
            if c == quote && at(pos + 1) == quote && at(pos + 2) == quote {
                pos += 3
                for _ in 0..<2 where current == quote {
                    out.append(quote)
                    pos += 1
                }
                return out
            }
            if c == B.backslash && !literal {
                try escape(into: &out, multiline: true)
                continue
            }
            try checkStringByte(c, multiline: true)
            if c == B.cr {
                pos += 1  // \r\n: the \n follows
                continue
            }
            out.append(c)
            pos += 1
        }
    }

    /// An escape at `pos` (the backslash).
    mutating func escape(into out: inout [UInt8], multiline: Bool) throws(Failure) {
        let start = pos
        pos += 1
        guard let e = current else { throw fail("an unterminated string") }
        switch e {
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "r"): out.append(0x0D)
        case B.quote: out.append(B.quote)
        case B.backslash: out.append(B.backslash)
        case UInt8(ascii: "u"), UInt8(ascii: "U"):
            let n = e == UInt8(ascii: "u") ? 4 : 8
            var v: UInt32 = 0
            for k in 1...n {
                guard let d = at(pos + k), let x = Self.hexValue(d) else {
                    throw fail("\\\(Character(Unicode.Scalar(e))) needs \(n) hexadecimal digits", at: start)
                }
                v = v << 4 | UInt32(x)
            }
            guard let scalar = Unicode.Scalar(v) else {
                throw fail("\\\(Character(Unicode.Scalar(e)))\(hex(v, n)) is not a Unicode scalar value", at: start)
            }
            out.append(contentsOf: Array(String(Character(scalar)).utf8))
            pos += n
        case B.space, B.tab, B.newline, B.cr:
            // A line-ending backslash: blanks, then a line break, then every
            // blank and line break up to the next other character go.
            guard multiline else { throw fail("a backslash at the end of a line needs \"\"\" strings", at: start) }
            var k = pos
            while at(k) == B.space || at(k) == B.tab { k += 1 }
            guard lineBreak(at: k) > 0 else {
                throw fail("a backslash followed by blanks must end the line", at: start)
            }
            while true {
                let n = lineBreak(at: k)
                if n > 0 {
                    k += n
                } else if at(k) == B.space || at(k) == B.tab {
                    k += 1
                } else {
                    break
                }
            }
            pos = k
            return
        default:
            throw fail(
                "\(describe(pos)) after a backslash is not an escape (\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX)",
                at: start)
        }
        pos += 1
    }

    static func hexValue(_ d: UInt8) -> UInt8? {
        switch d {
        case B.zero...B.nine: return d - B.zero
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return d - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return d - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    // MARK: Numbers

    func isDigit(_ k: Int) -> Bool { at(k).map { $0 >= B.zero && $0 <= B.nine } ?? false }
    func isDigits(_ k: Int, _ n: Int) -> Bool { (k..<k + n).allSatisfy(isDigit) }

    /// An integer or a float: the characters up to the next one that can end
    /// a value, checked as a whole.
    mutating func number() throws(Failure) -> TOMLNode {
        let start = pos
        while let c = current, Self.isBare(c) || c == B.plus || c == B.dot { pos += 1 }
        let text = Array(bytes[start..<pos])
        var body = text[...]
        var negative = false
        if let s = body.first, s == B.plus || s == B.minus {
            negative = s == B.minus
            body = body.dropFirst()
        }
        let signed = body.count < text.count
        func invalid(_ why: String) -> Failure {
            fail("'\(String(decoding: text, as: UTF8.self))' is not a number: \(why)", at: start)
        }
        if body.elementsEqual("inf".utf8) { return .double(negative ? -.infinity : .infinity) }
        if body.elementsEqual("nan".utf8) { return .double(negative ? -.nan : .nan) }
        if body.count > 2 && body.first == B.zero {
            let radix: UInt64?
            switch body[body.startIndex + 1] {
            case UInt8(ascii: "x"): radix = 16
            case UInt8(ascii: "o"): radix = 8
            case UInt8(ascii: "b"): radix = 2
            default: radix = nil
            }
            if let radix {
                guard !signed else { throw invalid("a hexadecimal, octal or binary integer takes no sign") }
                let digits = body.dropFirst(2)
                guard let v = try integerDigits(digits, radix: radix, invalid) else {
                    throw invalid("bad digits")
                }
                guard v <= UInt64(Int64.max) else { throw invalid("out of the 64-bit integer range") }
                return .int(Int(v))
            }
        }
        // Decimal: integer part, optional fraction, optional exponent.
        var i = body.startIndex
        func digitRun() throws(Failure) -> ArraySlice<UInt8> {
            let s = i
            while i < body.endIndex, (body[i] >= B.zero && body[i] <= B.nine) || body[i] == B.underscore { i += 1 }
            let run = body[s..<i]
            guard let f = run.first, let l = run.last, f != B.underscore, l != B.underscore else {
                throw invalid(run.isEmpty ? "a digit is missing" : "an underscore must stand between two digits")
            }
            for k in run.indices.dropLast() where run[k] == B.underscore && run[k + 1] == B.underscore {
                throw invalid("an underscore must stand between two digits")
            }
            return run
        }
        let integer = try digitRun()
        guard !(integer.count > 1 && integer.first == B.zero) else { throw invalid("leading zeros are not allowed") }
        var isFloat = false
        if i < body.endIndex && body[i] == B.dot {
            i += 1
            _ = try digitRun()
            isFloat = true
        }
        if i < body.endIndex && (body[i] == UInt8(ascii: "e") || body[i] == UInt8(ascii: "E")) {
            i += 1
            if i < body.endIndex && (body[i] == B.plus || body[i] == B.minus) { i += 1 }
            _ = try digitRun()
            isFloat = true
        }
        guard i == body.endIndex else { throw invalid("unexpected '\(Character(Unicode.Scalar(body[i])))'") }
        if isFloat {
            let plain = String(decoding: body.filter { $0 != B.underscore }, as: UTF8.self)
            guard let v = Double(plain) else { throw invalid("not a float") }
            return .double(negative ? -v : v)
        }
        guard let magnitude = try integerDigits(integer, radix: 10, invalid),
            magnitude <= UInt64(Int64.max) + (negative ? 1 : 0)
        else { throw invalid("out of the 64-bit integer range") }
        if negative { return .int(magnitude == UInt64(Int64.max) + 1 ? Int(Int64.min) : -Int(magnitude)) }
        return .int(Int(magnitude))
    }

    /// Digits of `radix` with single underscores between them; nil on overflow.
    func integerDigits(
        _ digits: ArraySlice<UInt8>, radix: UInt64, _ invalid: (String) -> Failure
    ) throws(Failure) -> UInt64? {
        guard let f = digits.first, let l = digits.last, f != B.underscore, l != B.underscore else {
            throw invalid(digits.isEmpty ? "a digit is missing" : "an underscore must stand between two digits")
        }
        var v: UInt64 = 0
        var lastWasUnderscore = false
        var overflow = false
        for d in digits {
            if d == B.underscore {
                if lastWasUnderscore { throw invalid("an underscore must stand between two digits") }
                lastWasUnderscore = true
                continue
            }
            lastWasUnderscore = false
            guard let x = Self.hexValue(d), UInt64(x) < radix else {
                throw invalid("'\(Character(Unicode.Scalar(d)))' is not a digit here")
            }
            let (m, o1) = v.multipliedReportingOverflow(by: radix)
            let (s, o2) = m.addingReportingOverflow(UInt64(x))
            overflow = overflow || o1 || o2
            v = s
        }
        return overflow ? nil : v
    }

    // MARK: Dates and times

    mutating func twoDigits(_ what: String, _ range: ClosedRange<Int>) throws(Failure) -> Int {
        guard isDigits(pos, 2), let a = current, let b = at(pos + 1) else { throw fail("\(what) needs two digits") }
        let v = Int(a - B.zero) * 10 + Int(b - B.zero)
        guard range.contains(v) else {
            throw fail("\(what) \(v) is out of range \(range.lowerBound)…\(range.upperBound)")
        }
        pos += 2
        return v
    }

    /// `HH:MM:SS` with an optional fraction.
    mutating func time() throws(Failure) {
        _ = try twoDigits("the hour", 0...23)
        guard current == B.colon else { throw unexpected("':' in a time (HH:MM:SS)") }
        pos += 1
        _ = try twoDigits("the minute", 0...59)
        guard current == B.colon else { throw unexpected("':' and seconds in a time (HH:MM:SS)") }
        pos += 1
        _ = try twoDigits("the second", 0...59)
        if current == B.dot {
            guard isDigit(pos + 1) else { throw fail("a digit after the '.' of a time", at: pos + 1) }
            pos += 1
            while isDigit(pos) { pos += 1 }
        }
    }

    /// `YYYY-MM-DD`, then an optional time (after `T`, `t` or a space) and offset.
    mutating func dateTime() throws(Failure) -> TOMLNode {
        let start = pos
        var year = 0
        for k in 0..<4 { year = year * 10 + Int(bytes[pos + k] - B.zero) }
        pos += 5
        let month = try twoDigits("the month", 1...12)
        guard current == B.minus else { throw unexpected("'-' in a date (YYYY-MM-DD)") }
        pos += 1
        let day = try twoDigits("the day", 1...31)
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard year >= 1 else { throw fail("year 0000 is not a date", at: start) }
        guard day <= days else { throw fail("day \(day) is not in month \(month) of \(year)", at: pos - 2) }
        let separator = current
        if separator == UInt8(ascii: "T") || separator == UInt8(ascii: "t") {
            pos += 1
        } else if separator == B.space && isDigit(pos + 1) {
            pos += 1
        } else {
            return .other("date")
        }
        let timeStart = pos
        do {
            try time()
        } catch {
            throw fail(
                "a date-time needs a time (HH:MM:SS) after the \(separator == B.space ? "space" : "'T'")",
                at: timeStart)
        }
        if current == UInt8(ascii: "Z") || current == UInt8(ascii: "z") {
            pos += 1
        } else if current == B.plus || current == B.minus {
            pos += 1
            _ = try twoDigits("the offset's hour", 0...23)
            guard current == B.colon else { throw unexpected("':' in a time offset (+HH:MM)") }
            pos += 1
            _ = try twoDigits("the offset's minute", 0...59)
        }
        return .other("date-time")
    }
}

func hex(_ v: UInt32, _ width: Int) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, width - s.count)) + s
}

/// Bytes the parser looks for, computed once.
private enum B {
    static let apostrophe = UInt8(ascii: "'")
    static let backslash = UInt8(ascii: "\\")
    static let cr = UInt8(ascii: "\r")
    static let closeBrace = UInt8(ascii: "}")
    static let closeBracket = UInt8(ascii: "]")
    static let colon = UInt8(ascii: ":")
    static let comma = UInt8(ascii: ",")
    static let dot = UInt8(ascii: ".")
    static let equals = UInt8(ascii: "=")
    static let hash = UInt8(ascii: "#")
    static let minus = UInt8(ascii: "-")
    static let newline = UInt8(ascii: "\n")
    static let nine = UInt8(ascii: "9")
    static let openBrace = UInt8(ascii: "{")
    static let openBracket = UInt8(ascii: "[")
    static let plus = UInt8(ascii: "+")
    static let quote = UInt8(ascii: "\"")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let underscore = UInt8(ascii: "_")
    static let zero = UInt8(ascii: "0")
}
