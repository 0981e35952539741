#if canImport(Glibc)
    import Glibc
#endif
import CFuzzLibnfc
import CNFC
import DoorCore
import NFCReader

/// What a PN532 (and the tag behind it) can answer NFCReader, through the
/// reader's real code: `open`, `poll` (InAutoPoll target data, READ,
/// FAST_READ, GET_VERSION, the incremental NDEF scan), `isPresent`,
/// `details` and `write` (page 0, lock and configuration pages, PWD_AUTH's
/// PACK, the read-back). libnfc is replaced by CFuzzLibnfc, which hands each
/// command to `FuzzChip`.
///
/// Input: one flags byte, then the chip's side.
/// - flags bit 7 clear, "script": each answer is a length byte (0–F7h) and
///   that many bytes, or F8h–FFh for a libnfc error (timeout, RF transmission
///   error, NAK, target released, I/O, chip error, overflow, bad argument);
///   when the script ends the chip times out. RFConfiguration is always
///   answered (it is `open`'s own command).
/// - bit 7 set, "tag": the rest is the memory of an NTAG213/215/216 (by
///   length, zero-padded, UID check bytes set) that answers like a tag; what
///   NFCReader reads must then agree with what `TagImage` says of the memory.
/// - bit 0: identify (GET_VERSION) on poll; bit 1: poll a second time (the
///   remembered-length path); bit 2: isPresent; bit 3: details; bit 4: write
///   a sticker; bit 5: with overwrite; bit 6: with a password (protect).
enum ReaderTarget {
    // nonisolated(unsafe): libFuzzer (and the replayer) run one input at a time on one thread.
    nonisolated(unsafe) static var chip = FuzzChip(script: [])

    static let sticker = NDEFMessage(records: [
        .uri(
            "smp://action?idx=2&ts=1722058039&sig=c78412e0a19f771aa4406e699a02300ed1c104705b2ba1b327d00c14cdc6b46e"
                + "&u=OpUyCIAz6-j97uu0jBLHvw")
    ])

    static func run(_ data: [UInt8]) {
        guard let flags = data.first else { return }
        let emulated = flags & 0x80 != 0
        chip = emulated ? FuzzChip(memory: Array(data.dropFirst())) : FuzzChip(script: Array(data.dropFirst()))
        dg_fuzz_libnfc_set_answer(answer)
        let reader = NFCReader(connstring: "pn532_uart:/dev/fuzz")
        do { try reader.open() } catch {
            expect(false, "open failed: \(error)")
            return
        }
        let identify = flags & 0x01 != 0
        guard let tag = try? reader.poll(identify: identify) else { return }
        Judgement.check(uid: tag.uid, message: tag.message)
        let image = emulated ? chip.image : nil
        if let image, identify { agree(tag, image) }
        if flags & 0x02 != 0, let again = try? reader.poll(identify: identify), emulated {
            expect(again.uid == tag.uid && again.ndef == tag.ndef, "a second read differs from the first")
            expect(again.decodeError == tag.decodeError, "a second read fails differently")
        }
        if flags & 0x04 != 0 { _ = try? reader.isPresent(tag.uid) }
        if flags & 0x08 != 0 { _ = try? reader.details(of: tag) }
        if flags & 0x10 != 0 {
            let options = WriteOptions(
                overwrite: flags & 0x20 != 0,
                password: flags & 0x40 != 0 ? NTAGPassword.derive(deviceKey: Vectors.nativeKey, uid: tag.uid) : nil,
                protect: flags & 0x40 != 0)
            let written = (try? reader.write(sticker, to: tag.uid, options: options)) != nil
            if written, emulated {
                let back = try? TagImage(dump: chip.memory).message()
                expect(back == sticker, "write succeeded but the tag holds \(String(describing: back))")
            }
        }
        expect(dg_fuzz_libnfc_commands() < 1_000, "\(dg_fuzz_libnfc_commands()) commands for one input")
        // Fuzz/make-corpus.py turns tag seeds into script seeds this way.
        if emulated, let path = getenv("FUZZ_READER_TRANSCRIPT") {
            let script = [flags & 0x7F] + chip.transcript
            if let f = fopen(path, "wb") {
                _ = script.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
                fclose(f)
            }
        }
    }

    /// What the reader read (identify on, so bounded by the real type) is
    /// what the memory holds.
    static func agree(_ tag: TagRead, _ image: TagImage) {
        expect(tag.uid == image.uid, "UID \(tag.uid) read, \(image.uid) on the tag")
        expect(tag.type == image.type, "type \(String(describing: tag.type)) read, \(image.type) on the tag")
        guard (try? image.capabilityContainer()) != nil else {
            expect(tag.capabilityContainer == nil && tag.decodeError != nil, "a bad CC was accepted")
            return
        }
        expect(tag.capabilityContainer == (try? image.capabilityContainer()), "another CC read")
        do {
            let value = try Type2.firstNDEFValue(image.dataArea())
            expect(tag.ndef == value, "NDEF TLV read differs from the memory's")
            if let value {
                expect(tag.message == (try? NDEFMessage.decode(value)), "message read differs from the memory's")
            } else {
                expect(tag.decodeError == nil, "no NDEF TLV, yet an error: \(tag.decodeError ?? "")")
            }
        } catch {
            expect(tag.ndef == nil && tag.decodeError != nil, "the memory's TLVs fail (\(error)), the read did not")
        }
    }

    static let answer: dg_fuzz_answer_fn = { tx, txCount, rx, rxCapacity in
        let command = tx.map { Array(UnsafeBufferPointer(start: $0, count: txCount)) } ?? []
        switch ReaderTarget.chip.answer(command) {
        case .failure(let e):
            return e.code
        case .success(let bytes):
            guard let rx, bytes.count <= rxCapacity else { return NFC_EOVFLOW }
            for (i, b) in bytes.enumerated() { rx[i] = b }
            return Int32(bytes.count)
        }
    }
}

struct ChipError: Error { var code: Int32 }

/// The other end of CFuzzLibnfc: a script of answers, or an NTAG21x.
final class FuzzChip {
    private var script: [UInt8] = []
    private var at = 0
    private(set) var memory: [UInt8] = []
    private(set) var type: NTAGType = .ntag213
    private let emulated: Bool
    /// The answers given, in the script format (what a script seed replays).
    private(set) var transcript: [UInt8] = []

    static let errors: [Int32] = [
        NFC_ETIMEOUT, NFC_ERFTRANS, NFC_EMFCAUTHFAIL, NFC_ETGRELEASED, NFC_EIO, NFC_ECHIP, NFC_EOVFLOW, NFC_EINVARG,
    ]
    /// How libnfc reports a tag's NAK on InDataExchange.
    static let nak = ChipError(code: NFC_EMFCAUTHFAIL)

    init(script: [UInt8]) {
        self.script = script
        emulated = false
    }

    init(memory bytes: [UInt8]) {
        type = bytes.count <= 180 ? .ntag213 : bytes.count <= 540 ? .ntag215 : .ntag216
        var m = Array(bytes.prefix(type.dumpSize))
        m += [UInt8](repeating: 0, count: type.dumpSize - m.count)
        m[3] = 0x88 ^ m[0] ^ m[1] ^ m[2]
        m[8] = m[4] ^ m[5] ^ m[6] ^ m[7]
        memory = m
        emulated = true
    }

    var image: TagImage? { try? TagImage(dump: memory) }

    func answer(_ tx: [UInt8]) -> Result<[UInt8], ChipError> {
        if tx.first == 0x32 { return .success([]) }  // RFConfiguration
        guard emulated else { return next() }
        let a = tag(tx)
        switch a {
        case .success(let bytes) where bytes.count < 0xF8: transcript += [UInt8(bytes.count)] + bytes
        case .success: transcript.append(0xFC)  // not expressible: an I/O error instead
        case .failure(let e): transcript.append(0xF8 + UInt8(Self.errors.firstIndex(of: e.code) ?? 4))
        }
        return a
    }

    private func next() -> Result<[UInt8], ChipError> {
        guard at < script.count else { return .failure(ChipError(code: NFC_ETIMEOUT)) }
        let header = script[at]
        at += 1
        if header >= 0xF8 { return .failure(ChipError(code: Self.errors[Int(header - 0xF8)])) }
        let bytes = Array(script[at..<min(script.count, at + Int(header))])
        at += bytes.count
        return .success(bytes)
    }

    /// InAutoPoll finds the tag; InDataExchange carries NTAG21x commands
    /// (NTAG213/215/216 data sheet §10); status 00h first, as NFCReader expects.
    private func tag(_ tx: [UInt8]) -> Result<[UInt8], ChipError> {
        let pages = type.pages
        switch tx.first {
        case 0x60:
            return .success([0x01, 0x10, 0x0C, 0x01, 0x00, 0x44, 0x00, 0x07] + memory[0..<3] + memory[4..<8])
        case 0x40 where tx.count >= 3:
            let c = Array(tx.dropFirst(2))
            switch c[0] {
            case 0x30 where c.count == 2 && Int(c[1]) < pages:  // READ: 4 pages, rolling over
                return .success([0x00] + (0..<16).map { memory[(Int(c[1]) * 4 + $0) % memory.count] })
            case 0x3A where c.count == 3 && c[1] <= c[2] && Int(c[2]) < pages:  // FAST_READ
                return .success([0x00] + memory[Int(c[1]) * 4..<(Int(c[2]) + 1) * 4])
            case 0x60 where c.count == 1:  // GET_VERSION
                return .success([0x00] + type.versionResponse)
            case 0xA2 where c.count == 6 && c[1] >= 2 && Int(c[1]) < pages:  // WRITE
                memory.replaceSubrange(Int(c[1]) * 4..<Int(c[1]) * 4 + 4, with: c[2..<6])
                return .success([0x00])
            case 0x1B where c.count == 5:  // PWD_AUTH
                let pwd = type.pwdPage * 4, pack = type.packPage * 4
                guard Array(memory[pwd..<pwd + 4]) == Array(c[1..<5]) else { return .failure(Self.nak) }
                return .success([0x00] + memory[pack..<pack + 2])
            default:
                return .failure(Self.nak)
            }
        default:
            return .failure(ChipError(code: NFC_EIO))
        }
    }
}
