/// The kinds of credential a door can accept (issue 26, docs/ntag424.md),
/// named as the configuration's per-action `credentials = [...]` and the
/// registry's `issued_tag.kind` spell them.
public enum CredentialKind: String, Sendable, Hashable, CaseIterable, Comparable {
    /// An NTAG 424 DNA that proves its diversified AES key (AuthenticateEV2First) on every tap.
    case ntag424
    /// The SUN-only tier of an NTAG 424 DNA: its SUN URL alone (verified, counter
    /// fresh) opens, without AuthenticateEV2First. Weaker: pre-play (docs/ntag424.md
    /// "The SUN-only tier"). Opt-in; an action's kind, never a registry row's.
    case ntag424SUN = "ntag424-sun"
    /// A signed sticker bound to its tag's UID (docs/formats.md §4).
    case stickerV2 = "sticker-v2"
    /// A phone-written signed sticker (imported secret, no UID binding).
    case stickerV1 = "sticker-v1"
    /// A plain key fob or card known only by its UID: trivially cloned, opt-in.
    case uid
    /// A card number (`CardNumber`: a Wiegand frame, facility + number or raw
    /// bits) read by an outdoor reader over a line nobody authenticates — a
    /// Wiegand reader's D0/D1, an OSDP reader without Secure Channel. Weak
    /// (the number is sniffed off the wires or cloned from the card), opt-in,
    /// granted `weak_credential`. Also the registry row's kind of every
    /// enrolled card number (`gatewayctl tags enroll-card`), whichever reader reads it.
    case wiegand
    /// A card number read by an OSDP reader with Secure Channel up (issue 35):
    /// the line is authenticated and encrypted, the card itself no stronger
    /// than its number. An action's kind, never a registry row's.
    case osdp
    /// A card number (`wiegand` row) that opens only with its PIN typed on
    /// the same reader's keypad within the keypad's card window (issue 35).
    /// An action's kind, never a registry row's.
    case cardPIN = "card+pin"
    /// A PIN-only code (`gatewayctl pins add-code`), typed on an outdoor
    /// reader's keypad: a guest's, with a guest pass's window, uses and
    /// schedule. Also the registry row's kind of such a code.
    case pin

    /// What an action accepts when its configuration names no `credentials`:
    /// every sticker kind; `uid` and `ntag424-sun` only when asked for.
    public static let defaults: [CredentialKind] = [.ntag424, .stickerV2, .stickerV1]

    public static func < (a: CredentialKind, b: CredentialKind) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}
