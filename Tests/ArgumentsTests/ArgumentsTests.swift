import XCTest

@testable import Arguments

private enum Color: String, CaseIterable, ExpressibleByArgument { case red, green }

private struct Shared: ParsableArguments {
    @Option(help: "A socket.") var socket: String?
    @Flag(help: "JSON.") var json = false
    init() {}
    func validate() throws {
        if socket == "" { throw ValidationError("--socket must not be empty") }
    }
}

private struct Sample: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sample", abstract: "A sample.")
    @Argument(help: "The tag's UID.") var uid: String
    @Argument(help: "More.") var rest: [String] = []
    @Option(help: "Pulse in ms.") var pulseMs = 500
    @Option(name: .shortAndLong, help: "A ratio.") var ratio: Double = 0.5
    @Option(name: .customLong("secret"), help: "Secrets.") var secrets: [String] = []
    @Option(help: "A color.") var color: Color = .red
    @Option(help: .hidden) var actions: Int = 256
    @Option(help: "Optional.") var until: Int?
    @Flag(inversion: .prefixedNo, help: "Active low.") var activeLow = true
    @Flag(name: .shortAndLong, help: "Verbose.") var verbose = false
    @OptionGroup var shared: Shared
    init() {}
    func run() throws {}
}

private struct Required: ParsableCommand {
    @Option(help: "Needed.") var level: Int
    init() {}
}

final class ArgumentsTests: XCTestCase {
    private func parse(_ words: [String]) throws -> Sample {
        let sample = Sample()
        XCTAssertFalse(try fill(sample, from: words))
        try validateGroups(of: sample)
        return sample
    }

    private func usageError(_ words: [String], _ type: Any = Sample()) -> String? {
        do {
            _ = try fill(type, from: words)
            return nil
        } catch {
            return "\(error)"
        }
    }

    func testNamesFollowTheProperty() {
        XCTAssertEqual(kebabCase("pulseMs"), "pulse-ms")
        XCTAssertEqual(kebabCase("readerURL"), "reader-url")
        XCTAssertEqual(kebabCase("i2cBusyStretch"), "i2c-busy-stretch")
        XCTAssertEqual(kebabCase("TagInspect"), "tag-inspect")
        XCTAssertEqual(Required.commandName, "required")
    }

    func testDefaultsWhenNothingIsGiven() throws {
        let s = try parse(["04AABBCCDDEEFF"])
        XCTAssertEqual(s.uid, "04AABBCCDDEEFF")
        XCTAssertEqual(s.rest, [])
        XCTAssertEqual(s.pulseMs, 500)
        XCTAssertEqual(s.ratio, 0.5)
        XCTAssertEqual(s.color, .red)
        XCTAssertNil(s.until)
        XCTAssertTrue(s.activeLow)
        XCTAssertFalse(s.verbose)
        XCTAssertNil(s.shared.socket)
        XCTAssertFalse(s.shared.json)
    }

    func testEveryFormOfValue() throws {
        let s = try parse([
            "--pulse-ms", "900", "-r", "-1.5", "--secret=aa", "--secret", "bb", "--color", "green", "--until", "7",
            "--no-active-low", "-v", "--socket", "/run/x.sock", "--json", "uid1", "a", "--", "--not-an-option",
        ])
        XCTAssertEqual(s.uid, "uid1")
        XCTAssertEqual(s.rest, ["a", "--not-an-option"])
        XCTAssertEqual(s.pulseMs, 900)
        XCTAssertEqual(s.ratio, -1.5)
        XCTAssertEqual(s.secrets, ["aa", "bb"])
        XCTAssertEqual(s.color, .green)
        XCTAssertEqual(s.until, 7)
        XCTAssertFalse(s.activeLow)
        XCTAssertTrue(s.verbose)
        XCTAssertEqual(s.shared.socket, "/run/x.sock")
        XCTAssertTrue(s.shared.json)
        XCTAssertEqual(try parse(["u", "--until", "1", "--until=2"]).until, 2, "the last one counts")
    }

    func testUsageErrorsNameWhatIsWrong() {
        XCTAssertEqual(usageError(["u", "--bogus"]), "Unknown option '--bogus'")
        XCTAssertEqual(usageError(["u", "-x"]), "Unknown option '-x'")
        XCTAssertEqual(usageError(["u", "--pulse-ms"]), "Missing value for '--pulse-ms <pulse-ms>'")
        XCTAssertEqual(usageError(["u", "--pulse-ms", "--json"]), "Missing value for '--pulse-ms <pulse-ms>'")
        XCTAssertEqual(usageError(["u", "--pulse-ms", "ten"]), "The value 'ten' is invalid for '--pulse-ms'")
        XCTAssertEqual(
            usageError(["u", "--color", "blue"]), "The value 'blue' is invalid for '--color'; use one of: red, green")
        XCTAssertEqual(usageError(["u", "--ratio", "nan"]), "The value 'nan' is invalid for '--ratio'")
        XCTAssertNil(usageError(["u", "--until", "1", "--until", "2"]), "the last one counts")
        XCTAssertEqual(usageError(["u", "--json=yes"]), "'--json' takes no value")
        XCTAssertEqual(usageError([]), "Missing expected argument '<uid>'")
        XCTAssertEqual(usageError([], Required()), "Missing expected argument '--level <level>'")
        XCTAssertEqual(usageError(["x"], Required()), "Unexpected argument 'x'")
        XCTAssertNil(usageError(["--level", "-3"], Required()))
    }

    func testHelpIsAskedForAnywhere() throws {
        XCTAssertTrue(try fill(Sample(), from: ["u", "--help"]))
        XCTAssertTrue(try fill(Sample(), from: ["-h"]))
        XCTAssertFalse(try fill(Sample(), from: ["u", "--", "--help"]))
    }

    func testGroupsAreValidated() {
        XCTAssertThrowsError(try parse(["u", "--socket", ""])) { error in
            XCTAssertEqual((error as? ValidationError)?.message, "--socket must not be empty")
        }
    }

    func testHelpListsWhatIsDeclaredButNotWhatIsHidden() {
        let help = helpText([Sample.self])
        XCTAssertTrue(help.hasPrefix("OVERVIEW: A sample."), help)
        XCTAssertTrue(help.contains("USAGE: sample <uid> [<rest> ...] [--pulse-ms <pulse-ms>]"), help)
        XCTAssertTrue(help.contains("--pulse-ms <pulse-ms>   Pulse in ms. (default: 500)"), help)
        XCTAssertTrue(help.contains("-r, --ratio <ratio>"), help)
        XCTAssertTrue(help.contains("--active-low, --no-active-low"), help)
        XCTAssertTrue(help.contains("(values: red, green) (default: red)"), help)
        XCTAssertTrue(help.contains("--socket <socket>"), help)
        XCTAssertTrue(help.contains("-h, --help"), help)
        XCTAssertFalse(help.contains("actions"), help)
    }

    func testWrapKeepsLinesWithinTheColumn() {
        let lines = wrap(String(repeating: "word ", count: 40), width: 30)
        XCTAssertGreaterThan(lines.count, 5)
        XCTAssertTrue(lines.allSatisfy { $0.count <= 30 })
    }
}

private struct Root: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "root", version: "root 1", subcommands: [Sample.self, Hidden.self])
    init() {}
}

private struct Hidden: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "hidden", shouldDisplay: false)
    init() {}
}

final class CompletionTests: XCTestCase {
    /// Completes `words` (the last one being typed) with the generated bash script.
    private func bashCompletes(_ words: [String]) throws -> [String] {
        let script = try XCTUnwrap(completionScript(shell: "bash", root: Root.self))
        let file = NSTemporaryDirectory() + "completion-\(getpid()).bash"
        try script.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let quotedWords = words.map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [
            "-c",
            "source \(file); COMP_WORDS=(\(quotedWords)); COMP_CWORD=\(words.count - 1); _root; printf '%s\\n' \"${COMPREPLY[@]}\"",
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        return String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    func testBashCompletesSubcommandsAndTheirOptions() throws {
        XCTAssertEqual(try bashCompletes(["root", "sa"]), ["sample"])
        XCTAssertEqual(try bashCompletes(["root", "sample", "--pu"]), ["--pulse-ms"])
        XCTAssertEqual(try bashCompletes(["root", "sample", "--no-a"]), ["--no-active-low"])
        XCTAssertEqual(try bashCompletes(["root", "sample", "--so"]), ["--socket"], "option groups are offered")
        XCTAssertEqual(try bashCompletes(["root", "sample", "--act"]), ["--active-low"], "hidden --actions is not")
        XCTAssertEqual(try bashCompletes(["root", "hi"]), [], "a hidden subcommand is not offered")
    }

    func testEveryShellGetsAScriptAndOthersNone() throws {
        for shell in ["bash", "zsh", "fish"] {
            let script = try XCTUnwrap(completionScript(shell: shell, root: Root.self))
            XCTAssertTrue(script.contains("' sample'"), shell)
            XCTAssertTrue(script.contains("--pulse-ms"), shell)
        }
        XCTAssertNil(completionScript(shell: "tcsh", root: Root.self))
    }
}
