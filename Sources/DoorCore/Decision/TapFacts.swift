/// One tap as the reader hands it to the core: the anticollision UID, the
/// NDEF message read (nil: none or unreadable), and for a tag that activated
/// as an NTAG 424 DNA what it proved.
public struct TapFacts: Equatable, Sendable {
    /// What an NTAG 424 DNA proved on this tap (docs/ntag424.md).
    public enum NTAG424Proof: Equatable, Sendable {
        /// AuthenticateEV2First with the door's key for this UID succeeded;
        /// GetCardUID (CommMode.Full) answered `cardUID`.
        case authenticated(cardUID: [UInt8])
        /// The tag refused the key, or could not show it holds it.
        case refused(String)
        /// Not tried (the door has no site key, or the tap skips EV2: `TapDecision.wantsEV2`).
        case notTried
        /// The tag left before the tap finished (a tear): nothing proved, nothing attempted.
        case torn
    }
    public var uid: TagUID
    public var message: NDEFMessage?
    /// Set when the tag is an NTAG 424 DNA: decided as one, not as a sticker.
    public var ntag424: NTAG424Proof?
    /// Set when an outdoor reader read a card number (issue 35): decided as
    /// one (`TapDecision.card`); `uid` is then the card's registry key.
    public var card: CardRead?
    /// The reader's name, when the door names its readers: every event of
    /// the tap names it (`TagPresentation.source`).
    public var reader: String?
    /// Set when a keypad entry matched a PIN-only code (`KeypadDesk`): `uid`
    /// is the code's key; decided as one (`TapDecision.pinCode`).
    public var pinCode: PINCodeMatch?
    /// Set at a door with an entry and an exit reader (issue 36): the
    /// reader's side and the credential's last passage (`Passback`).
    public var passage: PassageFacts?
    public init(uid: TagUID, message: NDEFMessage? = nil, ntag424: NTAG424Proof? = nil, reader: String? = nil) {
        self.uid = uid
        self.message = message
        self.ntag424 = ntag424
        self.reader = reader
    }
    /// A keypad entry that matched a PIN-only code, on `reader`.
    public init(code: PINCodeMatch, reader: String) {
        uid = code.key
        pinCode = code
        self.reader = reader
    }
    /// A card number an outdoor reader read.
    public init(card: CardRead) {
        uid = card.number.registryKey
        self.card = card
        reader = card.reader
    }
    /// The first URI record (a 424's: read before authenticating, its SUN mirror live).
    public var uri: String? { message?.records.lazy.compactMap { try? $0.uri() }.first }
}

/// A card number an outdoor reader read (issue 35), the reader that read it
/// and what its line proves.
public struct CardRead: Equatable, Sendable {
    /// How the number reached the door.
    public enum Link: String, Equatable, Sendable {
        /// A Wiegand reader's D0/D1 lines: anyone on the wires can send any number.
        case wiegand
        /// OSDP with Secure Channel up: the reader holds its key, the line is MAC'd and encrypted.
        case osdpSecure = "osdp-sc"
        /// OSDP without Secure Channel (a reader the configuration names insecure): as weak as Wiegand.
        case osdpPlain = "osdp-plain"
    }
    public var number: CardNumber
    public var reader: String
    public var link: Link
    public init(number: CardNumber, reader: String, link: Link) {
        self.number = number
        self.reader = reader
        self.link = link
    }
    /// The action kinds that accept this read, strongest first: `osdp` then
    /// `wiegand` over Secure Channel, `wiegand` alone otherwise.
    public var acceptedBy: [CredentialKind] { link == .osdpSecure ? [.osdp, .wiegand] : [.wiegand] }
}

/// A PIN-only code a keypad entry matched: its key and whether it is a duress code.
public struct PINCodeMatch: Equatable, Sendable {
    public var key: TagUID
    public var duress: Bool
    public init(key: TagUID, duress: Bool) {
        self.key = key
        self.duress = duress
    }
}

/// The secrets a tap is decided with, read by the runtime for the tap at hand.
public struct TapSecrets: Sendable {
    /// The NTAG 424 site master key as the store gave it.
    public enum SiteKey: Sendable {
        /// None yet (no 424 provisioned here): no 424 can prove a key.
        case none
        case key([UInt8])
        /// The store could not be read: a 424 tap is denied `registry_unavailable`.
        case unreadable
    }
    /// The sticker secrets (empty when unreadable: no sticker verifies).
    public var stickers: [StickerSecret]
    public var siteKey: SiteKey
    public init(stickers: [StickerSecret] = [], siteKey: SiteKey = .none) {
        self.stickers = stickers
        self.siteKey = siteKey
    }
}

/// What a decided tap still needs from the store before (or as) the door
/// acts on it; the machine asks for each (`DoorEffect.store`) where its
/// place is: the counter before anything else, the guest use where the door
/// would open (or ask for approval), `last_seen` with the tap's event.
public struct StoreNeeds: Equatable, Hashable, Sendable {
    /// An NTAG 424 DNA's SUN read counter, to be accepted (strictly above the
    /// last one, durably) before the tap counts as granted.
    public var sunCounter: UInt32?
    /// A guest pass (its row has `uses_left`): a use is taken, durably, before the relay.
    public var guestPass: Bool
    /// The tag's `last_seen` is saved (with the tap's audit row, after the relay).
    public var touchLastSeen: Bool
    public init(sunCounter: UInt32? = nil, guestPass: Bool = false, touchLastSeen: Bool = false) {
        self.sunCounter = sunCounter
        self.guestPass = guestPass
        self.touchLastSeen = touchLastSeen
    }
}

/// A store action the machine asks the runtime for (`DoorEffect.store`).
public enum StoreRequest: Equatable, Hashable, Sendable {
    /// Store the counter if it is above the last one accepted for the UID;
    /// answered `.sunCounter`.
    case acceptSUNCounter(TagUID, UInt32)
    /// Take one use of the guest pass; answered `.guestUse`.
    case takeGuestUse(TagUID)
    /// Save the tag's `last_seen` (with its next audit row, else on its own); no answer.
    case touchLastSeen(TagUID)
}

/// The store's answer to a `StoreRequest` (`DoorInput.storeAnswered`).
public enum StoreAnswer: Equatable, Hashable, Sendable {
    public enum Outcome: Equatable, Hashable, Sendable {
        /// Done, on disk.
        case done
        /// Refused: the counter is not above the last one; no use is left.
        case refused
        /// The store failed (a full disk, a locked database): fail closed.
        case failed
    }
    case sunCounter(TagUID, Outcome)
    case guestUse(TagUID, Outcome)
}
