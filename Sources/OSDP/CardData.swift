import DoorCore

/// The card number a reader's card reply carries (issue 35), as the door keys it: osdp_RAW's
/// bits (`CardNumber(bits:bitCount:)`) or osdp_FMT's characters (`CardNumber(formatted:)`, an
/// ASCII card number such as `12345678`; the key tag `CB` keeps it apart from every bit frame,
/// so an FMT number never opens for a RAW frame of the same bytes, nor the other way round).
/// nil for a reply the door cannot key: more than 256 bits, padding that is not zero, an FMT
/// reply that is empty, longer than 32 characters, or not printable ASCII (a control
/// character, a space, a byte past 0x7E) — logged and dropped by the daemon, nothing opens.
public enum CardData {
    public static func number(raw card: CardRead) -> CardNumber? {
        CardNumber(bits: card.bits, bitCount: Int(card.bitCount))
    }

    public static func number(formatted characters: [UInt8]) -> CardNumber? {
        CardNumber(formatted: characters)
    }
}

extension ControlPanel.Event {
    /// The card number of a `.card` or `.cardFormatted` event (nil for any other, or one the
    /// door cannot key).
    public var cardNumber: CardNumber? {
        switch self {
        case .card(let read): return CardData.number(raw: read)
        case .cardFormatted(_, let characters): return CardData.number(formatted: characters)
        default: return nil
        }
    }
}
