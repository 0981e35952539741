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
///   - a value that looks like a date to toml++ (ten characters with `-` at
///     the fifth and eighth: `1979-05-27`, but also `1979-05-2"` or
///     `1979-05-2a`), one space, one digit, then a value terminator (a
///     newline, `,`, `]`, `}`, `#` or a blank): `parse_value()` reads ahead
///     for a time after the space and scans on from the terminator. Found by
///     `make fuzz`; the static gateway aborted on `x = 1979-05-27 2` in
///     `config check`, at start and on reload. A value, a space and a lone
///     digit is never TOML (a time starts with two digits, and two values
///     need a separator), so any such value is refused;
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
        /// The end of the value last checked by `badDateTime` (its terminator).
        var checkedValueEnd = 0

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
                if let (k, message) = badDateTime() { return issue(at: k, message) }
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

        /// At a digit starting a value: `YYYY-MM-DD`, `T` or `t`, then a
        /// non-digit (not the end); or the value as toml++ scans it (quotes
        /// and all, up to a blank, a line break, `,`, `]`, `}` or `#`), one
        /// space, one digit and a non-digit (not the end). Neither is valid
        /// TOML. Returns where, and what to say.
        mutating func badDateTime() -> (Int, String)? {
            if i > 0, Self.isDigit(bytes[i - 1]) || Check.isBare(bytes[i - 1]) { return nil }
            if [true, true, true, true, false, true, true, false, true, true].enumerated().allSatisfy({
                let b = byte(i + $0.offset)
                return $0.element ? Self.isDigit(b) : b == ASCII.minus
            }), byte(i + 10) == ASCII.upperT || byte(i + 10) == ASCII.lowerT {
                guard let after = byte(i + 11), !Self.isDigit(after) else { return nil }
                return (i + 11, "a date-time needs a time (HH:MM:SS) after the 'T'")
            }
            // A digit inside a value already checked (after a '.' or a quote) ends at the same place.
            guard i >= checkedValueEnd else { return nil }
            var end = i
            while let b = byte(end), !Self.isValueTerminator(b) { end += 1 }
            checkedValueEnd = end
            guard byte(end) == ASCII.space, Self.isDigit(byte(end + 1)), let after = byte(end + 2),
                !Self.isDigit(after)
            else { return nil }
            // As toml++ counts: characters, not bytes, and without underscores.
            let chars = bytes[i..<end].filter { $0 != ASCII.underscore && $0 & 0xC0 != 0x80 }
            let dateLike = chars.count == 10 && chars[4] == ASCII.minus && chars[7] == ASCII.minus
            return (
                end + 1,
                dateLike
                    ? "a date-time needs a time (HH:MM:SS) after the space"
                    : "a value followed by a space and another value"
            )
        }

        /// Where toml++ ends a value: ASCII blanks and line breaks, `,`, `]`, `}`, `#`.
        static func isValueTerminator(_ c: UInt8) -> Bool {
            switch c {
            case ASCII.space, ASCII.tab, ASCII.newline, ASCII.carriageReturn, 0x0B, 0x0C, ASCII.comma,
                ASCII.closeBracket, ASCII.closeBrace, ASCII.hash:
                return true
            default:
                return false
            }
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
    static let underscore = UInt8(ascii: "_")
    static let upperT = UInt8(ascii: "T")
    static let zero = UInt8(ascii: "0")
}
