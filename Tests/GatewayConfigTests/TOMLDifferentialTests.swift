import Foundation
@testable import GatewayConfig
import TestSupport
import XCTest

/// GatewayConfig's TOML parser against Python's `tomllib` (a strict TOML 1.0
/// parser; scripts/toml-oracle.py, which also states the three rules where
/// TOML 1.0 asks more than tomllib checks): both read the same documents and
/// must agree on accept or refuse and, when accepted, on the whole value tree
/// (keys in file order, every string, number and type).
///
/// The documents: the toml fuzz corpus, the shipped example (as shipped and
/// uncommented), `TOMLParserTests`' cases, documents generated from TOML's
/// grammar with colliding keys (the redefinition rules) and values near
/// every edge, and all of these mutated. `TOML_DIFF_N` sets how many are
/// generated (default 20 000; as many again are mutated); `TOML_DIFF_CORPUS`
/// adds a directory of documents (a corpus `make fuzz` grew).
final class TOMLDifferentialTests: XCTestCase {
    func testTheParserAgreesWithTomllib() throws {
        let oracle = Fixtures.root.appendingPathComponent("scripts/toml-oracle.py")
        let python = ["/usr/bin/python3", "/usr/local/bin/python3", "/root/.pyenv/shims/python3"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let python,
            (try? Run.process(URL(fileURLWithPath: python), ["-c", "import tomllib"]))?.status == 0
        else { throw XCTSkip("no python3 with tomllib (3.11+)") }

        let count = ProcessInfo.processInfo.environment["TOML_DIFF_N"].flatMap { Int($0) } ?? 20_000
        let inputs = Self.inputs(generated: count)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("toml-diff-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var blob = Data()
        for text in inputs {
            let bytes = Array(text.utf8)
            var n = UInt32(bytes.count).bigEndian
            withUnsafeBytes(of: &n) { blob.append(contentsOf: $0) }
            blob.append(contentsOf: bytes)
        }
        let input = dir.appendingPathComponent("in"), output = dir.appendingPathComponent("out")
        try blob.write(to: input)
        let r = try Run.process(
            URL(fileURLWithPath: python), [oracle.path, input.path, output.path], timeout: 600)
        XCTAssertEqual(r.status, 0, r.stderr)
        let verdicts = try String(contentsOf: output, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(verdicts.count, inputs.count)
        var differences = 0, accepted = 0
        for (text, expected) in zip(inputs, verdicts) {
            let mine: String
            switch TOMLNode.parse(text) {
            case .success(let members): mine = "OK " + Self.canonical(.table(members)); accepted += 1
            case .failure: mine = "ERR"
            }
            if mine != expected {
                differences += 1
                if differences <= 25 {
                    XCTFail(
                        "differs from tomllib: \(text.debugDescription)\n  tomllib: \(expected)\n  mine:    \(mine)")
                }
            }
        }
        print(
            "TOMLDifferentialTests: \(inputs.count) documents compared, \(accepted) accepted, \(differences) differences"
        )
        XCTAssertEqual(differences, 0)
        XCTAssertGreaterThan(accepted, inputs.count / 10)
        XCTAssertLessThan(accepted, inputs.count * 9 / 10)
    }

    /// The form scripts/toml-oracle.py writes.
    static func canonical(_ node: TOMLNode) -> String {
        func hex(_ s: String) -> String { s.utf8.map { String(format: "%02x", $0) }.joined() }
        switch node {
        case .table(let m): return "{" + m.map { hex($0.0) + ":" + canonical($0.1) }.joined(separator: ",") + "}"
        case .array(let a): return "[" + a.map(canonical).joined(separator: ",") + "]"
        case .string(let s): return "s" + hex(s)
        case .int(let i): return "i\(i)"
        case .double(let d):
            if d.isNaN { return d.sign == .minus ? "f-nan" : "f+nan" }
            return "f" + String(format: "%016llx", d.bitPattern)
        case .bool(let b): return b ? "T" : "F"
        case .other(let kind): return "d:" + kind
        }
    }

    // MARK: Inputs

    static func inputs(generated count: Int) -> [String] {
        var base: [String] = []
        // The committed corpus, and (TOML_DIFF_CORPUS) a grown one, e.g. make fuzz's.
        var corpora = [Fixtures.root.appendingPathComponent("Fuzz/corpus/toml")]
        if let grown = ProcessInfo.processInfo.environment["TOML_DIFF_CORPUS"] {
            corpora.append(URL(fileURLWithPath: grown))
        }
        for corpus in corpora {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted()) ?? [] {
                if let data = FileManager.default.contents(atPath: corpus.appendingPathComponent(name).path) {
                    base.append(String(decoding: data, as: UTF8.self))
                }
            }
        }
        for board in ConfigExample.Board.allCases {
            base.append(ConfigExample.text(board: board))
            base.append(LoaderTests.uncommented(ConfigExample.text(board: board)))
        }
        base += TOMLParserTests.accepted.map(\.0) + TOMLParserTests.refused
        var random = SeededRandom(seed: 0x70_4D_4C)
        var generated: [String] = []
        for i in 0..<count { generated.append(i % 3 == 2 ? structure(&random) : document(&random)) }
        let dictionary = tokens()
        var mutated: [String] = []
        let seeds = base + generated
        for i in 0..<count {
            var bytes = Array(seeds[i % seeds.count].utf8)
            if Bool.random(using: &random), let token = dictionary.randomElement(using: &random) {
                bytes.insert(contentsOf: token, at: Int.random(in: 0...bytes.count, using: &random))
            } else {
                bytes = random.mutate(bytes)
            }
            mutated.append(String(decoding: bytes, as: UTF8.self))
        }
        return base + generated + mutated
    }

    /// Fuzz/dict/toml.dict's tokens and a few more.
    static func tokens() -> [[UInt8]] {
        let path = Fixtures.root.appendingPathComponent("Fuzz/dict/toml.dict").path
        var out: [[UInt8]] = []
        for line in (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n") ?? [] {
            guard let q = line.firstIndex(of: "\""), line.last == "\"", !line.hasPrefix("#") else { continue }
            var bytes: [UInt8] = []
            var it = Array(line[line.index(after: q)..<line.index(before: line.endIndex)].utf8).makeIterator()
            while let c = it.next() {
                guard c == UInt8(ascii: "\\"), let e = it.next() else { bytes.append(c); continue }
                if e == UInt8(ascii: "x"), let a = it.next(), let b = it.next(),
                    let v = UInt8(String(decoding: [a, b], as: UTF8.self), radix: 16)
                {
                    bytes.append(v)
                } else {
                    bytes.append(e)
                }
            }
            out.append(bytes)
        }
        return out
            + ["\\", "\"\"\"", "'''", "[[", "]]", ".", "=", ",", "{", "}", "\r\n", "\t", "_", "e", "+", ":", "T"]
            .map { Array($0.utf8) }
    }

    static let keys = [
        "a", "b", "c", "a.b", "a.c", "b.a", "a.b.c", "\"a\"", "'b'", "\"\"", "''", "\"a.b\"", "a . b", "1", "-", "_",
        "é", "\"é\"", "\"e\u{301}\"", "true", "inf", "0x1", "1.2", "\"\\u0061\"", "\"\\n\"", "a.\"b\"", "x",
    ]
    static let scalars = [
        "0", "1", "-1", "+1", "007", "0_0", "1_000", "1__0", "_1", "1_", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "0x7fffffffffffffff", "0x8000000000000000", "0xDEAD_beef",
        "0x_1", "0o755", "0o8", "0b101", "0b2", "-0x1", "+0o1", "0X1", "00", "-0", "+0", "99999999999999999999",
        "0xffffffffffffffffff", "1.0", "1.", "1e5", "1E+5", "1e-5", "1.5e5_0", "1_0.0_1", "-0.0", "+0.0", "inf", "-inf",
        "+inf", "nan", "-nan", "+nan", "1e400", "-1e400", "1e-400", "3.14_15", "1._5", "1.e5", ".5", "0.0", "00.1",
        "1e05", "1e_5", "6.626e-34", "5e+22", "1.7976931348623157e308", "0e0", "infinity", "NaN", "0.1", "1e+",
        "true", "false", "True", "tru", "1979-05-27", "1979-05-27T07:32:00Z", "1979-05-27t07:32:00z",
        "1979-05-27 07:32:00", "1979-05-27T00:32:00.999999-07:00", "1979-05-27T07:32:00+24:00", "2000-02-29",
        "1900-02-29", "2001-02-29", "0000-01-01", "1979-13-01", "1979-05-32", "1979-5-27", "07:32:00", "07:32",
        "24:00:00", "07:32:60", "00:00:00.5", "1979-05-27T07:32", "1979-05-27 2", "1979-05-27T-05:00",
        "1979-05-27T07:32:00.Z", "1979-05-27T07:32:00+05", "1979-05-27T07:32:00Z+01:00", "1979-05-27T23:59:59.1234567",
        "2000-04-31", "1979-05-27 07:32:00.5+01:30", "1979-05-2", "\"abc\"", "\"a\\tb\"", "\"\\u00e9\"",
        "\"\\U0001F600\"", "\"\\uD800\"", "\"\\U00110000\"", "\"\\x41\"", "\"\\e\"", "\"\\\"\"", "'lit\\'", "'a\"b'",
        "\"\"\"\nml\"\"\"", "\"\"\"a\\\n   b\"\"\"", "\"\"\"a\\  \n b\"\"\"", "\"\"\"a\\ b\"\"\"", "'''\nx'''",
        "'''a''''", "'''a'''''", "'''a''''''", "\"\"\"\"\"\"\"", "\"tab\there\"", "\"é\"", "\"\\u0000\"", "'\u{7f}'",
        "\"a\u{1}\"", "\"\"", "''", "\"\"\"\r\nx\r\n\"\"\"", "\"\"\"a\"\"b\"\"\"", "\"\\ \"", "\"a\\\nb\"",
        "'''a\r\nb'''", "\"\\U0010FFFF\"", "\"\\u12\"", "\"\\UDEADBEEF\"", "\"\"\"\\\r\n  x\"\"\"", "'\u{2028}'",
        "\"\\r\\n\\f\\b\\\\\"", "'a\tb'", "\"\"\"\n\"\"\"\"", "\"x\"y",
    ]
    static let blanks = [" ", "", "\t", "  "]

    static func value(_ r: inout SeededRandom, depth: Int) -> String {
        let s = Int.random(in: 0..<10, using: &r)
        if depth < 4 && s == 0 {
            let n = Int.random(in: 0...3, using: &r)
            let seps = [", ", ",", " , ", ",\n", ",\n# c\n", "\n,", ",\r\n", " ,\t"]
            var items: [String] = []
            for _ in 0..<n { items.append(value(&r, depth: depth + 1)) }
            var text = "[" + (Bool.random(using: &r) ? "" : "\n")
            text += items.map { $0 }.joined(separator: seps.randomElement(using: &r)!)
            if n > 0 && Int.random(in: 0..<4, using: &r) == 0 { text += "," }
            return text + (Int.random(in: 0..<5, using: &r) == 0 ? "# x\n]" : "]")
        }
        if depth < 4 && s == 1 {
            let n = Int.random(in: 0...3, using: &r)
            var items: [String] = []
            for _ in 0..<n {
                items.append(
                    keys.randomElement(using: &r)! + blanks.randomElement(using: &r)! + "=" + " "
                        + value(&r, depth: depth + 1))
            }
            var text = "{" + blanks.randomElement(using: &r)! + items.joined(separator: ", ")
            if n > 0 && Int.random(in: 0..<8, using: &r) == 0 { text += "," }
            if Int.random(in: 0..<12, using: &r) == 0 { text += "\n" }
            return text + blanks.randomElement(using: &r)! + "}"
        }
        if s == 2 { return number(&r) }
        if s == 3 { return string(&r) }
        return scalars.randomElement(using: &r)!
    }

    /// A number near TOML's rules: signs, underscores, radix prefixes, long
    /// mantissas and exponents near the ends of a double.
    static func number(_ r: inout SeededRandom) -> String {
        func digits(_ n: Int, _ alphabet: String) -> String {
            let a = Array(alphabet)
            var out = ""
            for k in 0..<n {
                if k > 0 && Int.random(in: 0..<12, using: &r) == 0 { out += "_" }
                out.append(a.randomElement(using: &r)!)
            }
            return out
        }
        let sign = ["", "", "+", "-"].randomElement(using: &r)!
        switch Int.random(in: 0..<6, using: &r) {
        case 0:
            return ["0x", "0o", "0b"].randomElement(using: &r)!
                + digits(Int.random(in: 1...20, using: &r), "0123456789abcdefABCDEF")
        case 1: return sign + digits(Int.random(in: 1...20, using: &r), "0123456789")
        default:
            var text = sign + digits(Int.random(in: 1...20, using: &r), "0123456789")
            if Bool.random(using: &r) { text += "." + digits(Int.random(in: 1...20, using: &r), "0123456789") }
            if Bool.random(using: &r) {
                text +=
                    ["e", "E", "e+", "e-", "E-"].randomElement(using: &r)! + "\(Int.random(in: 0...330, using: &r))"
            }
            return text
        }
    }

    /// A basic string with random escapes and characters, valid or not.
    static func string(_ r: inout SeededRandom) -> String {
        let escapes = ["\\b", "\\t", "\\n", "\\f", "\\r", "\\\"", "\\\\", "\\e", "\\x", "\\/", "\\ "]
        var text = Bool.random(using: &r) ? "\"" : "\"\"\""
        let multiline = text.count == 3
        for _ in 0..<Int.random(in: 0...6, using: &r) {
            switch Int.random(in: 0..<6, using: &r) {
            case 0: text += escapes.randomElement(using: &r)!
            case 1:
                let v = UInt32.random(in: 0...0x11_0000, using: &r)
                text += Bool.random(using: &r) ? "\\u" + hex(v & 0xFFFF, 4) : "\\U" + hex(v, 8)
            case 2: text += "\\u" + hex(UInt32.random(in: 0xD7F0...0xE010, using: &r), 4)
            case 3:
                let v = UInt32.random(in: 0...0x2FFF, using: &r)
                if let u = Unicode.Scalar(v) { text.unicodeScalars.append(u) }
            case 4: text += ["\\\n  ", "\n", "\r\n", "\\  \n", "\"", "\"\""].randomElement(using: &r)!
            default: text += "abc"
            }
        }
        return text + (multiline ? "\"\"\"" : "\"")
    }

    /// Headers and dotted keys over two names: TOML's redefinition rules.
    static func structure(_ r: inout SeededRandom) -> String {
        let names = ["a", "b", "a.b", "b.a", "a.a", "a.b.a", "'a'"]
        let values = ["1", "{}", "[]", "{ x = 1 }", "[{}]", "{ a.b = 1 }", "[1]", "{ a = {} }"]
        var text = ""
        for _ in 0..<Int.random(in: 2...10, using: &r) {
            let k = names.randomElement(using: &r)!
            switch Int.random(in: 0..<3, using: &r) {
            case 0: text += "[\(k)]\n"
            case 1: text += "[[\(k)]]\n"
            default: text += "\(k) = \(values.randomElement(using: &r)!)\n"
            }
        }
        return text
    }

    static func document(_ r: inout SeededRandom) -> String {
        var text = ""
        let newline = Int.random(in: 0..<8, using: &r) == 0 ? "\r\n" : "\n"
        for _ in 0..<Int.random(in: 1...7, using: &r) {
            switch Int.random(in: 0..<10, using: &r) {
            case 0, 1:
                let k = keys.randomElement(using: &r)!
                text += Bool.random(using: &r) ? "[\(k)]" : "[[\(k)]]"
            case 2: text += "# comment é \u{2028}"
            case 3: text += ""
            default:
                text +=
                    keys.randomElement(using: &r)! + blanks.randomElement(using: &r)! + "="
                    + blanks.randomElement(using: &r)! + value(&r, depth: 0)
            }
            if Int.random(in: 0..<6, using: &r) == 0 { text += " # trailing" }
            text += newline
        }
        return text
    }
}
