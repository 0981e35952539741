/// A PIN typed on a reader's keypad or given to `gatewayctl pins` (issue 35):
/// 4 to 12 digits. It never prints (`description` is redacted), is not
/// `Equatable` (nothing compares PINs but `PINHash.matches`, in constant
/// time), and is stored only as its scrypt hash (`PINHash`).
public struct PIN: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// ASCII digits.
    let digits: [UInt8]
    public static let lengths = 4...12
    /// A PIN-only code opens without a card: at least this many digits (a
    /// keypad's lockout lets about 480 guesses a day through; 4 digits among
    /// ten codes fall in about two days, 6 in about six months).
    public static let minimumCodeLength = 6
    /// How many digits it has.
    public var length: Int { digits.count }

    /// nil unless 4–12 ASCII digits.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard Self.lengths.contains(bytes.count), bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        digits = bytes
    }

    /// From keypad digits (each 0–9).
    public init?(keys: [UInt8]) {
        guard Self.lengths.contains(keys.count), keys.allSatisfy({ $0 <= 9 }) else { return nil }
        digits = keys.map { $0 + 0x30 }
    }

    public var description: String { "PIN(redacted)" }
    public var debugDescription: String { description }
}

/// A stored PIN: scrypt(PIN, salt) under `cost`, 32 bytes, and whether it is
/// a duress PIN (it opens and raises a silent alarm).
public struct PINHash: Equatable, Hashable, Sendable {
    public var salt: [UInt8]
    public var hash: [UInt8]
    public var cost: Crypto.ScryptCost
    public var duress: Bool
    public init(salt: [UInt8], hash: [UInt8], cost: Crypto.ScryptCost = .pin, duress: Bool = false) {
        self.salt = salt
        self.hash = hash
        self.cost = cost
        self.duress = duress
    }

    /// Hashes `pin` with `salt` (16 bytes).
    public init(pin: PIN, salt: [UInt8], cost: Crypto.ScryptCost = .pin, duress: Bool = false) throws {
        self.init(
            salt: salt, hash: try Crypto.scrypt(password: pin.digits, salt: salt, cost: cost, length: 32), cost: cost,
            duress: duress)
    }

    /// Whether `pin` is this PIN: its hash under this salt and cost, compared in constant time.
    public func matches(_ pin: PIN) throws -> Bool {
        Crypto.constantTimeEqual(
            try Crypto.scrypt(password: pin.digits, salt: salt, cost: cost, length: hash.count), hash)
    }

    /// The derivation `pin` would have under this row's salt and cost (to try
    /// many rows sharing one salt with one derivation).
    public func derive(_ pin: PIN) throws -> [UInt8] {
        try Crypto.scrypt(password: pin.digits, salt: salt, cost: cost, length: hash.count)
    }
}

/// The registry key of a PIN-only code (issue 35): `C0DE` and 14 random
/// bytes — 16 bytes, never an NFC UID's length nor a card's — naming its
/// issued-tag row (kind `pin`: action, label, window, uses, schedule) and
/// its hash. `gatewayctl tags revoke|forget KEY` work on it as on a tag.
public enum PINCode {
    public static let tag: [UInt8] = [0xC0, 0xDE]
    public static func key(random: [UInt8]) -> TagUID? {
        guard random.count == 14 else { return nil }
        return TagUID(tag + random)
    }
    public static func isKey(_ uid: TagUID) -> Bool { uid.bytes.count == 16 && Array(uid.bytes.prefix(2)) == tag }
}
