import DoorCore

/// Tag bytes as the door reads them: an NDEF message, a Type 2 data area
/// (whole, and page by page as NFCReader reads it), an NTAG21x dump.
enum NDEFTarget {
    static func run(_ data: [UInt8]) {
        message(data)
        area(data)
        dump(data)
    }

    /// NDEF 1.0 message: what a decoded message says, and that what it
    /// encodes decodes to the same message.
    static func message(_ data: [UInt8]) {
        guard let m = try? NDEFMessage.decode(data) else { return }
        Judgement.check(uid: Vectors.uid, message: m)
        _ = try? m.firstURI()
        _ = m.firstText()
        for r in m.records {
            _ = try? r.uri()
            _ = try? r.text()
        }
        if let encoded = try? m.encoded() {
            expect((try? NDEFMessage.decode(encoded)) == m, "decode(encode(m)) != m")
        }
    }

    /// A data area: the TLV list, and the first NDEF TLV found by reading it
    /// whole and by reading it in steps as NFCReader does (16 bytes from page
    /// 3, so 12 of the area, then what `scan` asks for) must agree.
    static func area(_ data: [UInt8]) {
        _ = try? Type2.parseTLVs(data)
        _ = try? Type2.content(ofArea: data)
        let whole = Result { () throws(NDEFError) in try Type2.firstNDEFValue(data) }
        var have = min(12, data.count)
        for _ in 0...data.count + 1 {
            let scan: Type2.Scan
            do {
                scan = try Type2.scan(prefix: Array(data.prefix(have)), areaSize: data.count)
            } catch {
                expect((try? whole.get()) == nil && isFailure(whole), "scan threw \(error), whole read did not")
                return
            }
            switch scan {
            case .complete(let value, let end):
                expect((try? whole.get()) == value, "page-by-page value differs from the whole read")
                expect(end <= data.count && end >= value.count, "end \(end) outside the area")
                return
            case .noNDEF:
                expect((try? whole.get()) == .some(nil), "page-by-page finds no NDEF, whole read does")
                return
            case .needMore(let more):
                expect(more > 0 && have < data.count, "needMore(\(more)) with \(have) of \(data.count) bytes")
                // What was asked for, or 4 pages: a run of NULL TLVs asks one byte at a time.
                have = min(data.count, have + max(more, 16))
            }
        }
        expect(false, "scan did not finish")
    }

    static func isFailure<T, E>(_ r: Result<T, E>) -> Bool {
        if case .failure = r { return true }
        return false
    }

    /// A dump file as such, then the bytes as an NTAG213/215/216 image (the
    /// first byte picks the type, the UID check bytes are set so the image is
    /// one a tag could hold): everything the daemon and `tag inspect` ask of it.
    static func dump(_ data: [UInt8]) {
        if let image = try? TagImage(dump: data) { inspect(image) }
        guard let first = data.first else { return }
        let type = NTAGType.allCases[Int(first) % 3]
        var bytes = Array(data.dropFirst().prefix(type.dumpSize))
        bytes += [UInt8](repeating: 0, count: type.dumpSize - bytes.count)
        bytes[3] = 0x88 ^ bytes[0] ^ bytes[1] ^ bytes[2]
        bytes[8] = bytes[4] ^ bytes[5] ^ bytes[6] ^ bytes[7]
        guard let image = try? TagImage(dump: bytes) else {
            expect(false, "a dump with correct BCCs was refused")
            return
        }
        inspect(image)
    }

    static func inspect(_ image: TagImage) {
        _ = image.uid
        _ = image.page(image.type.dynamicLockPage)
        _ = image.lockedPages
        _ = image.isLocked
        _ = image.auth0
        _ = try? image.isBlank()
        _ = try? image.capabilityContainer()
        guard case .message(let m)? = try? image.content() else { return }
        expect((try? image.message()) == m, "content() and message() disagree")
        // Written again on a factory tag of the same type, it reads back the same.
        if let again = try? TagImage.make(type: image.type, uid: image.uid, message: m) {
            expect((try? again.message()) == m, "a message written by TagImage.make reads back different")
        }
    }
}
