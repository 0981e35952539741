/// The command-line declarations gatewayctl, gatewayd and pn532-sim use: the
/// subset of swift-argument-parser's API they were written against
/// (`ParsableCommand`, `@Option`, `@Flag`, `@Argument`, `@OptionGroup`),
/// without Foundation. swift-argument-parser links FoundationEssentials and
/// its regex and collection libraries into the static binary (about 4 MB)
/// for features a door controller's CLI does not use (DEVELOPERS.md "Sizes").
///
/// A command is a struct whose stored properties are these property
/// wrappers. Each wrapper keeps its value in a small reference box, so the
/// parser can find the wrappers of a fresh instance by reflection (`Mirror`)
/// and fill them in place: no Codable, no code generation.

/// A value that can be read from one command-line word.
public protocol ExpressibleByArgument {
    init?(argument: String)
    /// The words accepted, when they are a closed set (shown in help).
    static var allValueStrings: [String] { get }
    /// How a default value is shown in help.
    var defaultValueDescription: String { get }
}

extension ExpressibleByArgument {
    public static var allValueStrings: [String] { [] }
    public var defaultValueDescription: String { "\(self)" }
}

extension ExpressibleByArgument where Self: RawRepresentable, RawValue: ExpressibleByArgument {
    public init?(argument: String) {
        guard let raw = RawValue(argument: argument) else { return nil }
        self.init(rawValue: raw)
    }
    public var defaultValueDescription: String { "\(rawValue)" }
}

extension ExpressibleByArgument where Self: RawRepresentable & CaseIterable, RawValue == String {
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}

extension String: ExpressibleByArgument {
    public init?(argument: String) { self = argument }
}

extension Int: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension Int32: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension Int64: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension UInt32: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension Double: ExpressibleByArgument {
    public init?(argument: String) {
        // Double("nan"), Double("inf") parse; a command-line number should be finite.
        guard let value = Double(argument), value.isFinite else { return nil }
        self = value
    }
}

/// The names of an option or flag.
public struct NameSpecification: Sendable {
    enum Element: Sendable, Equatable {
        case long, short
        case customLong(String)
        case customShort(Character)
    }
    let elements: [Element]

    /// `--property-name`, from the property's name.
    public static let long = NameSpecification(elements: [.long])
    /// `-p`, the property name's first letter.
    public static let short = NameSpecification(elements: [.short])
    public static let shortAndLong = NameSpecification(elements: [.long, .short])
    public static func customLong(_ name: String) -> NameSpecification {
        NameSpecification(elements: [.customLong(name)])
    }
    public static func customShort(_ letter: Character) -> NameSpecification {
        NameSpecification(elements: [.customShort(letter)])
    }
}

/// Help for one option, flag or argument.
public struct ArgumentHelp: ExpressibleByStringInterpolation, Sendable {
    public var abstract: String
    public var discussion: String
    public var isHidden: Bool

    public init(_ abstract: String = "", discussion: String = "") {
        self.abstract = abstract
        self.discussion = discussion
        self.isHidden = false
    }
    public init(stringLiteral value: String) { self.init(value) }
    public init(stringInterpolation: DefaultStringInterpolation) {
        self.init(String(stringInterpolation: stringInterpolation))
    }

    /// Accepted, but not listed in help.
    public static var hidden: ArgumentHelp {
        var help = ArgumentHelp()
        help.isHidden = true
        return help
    }
}

/// How a Boolean flag is turned off.
public enum FlagInversion: Sendable {
    /// `--name` / `--no-name`.
    case prefixedNo
    /// `--enable-name` / `--disable-name`.
    case prefixedEnableDisable
}

/// What a command says about itself.
public struct CommandConfiguration: Sendable {
    public var commandName: String?
    public var abstract: String
    public var usage: String?
    public var discussion: String
    public var version: String
    public var shouldDisplay: Bool
    public var subcommands: [any ParsableCommand.Type]
    public var defaultSubcommand: (any ParsableCommand.Type)?

    public init(
        commandName: String? = nil, abstract: String = "", usage: String? = nil, discussion: String = "",
        version: String = "", shouldDisplay: Bool = true, subcommands: [any ParsableCommand.Type] = [],
        defaultSubcommand: (any ParsableCommand.Type)? = nil
    ) {
        self.commandName = commandName
        self.abstract = abstract
        self.usage = usage
        self.discussion = discussion
        self.version = version
        self.shouldDisplay = shouldDisplay
        self.subcommands = subcommands
        self.defaultSubcommand = defaultSubcommand
    }
}

#if compiler(>=6.2)
    public protocol _SendableMetatype: SendableMetatype {}
#else
    public protocol _SendableMetatype {}
#endif

/// Options, flags and arguments that can be parsed (a command, or a group
/// of options several commands share through `@OptionGroup`).
public protocol ParsableArguments {
    init()
    /// Checks across values, after parsing; throw `ValidationError` to refuse.
    mutating func validate() throws
}

extension ParsableArguments {
    public mutating func validate() throws {}
}

/// A command: parsed from the words after its name, then run. Its metatype is
/// Sendable (a `CommandConfiguration` lists subcommands by type); before 6.2
/// every metatype is.
public protocol ParsableCommand: ParsableArguments, _SendableMetatype {
    static var configuration: CommandConfiguration { get }
    mutating func run() throws
}

extension ParsableCommand {
    public static var configuration: CommandConfiguration { CommandConfiguration() }

    /// A command with subcommands and nothing of its own to do shows its help.
    public mutating func run() throws { throw CleanExit.helpRequest }

    static var commandName: String {
        configuration.commandName ?? kebabCase(String(describing: Self.self))
    }
}

/// A usage error: printed with the command's usage; exit status 64 (EX_USAGE).
public struct ValidationError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Leave with this status, printing nothing more (the command said what it had to).
public struct ExitCode: Error, Equatable, CustomStringConvertible {
    public let rawValue: Int32
    public init(_ rawValue: Int32) { self.rawValue = rawValue }
    public static let success = ExitCode(0)
    public static let failure = ExitCode(1)
    public static let validationFailure = ExitCode(64)
    public var description: String { "exit status \(rawValue)" }
}

/// Leave successfully: after printing help, or a version.
public enum CleanExit: Error {
    case helpRequest
    case message(String)
}

/// `someName` → `some-name`, `readerURL` → `reader-url`, `i2cSpeed` → `i2c-speed`.
func kebabCase(_ name: String) -> String {
    let chars = Array(name)
    var out = ""
    for (i, c) in chars.enumerated() {
        if c.isUppercase, i > 0 {
            let previous = chars[i - 1]
            let next = i + 1 < chars.count ? chars[i + 1] : nil
            if previous.isLowercase || previous.isNumber || (previous.isUppercase && next?.isLowercase == true) {
                out.append("-")
            }
        }
        out += c.lowercased()
    }
    return out
}
