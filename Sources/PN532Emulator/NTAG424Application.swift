import DoorCore

/// The NTAG 424 DNA's command set at the APDU level (NT4H2421Gx data sheet
/// rev. 3.0, "DS"; NXP AN12196 rev. 1.8, "AN"): one C-APDU in, one R-APDU
/// (data ‖ SW1 SW2) out. Native commands come wrapped as `90 INS 00 00 Lc
/// data 00` and answer `… 91 xx`; ISO commands answer `… 90 00` / `6x xx`.
/// The cryptography is DoorCore's `NTAG424` core, on the tag's side of
/// each exchange (`EV2.tag…`, `Session.openCommand` / `sealResponse`).
public struct NTAG424Application: Sendable {
    /// One of the three standard data files (DS §8.2.2).
    public struct File: Sendable, Equatable {
        public var number: UInt8
        public var isoID: UInt16
        public var data: [UInt8]
        /// FileOption: bits 1–0 CommMode (00 plain, 01 MAC, 11 full), bit 6 SDM enabled.
        public var option: UInt8
        /// Access rights, LSB first as on the wire: `RW<<4 | Change`, `Read<<4 | Write`.
        public var access: [UInt8]
        public var sdm: SDMSettings?

        var commMode: NTAG424.CommMode { option & 0x03 == 0x03 ? .full : option & 0x03 == 0x01 ? .mac : .plain }
        var readWrite: UInt8 { access[0] >> 4 }
        var change: UInt8 { access[0] & 0x0F }
        var read: UInt8 { access[1] >> 4 }
        var write: UInt8 { access[1] & 0x0F }
    }

    /// Secure Dynamic Messaging settings of a file (DS §10.7.1, Table 69).
    public struct SDMSettings: Sendable, Equatable {
        public var options: UInt8
        /// `F<<4 | SDMCtrRet`, `SDMMetaRead<<4 | SDMFileRead`.
        public var access: [UInt8]
        public var uidOffset: Int?
        public var counterOffset: Int?
        public var piccDataOffset: Int?
        public var macInputOffset: Int?
        public var encOffset: Int?
        public var encLength: Int?
        public var macOffset: Int?
        public var counterLimit: UInt32?

        var mirrorsUID: Bool { options & 0x80 != 0 }
        var mirrorsCounter: Bool { options & 0x40 != 0 }
        var hasCounterLimit: Bool { options & 0x20 != 0 }
        var encryptsFileData: Bool { options & 0x10 != 0 }
        var counterRet: UInt8 { access[0] & 0x0F }
        var metaRead: UInt8 { access[1] >> 4 }
        var fileRead: UInt8 { access[1] & 0x0F }
    }

    public private(set) var uid: [UInt8]
    /// Application keys 0–4 and their versions (factory: all zero, DS §8.2.1).
    public private(set) var keys: [[UInt8]] = Array(repeating: [UInt8](repeating: 0, count: 16), count: 5)
    public private(set) var keyVersions: [UInt8] = [0, 0, 0, 0, 0]
    public private(set) var files: [File]
    /// SDMReadCtr of the NDEF file (24-bit; reset when ChangeFileSettings enables SDM).
    public var sdmReadCounter: UInt32 = 0
    /// The secure-messaging session, when authenticated.
    public private(set) var session: NTAG424.Session?
    /// Random numbers to use before the CSPRNG's (RndB, TI, PICCData padding): tests
    /// replay AN12196's exchanges with them.
    public var scriptedRandom: [[UInt8]] = []

    /// A counterfeit or broken 424, for tests of what the door does with a
    /// tag that lies (pn532-sim's `ntag424-fault`); nil: the data sheet's tag.
    public enum Fault: Sendable, Equatable {
        /// ChangeKey answers as done (and ends the session when it changes
        /// key 0), but the tag keeps its old key and key version.
        case keepsKeys
        /// GetCardUID names this UID instead of the tag's own.
        case cardUID([UInt8])
        /// GetKeyVersion names these versions of keys 0–4 whatever the tag holds
        /// (an emulator posing as a tag half way through provisioning).
        case keyVersions([UInt8])
    }
    public var fault: Fault?
    /// Every ChangeKey command the tag received (sealed key material, whether
    /// it took it or not): what a test of a door that must send none reads.
    public private(set) var changeKeyCommands = 0

    private enum Selected: Equatable { case none, application, file(UInt8) }
    private var selected: Selected = .none
    /// A multi-frame command in progress (GetVersion, or the 2nd part of an authentication).
    private enum Pending: Equatable {
        case version(part: Int)
        case authenticate(first: Bool, keyNumber: UInt8, rndB: [UInt8])
    }
    private var pending: Pending?
    /// The last command was a read of the SDM file: the next one does not bump the counter again.
    private var sdmReadInProgress: (counter: UInt32, random: [UInt8])?

    public static let dfName: [UInt8] = [0xD2, 0x76, 0x00, 0x00, 0x85, 0x01, 0x01]

    public init(uid: [UInt8]) {
        precondition(uid.count == 7, "an NTAG 424 DNA UID is 7 bytes")
        self.uid = uid
        // Factory state (DS §8.2.2): CC file, empty NDEF file, proprietary file (Full).
        let cc: [UInt8] = [
            0x00, 0x17, 0x20, 0x01, 0x00, 0x00, 0xFF, 0x04, 0x06, 0xE1, 0x04, 0x01, 0x00, 0x00, 0x00,
            0x05, 0x06, 0xE1, 0x05, 0x00, 0x80, 0x82, 0x83,
        ]
        files = [
            File(
                number: 1, isoID: 0xE103, data: cc + [UInt8](repeating: 0, count: 32 - cc.count), option: 0x00,
                access: [0x00, 0xE0], sdm: nil),
            File(
                number: 2, isoID: 0xE104, data: [UInt8](repeating: 0, count: 256), option: 0x00,
                access: [0xE0, 0xEE], sdm: nil),
            File(
                number: 3, isoID: 0xE105, data: [UInt8](repeating: 0, count: 128), option: 0x03,
                access: [0x30, 0x23], sdm: nil),
        ]
    }

    /// A new activation (RATS after select, or the field went away): volatile state goes (DS §8.1).
    public mutating func reset() {
        session = nil
        selected = .none
        pending = nil
        sdmReadInProgress = nil
    }

    /// Test and emulator setup: the content of a file, as if written before.
    public mutating func setFileData(_ number: UInt8, _ data: [UInt8]) {
        guard let i = files.firstIndex(where: { $0.number == number }) else { return }
        let n = min(data.count, files[i].data.count)
        files[i].data.replaceSubrange(0..<n, with: data.prefix(n))
    }

    // MARK: APDUs

    public mutating func process(_ apdu: [UInt8]) -> [UInt8] {
        guard apdu.count >= 4 else { return [0x67, 0x00] }
        let cla = apdu[0], ins = apdu[1]
        if cla == 0x90 {
            let isContinuation = ins == 0xAF
            if !isContinuation { pending = nil }
            if ins != 0xAD { sdmReadInProgress = nil }
            guard apdu[2] == 0, apdu[3] == 0 else { return native(0x9E) }
            var data: [UInt8] = []
            if apdu.count > 5 {
                let lc = Int(apdu[4])
                guard apdu.count == 5 + lc + 1 || apdu.count == 5 + lc else { return native(0x7E) }
                data = Array(apdu[5..<(5 + lc)])
            } else if apdu.count == 5 {
                data = []
            }
            return nativeCommand(ins, data)
        }
        pending = nil
        guard cla == 0x00 else { return [0x6E, 0x00] }
        if ins != 0xB0 { sdmReadInProgress = nil }
        switch ins {
        case 0xA4: return isoSelect(apdu)
        case 0xB0: return isoReadBinary(apdu)
        case 0xD6: return isoUpdateBinary(apdu)
        default: return [0x6D, 0x00]
        }
    }

    private func native(_ sw2: UInt8, _ data: [UInt8] = []) -> [UInt8] { data + [0x91, sw2] }

    /// An error answer ends an authenticated session where the data sheet says so
    /// (integrity and authentication errors, DS §9.1.5).
    private mutating func fail(_ sw2: UInt8) -> [UInt8] {
        if sw2 == 0x1E || sw2 == 0xAE { session = nil }
        return native(sw2)
    }

    private mutating func random(_ count: Int) -> [UInt8] {
        if !scriptedRandom.isEmpty {
            let r = scriptedRandom.removeFirst()
            if r.count == count { return r }
        }
        return (try? Crypto.randomBytes(count)) ?? [UInt8](repeating: 0x5A, count: count)
    }

    private mutating func nativeCommand(_ ins: UInt8, _ data: [UInt8]) -> [UInt8] {
        switch ins {
        case 0x60: return getVersion(part: 0)
        case 0xAF:
            switch pending {
            case .version(let part)?: return getVersion(part: part)
            case .authenticate(let first, let keyNumber, let rndB)?:
                pending = nil
                return authenticatePart2(first: first, keyNumber: keyNumber, rndB: rndB, data)
            case nil: return native(0xCA)  // command aborted
            }
        case 0x71, 0x77: return authenticatePart1(first: ins == 0x71, data)
        case 0xF5: return getFileSettings(data)
        case 0x5F: return changeFileSettings(data)
        case 0xAD: return readData(data)
        case 0x8D: return writeData(data)
        case 0xC4:
            changeKeyCommands += 1
            return changeKey(data)
        case 0x51: return getCardUID(data)
        case 0xF6: return getFileCounters(data)
        case 0x64: return getKeyVersion(data)
        default: return fail(0x1C)
        }
    }

    // MARK: ISO/IEC 7816-4 commands (DS §10.9)

    private mutating func isoSelect(_ a: [UInt8]) -> [UInt8] {
        guard a.count >= 5 else { return [0x67, 0x00] }
        let lc = Int(a[4])
        guard a.count >= 5 + lc else { return [0x67, 0x00] }
        let name = Array(a[5..<(5 + lc)])
        switch a[2] {
        case 0x04:
            guard name == Self.dfName else { return [0x6A, 0x82] }
            session = nil
            selected = .application
        case 0x00:
            guard name.count == 2 else { return [0x6A, 0x86] }
            let fid = UInt16(name[0]) << 8 | UInt16(name[1])
            if fid == 0xE110 {
                session = nil
                selected = .application
            } else if let f = files.first(where: { $0.isoID == fid }), selected != .none {
                selected = .file(f.number)
            } else {
                return [0x6A, 0x82]
            }
        default:
            return [0x6A, 0x86]
        }
        return [0x90, 0x00]
    }

    private var selectedFileIndex: Int? {
        guard case .file(let n) = selected else { return nil }
        return files.firstIndex { $0.number == n }
    }

    /// ISOReadBinary: free read access only, and never while authenticated (DS Table 89).
    private mutating func isoReadBinary(_ a: [UInt8]) -> [UInt8] {
        guard a.count == 5 || a.count == 4 else { return [0x67, 0x00] }
        guard session == nil else { return [0x69, 0x82] }
        guard let i = selectedFileIndex else { return [0x69, 0x86] }
        guard a[2] & 0x80 == 0 else { return [0x6A, 0x86] }  // short EF id addressing: not emulated
        let f = files[i]
        guard f.read == 0xE || f.readWrite == 0xE else { return [0x69, 0x82] }
        let offset = Int(a[2]) << 8 | Int(a[3])
        let le = a.count == 5 ? Int(a[4]) : 0
        guard offset < f.data.count else { return [0x6B, 0x00] }
        let content = sdmView(i)
        guard let content else { return [0x69, 0x82] }
        let length = le == 0 ? min(256, f.data.count - offset) : le
        guard offset + length <= f.data.count else { return [0x6B, 0x00] }
        return Array(content[offset..<(offset + length)]) + [0x90, 0x00]
    }

    private mutating func isoUpdateBinary(_ a: [UInt8]) -> [UInt8] {
        guard a.count >= 5, a.count == 5 + Int(a[4]) else { return [0x67, 0x00] }
        guard session == nil else { return [0x69, 0x82] }
        guard let i = selectedFileIndex else { return [0x69, 0x86] }
        guard a[2] & 0x80 == 0 else { return [0x6A, 0x86] }
        guard files[i].write == 0xE || files[i].readWrite == 0xE else { return [0x69, 0x82] }
        let offset = Int(a[2]) << 8 | Int(a[3])
        let data = Array(a[5...])
        guard offset + data.count <= files[i].data.count else { return [0x6B, 0x00] }
        files[i].data.replaceSubrange(offset..<(offset + data.count), with: data)
        return [0x90, 0x00]
    }

    // MARK: GetVersion (DS §10.5.2)

    private mutating func getVersion(part: Int) -> [UInt8] {
        let parts: [[UInt8]] = [
            [0x04, 0x04, 0x02, 0x30, 0x00, 0x11, 0x05],
            [0x04, 0x04, 0x02, 0x01, 0x02, 0x11, 0x05],
            // UID, BatchNo (4 bytes and 4 bits) with FabKey, production week and year (BCD).
            uid + [0xCF, 0x39, 0x41, 0x10, 0x20, 0x27, 0x20],
        ]
        let out = parts[part]
        if part < 2 {
            pending = .version(part: part + 1)
            return advancePlain(out, sw2: 0xAF)
        }
        pending = nil
        return advancePlain(out, sw2: 0x00)
    }

    /// A plain answer while authenticated still advances CmdCtr (DS §9.1.2).
    private mutating func advancePlain(_ data: [UInt8], sw2: UInt8) -> [UInt8] {
        if session != nil { session!.advance() }
        return native(sw2, data)
    }

    // MARK: AuthenticateEV2First / NonFirst (DS §10.4.1–2)

    private mutating func authenticatePart1(first: Bool, _ data: [UInt8]) -> [UInt8] {
        guard let keyNumber = data.first, first ? data.count >= 2 : data.count >= 1 else { return fail(0x7E) }
        guard keyNumber < 5 else { return fail(0x40) }
        guard selected != .none else { return fail(0x9D) }
        if !first && session == nil { return fail(0xAE) }
        let rndB = random(16)
        guard let challenge = try? NTAG424.EV2.tagChallenge(key: keys[Int(keyNumber)], rndB: rndB) else {
            return fail(0xAE)
        }
        pending = .authenticate(first: first, keyNumber: keyNumber, rndB: rndB)
        return native(0xAF, challenge)
    }

    private mutating func authenticatePart2(first: Bool, keyNumber: UInt8, rndB: [UInt8], _ data: [UInt8]) -> [UInt8] {
        let key = keys[Int(keyNumber)]
        guard data.count == 32 else { return fail(0x7E) }
        guard let rndA = try? NTAG424.EV2.tagVerify(key: key, rndB: rndB, message: data),
            let k = try? NTAG424.Session.keys(key: key, rndA: rndA, rndB: rndB)
        else {
            session = nil
            return native(0xAE)
        }
        if first {
            let ti = random(4)
            guard let answer = try? NTAG424.EV2.tagAnswerFirst(key: key, ti: ti, rndA: rndA) else { return fail(0xAE) }
            session = NTAG424.Session(encKey: k.enc, macKey: k.mac, ti: ti, commandCounter: 0, keyNumber: keyNumber)
            return native(0x00, answer)
        }
        guard let previous = session, let answer = try? NTAG424.EV2.tagAnswerNonFirst(key: key, rndA: rndA) else {
            return fail(0xAE)
        }
        session = NTAG424.Session(
            encKey: k.enc, macKey: k.mac, ti: previous.ti, commandCounter: previous.commandCounter,
            keyNumber: keyNumber)
        return native(0x00, answer)
    }

    // MARK: Secure messaging around a command

    /// Opens an authenticated command's data (header kept), or answers the error.
    private mutating func open(_ ins: UInt8, _ body: [UInt8], header: Int, mode: NTAG424.CommMode) -> (
        [UInt8]?, [UInt8]
    ) {
        guard let s = session else { return (mode == .plain ? body : nil, mode == .plain ? [] : fail(0xAE)) }
        do {
            return (try s.openCommand(ins: ins, body: body, headerLength: header, mode: mode), [])
        } catch NTAG424.Failure.length {
            return (nil, fail(0x7E))
        } catch {
            return (nil, fail(0x1E))
        }
    }

    private mutating func seal(_ data: [UInt8], mode: NTAG424.CommMode) -> [UInt8] {
        guard session != nil else { return native(0x00, data) }
        guard let out = try? session!.sealResponse(data, status: 0x00, mode: mode) else { return fail(0x1E) }
        return native(0x00, out)
    }

    /// Whether the current state may use a right (key number, E free, F never).
    private func allows(_ right: UInt8) -> Bool {
        if right == 0xE { return true }
        if right == 0xF { return false }
        return session?.keyNumber == right
    }

    /// The mode of a file command: its own CommMode when the session's key
    /// grants access, plain when access is free (DS §8.2.3.3).
    private func mode(_ f: File, rights: [UInt8]) -> NTAG424.CommMode? {
        if let s = session, rights.contains(s.keyNumber) { return f.commMode }
        if rights.contains(0xE) { return .plain }
        return nil
    }

    private static func int24(_ b: ArraySlice<UInt8>) -> Int {
        let a = Array(b)
        return Int(a[0]) | Int(a[1]) << 8 | Int(a[2]) << 16
    }

    private static func bytes24(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF)] }

    // MARK: File settings (DS §10.7)

    private mutating func getFileSettings(_ body: [UInt8]) -> [UInt8] {
        let m: NTAG424.CommMode = session == nil ? .plain : .mac
        let (opened, error) = open(0xF5, body, header: 1, mode: m)
        guard let d = opened else { return error }
        guard d.count == 1, let i = files.firstIndex(where: { $0.number == d[0] }) else { return fail(0xF0) }
        return seal(Self.settings(files[i]), mode: m)
    }

    static func settings(_ f: File) -> [UInt8] {
        var out: [UInt8] = [0x00, f.option] + f.access + bytes24(f.data.count)
        guard let s = f.sdm else { return out }
        out += [s.options] + s.access
        for v in [
            s.uidOffset, s.counterOffset, s.piccDataOffset, s.macInputOffset, s.encOffset, s.encLength, s.macOffset,
        ] {
            if let v { out += bytes24(v) }
        }
        if let l = s.counterLimit { out += bytes24(Int(l)) }
        return out
    }

    private mutating func changeFileSettings(_ body: [UInt8]) -> [UInt8] {
        guard let s = session else { return fail(0xAE) }
        let (opened, error) = open(0x5F, body, header: 1, mode: .full)
        guard let d = opened else { return error }
        guard let i = files.firstIndex(where: { $0.number == d[0] }) else { return fail(0xF0) }
        guard files[i].change == s.keyNumber || files[i].change == 0xE else { return fail(0x9D) }
        guard let (option, access, sdm) = Self.parseSettings(Array(d.dropFirst()), fileSize: files[i].data.count)
        else { return fail(0x9E) }
        if sdm != nil && files[i].number != 2 { return fail(0x9E) }  // SDM only on the NDEF file
        files[i].option = option
        files[i].access = access
        files[i].sdm = sdm
        if sdm != nil { sdmReadCounter = 0 }  // enabling SDM resets SDMReadCtr (DS §9.3.1)
        return seal([], mode: .full)
    }

    /// FileOption ‖ AccessRights ‖ [SDMOptions ‖ SDMAccessRights ‖ offsets…] with
    /// the offsets present in DS Table 69's order, each checked against the file.
    static func parseSettings(_ d: [UInt8], fileSize: Int) -> (UInt8, [UInt8], SDMSettings?)? {
        guard d.count >= 3, d[0] & 0b1011_1100 == 0, d[0] & 0x03 != 0x02 else { return nil }
        let option = d[0], access = Array(d[1...2])
        guard option & 0x40 != 0 else { return d.count == 3 ? (option, access, nil) : nil }
        guard d.count >= 6 else { return nil }
        var s = SDMSettings(options: d[3], access: Array(d[4...5]))
        guard s.options & 0x01 == 0x01, s.options & 0x0E == 0, s.access[0] >> 4 == 0xF else { return nil }
        var at = 6
        func next() -> Int? {
            guard at + 3 <= d.count else { return nil }
            defer { at += 3 }
            return int24(d[at..<(at + 3)])
        }
        if s.metaRead == 0xE {
            if s.mirrorsUID { guard let v = next() else { return nil }; s.uidOffset = v }
            if s.mirrorsCounter { guard let v = next() else { return nil }; s.counterOffset = v }
        } else if s.metaRead <= 4 {
            guard s.mirrorsUID || s.mirrorsCounter, let v = next() else { return nil }
            s.piccDataOffset = v
        } else if s.metaRead != 0xF {
            return nil
        }
        if s.fileRead != 0xF {
            guard s.fileRead <= 4, let input = next() else { return nil }
            s.macInputOffset = input
            if s.encryptsFileData {
                guard s.mirrorsUID && s.mirrorsCounter, let o = next(), let l = next() else { return nil }
                s.encOffset = o
                s.encLength = l
            }
            guard let mac = next() else { return nil }
            s.macOffset = mac
        } else if s.encryptsFileData {
            return nil
        }
        if s.hasCounterLimit { guard let v = next() else { return nil }; s.counterLimit = UInt32(v) }
        guard at == d.count else { return nil }
        // Every mirror inside the file, MAC input before the MAC, encrypted part inside the MAC input.
        func fits(_ o: Int?, _ n: Int) -> Bool { o.map { $0 + n <= fileSize } ?? true }
        guard fits(s.uidOffset, 14), fits(s.counterOffset, 6), fits(s.piccDataOffset, 32), fits(s.macOffset, 16)
        else { return nil }
        if let m = s.macOffset, let input = s.macInputOffset, input > m { return nil }
        if let o = s.encOffset, let l = s.encLength {
            guard l > 0, l % 32 == 0, o + l <= fileSize, o >= s.macInputOffset!, o + l <= s.macOffset! else {
                return nil
            }
        }
        return (option, access, s)
    }

    // MARK: Data (DS §10.8)

    private mutating func readData(_ body: [UInt8]) -> [UInt8] {
        guard body.count >= 7 else { return fail(0x7E) }
        guard let i = files.firstIndex(where: { $0.number == body[0] }) else { return fail(0xF0) }
        let f = files[i]
        guard let m = mode(f, rights: [f.read, f.readWrite]) else { return fail(0x9D) }
        let (opened, error) = open(0xAD, body, header: 7, mode: m)
        guard let d = opened, d.count == 7 else { return opened == nil ? error : fail(0x7E) }
        let offset = Self.int24(d[1..<4]), requested = Self.int24(d[4..<7])
        guard offset < f.data.count else { return fail(0xBE) }
        let length = requested == 0 ? f.data.count - offset : requested
        guard offset + length <= f.data.count else { return fail(0xBE) }
        guard let content = session == nil ? sdmView(i) : f.data else { return fail(0x9D) }
        return seal(Array(content[offset..<(offset + length)]), mode: m)
    }

    private mutating func writeData(_ body: [UInt8]) -> [UInt8] {
        guard body.count >= 7 else { return fail(0x7E) }
        guard let i = files.firstIndex(where: { $0.number == body[0] }) else { return fail(0xF0) }
        let f = files[i]
        guard let m = mode(f, rights: [f.write, f.readWrite]) else { return fail(0x9D) }
        let (opened, error) = open(0x8D, body, header: 7, mode: m)
        guard let d = opened else { return error }
        let offset = Self.int24(d[1..<4]), length = Self.int24(d[4..<7])
        let data = Array(d.dropFirst(7))
        guard data.count == length, length > 0 else { return fail(0x7E) }
        guard offset + length <= f.data.count else { return fail(0xBE) }
        files[i].data.replaceSubrange(offset..<(offset + length), with: data)
        return seal([], mode: m)
    }

    // MARK: Keys (DS §10.6)

    private mutating func changeKey(_ body: [UInt8]) -> [UInt8] {
        guard let s = session else { return fail(0xAE) }
        let (opened, error) = open(0xC4, body, header: 1, mode: .full)
        guard let d = opened else { return error }
        guard s.keyNumber == 0 else { return fail(0x9D) }  // AppMasterKey only (DS Table 63)
        let n = d[0]
        guard n < 5 else { return fail(0x40) }
        let same = n == s.keyNumber
        guard
            let (key, version) = NTAG424.newKey(
                fromChangeKeyData: Array(d.dropFirst()), oldKey: same ? nil : keys[Int(n)])
        else { return fail(0x1E) }
        if fault != .keepsKeys {
            keys[Int(n)] = key
            keyVersions[Int(n)] = version
        }
        if same {
            // The session's own key changed: a bare 9100 and the session ends (AN Table 27).
            session = nil
            return native(0x00)
        }
        return seal([], mode: .full)
    }

    /// GetKeyVersion (DS §10.6.2): plain without a session, CommMode.MAC within one.
    private mutating func getKeyVersion(_ body: [UInt8]) -> [UInt8] {
        let m: NTAG424.CommMode = session == nil ? .plain : .mac
        let (opened, error) = open(0x64, body, header: 1, mode: m)
        guard let d = opened else { return error }
        guard d.count == 1, d[0] < 5 else { return fail(0x40) }
        if case .keyVersions(let lie)? = fault, lie.count == 5 { return seal([lie[Int(d[0])]], mode: m) }
        return seal([keyVersions[Int(d[0])]], mode: m)
    }

    private mutating func getCardUID(_ body: [UInt8]) -> [UInt8] {
        guard session != nil else { return fail(0xAE) }
        let (opened, error) = open(0x51, body, header: 0, mode: .full)
        guard opened != nil else { return error }
        if case .cardUID(let other)? = fault { return seal(other, mode: .full) }
        return seal(uid, mode: .full)
    }

    private mutating func getFileCounters(_ body: [UInt8]) -> [UInt8] {
        guard session != nil else { return fail(0xAE) }
        let (opened, error) = open(0xF6, body, header: 1, mode: .full)
        guard let d = opened else { return error }
        guard let i = files.firstIndex(where: { $0.number == d[0] }), let sdm = files[i].sdm else { return fail(0x9E) }
        guard allows(sdm.counterRet) else { return fail(0x9D) }
        return seal(NTAG424.counterBytes(sdmReadCounter) + [0, 0], mode: .full)
    }

    // MARK: Secure Dynamic Messaging (DS §9.3)

    /// The file as an unauthenticated read sees it: with SDM on, the counter
    /// advances on the first read (DS §9.3.1) and the mirrors are written in.
    /// nil when the counter has reached its limit.
    private mutating func sdmView(_ i: Int) -> [UInt8]? {
        guard let s = files[i].sdm else { return files[i].data }
        let state: (counter: UInt32, random: [UInt8])
        if let current = sdmReadInProgress {
            state = current
        } else {
            let limit = s.counterLimit ?? 0xFF_FFFF
            guard sdmReadCounter < limit else { return nil }
            sdmReadCounter += 1
            state = (sdmReadCounter, random(5))
        }
        sdmReadInProgress = state
        return Self.mirror(
            files[i].data, settings: s, uid: uid, counter: state.counter, random: state.random, keys: keys)
    }

    /// Writes the SDM mirrors into `data`: plain UID/counter, or encrypted PICCData,
    /// encrypted file data and the SDMMAC, as uppercase ASCII hex.
    public static func mirror(
        _ data: [UInt8], settings s: SDMSettings, uid: [UInt8], counter: UInt32, random: [UInt8], keys: [[UInt8]]
    ) -> [UInt8] {
        var out = data
        func put(_ offset: Int?, _ bytes: [UInt8]) {
            guard let offset else { return }
            let text = Array(Hex.encode(bytes, uppercase: true).utf8)
            out.replaceSubrange(offset..<(offset + text.count), with: text)
        }
        let mirroredUID = s.mirrorsUID ? uid : nil
        let mirroredCounter = s.mirrorsCounter ? counter : nil
        if s.metaRead == 0xE {
            put(s.uidOffset, uid)
            put(s.counterOffset, NTAG424.counterBytes(counter).reversed())
        } else if s.metaRead <= 4 {
            let tag = (s.mirrorsUID ? 0x80 : 0) | (s.mirrorsCounter ? 0x40 : 0) | (s.mirrorsUID ? 0x07 : 0)
            let block = NTAG424.PICCData(tag: UInt8(tag), uid: mirroredUID, counter: mirroredCounter)
                .block(random: random + [UInt8](repeating: 0, count: 16))
            if let enc = try? NTAG424.cbc(.encrypt, key: keys[Int(s.metaRead)], block) { put(s.piccDataOffset, enc) }
        }
        guard s.fileRead <= 4, let macOffset = s.macOffset, let inputOffset = s.macInputOffset else { return out }
        let fileKey = keys[Int(s.fileRead)]
        if let o = s.encOffset, let l = s.encLength {
            let plain = Array(data[o..<(o + l / 2)])
            if let enc = try? NTAG424.sdmFileData(
                .encrypt, fileReadKey: fileKey, uid: mirroredUID, counter: counter, data: plain)
            {
                put(o, enc)
            }
        }
        if let mac = try? NTAG424.sdmMAC(
            fileReadKey: fileKey, uid: mirroredUID, counter: mirroredCounter, input: Array(out[inputOffset..<macOffset])
        ) {
            put(macOffset, mac)
        }
        return out
    }
}
