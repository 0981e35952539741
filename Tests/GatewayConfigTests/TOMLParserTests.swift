import Foundation
@testable import GatewayConfig
import XCTest

/// TOML 1.0 as GatewayConfig's parser reads it: values, and the documents it
/// refuses. Each case here is also one of TOMLDifferentialTests' inputs,
/// where tomllib must agree.
final class TOMLParserTests: XCTestCase {
    /// Documents and their value trees, written as `render` writes them.
    static let accepted: [(String, String)] = [
        ("", "{}"),
        ("# only a comment\n\n  \t\n", "{}"),
        ("a = 1\r\nb = 2\r\n", "{\"a\": 1, \"b\": 2}"),
        ("\u{FEFF}a = 1", "{\"a\": 1}"),
        (
            "bare_key-1 = 1\n1234 = 2\n\"quoted key\" = 3\n'literal \\\"key\\\"' = 4\n\"\" = 5\n\"\\u00e9\" = 6",
            "{\"bare_key-1\": 1, \"1234\": 2, \"quoted key\": 3, \"literal \\\\\\\"key\\\\\\\"\": 4, \"\": 5, \"é\": 6}"
        ),
        ("\"é\" = 1\n\"e\u{301}\" = 2", "{\"é\": 1, \"é\": 2}"),
        ("a.b.c = 1\na . \"b\" . d = 2\n", "{\"a\": {\"b\": {\"c\": 1, \"d\": 2}}}"),
        (
            "s = \"tab\\t nl\\n cr\\r ff\\f bs\\b quote\\\" backslash\\\\ u\\u00E9 U\\U0001F600 max\\U0010FFFF\"",
            "{\"s\": \"tab\\t nl\\n cr\\r ff\\u{0C} bs\\u{08} quote\\\" backslash\\\\ ué U😀 max􏿿\"}"
        ),
        (
            "s = 'C:\\Users\\nodejs\\templates'\nt = '<\\i\\c*\\s*>'",
            "{\"s\": \"C:\\\\Users\\\\nodejs\\\\templates\", \"t\": \"<\\\\i\\\\c*\\\\s*>\"}"
        ),
        ("s = \"\"\"\nRoses\r\nViolets\"\"\"", "{\"s\": \"Roses\\nViolets\"}"),
        ("s = \"\"\"\\\n  The quick \\\n\n  brown \\   \n  fox.\\\n  \"\"\"", "{\"s\": \"The quick brown fox.\"}"),
        (
            "s = \"\"\"Here are two quotation marks: \"\". Simple enough.\"\"\"\nt = \"\"\"\"This,\" she said, \"is just a pointless statement.\"\"\"\"\nu = \"\"\"a\"\"\"\"\"",
            "{\"s\": \"Here are two quotation marks: \\\"\\\". Simple enough.\", \"t\": \"\\\"This,\\\" she said, \\\"is just a pointless statement.\\\"\", \"u\": \"a\\\"\\\"\"}"
        ),
        (
            "s = '''\nThe first newline is\ntrimmed in raw strings.\n'''\nt = '''Here are fifteen quotation marks: \"\"\"\"\"\"\"\"\"\"\"\"\"\"\"'''\nu = ''''That,' she said, 'is still pointless.''''",
            "{\"s\": \"The first newline is\\ntrimmed in raw strings.\\n\", \"t\": \"Here are fifteen quotation marks: \\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\\\"\", \"u\": \"\\\'That,\\\' she said, \\\'is still pointless.\\\'\"}"
        ),
        ("s = \"tab\there and é and \u{2028}\" # comment with \u{85} and é", "{\"s\": \"tab\\there and é and  \"}"),
        (
            "i = [+99, 42, 0, -17, 1_000, 5_349_221, 53_49_221, 1_2_3_4_5, -0, +0]",
            "{\"i\": [99, 42, 0, -17, 1000, 5349221, 5349221, 12345, 0, 0]}"
        ),
        ("i = [9223372036854775807, -9223372036854775808]", "{\"i\": [9223372036854775807, -9223372036854775808]}"),
        (
            "h = [0xDEADBEEF, 0xdeadbeef, 0xdead_beef, 0o01234567, 0o755, 0b11010110, 0x7fffffffffffffff, 0x0]",
            "{\"h\": [3735928559, 3735928559, 3735928559, 342391, 493, 214, 9223372036854775807, 0]}"
        ),
        (
            "f = [+1.0, 3.1415, -0.01, 5e+22, 1e06, -2E-2, 6.626e-34, 224_617.445_991_228, 0.0, -0.0, +0.0, 1e400, 1e-400]",
            "{\"f\": [1.0, 3.1415, -0.01, 5e+22, 1000000.0, -0.02, 6.626e-34, 224617.445991228, 0.0, -0.0, 0.0, inf, 0.0]}"
        ),
        ("f = [inf, +inf, -inf, nan, +nan, -nan]", "{\"f\": [inf, inf, -inf, nan, nan, -nan]}"),
        ("b = [true, false]", "{\"b\": [true, false]}"),
        (
            "d = [1979-05-27T07:32:00Z, 1979-05-27T00:32:00-07:00, 1979-05-27T00:32:00.999999-07:00, 1979-05-27 07:32:00Z, 1979-05-27t07:32:00z]",
            "{\"d\": [<date-time>, <date-time>, <date-time>, <date-time>, <date-time>]}"
        ),
        (
            "d = [1979-05-27T07:32:00, 1979-05-27T00:32:00.999999, 1979-05-27, 07:32:00, 00:32:00.999999, 2000-02-29, 1979-05-27 # date\n]",
            "{\"d\": [<date-time>, <date-time>, <date>, <time>, <time>, <date>, <date>]}"
        ),
        (
            "a = [ [ 1, 2 ], [\"a\", 'b', \"\"\"c\"\"\"], [ 0.1, 0.2 ], [ [1], {x = 1} ], [], 1, \"mixed\" ]",
            "{\"a\": [[1, 2], [\"a\", \"b\", \"c\"], [0.1, 0.2], [[1], {\"x\": 1}], [], 1, \"mixed\"]}"
        ),
        (
            "a = [\n  1, # one\n  2,\n  # nothing\n]\nb = [\n[ [1] ]\n]\nc = [\n+1]",
            "{\"a\": [1, 2], \"b\": [[[1]]], \"c\": [1]}"
        ),
        (
            "t = { first = \"Tom\", last = \"Preston-Werner\" }\np = { x = 1, y.z = 2, y.w = 3 }\ne = {}\nn = { a = { b = { c = [1] } } }",
            "{\"t\": {\"first\": \"Tom\", \"last\": \"Preston-Werner\"}, \"p\": {\"x\": 1, \"y\": {\"z\": 2, \"w\": 3}}, \"e\": {}, \"n\": {\"a\": {\"b\": {\"c\": [1]}}}}"
        ),
        (
            "[table-1]\nkey1 = \"some string\"\n[table-2]\nkey1 = 1\n[ dog . \"tater.man\" ]\ntype.name = \"pug\"",
            "{\"table-1\": {\"key1\": \"some string\"}, \"table-2\": {\"key1\": 1}, \"dog\": {\"tater.man\": {\"type\": {\"name\": \"pug\"}}}}"
        ),
        ("[x.y.z.w]\n[x]\na = 1", "{\"x\": {\"y\": {\"z\": {\"w\": {}}}, \"a\": 1}}"),
        (
            "[fruit]\napple.color = \"red\"\napple.taste.sweet = true\n[fruit.apple.texture]\nsmooth = true",
            "{\"fruit\": {\"apple\": {\"color\": \"red\", \"taste\": {\"sweet\": true}, \"texture\": {\"smooth\": true}}}}"
        ),
        (
            "apple.type = \"fruit\"\norange.type = \"fruit\"\napple.skin = \"thin\"\norange.skin = \"thick\"",
            "{\"apple\": {\"type\": \"fruit\", \"skin\": \"thin\"}, \"orange\": {\"type\": \"fruit\", \"skin\": \"thick\"}}"
        ),
        (
            "[[products]]\nname = \"Hammer\"\n[[products]]\n[[products]]\nname = \"Nail\"",
            "{\"products\": [{\"name\": \"Hammer\"}, {}, {\"name\": \"Nail\"}]}"
        ),
        (
            "[[fruits]]\nname = \"apple\"\n[fruits.physical]\ncolor = \"red\"\n[[fruits.varieties]]\nname = \"red delicious\"\n[[fruits.varieties]]\nname = \"granny smith\"\n[[fruits]]\nname = \"banana\"\n[[fruits.varieties]]\nname = \"plantain\"",
            "{\"fruits\": [{\"name\": \"apple\", \"physical\": {\"color\": \"red\"}, \"varieties\": [{\"name\": \"red delicious\"}, {\"name\": \"granny smith\"}]}, {\"name\": \"banana\", \"varieties\": [{\"name\": \"plantain\"}]}]}"
        ),
        ("[a.b.c]\n[a]\nb.d = 1", "{\"a\": {\"b\": {\"c\": {}, \"d\": 1}}}"),
        ("[[a.b]]\n[a]\nx = 1", "{\"a\": {\"b\": [{}], \"x\": 1}}"),
        ("a = \"\"\"\"\"\"\nb = ''''''\nc = \"\"\nd = ''", "{\"a\": \"\", \"b\": \"\", \"c\": \"\", \"d\": \"\"}"),
        (
            "[[a]]\nb.c = 1\n[[a]]\nb.c = 2\n[a.x]\nd = 3",
            "{\"a\": [{\"b\": {\"c\": 1}}, {\"b\": {\"c\": 2}, \"x\": {\"d\": 3}}]}"
        ),
        ("[ a ]\n[[ c ]]\n[\"\"]\n['x']", "{\"a\": {}, \"c\": [{}], \"\": {}, \"x\": {}}"),
        // docs/policy.md's schedules: inline tables in an array in an array of tables.
        (
            "[[schedules]]\nname = \"staff\"\nwindows = [{ days = [\"mon\", \"fri\"], from = \"08:00\", to = \"18:00\" }, { days = [\"sat\"], from = \"09:00\", to = \"12:00\" },]\nholidays = [\"2026-12-25\"]",
            "{\"schedules\": [{\"name\": \"staff\", \"windows\": [{\"days\": [\"mon\", \"fri\"], \"from\": \"08:00\", \"to\": \"18:00\"}, {\"days\": [\"sat\"], \"from\": \"09:00\", \"to\": \"12:00\"}], \"holidays\": [\"2026-12-25\"]}]}"
        ),
        (
            "a = " + String(repeating: "[", count: 128) + String(repeating: "]", count: 128),
            "{\"a\": " + String(repeating: "[", count: 128) + String(repeating: "]", count: 128) + "}"
        ),
    ]

    /// Documents that are not TOML 1.0.
    static let refused: [String] = [
        // An inline table is on one line, also inside an array (schedules' windows).
        "w = [{ days = [\"mon\"],\n from = \"08:00\" }]",
        "w = [{ days = [\"mon\"], }]",
        "a = 1\na = 2",
        "a = " + String(repeating: "[", count: 129) + String(repeating: "]", count: 129),
        "a = " + String(repeating: "{b = ", count: 129) + "1" + String(repeating: "}", count: 129),
        "[" + Array(repeating: "a", count: 129).joined(separator: ".") + "]",
        "[[" + Array(repeating: "a", count: 128).joined(separator: ".") + "]]",
        Array(repeating: "a", count: 130).joined(separator: ".") + " = 1",
        "[[a]]\nb.c = 1\n[[a]]\nb.c = 2\n[a.b]\nd = 3",
        "[ a ]\n[[ c ]]\n[\"\"]\n['']",
        "a",
        "a =",
        "= 1",
        "a = 1 b = 2",
        "a\n= 1",
        "a = \n1",
        "a.b = 1\na = 2",
        "a = 1\na.b = 2",
        "key = # no value",
        "\"\"\"key\"\"\" = 1",
        "a = \"unterminated",
        "a = 'unterminated\n'",
        "a = \"\"\"unterminated",
        "a = '''unterminated''",
        "a = \"x\ny\"",
        "a = \"\\q\"",
        "a = \"\\x41\"",
        "a = \"\\e\"",
        "a = \"\\ \"",
        "a = \"\\u12\"",
        "a = \"\\uD800\"",
        "a = \"\\uDFFF\"",
        "a = \"\\U00110000\"",
        "a = \"\\UFFFFFFFF\"",
        "a = \"\u{1}\"",
        "a = \"\u{7F}\"",
        "a = '\u{1F}'",
        "a = \"\"\"\u{0}\"\"\"",
        "a = \"\"\"\\  x\"\"\"",
        "a = \"\"\"a\"\"\"\"\"\"",
        "a = '''a''''''",
        "a = \"x\"\r",
        "a = 1\rb = 2",
        "# a comment with \u{7F}",
        "# a comment with \u{0}",
        "a = 1 # \u{8}",
        "a = 01",
        "a = 0_1",
        "a = 1__0",
        "a = _1",
        "a = 1_",
        "a = +0x1",
        "a = 0X1",
        "a = 0x",
        "a = 0xG",
        "a = 0o8",
        "a = 0b2",
        "a = 0x_1",
        "a = 9223372036854775808",
        "a = -9223372036854775809",
        "a = 0x8000000000000000",
        "a = 0b1111111111111111111111111111111111111111111111111111111111111111",
        "a = 1.",
        "a = .5",
        "a = 1.e5",
        "a = 1e",
        "a = 1e_5",
        "a = 1._5",
        "a = 1.5_",
        "a = 00.1",
        "a = infinity",
        "a = NaN",
        "a = Inf",
        "a = TRUE",
        "a = tru",
        "a = truex",
        "a = 1979-05-27T07:32",
        "a = 1979-05-27 07:32",
        "a = 1979-13-01",
        "a = 1979-02-30",
        "a = 1900-02-29",
        "a = 0000-01-01",
        "a = 1979-5-27",
        "a = 1979-05-27T24:00:00Z",
        "a = 07:32:60",
        "a = 07:32",
        "a = 7:32:00",
        "a = 07:32:00Z",
        "a = 07:32:00.Z",
        "a = 1979-05-27T07:32:00+24:00",
        "a = 1979-05-27T07:32:00+05",
        "a = 1979-05-27T07:32:00+05:60",
        "a = 1979-05-27 x",
        "a = [1 2]",
        "a = [1,,2]",
        "a = [,]",
        "a = [1",
        "a = [}",
        "a = [1,\u{85}]",
        "a = { b = 1, }",
        "a = { b = 1\n}",
        "a = {\nb = 1 }",
        "a = { b = 1, b = 2 }",
        "a = { b = {}, b.c = 1 }",
        "a = { b.c = 1, b = 2 }",
        "a = {b = 1}\na.c = 2",
        "a = {b = 1}\n[a]",
        "a = {b = {c = 1}}\n[a.b.d]",
        "a = [1]\n[[a]]",
        "a = []\n[a.b]",
        "a = 1\n[a]",
        "a = 1\n[a.b]",
        "[a]\n[a]",
        "[a]\nb = 1\n[a]",
        "[a.b]\n[a]\nb = 1",
        "[a]\nb.c = 1\n[a.b]",
        "a.b = 1\n[a]",
        "[a.b.c]\nz = 9\n[a]\nb.c.t = 1",
        "[[a]]\n[a]",
        "[a]\n[[a]]",
        "[[a.b]]\n[a]\nb.c = 1",
        "[a.b]\n[[a]]",
        "[[a]]\nb = 1\n[a.b]",
        "[]",
        "[a",
        "[a]]",
        "[[a]",
        "[[a] ]",
        "[ [a]]",
        "[a.]",
        "[.a]",
        "[a..b]",
        "[a] b = 1",
        "[=]",
        "[[[1]]]",
        "[é]",
        "é = 1",
        "a-é = 1",
        "a = 1\n\u{2028}",
        "\u{0}",
        "a = \u{FEFF}1",
        "a = 1\n\u{FEFF}b = 2",
    ]

    /// `{k: v, …}`, `[v, …]`, strings quoted (Swift's debugDescription), numbers and booleans as Swift prints them.
    static func render(_ node: TOMLNode) -> String {
        switch node {
        case .table(let m):
            return "{" + m.map { "\($0.0.debugDescription): \(render($0.1))" }.joined(separator: ", ") + "}"
        case .array(let a): return "[" + a.map(render).joined(separator: ", ") + "]"
        case .string(let s): return s.debugDescription
        case .int(let i): return "\(i)"
        case .double(let d): return d.isNaN ? (d.sign == .minus ? "-nan" : "nan") : "\(d)"
        case .bool(let b): return "\(b)"
        case .other(let kind): return "<\(kind)>"
        }
    }

    func testValues() {
        for (text, expected) in Self.accepted {
            switch TOMLNode.parse(text) {
            case .success(let m):
                XCTAssertEqual(Self.render(.table(m)), expected, text.debugDescription)
            case .failure(let e): XCTFail("\(text.debugDescription): \(e)")
            }
        }
    }

    func testRefusals() {
        for text in Self.refused {
            guard case .failure(let e) = TOMLNode.parse(text) else {
                XCTFail("accepted: \(text.debugDescription)"); continue
            }
            XCTAssertEqual(e.issues.count, 1, text.debugDescription)
            XCTAssertEqual(e.issues.first?.key, "", text.debugDescription)
            XCTAssertNotNil(e.issues.first?.line, text.debugDescription)
            XCTAssertTrue(e.issues.first?.message.hasPrefix("TOML syntax error at column ") ?? false, "\(e)")
        }
    }

    /// A syntax error is one issue without a key: its line, and its column
    /// (in characters) in the message.
    func testSyntaxErrorsNameLineAndColumn() {
        let cases: [(String, Int, String)] = [
            (
                "a = 1\nb = \"é\\q\"", 2,
                "column 7: 'q' after a backslash is not an escape (\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX)"
            ),
            ("a = 1\r\nb = 2 3", 2, "column 7: expected a new line after a statement, saw '3'"),
            ("[a]\nx = 1\n[a]", 3, "column 2: table [a] is defined twice"),
            ("a = 1\n\n  a = 2", 3, "column 3: key 'a' is defined twice"),
            ("t = {x = 1}\nt.y = 2", 2, "column 1: 't.y': 't' is already a table"),
            (
                "n = 9223372036854775808", 1,
                "column 5: '9223372036854775808' is not a number: out of the 64-bit integer range"
            ),
            ("n = 0_1", 1, "column 5: '0_1' is not a number: leading zeros are not allowed"),
            ("n = 1__0", 1, "column 5: '1__0' is not a number: an underscore must stand between two digits"),
            ("s = \"\\uD800\"", 1, "column 6: \\uD800 is not a Unicode scalar value"),
            ("s = \"a\u{1}\"", 1, "column 7: the control character U+0001 in a string (write it as an escape)"),
            ("s = \"a", 1, "column 7: an unterminated string"),
            ("s = \"\"\"\nab\n", 1, "column 5: an unterminated multi-line string"),
            ("d = 1979-02-30", 1, "column 13: day 30 is not in month 2 of 1979"),
            (
                "t = {a = 1,\n b = 2}", 1,
                "column 12: expected a key (an inline table is on one line), saw the end of the line"
            ),
            ("# ok\n# \u{7F}", 2, "column 3: the control character U+007F in a comment"),
            (
                "a = " + String(repeating: "[", count: 200), 1,
                "column 133: tables and arrays nested deeper than 128 levels"
            ),
        ]
        for (text, line, message) in cases {
            guard case .failure(let e) = TOMLNode.parse(text) else {
                XCTFail("accepted: \(text.debugDescription)"); continue
            }
            XCTAssertEqual(
                e.issues, [ConfigIssue(key: "", line: line, message: "TOML syntax error at \(message)")], text)
        }
    }

    /// Any bytes: an answer, no trap, no stack exhaustion, in linear time.
    func testHostileInputIsRefusedQuickly() {
        let hostile = [
            "a = " + String(repeating: "[", count: 100_000),
            "a = " + String(repeating: "{b=", count: 100_000),
            "[" + Array(repeating: "a", count: 100_000).joined(separator: ".") + "]",
            Array(repeating: "a", count: 100_000).joined(separator: ".") + " = 1",
            String(repeating: "[[a]]\n", count: 20_000) + "[a",
            "s = \"" + String(repeating: "\\", count: 100_001),
            String(repeating: "\u{0}", count: 10_000),
        ]
        for text in hostile {
            XCTAssertThrowsError(try TOMLNode.parse(text).get(), String(text.prefix(40)))
        }
        let wide = (0..<20_000).map { "k\($0) = \($0)" }.joined(separator: "\n")
        guard case .success(let m) = TOMLNode.parse(wide) else { return XCTFail("20 000 keys") }
        XCTAssertEqual(m.count, 20_000)
        XCTAssertEqual(m.last?.0, "k19999")
    }

    /// A file that is not UTF-8 is refused where it stops being UTF-8 (the
    /// text the parser sees would hold U+FFFD in its place).
    func testAFileThatIsNotUTF8IsASyntaxError() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("not-utf8-\(getpid()).toml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let cases: [([UInt8], Int, Int, String)] = [
            (Array("a = 1\nb = \"é".utf8) + [0xFF] + Array("\"\n".utf8), 2, 7, "FF"),
            ([0xEF, 0xBB, 0xBF] + Array("# \u{2028}".utf8) + [0xC3, 0x28], 1, 4, "C3"),
            ([0xED, 0xA0, 0x80], 1, 1, "ED"),
        ]
        for (bytes, line, column, byte) in cases {
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            XCTAssertThrowsError(try GatewayConfiguration.load(file: path)) { error in
                XCTAssertEqual(
                    (error as? ConfigError)?.issues,
                    [
                        ConfigIssue(
                            key: "", line: line,
                            message: "TOML syntax error at column \(column): not UTF-8 (byte 0x\(byte))")
                    ])
            }
        }
    }

    /// The deepest document the parser takes, on a thread with a 512 KiB stack.
    func testTheDeepestDocumentFitsASmallStack() {
        let deep = "a = " + String(repeating: "[{b = ", count: 64) + "1" + String(repeating: "}]", count: 64)
        let done = expectation(description: "parsed")
        // nonisolated(unsafe): written on the thread before fulfill(), read after wait(for:).
        nonisolated(unsafe) var parsed = false
        let thread = Thread {
            if case .success = TOMLNode.parse(deep) { parsed = true }
            done.fulfill()
        }
        thread.stackSize = 512 << 10
        thread.start()
        wait(for: [done], timeout: 60)
        XCTAssertTrue(parsed)
    }
}
