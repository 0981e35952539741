import DoorCore
import OSDP

/// What an OSDP reader (or anyone on the RS-485 bus) sends the control panel: the bytes
/// through FrameAssembler, each packet through Frame.parse and Reply.decode.
enum OSDPTarget {
    static func run(_ data: [UInt8]) {
        if let frame = try? Frame.parse(data) { check(frame, packet: data) }
        var assembler = FrameAssembler()
        // Fed in two parts (split at the first byte's value) so partial packets are waited for.
        let cut = data.isEmpty ? 0 : min(Int(data[0]), data.count)
        assembler.append(data[0..<cut])
        var packets: [[UInt8]] = []
        while let p = assembler.next() { packets.append(p) }
        assembler.append(data[cut...])
        while let p = assembler.next() { packets.append(p) }
        for packet in packets {
            expect(packet.first == OSDP.startOfMessage, "a packet not starting with SOM")
            expect(packet.count == Int(packet[2]) | Int(packet[3]) << 8, "a packet not of its length")
            expect(packet.count <= OSDP.maximumPacketLength, "a packet over the maximum")
            if let frame = try? Frame.parse(packet) { check(frame, packet: packet) }
        }
        expect(packets.reduce(0) { $0 + $1.count } <= data.count, "more packet bytes than input")
    }

    /// A card number the door keys: its text and its registry key give it back, and an FMT
    /// number's key is never a RAW frame's (CB vs CA).
    static func cardNumber(_ number: CardNumber?, formatted: Bool) {
        guard let number else { return }
        expect(number.isFormatted == formatted, "a card number of the other kind")
        expect(CardNumber(text: number.description) == number, "a card number's text does not parse back")
        expect(number.registryKey.card == number, "a card number's key does not give it back")
        expect(number.registryKey.bytes.first == (formatted ? 0xCB : 0xCA), "a card key with the wrong tag")
    }

    static func check(_ frame: Frame, packet: [UInt8]) {
        expect(frame.address <= 0x7F && frame.sequence <= 3, "address or sequence out of range")
        expect((try? frame.encoded()) == packet, "a parsed frame does not encode back to its bytes")
        expect(frame.macInput == Array(packet.prefix(frame.macInput.count)), "MAC input not a prefix of the packet")
        expect((frame.mac != nil) == (frame.securityBlock?.kind.hasMAC ?? false), "a MAC without SCS_15-18")
        guard let reply = try? Reply.decode(code: frame.code, data: frame.data) else { return }
        switch reply {
        case .cardRaw(let card):
            expect(card.bits.count == (Int(card.bitCount) + 7) / 8, "RAW bits not of their count")
            cardNumber(CardData.number(raw: card), formatted: false)
        case .cardFormatted(_, _, let characters):
            expect(characters.count == Int(frame.data[2]), "FMT count")
            cardNumber(CardData.number(formatted: characters), formatted: true)
        case .keypad(_, let keys): expect(keys.count == frame.data.count - 2, "keypad count")
        case .clientCryptogram(let uid, let random, let cryptogram):
            expect(uid.count == 8 && random.count == 8 && cryptogram.count == 16, "CCRYPT field sizes")
        case .initialRMAC(let mac): expect(mac.count == 16, "RMAC_I size")
        default: break
        }
    }
}

/// The control panel fed a reader's answers: the first byte picks insecure (bit 0 clear) or
/// Secure Channel with a session already up (bit 0 set, brought up here with a scripted PD
/// and key 0x5A × 16), the second the chunk size; the rest arrives in chunks, 10 ms apart,
/// with a tick after each (a reply timeout every 20 chunks). Whatever arrives, the CP does not trap, reports no card or key
/// from a frame it refused, and is never "secure" while offline or in insecure mode.
enum OSDPControlPanelTarget {
    static let scbk = [UInt8](repeating: 0x5A, count: 16)

    static func run(_ data: [UInt8]) {
        guard data.count >= 2 else { return }
        let secure = data[0] & 1 == 1
        let chunk = max(1, Int(data[1] & 0x3F))
        var cp = ControlPanel(
            .init(address: 1, security: secure ? .required(scbk: scbk) : .insecure),
            random: { [UInt8](repeating: 0xB0, count: $0) })
        var now: UInt64 = 0
        var out = cp.start(now: now)
        if secure {
            guard establish(&cp, first: out, now: &now) else { return expect(false, "the scripted handshake failed") }
            expect(cp.isSecure, "no session after the scripted handshake")
        }
        let body = Array(data.dropFirst(2))
        var i = 0
        while i < body.count {
            now += 10
            out = cp.received(body[i..<min(i + chunk, body.count)], now: now)
            check(out, cp, secure: secure)
            out = cp.tick(now: now)
            check(out, cp, secure: secure)
            i += chunk
        }
    }

    static func check(_ out: ControlPanel.Output, _ cp: ControlPanel, secure: Bool) {
        if let refused = out.events.firstIndex(where: { if case .refused = $0 { return true } else { return false } }) {
            for event in out.events[refused...] {
                switch event {
                case .card, .cardFormatted, .keypad: expect(false, "a credential reported after a refusal")
                default: break
                }
            }
        }
        for event in out.events {
            if case .cardFormatted = event { OSDPTarget.cardNumber(event.cardNumber, formatted: true) }
        }
        expect(!cp.isSecure || cp.isOnline, "a session while offline")
        expect(secure || !cp.isSecure, "a session in insecure mode")
        for case .online(_, _, let isSecure) in out.events {
            expect(isSecure == secure, "online with the wrong security")
        }
    }

    /// A PD with `scbk` answering ID, CAP, CHLNG and SCRYPT.
    static func establish(_ cp: inout ControlPanel, first: ControlPanel.Output, now: inout UInt64) -> Bool {
        var out = first
        var keys: SecureChannel.SessionKeys?
        let pdRandom = [UInt8](repeating: 0xA0, count: 8)
        for _ in 0..<4 {
            guard let wire = out.send, let command = try? Frame.parse(Array(wire.dropFirst())) else { return false }
            var reply = Frame(address: 1, isReply: true, sequence: command.sequence, code: 0x40)
            switch command.code {
            case 0x61: (reply.code, reply.data) = (0x45, [UInt8](repeating: 1, count: 12))
            case 0x62: (reply.code, reply.data) = (0x46, [9, 1, 1])
            case 0x76:
                guard let k = try? SecureChannel.sessionKeys(scbk: scbk, cpRandom: command.data),
                    let c = try? SecureChannel.clientCryptogram(k, cpRandom: command.data, pdRandom: pdRandom)
                else { return false }
                keys = k
                (reply.code, reply.data) = (0x76, [UInt8](repeating: 7, count: 8) + pdRandom + c)
                reply.securityBlock = SecurityBlock(.scs12, data: [1])
            case 0x77:
                guard let k = keys, let rmac = try? SecureChannel.initialRMAC(k, serverCryptogram: command.data) else {
                    return false
                }
                (reply.code, reply.data) = (0x78, rmac)
                reply.securityBlock = SecurityBlock(.scs14, data: [1])
            default: return false
            }
            guard let bytes = try? reply.encoded() else { return false }
            now += 5
            _ = cp.received(bytes, now: now)
            now += 50
            out = cp.tick(now: now)
        }
        return true
    }
}
