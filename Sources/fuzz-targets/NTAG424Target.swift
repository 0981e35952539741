import DoorCore

/// What an NTAG 424 DNA (or anything posing as one) hands the door: a SUN URL
/// from its NDEF file (`SUNURL.parse`, then verification with the AN12196
/// example's zero keys), and the reader's side of EV2 on the tag's answers
/// (`EV2.readerResponse` / `readerFinishFirst`, `Session.openResponse` in every
/// CommMode). First byte: 0 = SUN URL text, else tag answers.
enum NTAG424Target {
    static let zero = [UInt8](repeating: 0, count: 16)

    static func run(_ data: [UInt8]) {
        guard let mode = data.first else { return }
        let body = Array(data.dropFirst())
        if mode == 0 { sun(body) } else { answers(body) }
    }

    static func sun(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let url = try? SUNURL.parse(text) else { return }
        expect(url.encryptedPICCData.count == 16 && url.mac.count == 8, "SUN URL field sizes")
        expect(url.macInput.count <= bytes.count, "MAC input longer than the URL")
        guard let verdict = try? url.verify(metaReadKey: zero, fileReadKey: zero) else { return }
        if let uid = verdict.piccData.uid { expect(uid.count == 7, "a PICCData UID of \(uid.count) bytes") }
        if let c = verdict.piccData.counter { expect(c <= 0xFF_FFFF, "a counter over 24 bits") }
        // A MAC that holds holds for the same bytes only: one flipped MAC bit fails.
        if verdict.macOK {
            var forged = url
            forged.mac[0] ^= 0x01
            expect((try? forged.verify(metaReadKey: zero, fileReadKey: zero).macOK) == false, "a forged MAC passed")
        }
    }

    static func answers(_ bytes: [UInt8]) {
        let rndA = [UInt8](repeating: 0xA5, count: 16)
        let challenge = Array(bytes.prefix(16))
        let rest = Array(bytes.dropFirst(16))
        if let step = try? NTAG424.EV2.readerResponse(key: zero, encryptedRndB: challenge, rndA: rndA) {
            expect(step.message.count == 32 && step.rndB.count == 16, "EV2 part 2 sizes")
            if let done = try? NTAG424.EV2.readerFinishFirst(
                key: zero, rndA: rndA, rndB: step.rndB, answer: Array(rest.prefix(32)))
            {
                expect(done.session.ti.count == 4 && done.session.commandCounter == 0, "a session from garbage")
            }
        }
        let session = NTAG424.Session(encKey: zero, macKey: zero, ti: [1, 2, 3, 4], commandCounter: 7)
        for mode in [NTAG424.CommMode.plain, .mac, .full] {
            var s = session
            let opened = try? s.openResponse(rest, status: 0x00, mode: mode)
            expect(s.commandCounter == 8, "CmdCtr must advance once per response")
            if let opened, mode != .plain { expect(opened.count < rest.count, "an opened response kept its MAC") }
        }
        _ = NTAG424.newKey(fromChangeKeyData: rest, oldKey: zero)
        _ = try? NTAG424.unpad(rest)
    }
}
