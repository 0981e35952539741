#if canImport(Glibc)
    @preconcurrency import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One declaration of a command, with the names the parser answers to.
struct Declared {
    var slot: Slot
    var property: String
    var longs: [String] = []
    var shorts: [Character] = []
    /// The word shown in usage: `<value-name>`.
    var valueName: String

    var display: String {
        switch slot.kind {
        case .argument: return "<\(valueName)>"
        case .flag: return longs.first.map { "--\($0)" } ?? shorts.first.map { "-\($0)" } ?? property
        case .option:
            let name = longs.first.map { "--\($0)" } ?? shorts.first.map { "-\($0)" } ?? property
            return "\(name) <\(valueName)>"
        }
    }
}

/// The declarations of a parsed instance: its wrappers, and those of its
/// option groups, in declaration order.
func declarations(of value: Any) -> [Declared] {
    var out: [Declared] = []
    for child in Mirror(reflecting: value).children {
        if let provider = child.value as? SlotProvider {
            var property = child.label ?? "value"
            if property.hasPrefix("_") { property.removeFirst() }
            let slot = provider.slot
            var d = Declared(slot: slot, property: property, valueName: kebabCase(property))
            for element in slot.names.elements {
                switch element {
                case .long: d.longs.append(kebabCase(property))
                case .short: d.shorts.append(property.first ?? "?")
                case .customLong(let name):
                    d.longs.append(name)
                    d.valueName = name
                case .customShort(let letter): d.shorts.append(letter)
                }
            }
            out.append(d)
        } else if let group = child.value as? GroupProvider {
            out += declarations(of: group.group)
        }
    }
    return out
}

/// The `validate()` of every option group inside `value`.
func validateGroups(of value: Any) throws {
    for child in Mirror(reflecting: value).children {
        if let group = child.value as? GroupProvider, var arguments = group.group as? any ParsableArguments {
            try validateGroups(of: arguments)
            try arguments.validate()
        }
    }
}

/// Why the words did not parse; shown with the command's usage, exit 64.
struct UsageError: Error, CustomStringConvertible {
    let description: String
}

/// Fill `command`'s declarations from `words` (the words after its name).
/// Returns true when `--help` was asked for instead.
func fill(_ command: Any, from words: [String]) throws -> Bool {
    let declared = declarations(of: command)
    var positional = declared.filter { $0.slot.kind == .argument }[...]
    var afterTerminator = false
    var i = 0
    func takeValue(for d: Declared, inline: String?, shown: String) throws {
        let word: String
        if let inline {
            word = inline
        } else {
            guard i + 1 < words.count,
                !(words[i + 1].hasPrefix("-") && words[i + 1].count > 1 && !isNumber(words[i + 1]))
            else { throw UsageError(description: "Missing value for '\(shown) <\(d.valueName)>'") }
            i += 1
            word = words[i]
        }
        guard d.slot.assign(word) else { throw invalid(word, d, shown) }
    }
    while i < words.count {
        let word = words[i]
        if !afterTerminator, word == "--" {
            afterTerminator = true
        } else if !afterTerminator, word == "--help" || word == "-h" {
            return true
        } else if !afterTerminator, word.hasPrefix("--"), word.count > 2 {
            var name = String(word.dropFirst(2))
            var inline: String?
            if let eq = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            if let d = declared.first(where: { $0.slot.kind == .option && $0.longs.contains(name) }) {
                // A single-value option given again: the last one counts, as
                // with swift-argument-parser (scripts may append an override).
                try takeValue(for: d, inline: inline, shown: "--\(name)")
            } else if let (d, on) = flag(named: name, in: declared) {
                guard inline == nil else { throw UsageError(description: "'--\(name)' takes no value") }
                d.slot.setFlag(on)
            } else {
                throw UsageError(description: "Unknown option '--\(name)'")
            }
        } else if !afterTerminator, word.hasPrefix("-"), word.count > 1,
            !isNumber(word) || !expectsPositional(positional)
        {
            // -x, -x VALUE, -xVALUE, or flags bundled as -xy.
            let letters = Array(word.dropFirst())
            var k = 0
            while k < letters.count {
                let letter = letters[k]
                if let d = declared.first(where: { $0.slot.kind == .option && $0.shorts.contains(letter) }) {
                    let rest = String(letters[(k + 1)...])
                    try takeValue(for: d, inline: rest.isEmpty ? nil : rest, shown: "-\(letter)")
                    break
                } else if let d = declared.first(where: { $0.slot.kind == .flag && $0.shorts.contains(letter) }) {
                    d.slot.setFlag(true)
                } else {
                    throw UsageError(description: "Unknown option '-\(letter)'")
                }
                k += 1
            }
        } else {
            guard let d = positional.first else {
                throw UsageError(description: "Unexpected argument '\(word)'")
            }
            guard d.slot.assign(word) else { throw invalid(word, d, "<\(d.valueName)>") }
            if !d.slot.repeats { positional.removeFirst() }
        }
        i += 1
    }
    for d in declared where d.slot.required && !d.slot.wasGiven() {
        throw UsageError(description: "Missing expected argument '\(d.display)'")
    }
    return false
}

private func isNumber(_ word: String) -> Bool { Double(word) != nil }

private func expectsPositional(_ rest: ArraySlice<Declared>) -> Bool { !rest.isEmpty }

private func invalid(_ word: String, _ d: Declared, _ shown: String) -> UsageError {
    var text = "The value '\(word)' is invalid for '\(shown)'"
    if !d.slot.allValues.isEmpty { text += "; use one of: \(d.slot.allValues.joined(separator: ", "))" }
    return UsageError(description: text)
}

/// A flag by one of its long names: `(declaration, on)`.
private func flag(named name: String, in declared: [Declared]) -> (Declared, Bool)? {
    for d in declared where d.slot.kind == .flag {
        for long in d.longs {
            switch d.slot.inversion {
            case nil:
                if name == long { return (d, true) }
            case .prefixedNo:
                if name == long { return (d, true) }
                if name == "no-\(long)" { return (d, false) }
            case .prefixedEnableDisable:
                if name == "enable-\(long)" { return (d, true) }
                if name == "disable-\(long)" { return (d, false) }
            }
        }
    }
    return nil
}

extension ParsableCommand {
    /// For `@main`: the process's arguments.
    public static func main() {
        main(Array(CommandLine.arguments.dropFirst()))
    }

    /// Parse `arguments` (default: the process's, without its name), run the
    /// command they name, and exit: 0, the command's `ExitCode`, 64 for a
    /// usage error (with the usage), 1 for any other error (with its text).
    public static func main(_ arguments: [String]) -> Never {
        let words = arguments
        var path: [any ParsableCommand.Type] = [Self.self]
        var rest = words[...]
        // Subcommands by name, as long as the next word names one.
        while let next = rest.first,
            let sub = path.last!.configuration.subcommands.first(where: {
                $0.commandName == next
            })
        {
            path.append(sub)
            rest = rest.dropFirst()
        }
        // `help [subcommand …]`: the help of the command those words name.
        if let first = rest.first, first == "help", !path.last!.configuration.subcommands.isEmpty {
            for word in rest.dropFirst() {
                guard let sub = path.last!.configuration.subcommands.first(where: { $0.commandName == word }) else {
                    fail(path, "Unknown subcommand '\(word)'")
                }
                path.append(sub)
            }
            printOut(helpText(path))
            exit(0)
        }
        if path.count == 1, rest.first == "--generate-completion-script" {
            guard rest.count == 2, let script = completionScript(shell: rest.last!, root: Self.self) else {
                fail(path, "--generate-completion-script takes one of: bash, zsh, fish")
            }
            printOut(script)
            exit(0)
        }
        if path.count == 1, rest.first == "--version", !Self.configuration.version.isEmpty {
            printOut(Self.configuration.version)
            exit(0)
        }
        if let next = rest.first, !next.hasPrefix("-"), !path.last!.configuration.subcommands.isEmpty {
            fail(path, "Unknown subcommand '\(next)'")
        }
        if rest.isEmpty || rest.first!.hasPrefix("-"), let fallback = path.last!.configuration.defaultSubcommand,
            !(rest.contains("--help") || rest.contains("-h"))
        {
            path.append(fallback)
        }
        var command = path.last!.init()
        do {
            if try fill(command, from: Array(rest)) {
                printOut(helpText(path))
                exit(0)
            }
            try validateGroups(of: command)
            try command.validate()
        } catch let error as UsageError {
            fail(path, error.description)
        } catch let error as ValidationError {
            fail(path, error.message)
        } catch {
            finish(path, error)
        }
        do {
            try command.run()
        } catch {
            finish(path, error)
        }
        exit(0)
    }

    private static func finish(_ path: [any ParsableCommand.Type], _ error: any Error) -> Never {
        switch error {
        case let code as ExitCode: exit(code.rawValue)
        case let validation as ValidationError: fail(path, validation.message)
        case let usage as UsageError: fail(path, usage.description)
        case CleanExit.helpRequest:
            printOut(helpText(path))
            exit(0)
        case CleanExit.message(let text):
            printOut(text)
            exit(0)
        default:
            printErr("Error: \(error)\n")
            exit(1)
        }
    }

    private static func fail(_ path: [any ParsableCommand.Type], _ message: String) -> Never {
        let name = path.map { $0.commandName }.joined(separator: " ")
        printErr("Error: \(message)\nUsage: \(usageLine(path))\n  See '\(name) --help' for more information.\n")
        exit(64)
    }
}

func printOut(_ text: String) {
    print(text)
}

func printErr(_ text: String) {
    fputs(text, stderr)
}
