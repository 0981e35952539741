/// Where a wrapper keeps its value; shared by every copy of the command, so
/// the parser fills the instance it found by reflection.
final class Box<Value> {
    var value: Value?
    var given = false
    init(_ value: Value?) { self.value = value }

    /// A slot's `assign`: parses one word as a `T` and keeps what `store`
    /// makes of it and the value so far (whether it was given on the command
    /// line or is the default); false, and nothing kept, when the word is no `T`.
    func reader<T: ExpressibleByArgument>(
        _: T.Type, _ store: @escaping (_ old: Value?, _ given: Bool, _ new: T) -> Value
    ) -> (String) -> Bool {
        { word in
            guard let new = T(argument: word) else { return false }
            self.value = store(self.value, self.given, new)
            self.given = true
            return true
        }
    }

    /// A slot's `wasGiven`.
    var givenReader: () -> Bool { { self.given } }

    /// What a wrapper's `wrappedValue` reads: the value, which the parser has
    /// set by then (anything else is a programming error, `message`).
    func parsedValue(else message: String) -> Value {
        guard let value else { preconditionFailure(message) }
        return value
    }
}

/// What the parser needs to know of one declaration (the property name comes
/// from reflection).
struct Slot {
    enum Kind { case option, flag, argument }
    var kind: Kind
    var names: NameSpecification = .long
    var help: ArgumentHelp?
    var inversion: FlagInversion?
    /// Repeats (options) or takes every remaining word (arguments).
    var repeats = false
    /// Must be given: no default, not optional.
    var required = false
    var defaultDescription: String?
    var allValues: [String] = []
    /// Reads one word; false when it is not a valid value.
    var assign: (String) -> Bool = { _ in false }
    /// Sets a flag on or off.
    var setFlag: (Bool) -> Void = { _ in }
    var wasGiven: () -> Bool = { false }
}

protocol SlotProvider {
    var slot: Slot { get }
}

protocol GroupProvider {
    var group: Any { get }
}

private func describe<T: ExpressibleByArgument>(_ value: T) -> String { value.defaultValueDescription }

/// `--name value`, `--name=value`, `-n value`.
public typealias Option<Value> = Declaration<Value, OptionDeclaration>
/// `--name` (and `--no-name` with `inversion: .prefixedNo`).
public typealias Flag<Value> = Declaration<Value, FlagDeclaration>
/// A positional word, in declaration order.
public typealias Argument<Value> = Declaration<Value, ArgumentDeclaration>

/// Which of the three a declaration is, and how a message names it.
public protocol DeclarationKind { static var word: String { get } }
public enum OptionDeclaration: DeclarationKind { public static let word = "an @Option" }
public enum FlagDeclaration: DeclarationKind { public static let word = "a @Flag" }
public enum ArgumentDeclaration: DeclarationKind { public static let word = "an @Argument" }

/// One declared option, flag or argument (`Kind`): the value the parser
/// keeps in its box, and its slot. The initialisers of each kind follow.
@propertyWrapper
public struct Declaration<Value, Kind: DeclarationKind>: SlotProvider {
    let box: Box<Value>
    let slot: Slot

    public var wrappedValue: Value {
        get { box.parsedValue(else: "\(Kind.word) read before it was parsed") }
        nonmutating set { box.value = newValue }
    }
}

extension Declaration where Kind == OptionDeclaration, Value: ExpressibleByArgument {
    public init(wrappedValue: Value, name: NameSpecification = .long, help: ArgumentHelp? = nil) {
        (box, slot) = Box<Value>.one(.option, names: name, help: help, default: wrappedValue)
    }

    public init(name: NameSpecification = .long, help: ArgumentHelp? = nil) {
        (box, slot) = Box<Value>.one(.option, names: name, help: help, default: nil)
    }
}

extension Declaration where Kind == OptionDeclaration {
    public init<T: ExpressibleByArgument>(name: NameSpecification = .long, help: ArgumentHelp? = nil)
    where Value == T? {
        self.init(wrappedValue: nil, name: name, help: help)
    }

    public init<T: ExpressibleByArgument>(wrappedValue: T?, name: NameSpecification = .long, help: ArgumentHelp? = nil)
    where Value == T? {
        (box, slot) = Box<Value>.optional(.option, names: name, help: help, default: wrappedValue)
    }

    public init<T: ExpressibleByArgument>(
        wrappedValue: [T] = [], name: NameSpecification = .long, help: ArgumentHelp? = nil
    ) where Value == [T] {
        (box, slot) = Box<Value>.list(.option, names: name, help: help, default: wrappedValue)
    }
}

extension Declaration where Kind == FlagDeclaration, Value == Bool {
    public init(
        wrappedValue: Bool = false, name: NameSpecification = .long, inversion: FlagInversion? = nil,
        help: ArgumentHelp? = nil
    ) {
        let box = Box<Bool>(wrappedValue)
        self.box = box
        self.slot = Slot(
            kind: .flag, names: name, help: help, inversion: inversion,
            defaultDescription: inversion == nil ? nil : "\(wrappedValue)",
            setFlag: { on in
                box.value = on
                box.given = true
            }, wasGiven: box.givenReader)
    }
}

extension Declaration where Kind == ArgumentDeclaration, Value: ExpressibleByArgument {
    public init(wrappedValue: Value, help: ArgumentHelp? = nil) {
        (box, slot) = Box<Value>.one(.argument, help: help, default: wrappedValue)
    }

    public init(help: ArgumentHelp? = nil) {
        (box, slot) = Box<Value>.one(.argument, help: help, default: nil)
    }
}

extension Declaration where Kind == ArgumentDeclaration {
    public init<T: ExpressibleByArgument>(help: ArgumentHelp? = nil) where Value == T? {
        (box, slot) = Box<Value>.optional(.argument, help: help, default: nil)
    }

    public init<T: ExpressibleByArgument>(wrappedValue: [T] = [], help: ArgumentHelp? = nil) where Value == [T] {
        (box, slot) = Box<Value>.list(.argument, help: help, default: wrappedValue)
    }
}

/// The box and slot of an option or an argument (`kind`: they differ only in
/// names, which an argument has none of), for each kind of value it holds.
extension Box {
    /// One value: `value` the default, or nil when it must be given.
    static func one(
        _ kind: Slot.Kind, names: NameSpecification = .long, help: ArgumentHelp?, default value: Value?
    ) -> (Box, Slot) where Value: ExpressibleByArgument {
        let box = Box(value)
        return (
            box,
            Slot(
                kind: kind, names: names, help: help, required: value == nil,
                defaultDescription: value.map(describe), allValues: Value.allValueStrings,
                assign: box.reader(Value.self) { _, _, new in new }, wasGiven: box.givenReader)
        )
    }

    /// An optional value: nil unless given (or `value`).
    static func optional<T: ExpressibleByArgument>(
        _ kind: Slot.Kind, names: NameSpecification = .long, help: ArgumentHelp?, default value: T?
    ) -> (Box, Slot) where Value == T? {
        let box = Box(.some(value))
        return (
            box,
            Slot(
                kind: kind, names: names, help: help, defaultDescription: value.map(describe),
                allValues: T.allValueStrings,
                assign: box.reader(T.self) { _, _, new in .some(new) }, wasGiven: box.givenReader)
        )
    }

    /// A repeated option, or an argument that takes every remaining word.
    static func list<T: ExpressibleByArgument>(
        _ kind: Slot.Kind, names: NameSpecification = .long, help: ArgumentHelp?, default value: [T]
    ) -> (Box, Slot) where Value == [T] {
        let box = Box(value)
        return (
            box,
            Slot(
                kind: kind, names: names, help: help, repeats: true, allValues: T.allValueStrings,
                // The first one given replaces a default list.
                assign: box.reader(T.self) { old, given, new in (given ? old ?? [] : []) + [new] },
                wasGiven: box.givenReader)
        )
    }
}

/// The options of another `ParsableArguments` type, declared once and shared.
@propertyWrapper
public struct OptionGroup<Value: ParsableArguments>: GroupProvider {
    let box: Box<Value>

    public init() { box = Box(Value()) }

    public var wrappedValue: Value {
        get { box.parsedValue(else: "an @OptionGroup without a value") }
        nonmutating set { box.value = newValue }
    }

    var group: Any { box.value! as Any }
}
