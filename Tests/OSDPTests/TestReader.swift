import DoorCore

@testable import OSDP

/// The PD half of OSDP, written for the tests from the spec (not from ControlPanel): it
/// answers the CP's commands, runs the Secure Channel handshake with its SCBK, checks each
/// command's MAC and MACs/encrypts its replies. Faults let a test make it misbehave.
struct TestReader {
    var address: UInt8 = 1
    var scbk: [UInt8]
    var secureCapable = true
    var random: [UInt8] = Array(0xA0...0xA7)
    var clientUID: [UInt8] = Array(0x10...0x17)
    /// Replies waiting for the next poll (a card, a key press…).
    var pending: [(code: UInt8, data: [UInt8])] = []
    var identity = hex("5C 26 23 19 02 78 56 34 12 03 02 01")
    /// Answer the next command osdp_BUSY (MAC'd inside the session).
    var busyOnce = false

    var keys: SecureChannel.SessionKeys?
    var established = false
    var replyMAC: [UInt8] = []
    var commandMAC: [UInt8] = []
    var commands: [Frame] = []
    var commandErrors: [String] = []

    init(scbk: [UInt8]) { self.scbk = scbk }

    /// The reply bytes to a command packet (with or without the mark), or nil when it drops it.
    mutating func answer(_ wire: [UInt8]) -> [UInt8]? {
        let packet = wire.first == OSDP.mark ? Array(wire.dropFirst()) : wire
        guard let frame = try? Frame.parse(packet), !frame.isReply, frame.address == address else {
            commandErrors.append("not a command for us")
            return nil
        }
        commands.append(frame)
        if frame.sequence == 0 {
            established = false
            keys = nil
        }
        var data = frame.data
        if established, let keys {
            guard let block = frame.securityBlock, block.kind == .scs15 || block.kind == .scs17, let mac = frame.mac,
                let full = try? SecureChannel.mac(keys, iv: replyMAC, message: frame.macInput),
                Array(full.prefix(4)) == mac
            else {
                commandErrors.append("bad command MAC or plaintext")
                established = false
                return reply(frame, 0x41, [6])
            }
            commandMAC = full
            if block.kind == .scs17 {
                guard let clear = try? SecureChannel.decrypt(keys, lastMAC: replyMAC, data: data) else { return nil }
                data = clear
            }
        }
        if busyOnce {
            busyOnce = false
            return reply(frame, 0x79, [])
        }
        switch frame.code {
        case 0x61: return reply(frame, 0x45, identity)
        case 0x62:
            return reply(frame, 0x46, [0x09, secureCapable ? 1 : 0, 1, 0x08, 1, 0, 0x04, 1, 2])
        case 0x76:
            let key = frame.securityBlock?.data == [0] ? SecureChannel.defaultKey : scbk
            let k = try! SecureChannel.sessionKeys(scbk: key, cpRandom: data)
            keys = k
            cpRandom = data
            let cryptogram = try! SecureChannel.clientCryptogram(k, cpRandom: data, pdRandom: random)
            return reply(frame, 0x76, clientUID + random + cryptogram, block: SecurityBlock(.scs12, data: [1]))
        case 0x77:
            guard let k = keys,
                data == (try! SecureChannel.serverCryptogram(k, cpRandom: cpRandom, pdRandom: random))
            else {
                return reply(frame, 0x78, Array(repeating: 0, count: 16), block: SecurityBlock(.scs14, data: [0xFF]))
            }
            let rmac = try! SecureChannel.initialRMAC(k, serverCryptogram: data)
            replyMAC = rmac
            established = true
            return reply(frame, 0x78, rmac, block: SecurityBlock(.scs14, data: [1]))
        case 0x64: return reply(frame, 0x48, [0, 0])
        case 0x60:
            if !pending.isEmpty {
                let next = pending.removeFirst()
                return reply(frame, next.code, next.data)
            }
            return reply(frame, 0x40, [])
        default:
            return reply(frame, 0x40, [])
        }
    }
    var cpRandom: [UInt8] = []

    /// Builds a reply; inside the session, MAC'd (SCS_16) or encrypted (SCS_18).
    mutating func reply(_ command: Frame, _ code: UInt8, _ data: [UInt8], block: SecurityBlock? = nil) -> [UInt8] {
        var frame = Frame(
            address: address, isReply: true, sequence: command.sequence, usesCRC: true, securityBlock: block,
            code: code, data: data)
        guard established, let keys, block == nil else { return try! frame.encoded() }
        frame.securityBlock = SecurityBlock(data.isEmpty ? .scs16 : .scs18)
        if !data.isEmpty { frame.data = try! SecureChannel.encrypt(keys, lastMAC: commandMAC, data: data) }
        var body = try! frame.encodedBody(macLength: 4)
        let mac = try! SecureChannel.mac(keys, iv: commandMAC, message: body)
        replyMAC = mac
        body += mac.prefix(4)
        OSDP.appendCheck(to: &body, crc: true)
        return body
    }
}
