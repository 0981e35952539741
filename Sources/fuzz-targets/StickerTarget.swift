import DoorCore

/// A URI record's text as the door judges it (docs/formats.md §1, §4), and share
/// links as `secrets import` reads them (docs/formats.md §2).
enum StickerTarget {
    static func run(_ data: [UInt8]) {
        let text = String(decoding: data, as: UTF8.self)
        if let url = try? StickerURL.parse(text) {
            // The canonical text of what parsed parses to the same sticker.
            expect((try? StickerURL.parse(url.text)) == url, "parse(url.text) != url for \(url.text)")
            _ = url.uidMessage(Vectors.uid)
        }
        if let link = try? ShareLink.parse(text) {
            expect((try? ShareLink.parse(link.text)) == link, "parse(link.text) != link for \(link.text)")
        }
        for uid in [Vectors.uid, nil] {
            let verdict = StickerJudge.judge(text, uid: uid, secrets: Vectors.secrets, actionCount: 4)
            if verdict.isValid {
                expect(verdict.url != nil && verdict.secretID != nil, "a valid verdict without URL or secret")
                expect((verdict.url?.action ?? 99) < 4, "a valid verdict for an unknown action")
            }
            _ = verdict.description
        }
        // Review H1: a generated key also held as imported never passes a v1 sticker.
        let generated = Vectors.generatedSecret
        var doubled = Vectors.secrets
        doubled.append(StickerSecret(id: 99, action: generated.action, key: generated.key, origin: .imported))
        let copy = StickerJudge.judge(text, uid: nil, secrets: doubled, actionCount: 4)
        expect(!(copy.reason == .validV1 && copy.secretID == 99), "v1 passed with a gateway-generated key")
        // As the gateway writes it (a URI record on an NTAG213), it reads back unchanged.
        let record = NDEFRecord.uri(text)
        expect((try? record.uri()) == text, "URI record of \(text.debugDescription) reads back different")
        if let image = try? TagImage.make(type: .ntag213, uid: Vectors.uid, message: NDEFMessage(records: [record])) {
            expect((try? image.message().firstURI()) == text, "sticker image of \(text.debugDescription) differs")
        }
    }
}
