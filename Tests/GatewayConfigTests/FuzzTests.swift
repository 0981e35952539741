import DoorCore
@testable import GatewayConfig
import TestSupport
import XCTest

/// 100 000 random and mutated TOML inputs through the loader: each loads or
/// yields issues, never traps, and what loads is consistent.
///
/// Loading the whole example takes about 2 ms in a debug build, so most
/// inputs are one or two of the example's sections (with the device
/// and board tables in front, so the semantic checks run), mutated; one in
/// 500 is the whole example mutated; a tenth are generated documents that
/// put random values under the loader's own keys; a tenth are random bytes.
final class FuzzTests: XCTestCase {
    static let preamble = "[device]\nid = \"f\"\n[board]\nkind = \"sim\"\n"

    /// The fully uncommented example without comment lines, cut at table headers.
    static let sections: [String] = {
        let lines = LoaderTests.uncommented(ConfigExample.text(board: .pi)).split(separator: "\n").filter {
            !$0.hasPrefix("#")
        }
        var sections: [String] = []
        for line in lines {
            if line.hasPrefix("[") || sections.isEmpty { sections.append("") }
            sections[sections.count - 1] += line + "\n"
        }
        return sections
    }()

    func testOneHundredThousandInputsNeverTrap() throws {
        var random = SeededRandom(seed: 0xD00D_2026)
        let whole = Array(Self.sections.joined().utf8)
        let keys = GatewayConfiguration.knownKeys(readingSource: Self.sections.joined()).sorted()
        var loaded = 0, rejected = 0
        for i in 0..<100_000 {
            let input: [UInt8]
            switch i % 500 {
            case 0:
                input = random.mutate(whole)
            case 1...50:
                input = Array(Self.preamble.utf8) + random.mutate(Array(generated(keys, &random).utf8))
            case 51...100:
                input = (0..<Int.random(in: 0...64, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }
            default:
                let start = Int.random(in: 0..<Self.sections.count, using: &random)
                // Mostly one section; every third input two neighbours.
                let run = Self.sections[start..<min(Self.sections.count, start + (i % 3 == 0 ? 2 : 1))]
                    .joined()
                input = Array(Self.preamble.utf8) + random.mutate(Array(run.utf8))
            }
            let text = String(decoding: input, as: UTF8.self)
            do {
                let config = try GatewayConfiguration.load(toml: text)
                loaded += 1
                check(config, text)
            } catch {
                rejected += 1
                XCTAssertFalse(error.issues.isEmpty, text)
                for issue in error.issues {
                    XCTAssertFalse(issue.message.isEmpty)
                    if let line = issue.line {
                        XCTAssertTrue((1...input.count { $0 == 0x0A } + 2).contains(line), "\(issue) in\n\(text)")
                    }
                }
            }
        }
        // Both sides are exercised, not just one.
        XCTAssertGreaterThan(loaded, 2_000)
        XCTAssertGreaterThan(rejected, 20_000)
    }

    /// What loads obeys the rules the loader enforces.
    func check(_ c: GatewayConfiguration, _ text: String) {
        let d = c.door
        XCTAssertEqual(d.actions.map(\.index), Array(0..<d.actions.count), text)
        XCTAssertFalse(d.outputs.isEmpty, text)
        XCTAssertEqual(Set(d.outputs.map(\.name)).count, d.outputs.count, text)
        XCTAssertLessThanOrEqual(d.pulseLimits.maximum, PulseLimits.absoluteMaximum, text)
        let names = Set(c.indicators.map(\.name))
        for p in d.patterns.values { XCTAssertTrue(p.lines.isSubset(of: names), text) }
        for a in d.actions {
            for case .pulse(let o, let duration) in a.steps {
                XCTAssertNotNil(d.output(o), text)
                XCTAssertEqual(d.pulseLimits.clamp(duration), duration, text)
            }
        }
        XCTAssertLessThanOrEqual(c.mqtt.toleranceSeconds, 30, text)
    }

    /// A document of random values under random known keys.
    func generated(_ keys: [String], _ random: inout SeededRandom) -> String {
        var text = ""
        for _ in 0..<Int.random(in: 1...6, using: &random) {
            guard let key = keys.randomElement(using: &random) else { break }
            let path = key.replacingOccurrences(of: "[]", with: "")
            let parts = path.split(separator: ".")
            let value: String
            switch Int.random(in: 0..<9, using: &random) {
            case 0: value = "\(Int.random(in: -5...70_000, using: &random))"
            case 1:
                value =
                    "\"\(["GPIO17", "strike", "", "none", "report", "/run/x", "pull-up", "5", "energised"].randomElement(using: &random)!)\""
            case 2: value = Bool.random(using: &random) ? "true" : "false"
            case 3: value = "[\"green\", 3]"
            case 4: value = "{ pulse = \"strike\", ms = \(Int.random(in: 0...40_000, using: &random)) }"
            case 5: value = "[{ wait_ms = 5 }, { on = [\"red\"], ms = 1 }]"
            case 6: value = "1979-05-27T07:32:00Z"
            case 7: value = "\(Double.random(in: -1...1, using: &random))"
            default: value = "\(Int.random(in: 0...8, using: &random))"
            }
            let header = parts.dropLast().joined(separator: ".")
            let isArray = key.hasPrefix("outputs[]") || key.hasPrefix("actions[]")
            text += header.isEmpty ? "" : (isArray ? "[[\(header)]]\n" : "[\(header)]\n")
            text += "\(parts.last ?? "x") = \(value)\n"
        }
        return text
    }
}
