/// Text the TOML parser bundled with TOMLKit 0.6.0 (toml++ 3.x) must not see.
///
/// - TOMLKit hands the document over as a C string, so a NUL byte would
///   silently cut it short.
/// - On some malformed input toml++ calls internal functions whose
///   precondition (`TOML_ASSERT_ASSUME`) it violates: an assertion failure
///   (abort) in debug builds, undefined behaviour (`TOML_ASSUME`) in release
///   ones. Found by the loader's fuzz test:
///   - a table header whose first key starts with another character than a
///     bare-key one or a quote (`[=`, `[[[1]]]`): `parse_key()`; fixed upstream
///     in marzer/tomlplusplus#301;
///   - a date followed by `T` and a non-digit (`1979-05-27T-`): `parse_time()`;
///   - a date, one space, one digit, then a value terminator (`1979-05-27 2`
///     before a newline, `,`, `]`, `}`, `#` or a blank): `parse_value()`
///     reads ahead for a time after the space and scans on from the
///     terminator (found by `make fuzz`; the static gateway aborted on it in
///     `config check`, at start and on reload);
///   - `}` where an array expects a value (`[}`, `[1, }`), and the Unicode
///     line breaks U+0085, U+2028, U+2029 between values: `parse_value()`.
///
/// A small lexer (strings, comments, everything else) finds these outside
/// strings and comments, and refuses them as the syntax errors they are,
/// with line and column.
enum TOMLGuard {
    static func refusal(_ source: String) -> ConfigIssue? {
        var lexer = Lexer(bytes: Array(source.utf8))
        return lexer.run()
    }

    private struct Lexer {
        enum Mode { case normal, comment, basic, literal, multilineBasic, multilineLiteral }
        let bytes: [UInt8]
        var i = 0
        var line = 1
        var lineStart = 0
        var mode = Mode.normal
        /// Only blanks so far on this line (outside strings).
        var atLineStart = true
        var lastSignificant: UInt8?

        init(bytes: [UInt8]) {
            self.bytes = bytes
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3; lineStart = 3 }
        }

        func byte(_ k: Int) -> UInt8? { k < bytes.count ? bytes[k] : nil }

        func issue(at k: Int, _ message: String) -> ConfigIssue {
            let column = bytes[lineStart..<min(k, bytes.count)].count { $0 & 0xC0 != 0x80 } + 1
            return ConfigIssue(key: "", line: line, message: "TOML syntax error at column \(column): \(message)")
        }

        func isTriple(_ quote: UInt8) -> Bool { byte(i + 1) == quote && byte(i + 2) == quote }

        mutating func newline() {
            line += 1
            lineStart = i + 1
            atLineStart = true
        }

        mutating func run() -> ConfigIssue? {
            while i < bytes.count {
                let c = bytes[i]
                if c == 0 { return issue(at: i, "a NUL byte") }
                switch mode {
                case .normal:
                    if let problem = normal(c) { return problem }
                case .comment:
                    if c == ASCII.newline { newline(); mode = .normal }
                case .basic, .literal:
                    if c == ASCII.backslash && mode == .basic {
                        i += 1
                    } else if c == (mode == .basic ? ASCII.quote : ASCII.apostrophe) {
                        mode = .normal
                    } else if c == ASCII.newline {
                        newline()
                        mode = .normal
                    }
                case .multilineBasic, .multilineLiteral:
                    let quote = mode == .multilineBasic ? ASCII.quote : ASCII.apostrophe
                    if c == ASCII.backslash && mode == .multilineBasic {
                        if byte(i + 1) == ASCII.newline { i += 1; newline() } else { i += 1 }
                    } else if c == quote && isTriple(quote) {
                        i += 2
                        while byte(i + 1) == quote { i += 1 }  // up to two quotes end the content
                        mode = .normal
                    } else if c == ASCII.newline {
                        newline()
                    }
                }
                i += 1
            }
            return nil
        }

        mutating func normal(_ c: UInt8) -> ConfigIssue? {
            switch c {
            case ASCII.newline:
                newline()
                return nil
            case ASCII.space, ASCII.tab, ASCII.carriageReturn:
                return nil
            case ASCII.hash:
                mode = .comment
                return nil
            case ASCII.quote, ASCII.apostrophe:
                if isTriple(c) {
                    mode = c == ASCII.quote ? .multilineBasic : .multilineLiteral
                    i += 2
                } else {
                    mode = c == ASCII.quote ? .basic : .literal
                }
            case ASCII.openBracket where atLineStart:
                if let k = badHeaderStart() {
                    return issue(at: k, "a table header starts with a key (a letter, digit, '-', '_' or a quote)")
                }
            case ASCII.closeBrace where lastSignificant == ASCII.openBracket || lastSignificant == ASCII.comma:
                return issue(at: i, "expected a value, saw '}'")
            case 0xC2 where byte(i + 1) == 0x85,
                0xE2 where byte(i + 1) == 0x80 && (byte(i + 2) == 0xA8 || byte(i + 2) == 0xA9):
                return issue(at: i, "a Unicode line separator outside a string")
            case ASCII.zero...ASCII.nine:
                if let (k, separator) = badDateTime() {
                    return issue(at: k, "a date-time needs a time (HH:MM:SS) after the \(separator)")
                }
            default:
                break
            }
            lastSignificant = c
            atLineStart = false
            return nil
        }

        static func isBlank(_ c: UInt8?) -> Bool { c == ASCII.space || c == ASCII.tab }
        static func isDigit(_ c: UInt8?) -> Bool {
            c.map { $0 >= ASCII.zero && $0 <= ASCII.nine } ?? false
        }

        /// At `[` starting a line: `[` or `[[`, blanks, then what no key starts with.
        func badHeaderStart() -> Int? {
            var k = i + 1
            if byte(k) == ASCII.openBracket { k += 1 }
            while Self.isBlank(byte(k)) { k += 1 }
            guard let c = byte(k), !Check.isBare(c), c != ASCII.quote, c != ASCII.apostrophe,
                c != ASCII.closeBracket
            else {
                return nil
            }
            return k
        }

        /// At a digit: `YYYY-MM-DD`, then `T` or `t` and a non-digit (not the
        /// end), or a space, a digit and a non-digit (not the end). Neither is
        /// valid TOML (a time starts with two digits). Returns where, and
        /// which separator.
        func badDateTime() -> (Int, String)? {
            if i > 0, Self.isDigit(bytes[i - 1]) || Check.isBare(bytes[i - 1]) { return nil }
            for (offset, digit) in [true, true, true, true, false, true, true, false, true, true].enumerated() {
                let b = byte(i + offset)
                if digit ? !Self.isDigit(b) : b != ASCII.minus { return nil }
            }
            if byte(i + 10) == ASCII.upperT || byte(i + 10) == ASCII.lowerT {
                guard let after = byte(i + 11), !Self.isDigit(after) else { return nil }
                return (i + 11, "'T'")
            }
            guard byte(i + 10) == ASCII.space, Self.isDigit(byte(i + 11)),
                let after = byte(i + 12), !Self.isDigit(after)
            else { return nil }
            return (i + 12, "space")
        }
    }
}

/// The bytes the lexer looks for, computed once (a debug build would
/// otherwise convert each `UInt8(ascii:)` on every byte).
private enum ASCII {
    static let apostrophe = UInt8(ascii: "'")
    static let backslash = UInt8(ascii: "\\")
    static let carriageReturn = UInt8(ascii: "\r")
    static let closeBrace = UInt8(ascii: "}")
    static let closeBracket = UInt8(ascii: "]")
    static let comma = UInt8(ascii: ",")
    static let hash = UInt8(ascii: "#")
    static let lowerT = UInt8(ascii: "t")
    static let minus = UInt8(ascii: "-")
    static let newline = UInt8(ascii: "\n")
    static let nine = UInt8(ascii: "9")
    static let openBracket = UInt8(ascii: "[")
    static let quote = UInt8(ascii: "\"")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let upperT = UInt8(ascii: "T")
    static let zero = UInt8(ascii: "0")
}
