import DoorCore

/// One tap as the door reads it (docs/ntag424.md): an NTAG21x's NDEF, or an
/// NTAG 424 DNA's facts, or an ISO-DEP card that is not a 424.
public enum PolledTap: Equatable, Sendable {
    /// A Type 2 tag (NTAG21x and other MIFARE Ultralight-like tags, or a
    /// MIFARE Classic fob, which reads as one without NDEF).
    case type2(TagRead)
    /// An NTAG 424 DNA: its NDEF read before authenticating, and the proof.
    case ntag424(NTAG424Tap)
    /// SAK bit 5 set but not an NTAG 424 DNA (a bank card, a DESFire fob): its UID, and why.
    case otherISODEP(TagUID, String)

    public var uid: TagUID {
        switch self {
        case .type2(let t): return t.uid
        case .ntag424(let t): return t.uid
        case .otherISODEP(let u, _): return u
        }
    }
    /// Whether presence is checked with an APDU (ISO-DEP) rather than a Type 2 READ.
    public var isISODEP: Bool {
        if case .type2 = self { return false }
        return true
    }
}

extension NFCReader {
    /// Polls once. A target whose SAK says ISO/IEC 14443-4 is re-activated
    /// with automatic RATS and, when it is an NTAG 424 DNA, tapped with
    /// `tapNTAG424` (its NDEF read first, then AuthenticateEV2First with the
    /// key `ntag424Key` gives for its UID and GetCardUID); anything else is
    /// read as a Type 2 tag, as `poll()` does. nil when no tag is in the field.
    public func pollTap(ntag424Key: (TagUID) -> [UInt8]?) throws(ReaderError) -> PolledTap? {
        guard let found = try autoPoll() else { return nil }
        guard found.sak & 0x20 != 0 else { return .type2(try read(uid: found.uid)) }
        do {
            guard let tap = try tapNTAG424(key: ntag424Key) else { return nil }
            return .ntag424(tap)
        } catch .notNTAG424(let why) {
            return .otherISODEP(found.uid, why)
        }
    }

    /// Whether the activated ISO-DEP target still answers: ISOSelectFile of
    /// the NDEF application (any status word is an answer; it touches no
    /// file, so it advances no SDM read counter).
    public func isPresentISODEP() throws(ReaderError) -> Bool {
        do {
            _ = try apdu(Self.selectNDEFApplication)
            return true
        } catch .tagLost {
            return false
        } catch .nak {
            return false
        }
    }
}
