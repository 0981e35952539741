/// A tag's hardware UID (7 bytes for NTAG21x; 4 or 10 for other type A tags).
public struct TagUID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    /// Parses hex (either case, optional ':' separators); nil when not 4, 7
    /// or 10 bytes, nor a card number's registry key (`CardNumber.registryKey`)
    /// nor a PIN-only code's (`PINCode`).
    public init?(hex: String) {
        let clean = hex.filter { $0 != ":" }
        guard let b = Hex.decode(clean) else { return nil }
        guard [4, 7, 10].contains(b.count) || CardNumber(registryKey: TagUID(b)) != nil || PINCode.isKey(TagUID(b))
        else { return nil }
        bytes = b
    }
    /// A tag's UID as a reader of NFC tags gives it (4, 7 or 10 bytes), not a
    /// card number's or a PIN-only code's registry key: only these travel in
    /// the fleet's documents, which older doors parse as such.
    public var isNFC: Bool { [4, 7, 10].contains(bytes.count) }
    /// The card number this key names, when it is a card's (not an NFC UID).
    public var card: CardNumber? { CardNumber(registryKey: self) }
    /// Uppercase hex, no separators (the form docs/formats.md §4 signs).
    public var hex: String { Hex.encode(bytes, uppercase: true) }
    public var description: String { hex }
    public static func < (a: TagUID, b: TagUID) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}
