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
    /// An ISO-DEP target that left during the tap (a tear): its UID, nothing proved.
    case torn(TagUID)

    public var uid: TagUID {
        switch self {
        case .type2(let t): return t.uid
        case .ntag424(let t): return t.uid
        case .otherISODEP(let u, _): return u
        case .torn(let u): return u
        }
    }
    /// Whether presence is checked by activation (`isPresentISODep`) rather than a Type 2 READ.
    public var isISODEP: Bool {
        if case .type2 = self { return false }
        return true
    }
}

extension NFCReader {
    /// Polls once, and activates what it finds once: InAutoPoll for the generic passive
    /// 106 kbit/s type (00h: any ISO/IEC 14443 type A target), which the chip activates a
    /// single time and sends RATS only when the target's SAK says ISO/IEC 14443-4
    /// (fAutomaticRATS, on since `open`). So a sticker is activated and read as before, and an
    /// NTAG 424 DNA comes with its ATS and is tapped at once (`tapActivatedNTAG424`: its NDEF
    /// read first, then AuthenticateEV2First with the key `ntag424Key` gives for its UID and
    /// GetCardUID); one that answered without its ATS is activated again with RATS first.
    /// Anything else is read as a Type 2 tag, as `poll()` does. A target that is not type A
    /// (a phone the chip activated for NFC-DEP) gets the old poll, 20h then 10h, which
    /// never sends ATR_REQ. nil when no tag is in the field.
    ///
    /// (Until 2026-12: 20h, then 10h. A sticker does not fit 20h, so the chip halted it
    /// and woke and activated it again for 10h: two activations a sticker, ~4 ms more air
    /// and frames by pn532-sim's model; UM0701-02 does not say whether a real chip reuses
    /// the first. With 00h there is one polling type, so one activation on any firmware.)
    public func pollTap(ntag424Key: (TagUID) -> [UInt8]?) throws(ReaderError) -> PolledTap? {
        var answer = try autoPoll(types: [0x00])
        if answer.typeA == nil && !answer.otherTypes.isEmpty { answer = try autoPoll(types: [0x20, 0x10]) }
        guard let found = answer.typeA else { return nil }
        if found.sak & 0x20 == 0 && found.sak & 0x08 != 0 {
            // MIFARE Classic (SAK 08/18/09…): no NDEF to read without its sector
            // keys; a `uid` fob at most (docs/ntag424.md). Untested: the emulator has no Classic.
            return .type2(
                TagRead(
                    uid: found.uid, type: nil, capabilityContainer: nil, ndef: nil, message: nil,
                    decodeError: "MIFARE Classic (SAK \(Hex.encode([found.sak]))): not read", bytesRead: 0))
        }
        guard found.sak & 0x20 != 0 else { return .type2(try read(uid: found.uid)) }
        do {
            let uid: TagUID, ats: [UInt8]
            if let a = found.ats {
                (uid, ats) = (found.uid, a)
            } else {
                // It answered InAutoPoll but not the activation with RATS: it left.
                guard let again = try activateISODEP() else { return .torn(found.uid) }
                (uid, ats) = again
            }
            return .ntag424(try tapActivatedNTAG424(uid: uid, ats: ats, key: ntag424Key))
        } catch .notNTAG424(let why) {
            return .otherISODEP(found.uid, why)
        } catch .tagLost {
            return .torn(found.uid)
        }
    }
}
