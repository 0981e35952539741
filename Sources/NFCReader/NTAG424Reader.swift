import DoorCore

/// One tap of an NTAG 424 DNA as the reader saw it: facts only; the door's
/// decision is DoorCore's `TapDecision` (docs/ntag424.md "At the door"), on
/// the `TapFacts` the daemon's reader port hands it (`proof` is already the
/// core's type: nothing is converted on the way).
public struct NTAG424Tap: Equatable, Sendable {
    /// The UID from anticollision (a tag with Random ID on shows 08…).
    public var uid: TagUID
    /// The ATS without its length byte.
    public var ats: [UInt8]
    /// GetVersion's three parts (7 + 7 + 13 or 14 bytes: UID, batch, production week and year).
    /// Empty when the door's tap (`pollTap`) did not need it: a tag that showed the NTAG 424
    /// DNA's ATS and then proved the door's key for its UID (docs/ntag424-internals.md "The door's tap").
    public var version: [UInt8]
    /// The NDEF message (NLEN stripped), read before authenticating so the SUN mirror and counter are live.
    public var ndef: [UInt8]
    public var message: NDEFMessage?
    public var decodeError: String?

    /// `.authenticated` (AuthenticateEV2First with the given key, then GetCardUID
    /// in CommMode.Full: the real UID), `.refused` (91AE, or no proof it holds
    /// the key) or `.notTried` (no key given); never `.torn` (a tear is `PolledTap.torn`).
    public var proof: TapFacts.NTAG424Proof
}

extension NFCReader {
    /// ISOSelectFile by DF name D2760000850101 (the NDEF application).
    static let selectNDEFApplication: [UInt8] = [
        0x00, 0xA4, 0x04, 0x0C, 0x07, 0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01, 0x00,
    ]

    /// The NTAG 424 DNA's ATS without TL (NT4H2421Gx DS §8.1.1): T0 77 (FSCI 7, TA TB TC
    /// present), TA 77, TB 71, TC 02, historical byte 80.
    static let ntag424ATS: [UInt8] = [0x77, 0x77, 0x71, 0x02, 0x80]

    /// Activates an ISO-DEP target (InListPassiveTarget with automatic RATS),
    /// checks it is an NTAG 424 DNA (SAK bit 5, ATS, ISOSelect of the NDEF
    /// application, GetVersion), reads the NDEF file with ISOReadBinary — before
    /// authenticating: ISOReadBinary answers 6982 once authenticated, and only an
    /// unauthenticated read advances the SDM counter — then, when `key` gives
    /// one for this UID, runs AuthenticateEV2First with it and reads the card
    /// UID in CommMode.Full. Returns nil when no target answered.
    public func tapNTAG424(keyNumber: UInt8 = 0, key: (TagUID) -> [UInt8]?) throws(ReaderError) -> NTAG424Tap? {
        guard let (uid, ats, version) = try activateNTAG424() else { return nil }
        let ndef = try readNDEFFile(of: uid)
        var tap = NTAG424Tap(
            uid: uid, ats: Array(ats.dropFirst()), version: version, ndef: ndef, message: nil, decodeError: nil,
            proof: .notTried)
        do { tap.message = try NDEFMessage.decode(ndef) } catch { tap.decodeError = "\(error)" }
        if let k = key(uid) { tap.proof = try authenticate(keyNumber: keyNumber, key: k).proof }
        return tap
    }

    /// The door's tap of an ISO-DEP target that is already activated with its ATS
    /// (InAutoPoll's ISO/IEC 14443-4 type, or `activateISODEP`). When the ATS is the NTAG
    /// 424 DNA's, GetVersion waits: ISOSelect of the NDEF application, the NDEF file, EV2
    /// with `key` and GetCardUID, and GetVersion only when the tag did not prove the key
    /// (so a card that only looks like a 424 is still told apart, as `tapNTAG424` tells
    /// it). Any other ATS gets `tapNTAG424`'s order: GetVersion before anything is read.
    /// Throws `.notNTAG424` for a target that is not one.
    func tapActivatedNTAG424(uid: TagUID, ats: [UInt8], keyNumber: UInt8 = 0, key: (TagUID) -> [UInt8]?)
        throws(ReaderError) -> NTAG424Tap
    {
        let looksLike424 = Array(ats.dropFirst()) == Self.ntag424ATS
        guard try apdu(Self.selectNDEFApplication).sw == 0x9000 else {
            throw .notNTAG424("no NDEF application (ISOSelectFile D2760000850101 refused)")
        }
        var version: [UInt8] = []
        if !looksLike424 { version = try identifyNTAG424() }
        let ndef = try readNDEFFile(of: uid)
        var tap = NTAG424Tap(
            uid: uid, ats: Array(ats.dropFirst()), version: version, ndef: ndef, message: nil, decodeError: nil,
            proof: .notTried)
        do { tap.message = try NDEFMessage.decode(ndef) } catch { tap.decodeError = "\(error)" }
        var sessionOpened = false
        if let k = key(uid) { (tap.proof, sessionOpened) = try authenticate(keyNumber: keyNumber, key: k) }
        // A tag that proved the door's key for its UID needs no GetVersion; one that opened a
        // session but failed GetCardUID is judged as a 424 that failed its proof. Otherwise
        // (no key, or the key refused: no session) GetVersion still tells a 424 from another card.
        if looksLike424 && !sessionOpened { tap.version = try identifyNTAG424() }
        return tap
    }

    /// Activation with automatic RATS (on since `open`), then the checks that make it an
    /// NTAG 424 DNA: SAK bit 5 and an ATS, the NDEF application, GetVersion. nil when no
    /// target answered.
    func activateNTAG424() throws(ReaderError) -> (uid: TagUID, ats: [UInt8], version: [UInt8])? {
        guard let (uid, ats) = try activateISODEP() else { return nil }
        guard try apdu(Self.selectNDEFApplication).sw == 0x9000 else {
            throw .notNTAG424("no NDEF application (ISOSelectFile D2760000850101 refused)")
        }
        return (uid, ats, try identifyNTAG424())
    }

    /// InListPassiveTarget with automatic RATS: the UID and the ATS (TL first) of an
    /// ISO/IEC 14443-4 target. nil when no target answered.
    func activateISODEP() throws(ReaderError) -> (uid: TagUID, ats: [UInt8])? {
        // The driver's fAutomaticRATS is on from `open` (libnfc keeps it and sends no
        // SetParameters when it is already so).
        try setAutomaticRATS(true)
        // InListPassiveTarget: MaxRetries is finite (open()), so the chip answers within its own bound.
        let rx = try command([0x4A, 0x01, 0x00], timeoutMs: Self.exchangeTimeoutMs + Self.hostMarginMs)
        guard let count = rx.first else { throw fail(.io("empty InListPassiveTarget answer")) }
        guard count > 0 else { return nil }
        // NbTg, Tg, SENS_RES (2), SEL_RES, NFCIDLength, NFCID1, ATS (TL counts itself).
        guard rx.count >= 6, case let n = Int(rx[5]), rx.count >= 6 + n, [4, 7, 10].contains(n) else {
            throw fail(.io("bad target data in InListPassiveTarget answer"))
        }
        let uid = TagUID(Array(rx[6..<(6 + n)]))
        let ats = Array(rx[(6 + n)...])
        guard rx[4] & 0x20 != 0, let tl = ats.first, Int(tl) == ats.count, tl >= 1 else {
            throw .notNTAG424("SAK \(Hex.encode([rx[4]])) without ISO/IEC 14443-4 (no ATS)")
        }
        return (uid, ats)
    }

    /// GetVersion, unauthenticated: its three parts, which must be an NTAG 424 DNA's
    /// (vendor NXP 04h, type 04h).
    private func identifyNTAG424() throws(ReaderError) -> [UInt8] {
        let version = try getVersion()
        guard version.count >= 27, version[0] == 0x04, version[1] == 0x04 else {
            throw .notNTAG424("GetVersion answered \(Hex.encode(version))")
        }
        return version
    }

    /// One APDU; its data and status word.
    func apdu(_ command: [UInt8]) throws(ReaderError) -> (data: [UInt8], sw: UInt16) {
        let r = try exchange(command)
        guard r.count >= 2 else { throw fail(.io("R-APDU of \(r.count) bytes")) }
        return (Array(r.dropLast(2)), UInt16(r[r.count - 2]) << 8 | UInt16(r[r.count - 1]))
    }

    static func native(_ ins: UInt8, _ body: [UInt8]) -> [UInt8] {
        [0x90, ins, 0, 0] + (body.isEmpty ? [] : [UInt8(body.count)] + body) + [0x00]
    }

    private func getVersion() throws(ReaderError) -> [UInt8] {
        var out: [UInt8] = []
        var r = try apdu(Self.native(0x60, []))
        for _ in 0..<2 {
            guard r.sw == 0x91AF else { throw .notNTAG424("GetVersion answered \(String(r.sw, radix: 16))") }
            out += r.data
            r = try apdu(Self.native(0xAF, []))
        }
        guard r.sw == 0x9100 else { throw .notNTAG424("GetVersion answered \(String(r.sw, radix: 16))") }
        return out + r.data
    }

    /// The NDEF file E104's message. A tag read before (`uid` given) is read in one
    /// ISOReadBinary of NLEN and the message together, as long as its message was last
    /// time; otherwise NLEN first. The rest follows in reads of at most 128 bytes (one
    /// PN532 frame each). A stale length costs one more read, never a wrong message.
    func readNDEFFile(of uid: TagUID? = nil) throws(ReaderError) -> [UInt8] {
        guard try apdu([0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x04]).sw == 0x9000 else {
            throw .notNTAG424("no NDEF file E104")
        }
        let first = min(128, max(2, uid.flatMap { isoDEPReadHints[$0] } ?? 2))
        let head = try apdu([0x00, 0xB0, 0x00, 0x00, UInt8(first)])
        guard head.sw == 0x9000, head.data.count == first else {
            throw .status("ISOReadBinary \(String(head.sw, radix: 16, uppercase: true))")
        }
        let length = Int(head.data[0]) << 8 | Int(head.data[1])
        guard length <= 254 else { throw .io("NLEN \(length) exceeds the 256-byte NDEF file") }
        var out = Array(head.data[2..<min(first, 2 + length)])
        while out.count < length {
            let offset = 2 + out.count, chunk = min(128, length - out.count)
            let r = try apdu([0x00, 0xB0, UInt8(offset >> 8), UInt8(offset & 0xFF), UInt8(chunk)])
            guard r.sw == 0x9000, r.data.count == chunk else {
                throw .status("ISOReadBinary \(String(r.sw, radix: 16, uppercase: true))")
            }
            out += r.data
        }
        if let uid { rememberISODEP(uid, bytes: 2 + length) }
        return out
    }

    /// AuthenticateEV2First (DoorCore's reader half): the session, or why the tag refused.
    func openSession(keyNumber: UInt8, key: [UInt8]) throws(ReaderError) -> Result<NTAG424.Session, Refusal> {
        let r1 = try apdu(Self.native(0x71, [keyNumber, 0x00]))
        guard r1.sw == 0x91AF else {
            return .failure(Refusal("AuthenticateEV2First answered \(String(r1.sw, radix: 16))"))
        }
        do {
            let rndA = try Crypto.randomBytes(16)
            let step = try NTAG424.EV2.readerResponse(key: key, encryptedRndB: r1.data, rndA: rndA)
            let r2 = try apdu(Self.native(0xAF, step.message))
            guard r2.sw == 0x9100 else {
                return .failure(Refusal("the tag refused the key (\(String(r2.sw, radix: 16)))"))
            }
            do {
                return .success(
                    try NTAG424.EV2.readerFinishFirst(
                        key: key, keyNumber: keyNumber, rndA: rndA, rndB: step.rndB, answer: r2.data
                    ).session)
            } catch {
                return .failure(Refusal("\(error)", tagAccepted: true))
            }
        } catch let e as ReaderError {
            throw e
        } catch {
            return .failure(Refusal("\(error)"))
        }
    }

    struct Refusal: Error {
        var reason: String
        /// The tag answered AuthenticateEV2First's second part with 9100 (it holds a
        /// session, though the reader could not verify its answer).
        var tagAccepted = false
        init(_ reason: String, tagAccepted: Bool = false) {
            self.reason = reason
            self.tagAccepted = tagAccepted
        }
    }

    /// AuthenticateEV2First, then GetCardUID in CommMode.Full; the proof, and whether the
    /// tag accepted the authentication (it then holds a session).
    func authenticate(keyNumber: UInt8, key: [UInt8]) throws(ReaderError) -> (
        proof: TapFacts.NTAG424Proof, session: Bool
    ) {
        var session: NTAG424.Session
        switch try openSession(keyNumber: keyNumber, key: key) {
        case .success(let s): session = s
        case .failure(let r): return (.refused(r.reason), r.tagAccepted)
        }
        do {
            let body = try session.sealCommand(ins: 0x51, header: [], data: [], mode: .full)
            let r3 = try apdu(Self.native(0x51, body))
            guard r3.sw == 0x9100 else { return (.refused("GetCardUID answered \(String(r3.sw, radix: 16))"), true) }
            let cardUID = try session.openResponse(r3.data, status: 0x00, mode: .full)
            guard cardUID.count == 7 else { return (.refused("GetCardUID gave \(cardUID.count) bytes"), true) }
            return (.authenticated(cardUID: cardUID), true)
        } catch let e as ReaderError {
            throw e
        } catch let e as NTAG424.Failure {
            return (.refused("\(e)"), true)
        } catch {
            throw .io("\(error)")
        }
    }
}
