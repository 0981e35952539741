import DoorCore

/// A tag the door has provisioned and then checked: its UID and the SUN
/// counter of the verifying read.
public struct NTAG424Provisioned: Equatable, Sendable {
    public var uid: TagUID
    public var counter: UInt32

    public init(uid: TagUID, counter: UInt32) {
        self.uid = uid
        self.counter = counter
    }
}

extension NFCReader {
    /// Provisions the NTAG 424 DNA in the field (issue 26), resuming where a
    /// torn earlier attempt stopped — each step is atomic on the tag, and
    /// GetFileSettings and GetKeyVersion (version 0 factory, 1 ours) say which are done:
    /// 1. the SUN template with ISOUpdateBinary, before authenticating (free write access);
    /// 2. AuthenticateEV2First with key 0 (factory, or ours after a tear);
    /// 3. ChangeFileSettings: SDM on (the template's settings, which also take free write away);
    /// 4. ChangeKey 1–4 (the CRC form, old keys zero), then key 0 (the session ends);
    /// 5. the field off and a new activation: an unauthenticated read whose SUN must
    ///    verify with the new keys, then AuthenticateEV2First with the new key 0 and
    ///    GetCardUID equal to the anticollision UID.
    /// Returns nil when no target answered. Throws `.foreignContent` for a tag with
    /// keys or settings the door did not set; a tear surfaces as `.tagLost`.
    public func provisionNTAG424(masterKey: [UInt8], base: String) throws(ReaderError) -> NTAG424Provisioned? {
        guard let (uid, _, _) = try activateNTAG424() else { return nil }
        guard uid.bytes.count == 7 else { throw .notNTAG424("a \(uid.bytes.count)-byte UID (Random ID on?)") }
        let keys: NTAG424.DoorKeys, template: NTAG424.SUNTemplate
        do {
            keys = try NTAG424.DoorKeys(masterKey: masterKey, uid: uid.bytes)
            template = try NTAG424.SUNTemplate(base: base)
        } catch {
            throw .io("\(error)")
        }
        let zero = [UInt8](repeating: 0, count: 16)
        let version0 = try plain(0x64, [0x00], "GetKeyVersion")
        guard version0.count == 1, version0[0] <= NTAG424.doorKeyVersion else {
            throw .foreignContent("key 0 has version \(Hex.encode(version0))")
        }
        let ours0 = version0[0] == NTAG424.doorKeyVersion
        let settings = try plain(0xF5, [0x02], "GetFileSettings")
        guard settings.count >= 7 else { throw .io("GetFileSettings gave \(settings.count) bytes") }
        let wanted = [0x00] + template.settings[0..<3] + settings[4..<7] + template.settings[3...]
        let sdmDone = settings == wanted
        if !sdmDone {
            // Not ours yet, SDM off, write access free (Write or RW is E): a factory NDEF file.
            guard !ours0, settings[1] & 0x40 == 0, settings[3] & 0x0F == 0x0E || settings[2] >> 4 == 0x0E else {
                throw .foreignContent("NDEF file settings \(Hex.encode(settings))")
            }
            try writeTemplate(template.file)
        }
        var session: NTAG424.Session
        switch try openSession(keyNumber: 0, key: ours0 ? keys[0] : zero) {
        case .success(let s): session = s
        case .failure(let r): throw .foreignContent("key 0 is neither the factory key nor ours (\(r.reason))")
        }
        if !sdmDone {
            _ = try secure(&session, 0x5F, header: [0x02], data: template.settings, mode: .full)
        }
        for n in 1...4 {
            let v = try secure(&session, 0x64, header: [UInt8(n)], mode: .mac)
            guard v.count == 1, v[0] <= NTAG424.doorKeyVersion else {
                throw .foreignContent("key \(n) has version \(Hex.encode(v))")
            }
            if v[0] == NTAG424.doorKeyVersion { continue }
            let data = try crypto {
                try NTAG424.changeKeyData(newKey: keys[n], version: NTAG424.doorKeyVersion, oldKey: zero)
            }
            _ = try secure(&session, 0xC4, header: [UInt8(n)], data: data, mode: .full)
        }
        if !ours0 {
            let data = try crypto {
                try NTAG424.changeKeyData(newKey: keys[0], version: NTAG424.doorKeyVersion, oldKey: nil)
            }
            let body = try crypto { try session.sealCommand(ins: 0xC4, header: [0x00], data: data, mode: .full) }
            let r = try apdu(Self.native(0xC4, body))
            guard r.sw == 0x9100 else { throw .status("ChangeKey 0: \(String(r.sw, radix: 16, uppercase: true))") }
        }
        // Field off, a new activation: a tap as the door will see it.
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
        return NTAG424Provisioned(uid: uid, counter: counter)
    }

    /// Returns one of the door's tags to factory state (`provision --reset`): keys 1–4,
    /// the NDEF file's settings (SDM off, free read and write), key 0 — all keys zero at
    /// version 0 — then, in a new activation, an empty NDEF file. Resumable after a tear
    /// like `provisionNTAG424`: GetKeyVersion and GetFileSettings say what is left.
    /// Returns the UID, or nil when no target answered.
    public func resetNTAG424(masterKey: [UInt8]) throws(ReaderError) -> TagUID? {
        guard let (uid, _, _) = try activateNTAG424() else { return nil }
        guard uid.bytes.count == 7 else { throw .notNTAG424("a \(uid.bytes.count)-byte UID (Random ID on?)") }
        let keys = try crypto { try NTAG424.DoorKeys(masterKey: masterKey, uid: uid.bytes) }
        let zero = [UInt8](repeating: 0, count: 16)
        let version0 = try plain(0x64, [0x00], "GetKeyVersion")
        guard version0.count == 1, version0[0] <= NTAG424.doorKeyVersion else {
            throw .foreignContent("key 0 has version \(Hex.encode(version0))")
        }
        let ours0 = version0[0] == NTAG424.doorKeyVersion
        var session: NTAG424.Session
        switch try openSession(keyNumber: 0, key: ours0 ? keys[0] : zero) {
        case .success(let s): session = s
        case .failure(let r): throw .foreignContent("key 0 is neither the factory key nor ours (\(r.reason))")
        }
        for n in 1...4 {
            let v = try secure(&session, 0x64, header: [UInt8(n)], mode: .mac)
            guard v.count == 1, v[0] <= NTAG424.doorKeyVersion else {
                throw .foreignContent("key \(n) has version \(Hex.encode(v))")
            }
            if v[0] == 0 { continue }
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
        return uid
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
