#if canImport(Glibc)
    import Glibc
#endif
import CNFC
import DoorCore

/// A tag read at the door: what the gateway needs to judge it.
public struct TagRead: Equatable, Sendable {
    public var uid: TagUID
    public var type: NTAGType?
    public var capabilityContainer: CapabilityContainer?
    /// The first NDEF TLV's value (the message bytes); nil when there is none.
    public var ndef: [UInt8]?
    /// The decoded message; nil when blank or undecodable (`decodeError` says why).
    public var message: NDEFMessage?
    public var decodeError: String?
    /// Bytes of user memory read for this tap (CC included).
    public var bytesRead: Int
    /// An ISO/IEC 14443-4 target (SAK bit 5: an NTAG 424 DNA, a DESFire…):
    /// nothing was read; `tapNTAG424` and `provisionNTAG424` speak to it.
    public var isoDep = false
    public var content: TagContent? {
        guard ndef != nil else { return .blank }
        guard let message else { return nil }
        return message.isEmpty ? .blank : .message(message)
    }
}

/// NTAG21x write password (docs/formats.md §4): PWD = bytes 0–3 and PACK = bytes 4–5
/// of HMAC-SHA256(device key, "ntag-pwd|" ‖ the 7 raw UID bytes).
public struct NTAGPassword: Equatable, Sendable {
    public var pwd: [UInt8]
    public var pack: [UInt8]
    public init(pwd: [UInt8], pack: [UInt8]) {
        self.pwd = pwd
        self.pack = pack
    }
    public static func derive(deviceKey: [UInt8], uid: TagUID) -> NTAGPassword {
        let mac = Crypto.hmacSHA256(key: deviceKey, message: Array("ntag-pwd|".utf8) + uid.bytes)
        return NTAGPassword(pwd: Array(mac[0..<4]), pack: Array(mac[4..<6]))
    }
}

public struct WriteOptions: Sendable {
    /// Write over foreign content (docs/design.md: only when an admin said so).
    public var overwrite: Bool
    /// Authenticate with this password first (a protected tag), and protect
    /// the tag with it after the write when `protect` is set.
    public var password: NTAGPassword?
    public var protect: Bool
    /// AUTHLIM (ACCESS bits 2–0): failed PWD_AUTH attempts allowed, 0 = unlimited.
    public var authLimit: Int
    public init(overwrite: Bool = false, password: NTAGPassword? = nil, protect: Bool = false, authLimit: Int = 0) {
        self.overwrite = overwrite
        self.password = password
        self.protect = protect
        self.authLimit = authLimit
    }
}

public struct WriteReport: Equatable, Sendable {
    public var uid: TagUID
    public var type: NTAGType
    public var bytes: Int
    public var protected: Bool
}

/// The reader adapter: the only code that touches libnfc (docs/design.md). It
/// opens the PN532 by connstring, lets the chip poll for type A targets with
/// InAutoPoll (UM0701-02 §7.3.13: PollNr 1, Period 1 = 150 ms, type 10h
/// MIFARE/ISO14443A 106 kbps), so a tag is answered the moment it enters the
/// field, and talks to NTAG21x with InDataExchange. Every command goes
/// through `pn53x_transceive` with its own finite host timeout, longer than
/// the chip's own bound for that command, so the host never gives up on a
/// command the chip is still running (libnfc does not abort the chip after
/// a host timeout); when it must (a hung chip), the device is closed and
/// reopened, which flushes and re-checks the link before any new command.
/// Not thread-safe: one thread owns a reader.
public final class NFCReader {
    public let connstring: String
    private var context: OpaquePointer?
    private var device: OpaquePointer?
    public private(set) var health: ReaderHealth = .lost("not opened")
    /// PWD_AUTH commands sent since open (tests check taps send none).
    public private(set) var passwordAuthentications = 0

    /// InAutoPoll Period (×150 ms) and the host's margin over the chip's bound.
    static let pollPeriodUnits: UInt8 = 1
    static let hostMarginMs: Int32 = 350
    /// InDataExchange: the chip answers within its RF timeout (tens of ms); the host waits this long.
    static let exchangeTimeoutMs: Int32 = 500

    public init(connstring: String) {
        self.connstring = connstring
    }

    deinit {
        close()
        if let context { nfc_exit(context) }
    }

    public var isOpen: Bool { device != nil }

    /// Opens the reader by its connstring (never by scanning or /etc/nfc).
    public func open() throws(ReaderError) {
        close()
        if context == nil {
            var ctx: OpaquePointer?
            nfc_init(&ctx)
            context = ctx
        }
        guard let context else { throw fail(.noReader("libnfc could not start")) }
        guard let dev = nfc_open(context, connstring) else {
            throw fail(.noReader("cannot open \(connstring)"))
        }
        device = dev
        guard nfc_initiator_init(dev) >= 0 else { throw fail(.noReader("initiator mode: \(errorText())")) }
        // nfc_initiator_init turns infinite select on; turn it off (it also sets
        // MaxRetries to finite values), keep easy framing for InDataExchange.
        // fAutomaticRATS (SetParameters bit 4) stays on for good, so no tap pays a
        // SetParameters: it sends RATS only to a target whose SAK says ISO/IEC
        // 14443-4 and only in InListPassiveTarget and InAutoPoll's generic type A
        // (00h, the door's tap) and ISO/IEC 14443-4 type (20h); a Type 2 tag (SAK bit 5
        // clear) never gets one, and InAutoPoll's MIFARE type (10h) sends none.
        guard nfc_device_set_property_bool(dev, NP_INFINITE_SELECT, false) >= 0,
            nfc_device_set_property_bool(dev, NP_AUTO_ISO14443_4, true) >= 0,
            nfc_device_set_property_bool(dev, NP_EASY_FRAMING, true) >= 0
        else { throw fail(.noReader("configuring the PN532: \(errorText())")) }
        // RFConfiguration item 05h MaxRetries (MxRtyATR, MxRtyPSL,
        // MxRtyPassiveActivation): finite, so no activation outlives its host timeout.
        _ = try command([0x32, 0x05, 0x00, 0x01, 0x02], timeoutMs: Self.exchangeTimeoutMs)
        health = .ok
        passwordAuthentications = 0
    }

    public func close() {
        if let device { nfc_close(device) }
        device = nil
    }

    // MARK: Tapping

    /// One poll: the chip polls for a type A target for up to 150 ms and
    /// answers at once when one enters. Returns the tag with its NDEF read,
    /// or nil when none came.
    public func poll(identify: Bool = false) throws(ReaderError) -> TagRead? {
        guard let (found, sak) = try autoPoll() else { return nil }
        if sak & 0x20 != 0 {
            // Type 2 READ means nothing to an ISO-DEP target: report it unread.
            return TagRead(
                uid: found, type: nil, capabilityContainer: nil, ndef: nil, message: nil, decodeError: nil,
                bytesRead: 0,
                isoDep: true)
        }
        return try read(uid: found, identify: identify)
    }

    /// Whether the ISO-DEP target `uid` is still in the field: a new
    /// activation of that UID (InListPassiveTarget, finite retries), which
    /// also ends any session the tag had.
    public func isPresentISODep(_ uid: TagUID) throws(ReaderError) -> Bool {
        let rx = try command([0x4A, 0x01, 0x00] + uid.bytes, timeoutMs: Self.exchangeTimeoutMs + Self.hostMarginMs)
        return (rx.first ?? 0) > 0
    }

    /// Polls until a tag comes or `timeout` passes.
    public func waitForTag(timeout: Duration, identify: Bool = false) throws(ReaderError) -> TagRead? {
        let deadline = ContinuousClock.now + timeout
        repeat {
            if let tag = try poll(identify: identify) { return tag }
        } while ContinuousClock.now < deadline
        return nil
    }

    /// Whether the activated tag still answers (a READ of page 0).
    public func isPresent(_ uid: TagUID) throws(ReaderError) -> Bool {
        do {
            let page0 = try exchange([0x30, 0x00])
            guard page0.count >= 8 else { return false }
            return Self.uid(fromPages: page0) == uid
        } catch .tagLost {
            return false
        } catch .nak {
            return false
        }
    }

    /// InAutoPoll for one type A (MIFARE-compatible) target; its UID and SAK.
    func autoPoll() throws(ReaderError) -> (uid: TagUID, sak: UInt8)? {
        guard let found = try autoPoll(types: [0x10]).typeA else { return nil }
        return (found.uid, found.sak)
    }

    /// InAutoPoll (UM0701-02 §7.3.13) for the target types given, in their order, each
    /// for Period × 150 ms: 00h generic passive 106 kbit/s (any type A target, activated
    /// once: RATS when its SAK says ISO/IEC 14443-4 and fAutomaticRATS is on, as
    /// InListPassiveTarget does), 10h MIFARE (any type A target, no RATS), 20h ISO/IEC
    /// 14443-4 type A (SAK bit 5 set; with fAutomaticRATS its ATS joins the target data, as
    /// libnfc's `pn53x_initiator_poll_target` pairs the two). The answer parsed by
    /// `InAutoPollAnswer`; with two targets the chip keeps the last one selected (libnfc:
    /// "we keep the selected one").
    func autoPoll(types: [UInt8]) throws(ReaderError) -> InAutoPollAnswer {
        let chipBoundMs = Int32(Self.pollPeriodUnits) * 150 * Int32(types.count)
        let rx = try command(
            [0x60, 0x01, Self.pollPeriodUnits] + types, timeoutMs: chipBoundMs + Self.hostMarginMs)
        do { return try InAutoPollAnswer(rx) } catch { throw fail(error) }
    }

    /// Reads what the NDEF message needs: the CC and the TLVs up to the end
    /// of the first NDEF TLV — 16 bytes with the first READ (pages 3–6), the
    /// rest with FAST_READ (one FAST_READ of the remembered length for a
    /// sticker seen before). A tap needs no more; `identify` (GET_VERSION)
    /// adds the exact NTAG type for `reader scan` and before every write.
    func read(uid: TagUID, identify: Bool = false) throws(ReaderError) -> TagRead {
        let type = identify ? try version() : nil
        // A sticker seen before is read in one FAST_READ of the pages its
        // message took last time; otherwise READ gives pages 3–6 first.
        let hint = readHints[uid] ?? 0
        let first = hint > 4 ? try fastRead(from: 3, to: 3 + min(hint, 60) - 1) : try exchange([0x30, 0x03])
        guard first.count >= 16 else { throw fail(.io("short READ answer")) }
        var result = TagRead(
            uid: uid, type: type, capabilityContainer: nil, ndef: nil, message: nil, decodeError: nil,
            bytesRead: first.count)
        let cc: CapabilityContainer
        do { cc = try CapabilityContainer(Array(first[0..<4])) } catch {
            result.decodeError = "\(error)"
            return result
        }
        result.capabilityContainer = cc
        let areaSize = min(cc.dataAreaSize, type?.userBytes ?? NTAGType.ntag216.userBytes)
        var area = Array(first.dropFirst(4))
        while true {
            let scan: Type2.Scan
            do { scan = try Type2.scan(prefix: area, areaSize: areaSize) } catch {
                result.decodeError = "\(error)"
                return result
            }
            switch scan {
            case .noNDEF:
                return result
            case .complete(let value, let end):
                remember(uid, pages: 1 + (end + 3) / 4)
                result.ndef = value
                do { result.message = try NDEFMessage.decode(value) } catch { result.decodeError = "\(error)" }
                return result
            case .needMore(let more):
                // At most 60 pages (240 bytes) a FAST_READ: the answer must fit
                // one normal PN532 frame (UM0701-02 §6.2.1.1, 255 bytes of data).
                let startPage = 4 + area.count / 4
                let wanted = min(areaSize - area.count, ((more + 3) / 4) * 4, 240)
                let endPage = startPage + max(1, wanted / 4) - 1
                let bytes = try fastRead(from: startPage, to: endPage)
                area += bytes
                result.bytesRead += bytes.count
            }
        }
    }

    /// How many pages from page 3 each recently seen sticker's message took
    /// (bounded; a stale hint only costs one more read).
    private var readHints: [TagUID: Int] = [:]

    private func remember(_ uid: TagUID, pages: Int) {
        if readHints.count >= 512 && readHints[uid] == nil { readHints.removeAll(keepingCapacity: true) }
        readHints[uid] = pages
    }

    /// How many bytes of its NDEF file (NLEN and the message) each recently seen
    /// ISO-DEP tag held (bounded like `readHints`).
    var isoDEPReadHints: [TagUID: Int] { isoDEPHints }
    private var isoDEPHints: [TagUID: Int] = [:]

    func rememberISODEP(_ uid: TagUID, bytes: Int) {
        if isoDEPHints.count >= 512 && isoDEPHints[uid] == nil { isoDEPHints.removeAll(keepingCapacity: true) }
        isoDEPHints[uid] = bytes
    }

    private func version() throws(ReaderError) -> NTAGType {
        let v = try exchange([0x60])
        guard let type = NTAGType(versionResponse: v) else { throw .notNTAG("GET_VERSION answered \(Hex.encode(v))") }
        return type
    }

    private func fastRead(from: Int, to: Int) throws(ReaderError) -> [UInt8] {
        let bytes = try exchange([0x3A, UInt8(from), UInt8(to)])
        guard bytes.count == (to - from + 1) * 4 else {
            throw fail(.io("FAST_READ \(from)–\(to) answered \(bytes.count) bytes"))
        }
        return bytes
    }

    // MARK: Writing

    /// Writes `message` on the tag `uid` (in the field and activated), reads
    /// it back and verifies it. Only a blank tag or one of our stickers
    /// (docs/design.md) unless `overwrite`. The NDEF TLV's length is written as 0
    /// first and set last (T2T 1.0 §6.4.2), so a tag torn away mid-write holds
    /// an empty message, never a half sticker.
    @discardableResult
    public func write(_ message: NDEFMessage, to uid: TagUID, options: WriteOptions) throws(ReaderError) -> WriteReport
    {
        let page0 = try exchange([0x30, 0x00])
        guard page0.count >= 16 else { throw fail(.io("short READ answer")) }
        let found = Self.uid(fromPages: page0)
        guard found == uid else { throw .wrongTag(expected: uid, found: found) }
        let current = try read(uid: uid, identify: true)
        guard let type = current.type else { throw .notNTAG("no version") }
        guard let cc = current.capabilityContainer else { throw .readOnly("no NDEF capability container") }
        guard !cc.readOnly else { throw .readOnly("capability container access \(Hex.encode([cc.access]))") }
        if StaticLock(page0[10], page0[11]).lockedPages.contains(where: { $0 >= 4 }) {
            throw .readOnly("static lock bits set")
        }
        switch current.content {
        case .blank: break
        case .message(let m) where Self.isOurs(m): break
        default:
            guard options.overwrite else {
                throw .foreignContent(current.decodeError ?? (current.message.map(Self.summary) ?? "unknown"))
            }
        }
        let tlv: [UInt8]
        do { tlv = try Type2.ndefTLV(message) } catch { throw .io("\(error)") }
        let capacity = min(cc.dataAreaSize, type.ndefCapacity)
        guard tlv.count <= capacity else { throw .tooSmall(needed: tlv.count, capacity: capacity) }

        // Dynamic lock bits and the configuration pages (AUTH0, ACCESS).
        let config = try exchange([0x30, UInt8(type.dynamicLockPage)])
        guard config.count >= 16 else { throw fail(.io("short READ answer")) }
        let lastPage = 4 + (tlv.count + 3) / 4 - 1
        if type.dynamicallyLockedPages(Array(config[0..<3])).contains(where: { $0 <= lastPage }) {
            throw .readOnly("dynamic lock bits cover pages of the message")
        }
        let auth0 = Int(config[7])
        let protectedNow = auth0 < type.pages
        // PWD_AUTH only for a tag that is already protected, and only here:
        // taps never send it.
        if protectedNow {
            guard let password = options.password else {
                throw .authenticationFailed(
                    "the tag is password-protected from page \(auth0) and no password was given")
            }
            try authenticate(password)
        }

        var padded = tlv
        while padded.count % 4 != 0 { padded.append(0) }
        var pages = stride(from: 0, to: padded.count, by: 4).map { Array(padded[$0..<($0 + 4)]) }
        let header = pages[0]
        pages[0] = Self.zeroLength(header)
        for (i, page) in pages.enumerated() { try writePage(4 + i, page) }
        if pages[0] != header { try writePage(4, header) }

        var protected = protectedNow
        if options.protect, let password = options.password, !protectedNow {
            // PWD and PACK, then AUTH0 = first user page; authenticating with
            // the new password proves it (the PACK comes back) before ACCESS
            // locks the configuration: PROT = 0 (reads stay open to phones),
            // CFGLCK = 1, AUTHLIM (NTAG213/215/216 data sheet §8.8).
            try writePage(type.pwdPage, password.pwd)
            try writePage(type.packPage, password.pack + [0, 0])
            try writePage(type.cfg0Page, [config[4], config[5], config[6], UInt8(NTAGType.firstUserPage)])
            try authenticate(password)
            let access = UInt8(0x40) | UInt8(max(0, min(options.authLimit, 7)))
            try writePage(type.cfg1Page, [access, config[9], config[10], config[11]])
            protected = true
        }

        // Read back and verify.
        let back = try read(uid: uid)
        guard back.ndef == (try? message.encoded()) else { throw .io("read-back does not match what was written") }
        return WriteReport(uid: uid, type: type, bytes: tlv.count, protected: protected)
    }

    /// PWD_AUTH (1Bh): the tag answers with its PACK, which must match.
    private func authenticate(_ password: NTAGPassword) throws(ReaderError) {
        passwordAuthentications += 1
        let pack: [UInt8]
        do { pack = try exchange([0x1B] + password.pwd) } catch .nak(let m) {
            throw .authenticationFailed("the tag refused the password (\(m))")
        } catch .tagLost {
            throw .authenticationFailed("no answer to PWD_AUTH (wrong password or the tag left)")
        }
        guard pack.count >= 2, Array(pack[0..<2]) == password.pack else {
            throw .authenticationFailed("the tag's PACK \(Hex.encode(pack)) is not the expected one")
        }
    }

    private func writePage(_ page: Int, _ bytes: [UInt8]) throws(ReaderError) {
        _ = try exchange([0xA2, UInt8(page)] + bytes)
    }

    /// The NDEF TLV's first page with its length set to 0.
    static func zeroLength(_ page: [UInt8]) -> [UInt8] {
        page[1] == 0xFF ? [0x03, 0x00, 0xFE, 0x00] : [page[0], 0x00] + page[2...]
    }

    static func isOurs(_ m: NDEFMessage) -> Bool {
        m.records.contains { ((try? $0.uri()) ?? nil)?.hasPrefix(StickerURL.prefix) ?? false }
    }

    static func summary(_ m: NDEFMessage) -> String {
        if let uri = m.records.lazy.compactMap({ (try? $0.uri()) ?? nil }).first { return "URI \(uri.prefix(40))" }
        return "\(m.records.count) record(s)"
    }

    /// UID from pages 0–1: UID0–2, BCC0, UID3–6 (NTAG21x data sheet §8.5.1).
    static func uid(fromPages p: [UInt8]) -> TagUID {
        TagUID([p[0], p[1], p[2], p[4], p[5], p[6], p[7]])
    }

    // MARK: Chip commands

    /// InDataExchange with target 1; the tag's answer (status checked).
    func exchange(_ tagCommand: [UInt8]) throws(ReaderError) -> [UInt8] {
        let rx = try command([0x40, 0x01] + tagCommand, timeoutMs: Self.exchangeTimeoutMs, tagLevel: true)
        guard let status = rx.first else { throw fail(.io("empty InDataExchange answer")) }
        guard status & 0x3F == 0 else { throw .io("status \(status)") }
        return Array(rx.dropFirst())
    }

    /// One PN532 command with a finite host timeout.
    func command(_ tx: [UInt8], timeoutMs: Int32, tagLevel: Bool = false) throws(ReaderError) -> [UInt8] {
        guard let device else { throw ReaderError.noReader("not open") }
        var rx = [UInt8](repeating: 0, count: 300)
        let n = tx.withUnsafeBufferPointer { t in
            rx.withUnsafeMutableBufferPointer { r in
                pn53x_transceive(device, t.baseAddress, t.count, r.baseAddress, r.count, timeoutMs)
            }
        }
        if n >= 0 { return Array(rx[0..<Int(n)]) }
        switch n {
        case NFC_ERFTRANS where tagLevel: throw ReaderError.tagLost
        case NFC_EMFCAUTHFAIL where tagLevel: throw ReaderError.nak("command \(Hex.encode([tx[2]]))")
        case NFC_ETGRELEASED where tagLevel: throw ReaderError.tagLost
        case NFC_ETIMEOUT:
            throw fail(.timeout("no answer to PN532 command \(Hex.encode([tx[0]])) within \(timeoutMs) ms"))
        default: throw fail(.io("PN532 command \(Hex.encode([tx[0]])): \(errorText(n))"))
        }
    }

    private func errorText() -> String {
        guard let device, let text = nfc_strerror(device) else { return "unknown error" }
        return String(cString: text)
    }

    /// The error of a driver-level call (`pn53x_transceive`), which returns its
    /// code without setting the device's last error: `nfc_strerror` would name
    /// an older one, or "Success".
    private func errorText(_ code: Int32) -> String {
        if let device, nfc_device_get_last_error(device) == code { return errorText() }
        return Self.libnfcErrorText(code)
    }

    /// A libnfc error code in words, with its name (nfc-types.h).
    static func libnfcErrorText(_ code: Int32) -> String {
        let name: String
        switch code {
        case NFC_EIO: name = "input/output error (NFC_EIO)"
        case NFC_EINVARG: name = "invalid argument (NFC_EINVARG)"
        case NFC_EDEVNOTSUPP: name = "not supported by the device (NFC_EDEVNOTSUPP)"
        case NFC_ENOTSUCHDEV: name = "no such device (NFC_ENOTSUCHDEV)"
        case NFC_EOVFLOW: name = "buffer overflow (NFC_EOVFLOW)"
        case NFC_ETIMEOUT: name = "timeout (NFC_ETIMEOUT)"
        case NFC_EOPABORTED: name = "operation aborted (NFC_EOPABORTED)"
        case NFC_ENOTIMPL: name = "not implemented (NFC_ENOTIMPL)"
        case NFC_ETGRELEASED: name = "target released (NFC_ETGRELEASED)"
        case NFC_ERFTRANS: name = "RF transmission error (NFC_ERFTRANS)"
        case NFC_EMFCAUTHFAIL: name = "MIFARE authentication failed (NFC_EMFCAUTHFAIL)"
        case NFC_ESOFT: name = "software error (NFC_ESOFT)"
        case NFC_ECHIP: name = "the chip reported an error (NFC_ECHIP)"
        default: name = "libnfc error \(code)"
        }
        return name
    }

    /// fAutomaticRATS (libnfc `NP_AUTO_ISO14443_4`, SetParameters bit 4): whether
    /// InListPassiveTarget and InAutoPoll send RATS to an ISO/IEC 14443-4 target.
    func setAutomaticRATS(_ on: Bool) throws(ReaderError) {
        guard let device else { throw ReaderError.noReader("not open") }
        guard nfc_device_set_property_bool(device, NP_AUTO_ISO14443_4, on) >= 0 else {
            throw fail(.io("SetParameters (automatic RATS): \(errorText())"))
        }
    }

    /// Records a reader-level failure in `health`.
    func fail(_ error: ReaderError) -> ReaderError {
        if error.readerLost { health = device == nil ? .lost(error.description) : .degraded(error.description) }
        return error
    }
}

/// Lock and protection state, read only when asked (`reader scan`).
public struct TagDetails: Equatable, Sendable {
    public var readOnly: Bool
    public var lockedPages: Int
    /// AUTH0 when it falls inside the tag's pages: writes from there need PWD_AUTH.
    public var protectedFrom: Int?
}

extension NFCReader {
    public func details(of tag: TagRead) throws(ReaderError) -> TagDetails {
        guard let type = tag.type else { return TagDetails(readOnly: true, lockedPages: 0, protectedFrom: nil) }
        let page0 = try exchange([0x30, 0x00])
        let config = try exchange([0x30, UInt8(type.dynamicLockPage)])
        guard page0.count >= 16, config.count >= 16 else { throw .io("short READ answer") }
        let locked =
            StaticLock(page0[10], page0[11]).lockedPages.filter { $0 >= 4 }.count
            + type.dynamicallyLockedPages(Array(config[0..<3])).count
        let auth0 = Int(config[7])
        return TagDetails(
            readOnly: (tag.capabilityContainer?.readOnly ?? true) || locked > 0, lockedPages: locked,
            protectedFrom: auth0 < type.pages ? auth0 : nil)
    }
}

/// InAutoPoll's answer (UM0701-02 §7.3.13): NbTg, then for each target its Type, the
/// length of its data and the data. A type A 106 kbit/s target's data (types 00h, 10h,
/// 20h) is Tg, SENS_RES (2), SEL_RES, NFCIDLength, NFCID1 and, when the chip sent RATS,
/// the ATS (TL first); any other type's (a DEP target 40h–42h: Tg, NFCID3, …; FeliCa, type
/// B, Jewel) is only noted, never read as type A. A PN532 asked for the generic 00h
/// reports the type it found (libnfc's `pn53x_ptt_to_nm` never expects 00h back);
/// pn532-sim echoes 00h.
public struct InAutoPollAnswer: Equatable, Sendable {
    public struct TypeA: Equatable, Sendable {
        public var uid: TagUID
        public var sak: UInt8
        /// The ATS (TL first), when the chip sent RATS.
        public var ats: [UInt8]?
        public init(uid: TagUID, sak: UInt8, ats: [UInt8]?) {
            self.uid = uid
            self.sak = sak
            self.ats = ats
        }
    }
    /// The last type A target (the one the chip keeps selected); nil when none.
    public var typeA: TypeA?
    /// The types of the targets that are not type A 106 kbit/s.
    public var otherTypes: [UInt8] = []
    /// Whether the chip found nothing.
    public var isEmpty: Bool { typeA == nil && otherTypes.isEmpty }

    public static let typeATypes: Set<UInt8> = [0x00, 0x10, 0x20]

    public init(_ rx: [UInt8]) throws(ReaderError) {
        guard let count = rx.first else { throw .io("empty InAutoPoll answer") }
        guard count <= 2 else { throw .io("InAutoPoll answered \(count) targets") }
        var at = 1
        for _ in 0..<count {
            guard rx.count >= at + 2, case let length = Int(rx[at + 1]), rx.count >= at + 2 + length else {
                throw .io("short InAutoPoll answer")
            }
            let type = rx[at]
            let data = Array(rx[(at + 2)..<(at + 2 + length)])
            at += 2 + length
            guard Self.typeATypes.contains(type) else {
                otherTypes.append(type)
                continue
            }
            guard data.count >= 5, case let uidLength = Int(data[4]), data.count >= 5 + uidLength,
                [4, 7, 10].contains(uidLength)
            else { throw .io("bad target data in InAutoPoll answer") }
            var ats: [UInt8]?
            if data.count > 5 + uidLength {
                let rest = Array(data[(5 + uidLength)...])
                guard Int(rest[0]) == rest.count else { throw .io("bad ATS in InAutoPoll answer") }
                ats = rest
            }
            typeA = TypeA(uid: TagUID(Array(data[5..<(5 + uidLength)])), sak: data[3], ats: ats)
        }
    }
}

// MARK: - One tap: the poll gatewayd runs

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
