/// Every reason the door denies a tap, in one place (issue 34 Move A). The
/// `reason` is the audit row's and the event's `reason` on the wire, byte for
/// byte what the door wrote before this enum existed (tests and docs quote
/// them: docs/ntag424.md "Denials", docs/policy.md, docs/mqtt.md).
///
/// Who gives which: the tap decision (`TapDecision`) gives the credential's
/// and the registry's; the store's answers (`StoreAnswer`) give
/// `counterReplay`, `policy(.noUsesLeft)` and `registryUnavailable`; the door
/// machine gives `lockedOut`, `lockdown`, `unknownAction` and `notApproved`.
public enum Denial: Equatable, Hashable, Sendable {
    /// No NDEF, and not an enrolled fob.
    case blank
    /// Content that is not ours (a web link, a bank card), not an enrolled fob.
    case notOurs
    /// A SUN URL on a tag that is not an NTAG 424 DNA: a copy of one's NDEF.
    case sunCopy
    /// A sticker in our format that did not verify (docs/formats.md §4): its verdict's code.
    case sticker(StickerVerdict.Reason)
    /// Revoked by UID, or (v1) by the sticker's signature.
    case revoked
    /// Past the registry row's `valid_until` (judged no earlier than the clock floor).
    case expired
    /// A v2 sticker whose UID the registry does not hold.
    case notIssued
    /// A registry row that is not active: `tag_pending`, `tag_revoked`, `tag_failed`.
    case tagState(RegistryState)
    /// The store could not be read or written: fail closed.
    case registryUnavailable
    /// The tag is authentic but its action does not list its kind in `credentials`.
    case credentialNotAllowed
    /// An NTAG 424 DNA that did not prove the key the door diversified for its UID.
    case authFailed
    /// A SUN read counter not above the last one the door accepted for that UID.
    case counterReplay
    /// An NTAG 424 DNA the registry does not hold as one of ours.
    case unknownTag
    /// The SUN URL does not decrypt or its MAC does not hold with the door's keys.
    case sunInvalid
    /// GetCardUID or the SUN's PICCData name another UID than anticollision did.
    case uidMismatch
    /// The tag left the field before the tap finished (not counted toward lockout).
    case tagLost
    /// The row's (or the grant's) action is not configured.
    case unknownAction
    /// Schedules, a guest pass's window and uses (docs/policy.md).
    case policy(AccessPolicy.Denial)
    /// The door machine's: the tag (or every tag) is locked out.
    case lockedOut
    /// The door machine's: lockdown mode.
    case lockdown
    /// The door machine's: an approval was denied, timed out or cancelled.
    case notApproved
    /// A keypad entry that is no card's PIN and no code (issue 35); counted
    /// toward the reader's keypad lockout (`KeypadDesk`), not the door's.
    case wrongPIN
    /// A card that needs its PIN, and none came on its reader in time.
    case pinTimeout
    /// A second entry without an exit under `passback = "hard"` (issue 36, `Passback`).
    case passback

    /// The wire string (audit `reason`, MQTT/NATS event `reason`).
    public var reason: String {
        switch self {
        case .blank: return "blank"
        case .notOurs: return "not_ours"
        case .sunCopy: return "sun_copy"
        case .sticker(let r): return r.rawValue
        case .revoked: return "revoked"
        case .expired: return "expired"
        case .notIssued: return "not_issued"
        case .tagState(let s): return "tag_\(s.rawValue)"
        case .registryUnavailable: return "registry_unavailable"
        case .credentialNotAllowed: return "credential_not_allowed"
        case .authFailed: return "auth_failed"
        case .counterReplay: return "counter_replay"
        case .unknownTag: return "unknown_tag"
        case .sunInvalid: return "sun_invalid"
        case .uidMismatch: return "uid_mismatch"
        case .tagLost: return "tag_lost"
        case .unknownAction: return "unknown_action"
        case .policy(let d): return d.rawValue
        case .lockedOut: return "locked_out"
        case .lockdown: return "lockdown"
        case .notApproved: return "not_approved"
        case .wrongPIN: return "wrong_pin"
        case .pinTimeout: return "pin_timeout"
        case .passback: return "passback"
        }
    }

    /// Whether a tap denied for this counts toward its UID's lockout: not a
    /// blank or foreign tag, nor an authentic credential at the wrong time or
    /// for the wrong action (not an attack), nor a tear.
    public var countsTowardLockout: Bool {
        switch self {
        case .blank, .notOurs, .credentialNotAllowed, .policy, .tagLost: return false
        case .lockedOut, .lockdown, .notApproved: return false
        // The keypad counts wrong PINs per reader (`KeypadDesk`): a flood on one
        // reader must not lock the door's other readers or its cards.
        case .wrongPIN, .pinTimeout: return false
        // An authentic credential that did not leave: not an attack.
        case .passback: return false
        default: return true
        }
    }

    /// A failed proof — a forged or copied sticker, a 424 that did not prove
    /// its key, a SUN that does not verify or is replayed, a copy of a SUN.
    /// Only these count toward the global lockout (docs/security.md "L8"):
    /// anyone can tap unknown, revoked or expired tags (a factory NTAG 424 is
    /// `unknown_tag`), and ten of them must not lock every holder out.
    public var isFailedProof: Bool { Self.failedProofReasons.contains(reason) }

    /// The wire strings of the failed proofs (a verdict carries its reason as text).
    public static let failedProofReasons: Set<String> = [
        Denial.sticker(.badSignature).reason, Denial.sticker(.uidMismatch).reason,
        Denial.sticker(.v1NotAllowed).reason, Denial.authFailed.reason, Denial.sunInvalid.reason,
        Denial.counterReplay.reason, Denial.sunCopy.reason,
    ]

    /// The verdict that denies a tap for this reason, counted as `countsTowardLockout` says.
    public var verdict: AccessVerdict { .deny(reason: reason, countsTowardLockout: countsTowardLockout) }
}

/// The grant reasons a tap's decision gives besides a sticker's own
/// (`valid_v1`, `valid_v2`).
public enum GrantReason {
    /// An NTAG 424 DNA that proved its key (EV2).
    public static let ntag424 = "ntag424"
    /// A `uid` fob: it opened, but on its UID alone.
    public static let weakCredential = "weak_credential"
    /// An NTAG 424 DNA opened by its SUN URL alone (the `"ntag424-sun"` tier):
    /// no proof of the chip's key, so pre-play opens too.
    public static let validSUNOnly = "valid_sun_only"
    /// A card number read over OSDP Secure Channel, for an action that lists `"osdp"` (issue 35).
    public static let osdpSecureChannel = "osdp_secure_channel"
    /// A card whose action lists `"card+pin"`, opened with its PIN (issue 35).
    public static let cardPIN = "card_pin"
    /// A PIN-only code (issue 35).
    public static let pin = "pin"
    /// A tap an approver let in (docs/policy.md "Approval").
    public static let approved = "approved"
    /// A second entry without an exit under `passback = "soft"`: opened, audited (issue 36).
    public static let passback = "passback"
}

/// The reason strings as they were named before `Denial` (tests and the
/// fuzz targets quote them): each is `Denial`'s or `GrantReason`'s.
public enum TapDenial {
    public static let credentialNotAllowed = Denial.credentialNotAllowed.reason
    public static let authFailed = Denial.authFailed.reason
    public static let counterReplay = Denial.counterReplay.reason
    public static let unknownTag = Denial.unknownTag.reason
    public static let sunInvalid = Denial.sunInvalid.reason
    public static let uidMismatch = Denial.uidMismatch.reason
    public static let sunCopy = Denial.sunCopy.reason
    public static let tagLost = Denial.tagLost.reason
    public static let registryUnavailable = Denial.registryUnavailable.reason
    public static let weakCredential = GrantReason.weakCredential
    public static let validSUNOnly = GrantReason.validSUNOnly
}
