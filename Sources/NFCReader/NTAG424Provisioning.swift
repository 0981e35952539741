import DoorCore

/// A tag the door has provisioned and then checked: its UID and the SUN
/// counter of the verifying read.
public struct NTAG424Provisioned: Equatable, Sendable {
    public var uid: TagUID
    public var counter: UInt32
    /// The key issue the tag now holds.
    public var issue: NTAG424.KeyIssue

    public init(uid: TagUID, counter: UInt32, issue: NTAG424.KeyIssue = .legacy) {
        self.uid = uid
        self.counter = counter
        self.issue = issue
    }
}

/// Which keys a provisioning may find on the tag and which it gives it
/// (docs/ntag424.md "Re-issuing a tag"). Never a key the chip chose: every
/// issue comes from the door.
public struct NTAG424IssuePlan: Sendable {
    /// The tag this job is for: any other UID gets nothing (checked before any key is sent).
    public var uid: TagUID?
    /// The issue the registry row holds, when this is a reissue: the tag's key 0
    /// at its version is authenticated with it (the real tag proves it).
    public var replacing: NTAG424.KeyIssue?
    /// The issue an earlier, torn attempt for this UID drew: taken again only
    /// when the chip proves (EV2) it holds one of its keys.
    public var resume: NTAG424.KeyIssue?
    /// Whether a chip whose key 0 is the factory key may take the new issue.
    /// False for the re-issue of a row that is active or pending: the tag must
    /// prove the row's key 0 (a factory chip claiming the UID gets nothing).
    public var factoryAllowed = true
    /// Draws (and durably stores) a fresh issue; called at most once, before
    /// the first key leaves the door, only when the chip is not resuming.
    public var fresh: @Sendable () throws -> NTAG424.KeyIssue

    public init(
        uid: TagUID? = nil, replacing: NTAG424.KeyIssue? = nil, resume: NTAG424.KeyIssue? = nil,
        fresh: @escaping @Sendable () throws -> NTAG424.KeyIssue
    ) {
        self.uid = uid
        self.replacing = replacing
        self.resume = resume
        self.fresh = fresh
    }

    /// Legacy keys (no salt, version 1): the keys a door gave before salts, for
    /// the reader's own tests and benches.
    public static var legacy: NTAG424IssuePlan { NTAG424IssuePlan(resume: .legacy, fresh: { .legacy }) }
}

extension NFCReader {
    /// Provisions the NTAG 424 DNA in the field, resuming where a torn earlier
    /// attempt stopped — each step is atomic on the tag, and GetFileSettings
    /// and GetKeyVersion say which are done:
    /// 1. the UID must be `plan.uid` (when given) before anything is sent;
    /// 2. the SUN template with ISOUpdateBinary, before authenticating (free write access);
    /// 3. AuthenticateEV2First with key 0: the factory key (version 0), the key of
    ///    the issue a reissue replaces, or of a torn attempt's issue — never a key
    ///    the door has not issued for this UID;
    /// 4. ChangeFileSettings: SDM on (the template's settings, which also take free write away);
    /// 5. the issue to give: the torn attempt's only when the chip proved one of its
    ///    keys (EV2), else a fresh one (`plan.fresh`, stored before any key leaves);
    /// 6. ChangeKey 1–4 (the CRC form, XORed with the key each holds), then key 0 (the session ends);
    /// 7. the field off and a new activation: an unauthenticated read whose SUN must
    ///    verify with the new keys, then AuthenticateEV2First with the new key 0 and
    ///    GetCardUID equal to the anticollision UID.
    /// Returns nil when no target answered. Throws `.wrongTag` for another UID,
    /// `.foreignContent` for a tag with keys or settings the door did not set;
    /// a tear surfaces as `.tagLost`.
    public func provisionNTAG424(
        masterKey: [UInt8], base: String, plan: NTAG424IssuePlan = .legacy
    ) throws(ReaderError) -> NTAG424Provisioned? {
        guard let (uid, _, _) = try activateNTAG424() else { return nil }
        if let wanted = plan.uid, wanted != uid { throw .wrongTag(expected: wanted, found: uid) }
        guard uid.bytes.count == 7 else { throw .notNTAG424("a \(uid.bytes.count)-byte UID (Random ID on?)") }
        let template = try crypto { try NTAG424.SUNTemplate(base: base) }
        func keys(_ issue: NTAG424.KeyIssue) throws(ReaderError) -> NTAG424.DoorKeys {
            try crypto { try NTAG424.DoorKeys(masterKey: masterKey, uid: uid.bytes, issue: issue) }
        }
        let zero = [UInt8](repeating: 0, count: 16)
        let old = try plan.replacing.map { issue throws(ReaderError) in (issue, try keys(issue)) }
        let resume = try plan.resume.map { issue throws(ReaderError) in (issue, try keys(issue)) }
        let version0 = try plain(0x64, [0x00], "GetKeyVersion")
        guard version0.count == 1 else { throw .io("GetKeyVersion gave \(version0.count) bytes") }
        let v0 = version0[0]
        // Key 0 as the tag holds it: factory, the replaced issue's, or the torn attempt's.
        let key0: [UInt8]
        var proven: (NTAG424.KeyIssue, NTAG424.DoorKeys)?
        if v0 == 0 {
            guard plan.factoryAllowed else {
                throw .foreignContent(
                    "key 0 is the factory key, but this re-issue needs the tag's current key 0 (reset it first)")
            }
            key0 = zero
        } else if let old, v0 == old.0.version {
            key0 = old.1[0]
        } else if let resume, v0 == resume.0.version {
            key0 = resume.1[0]
            proven = resume  // the session below proves it
        } else {
            throw .foreignContent("key 0 has version \(Hex.encode(version0))")
        }
        let settings = try plain(0xF5, [0x02], "GetFileSettings")
        guard settings.count >= 7 else { throw .io("GetFileSettings gave \(settings.count) bytes") }
        let wanted = [0x00] + template.settings[0..<3] + settings[4..<7] + template.settings[3...]
        let sdmDone = settings == wanted
        if !sdmDone {
            // Not ours yet, SDM off, write access free (Write or RW is E): a factory NDEF file.
            guard v0 == 0, settings[1] & 0x40 == 0, settings[3] & 0x0F == 0x0E || settings[2] >> 4 == 0x0E else {
                throw .foreignContent("NDEF file settings \(Hex.encode(settings))")
            }
            try writeTemplate(template.file)
        }
        var session = try keyZeroSession(key0)
        var versions: [UInt8] = [v0]
        for n in 1...4 {
            let v = try secure(&session, 0x64, header: [UInt8(n)], mode: .mac)
            guard v.count == 1 else { throw .io("GetKeyVersion \(n) gave \(v.count) bytes") }
            versions.append(v[0])
        }
        if proven == nil, let resume, versions.contains(resume.0.version) {
            // Keys of a torn attempt: taken again only if the chip proves it holds one.
            let n = versions.firstIndex(of: resume.0.version)!
            guard case .success = try openSession(keyNumber: UInt8(n), key: resume.1[n]) else {
                throw .foreignContent("key \(n) has the version of an attempt whose key it does not prove")
            }
            proven = resume
            session = try keyZeroSession(key0)
        }
        let target: (NTAG424.KeyIssue, NTAG424.DoorKeys)
        if let proven {
            target = proven
        } else {
            let issue: NTAG424.KeyIssue
            do { issue = try plan.fresh() } catch { throw .io("no key issue for \(uid.hex): \(error)") }
            target = (issue, try keys(issue))
        }
        if !sdmDone {
            _ = try secure(&session, 0x5F, header: [0x02], data: template.settings, mode: .full)
        }
        for n in 1...4 {
            let v = versions[n]
            if v == target.0.version { continue }
            let current: [UInt8]
            if v == 0 {
                current = zero
            } else if let old, v == old.0.version, v0 == old.0.version {
                // The replaced keys, only inside a session of the replaced key 0 (the tag proved it).
                current = old.1[n]
            } else {
                throw .foreignContent("key \(n) has version \(Hex.encode([v]))")
            }
            let data = try crypto {
                try NTAG424.changeKeyData(newKey: target.1[n], version: target.0.version, oldKey: current)
            }
            _ = try secure(&session, 0xC4, header: [UInt8(n)], data: data, mode: .full)
        }
        if v0 != target.0.version {
            let data = try crypto {
                try NTAG424.changeKeyData(newKey: target.1[0], version: target.0.version, oldKey: nil)
            }
            let body = try crypto { try session.sealCommand(ins: 0xC4, header: [0x00], data: data, mode: .full) }
            let r = try apdu(Self.native(0xC4, body))
            guard r.sw == 0x9100 else { throw .status("ChangeKey 0: \(String(r.sw, radix: 16, uppercase: true))") }
        }
        // Field off, a new activation: a tap as the door will see it.
        let keys = target.1
        _ = try command([0x32, 0x01, 0x00], timeoutMs: Self.exchangeTimeoutMs)
        guard let (again, _, _) = try activateNTAG424(), again == uid else { throw .tagLost }
        let ndef = try readNDEFFile(of: uid)
        guard let uri = try? NDEFMessage.decode(ndef).firstURI(), let sun = try? SUNURL.parse(uri),
            let verdict = try? sun.verify(
                metaReadKey: keys[NTAG424.DoorKeys.metaRead], fileReadKey: keys[NTAG424.DoorKeys.fileRead]),
            verdict.macOK, verdict.piccData.uid == uid.bytes, let counter = verdict.piccData.counter
        else { throw .notVerified("the provisioned tag's SUN read does not verify") }
        guard case .authenticated(let cardUID) = try authenticate(keyNumber: 0, key: keys[0]).proof,
            cardUID == uid.bytes
        else {
            throw .notVerified("the provisioned tag does not authenticate with its new key 0")
        }
        return NTAG424Provisioned(uid: uid, counter: counter, issue: target.0)
    }

    /// A session with key 0, or `.foreignContent` when the tag does not prove it.
    private func keyZeroSession(_ key: [UInt8]) throws(ReaderError) -> NTAG424.Session {
        switch try openSession(keyNumber: 0, key: key) {
        case .success(let s): return s
        case .failure(let r): throw .foreignContent("key 0 is neither the factory key nor ours (\(r.reason))")
        }
    }

    /// Returns one of the door's tags to factory state (`provision reset`). The
    /// tag first proves the door's key 0 of its issue (`issue(uid)`: the registry
    /// row's, legacy when none) with EV2; a tag whose key 0 is the factory key
    /// gets no ChangeKey at all (its keys 1–4 must already be factory: else it
    /// is refused — a chip that cannot prove key 0 learns nothing). Then keys
    /// 1–4, the NDEF file's settings (SDM off, free read and write), key 0 — all
    /// keys zero at version 0 — then, in a new activation, an empty NDEF file.
    /// Resumable after a tear: GetKeyVersion and GetFileSettings say what is left.
    /// Returns the UID, or nil when no target answered.
    public func resetNTAG424(
        masterKey: [UInt8], issue: (TagUID) -> NTAG424.KeyIssue? = { _ in .legacy }
    ) throws(ReaderError) -> TagUID? {
        try resetNTAG424Proving(masterKey: masterKey, issue: issue)?.uid
    }

    /// `resetNTAG424`, also saying whether the tag proved the door's key 0 (false:
    /// it was already at the factory key, so nothing shows it is the row's tag —
    /// the door then leaves the row as it is).
    public func resetNTAG424Proving(
        masterKey: [UInt8], issue: (TagUID) -> NTAG424.KeyIssue?
    ) throws(ReaderError) -> (uid: TagUID, provedKey0: Bool)? {
        guard let (uid, _, _) = try activateNTAG424() else { return nil }
        guard uid.bytes.count == 7 else { throw .notNTAG424("a \(uid.bytes.count)-byte UID (Random ID on?)") }
        let mine = issue(uid) ?? .legacy
        let keys = try crypto { try NTAG424.DoorKeys(masterKey: masterKey, uid: uid.bytes, issue: mine) }
        let zero = [UInt8](repeating: 0, count: 16)
        let version0 = try plain(0x64, [0x00], "GetKeyVersion")
        guard version0.count == 1, version0[0] == 0 || version0[0] == mine.version else {
            throw .foreignContent("key 0 has version \(Hex.encode(version0))")
        }
        let ours0 = version0[0] == mine.version
        var session = try keyZeroSession(ours0 ? keys[0] : zero)
        for n in 1...4 {
            let v = try secure(&session, 0x64, header: [UInt8(n)], mode: .mac)
            guard v.count == 1, v[0] == 0 || v[0] == mine.version else {
                throw .foreignContent("key \(n) has version \(Hex.encode(v))")
            }
            if v[0] == 0 { continue }
            // Only inside a session of the door's own key 0: the chip proved it.
            guard ours0 else {
                throw .foreignContent("key 0 is the factory key but key \(n) is not: not provably ours, nothing sent")
            }
            let data = try crypto { try NTAG424.changeKeyData(newKey: zero, version: 0, oldKey: keys[n]) }
            _ = try secure(&session, 0xC4, header: [UInt8(n)], data: data, mode: .full)
        }
        let settings = try secure(&session, 0xF5, header: [0x02], mode: .mac)
        guard settings.count >= 4 else { throw .io("GetFileSettings gave \(settings.count) bytes") }
        if Array(settings[1...3]) != Self.factoryNDEFSettings {
            _ = try secure(&session, 0x5F, header: [0x02], data: Self.factoryNDEFSettings, mode: .full)
        }
        if ours0 {
            let data = try crypto { try NTAG424.changeKeyData(newKey: zero, version: 0, oldKey: nil) }
            let body = try crypto { try session.sealCommand(ins: 0xC4, header: [0x00], data: data, mode: .full) }
            let r = try apdu(Self.native(0xC4, body))
            guard r.sw == 0x9100 else { throw .status("ChangeKey 0: \(String(r.sw, radix: 16, uppercase: true))") }
        }
        // A new activation (ISOUpdateBinary answers 6982 while authenticated): an empty NDEF file.
        _ = try command([0x32, 0x01, 0x00], timeoutMs: Self.exchangeTimeoutMs)
        guard let (again, _, _) = try activateNTAG424(), again == uid else { throw .tagLost }
        try writeTemplate([UInt8](repeating: 0, count: 256))
        return (uid, ours0)
    }

    /// The NDEF file's factory FileOption and access rights (DS §8.2.2): plain, `E0EE`.
    static let factoryNDEFSettings: [UInt8] = [0x00, 0xE0, 0xEE]

    private func crypto<T>(_ body: () throws -> T) throws(ReaderError) -> T {
        do { return try body() } catch { throw .io("\(error)") }
    }

    /// A native command without a session; its data (status 9100 required).
    private func plain(_ ins: UInt8, _ body: [UInt8], _ what: String) throws(ReaderError) -> [UInt8] {
        let r = try apdu(Self.native(ins, body))
        guard r.sw == 0x9100 else { throw .status("\(what): \(String(r.sw, radix: 16, uppercase: true))") }
        return r.data
    }

    /// A native command within the session; the opened answer. The answer of a
    /// Full command without data carries only its MAC.
    private func secure(
        _ session: inout NTAG424.Session, _ ins: UInt8, header: [UInt8], data: [UInt8] = [], mode: NTAG424.CommMode
    ) throws(ReaderError) -> [UInt8] {
        let body = try crypto { try session.sealCommand(ins: ins, header: header, data: data, mode: mode) }
        let r = try apdu(Self.native(ins, body))
        guard r.sw == 0x9100 else {
            throw .status("\(Hex.encode([ins], uppercase: true)): \(String(r.sw, radix: 16, uppercase: true))")
        }
        var s = session
        let opened = try crypto { try s.openResponse(r.data, status: 0x00, mode: mode) }
        session = s
        return opened
    }

    /// ISOSelectFile E104 and ISOUpdateBinary of `file` from offset 0, in parts of at most 128 bytes.
    private func writeTemplate(_ file: [UInt8]) throws(ReaderError) {
        guard try apdu([0x00, 0xA4, 0x00, 0x0C, 0x02, 0xE1, 0x04]).sw == 0x9000 else {
            throw .notNTAG424("no NDEF file E104")
        }
        var offset = 0
        while offset < file.count {
            let part = Array(file[offset..<min(file.count, offset + 128)])
            let r = try apdu([0x00, 0xD6, UInt8(offset >> 8), UInt8(offset & 0xFF), UInt8(part.count)] + part)
            guard r.sw == 0x9000 else { throw .status("ISOUpdateBinary \(String(r.sw, radix: 16, uppercase: true))") }
            offset += part.count
        }
    }
}
