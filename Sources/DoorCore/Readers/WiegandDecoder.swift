/// The Wiegand protocol, decoded from the edges of its two lines (issue 35):
/// pure, no clock read — the caller gives each edge its kernel timestamp and
/// says when no edge came for the frame gap (`end`).
///
/// Both lines idle high. A bit is a low pulse (about 50 µs) on D0 for a 0 or
/// on D1 for a 1, bits about 2 ms apart; a frame ends when no pulse comes for
/// `frameGap` (25–100 ms: ESPHome waits 100 ms, the Arduino Wiegand library
/// esp-rfid uses 25 ms). A frame is:
/// - 26, 34 or 37 bits: a card (`CardNumber`), its two parity bits checked
///   (H10301, H10306, H10304; a parity that does not hold is dropped);
/// - 4 bits: a key, 0–9, 10 `*`, 11 `#` (ESPHome's "0123456789*#");
/// - 8 bits: a key whose high nibble is the low nibble inverted;
/// - any other length of 24 bits or more: a card's raw bits (readers that
///   send a UID without parity, 32 or 56 bits);
/// - anything else, or both lines low at once: noise, dropped and said so.
public struct WiegandDecoder: Sendable {
    public enum Line: Sendable { case d0, d1 }

    public enum Frame: Equatable, Sendable {
        case card(CardNumber)
        case key(KeypadKey)
        /// Dropped: its length and why.
        case invalid(bits: Int, reason: String)
    }

    /// The shortest and longest frame gap the door takes.
    public static let frameGaps: ClosedRange<Duration> = .milliseconds(25) ... .milliseconds(100)

    public let frameGap: Duration
    /// The card frame length the reader is set to send (`[[readers]] bits`: 26, 34 or 37);
    /// nil: any (the named formats parity-checked, other lengths of 24 bits or more raw).
    public let cardBits: Int?
    /// The keypad burst the reader is set to send (`[[readers]] keypad_burst`: 4 or 8); nil: both.
    public let keypadBurst: Int?
    private var bits: [Bool] = []
    private var lastEdge: UInt64?
    private var low: (d0: Bool, d1: Bool) = (false, false)
    private var collided = false
    private var overflowed = false
    private var lastLine: Line?

    /// `frameGap` is clamped to 25–100 ms. With `cardBits` a card frame ends
    /// at its last bit (no wait for the gap) and one of another length is
    /// dropped and said so; with `keypadBurst` a key burst of the other size
    /// is (noise on the wires, or a reader set otherwise).
    public init(frameGap: Duration = .milliseconds(50), cardBits: Int? = nil, keypadBurst: Int? = nil) {
        self.frameGap = min(max(frameGap, Self.frameGaps.lowerBound), Self.frameGaps.upperBound)
        self.cardBits = cardBits
        self.keypadBurst = keypadBurst
    }

    /// One edge: `line` went low (`low` true) or back high, at `nanoseconds`
    /// (the kernel's timestamp of the edge). A falling edge is a bit; one that
    /// comes `frameGap` or more after the last edge first ends the frame
    /// before it. Returns the frames that ended.
    public mutating func edge(_ line: Line, low isLow: Bool, at nanoseconds: UInt64) -> [Frame] {
        var out: [Frame] = []
        if let last = lastEdge, nanoseconds >= last, Duration.nanoseconds(nanoseconds - last) >= frameGap {
            out += end()
        }
        lastEdge = nanoseconds
        switch line {
        case .d0: low.d0 = isLow
        case .d1: low.d1 = isLow
        }
        guard isLow else { return out }
        if low.d0 && low.d1 { collided = true }
        if bits.count < CardNumber.maxBits { bits.append(line == .d1) } else { overflowed = true }
        // A reader set to one card length: its card ends with its last bit, not a gap later
        // (a key burst, shorter, still waits for the gap: it may be a card's first bits).
        if let cardBits, bits.count == cardBits, cardBits > 8 { out += end() }
        return out
    }

    /// A bit's falling edge alone (the reader asks the kernel for falling
    /// edges only: its queue of 16 events then holds 16 bits, not 8): the
    /// line went low and is taken as back high at once. Two pulses on
    /// different lines closer than `collisionWindow` are both lines low at once.
    public mutating func pulse(_ line: Line, at nanoseconds: UInt64) -> [Frame] {
        if let last = lastEdge, let other = lastLine, other != line, nanoseconds >= last,
            nanoseconds - last < Self.collisionWindow
        {
            collided = true
        }
        let out = edge(line, low: true, at: nanoseconds) + edge(line, low: false, at: nanoseconds)
        lastLine = line
        return out
    }

    /// Pulses on D0 and D1 this close (ns) overlap: a 50 µs pulse every 2 ms never does.
    public static let collisionWindow: UInt64 = 100_000

    /// No edge came for the frame gap: the frame so far ends (nothing when none began).
    public mutating func end() -> [Frame] {
        defer {
            bits = []
            collided = false
            overflowed = false
            low = (false, false)
            lastLine = nil
        }
        guard !bits.isEmpty else { return [] }
        if collided { return [.invalid(bits: bits.count, reason: "both lines low at once")] }
        if overflowed { return [.invalid(bits: bits.count, reason: "longer than \(CardNumber.maxBits) bits")] }
        if bits.count == 4 || bits.count == 8 {
            if let keypadBurst, keypadBurst != bits.count {
                return [.invalid(bits: bits.count, reason: "the keypad is set to \(keypadBurst)-bit bursts")]
            }
        } else if let cardBits, cardBits != bits.count, bits.count >= 24 {
            return [.invalid(bits: bits.count, reason: "the reader is set to \(cardBits)-bit cards")]
        }
        return [Self.frame(bits)]
    }

    /// Whether a frame is in progress (the caller then waits `frameGap` for its end).
    public var inFrame: Bool { !bits.isEmpty }

    static func frame(_ bits: [Bool]) -> Frame {
        let value = bits.prefix(64).reduce(UInt64(0)) { $0 << 1 | ($1 ? 1 : 0) }
        switch bits.count {
        case 4:
            guard let key = KeypadKey(wiegand: UInt8(value)) else {
                return .invalid(bits: 4, reason: "key value \(value)")
            }
            return .key(key)
        case 8:
            let high = UInt8(value >> 4), low = UInt8(value & 0xF)
            guard high == ~low & 0xF else { return .invalid(bits: 8, reason: "key nibbles do not match") }
            guard let key = KeypadKey(wiegand: low) else { return .invalid(bits: 8, reason: "key value \(low)") }
            return .key(key)
        default:
            guard let card = CardNumber(bitString: bits) else { return .invalid(bits: bits.count, reason: "no card") }
            if WiegandFormat(bitCount: bits.count) != nil {
                return card.format != nil ? .card(card) : .invalid(bits: bits.count, reason: "parity")
            }
            guard bits.count >= 24 else { return .invalid(bits: bits.count, reason: "too short for a card") }
            return .card(card)
        }
    }
}
