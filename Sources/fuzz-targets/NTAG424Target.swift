import CFuzzLibnfc
import DoorCore
import NFCReader

/// What an NTAG 424 DNA (or anything posing as one) hands the door: a SUN URL
/// from its NDEF file (`SUNURL.parse`, then verification with the AN12196
/// example's zero keys), and the reader's side of EV2 on the tag's answers
/// (`EV2.readerResponse` / `readerFinishFirst`, `Session.openResponse` in every
/// CommMode), and NFCReader's 424 path (`tapNTAG424`, `provisionNTAG424`) on
/// scripted chip answers (ReaderTarget's script format). First byte: 0 = SUN URL
/// text, 2 = a script for a tap, 3 = a script for a provisioning, else tag answers.
enum NTAG424Target {
    static let zero = [UInt8](repeating: 0, count: 16)

    static func run(_ data: [UInt8]) {
        guard let mode = data.first else { return }
        let body = Array(data.dropFirst())
        switch mode {
        case 0: sun(body)
        case 2, 3: reader(body, provision: mode == 3)
        default: answers(body)
        }
    }

    static func reader(_ script: [UInt8], provision: Bool) {
        ReaderTarget.chip = FuzzChip(script: script)
        dg_fuzz_libnfc_set_answer(ReaderTarget.answer)
        let reader = NFCReader(connstring: "pn532_uart:/dev/fuzz")
        do { try reader.open() } catch {
            expect(false, "open failed: \(error)")
            return
        }
        if provision {
            if let done = try? reader.provisionNTAG424(masterKey: zero, base: "https://door.example/t") {
                // Success needs a SUN read that verifies under keys derived from the master key
                // and the UID: scripted garbage must not get there.
                expect(done.uid.bytes.count == 7, "provisioned a \(done.uid.bytes.count)-byte UID")
            }
        } else if let tap = try? reader.tapNTAG424(key: { _ in zero }) {
            expect([4, 7, 10].contains(tap.uid.bytes.count), "a tap with a \(tap.uid.bytes.count)-byte UID")
            expect(tap.ndef.count <= 254, "an NDEF message longer than the file")
            if case .authenticated(let cardUID) = tap.proof {
                expect(cardUID.count == 7, "a card UID of \(cardUID.count)")
            }
        }
        expect(dg_fuzz_libnfc_commands() < 1_000, "\(dg_fuzz_libnfc_commands()) commands for one input")
    }

    static func sun(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let url = try? SUNURL.parse(text) else { return }
        expect(url.encryptedPICCData.count == 16 && url.mac.count == 8, "SUN URL field sizes")
        // Against the URL as parsed: invalid UTF-8 in the input becomes U+FFFD (3 bytes each), so
        // the text can be longer than `bytes` (the first CI fuzz round found that, not a parser bug).
        expect(url.macInput.count <= text.utf8.count, "MAC input longer than the URL")
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
