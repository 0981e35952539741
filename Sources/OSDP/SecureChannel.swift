import DoorCore

/// OSDP Secure Channel (SCS_11…SCS_18, AES-128), the control panel's half.
///
/// The handshake: the CP sends osdp_CHLNG with its random RND.A (SCS_11); the PD answers
/// osdp_CCRYPT with its client UID, RND.B and the client cryptogram (SCS_12); the CP checks
/// that cryptogram, answers osdp_SCRYPT with the server cryptogram (SCS_13); the PD answers
/// osdp_RMAC_I (SCS_14) with the initial reply MAC, which the CP checks too. From then on every
/// packet carries a MAC (SCS_15/16) and data is encrypted (SCS_17/18), each MAC chained on the
/// one before (the CP's command MAC starts from the last reply MAC and the reverse), so a frame
/// replayed, reordered, dropped or altered fails its MAC.
///
///     S-ENC  = AES(SCBK, 01 82 RND.A[0…5] 00…)       S-MAC1 = AES(SCBK, 01 01 RND.A[0…5] 00…)
///     S-MAC2 = AES(SCBK, 01 02 RND.A[0…5] 00…)
///     client cryptogram = AES(S-ENC, RND.A ‖ RND.B)    server cryptogram = AES(S-ENC, RND.B ‖ RND.A)
///     RMAC_I = AES(S-MAC2, AES(S-MAC1, server cryptogram))
///     MAC    = CBC-MAC over the packet from SOM through the data, padded 80 00… to 16 bytes
///              (no padding when already whole blocks), IV = the other side's last MAC, every
///              block with S-MAC1 but the last, which uses S-MAC2; 4 bytes go on the wire
///     data   = AES-CBC(S-ENC, IV = ~(the other side's last MAC), data ‖ 80 00…)
public enum SecureChannelError: Error, Equatable, Sendable {
    /// The PD's client cryptogram does not match: it holds another key (or is not the PD).
    case clientCryptogramMismatch
    /// The PD's initial R-MAC does not match what the session keys give.
    case initialRMACMismatch
    /// The PD said the secure channel is not established (RMAC_I's SCB data is not 0x01).
    case refusedByDevice
    /// A reply in plain text (no security block) while the session is up: a downgrade.
    case plaintextInSession(code: UInt8)
    /// A reply whose security block is not SCS_16/18 while the session is up.
    case unexpectedSecurityBlock(UInt8)
    /// The reply's MAC does not match the chain: altered, replayed or out of order.
    case badMAC
    /// The encrypted data is not whole blocks or its padding is not 80 00….
    case badPadding
    /// A key that is not 16 bytes.
    case badKeyLength(Int)
    /// A random that is not 8 bytes.
    case badRandomLength(Int)
    /// The crypto library failed.
    case crypto(String)
}

public enum SecureChannel {
    /// SCBK-D, the default key of install mode (the spec's 0x30…0x3F).
    public static let defaultKey: [UInt8] = Array(0x30...0x3F)

    public struct SessionKeys: Equatable, Sendable {
        public var encryption: [UInt8]
        public var mac1: [UInt8]
        public var mac2: [UInt8]
    }

    static func aes(_ key: [UInt8], _ block: [UInt8]) throws -> [UInt8] {
        do { return try Crypto.aes128ECB(.encrypt, key: key, block: block) } catch {
            throw SecureChannelError.crypto("\(error)")
        }
    }

    public static func sessionKeys(scbk: [UInt8], cpRandom: [UInt8]) throws -> SessionKeys {
        guard scbk.count == 16 else { throw SecureChannelError.badKeyLength(scbk.count) }
        guard cpRandom.count == 8 else { throw SecureChannelError.badRandomLength(cpRandom.count) }
        func derive(_ b1: UInt8) throws -> [UInt8] {
            try aes(scbk, [0x01, b1] + cpRandom[0..<6] + [UInt8](repeating: 0, count: 8))
        }
        return SessionKeys(encryption: try derive(0x82), mac1: try derive(0x01), mac2: try derive(0x02))
    }

    public static func clientCryptogram(_ keys: SessionKeys, cpRandom: [UInt8], pdRandom: [UInt8]) throws -> [UInt8] {
        try aes(keys.encryption, cpRandom + pdRandom)
    }

    public static func serverCryptogram(_ keys: SessionKeys, cpRandom: [UInt8], pdRandom: [UInt8]) throws -> [UInt8] {
        try aes(keys.encryption, pdRandom + cpRandom)
    }

    public static func initialRMAC(_ keys: SessionKeys, serverCryptogram: [UInt8]) throws -> [UInt8] {
        try aes(keys.mac2, try aes(keys.mac1, serverCryptogram))
    }

    /// The full 16-byte MAC of `message` chained on `iv` (the other side's last MAC).
    public static func mac(_ keys: SessionKeys, iv: [UInt8], message: [UInt8]) throws -> [UInt8] {
        var blocks = message
        if blocks.isEmpty || blocks.count % 16 != 0 {
            blocks.append(0x80)
            while blocks.count % 16 != 0 { blocks.append(0) }
        }
        var chain = iv
        let count = blocks.count / 16
        for i in 0..<count {
            var block = Array(blocks[(i * 16)..<(i * 16 + 16)])
            for j in 0..<16 { block[j] ^= chain[j] }
            chain = try aes(i == count - 1 ? keys.mac2 : keys.mac1, block)
        }
        return chain
    }

    public static func encrypt(_ keys: SessionKeys, lastMAC: [UInt8], data: [UInt8]) throws -> [UInt8] {
        var padded = data + [0x80]
        while padded.count % 16 != 0 { padded.append(0) }
        do {
            return try Crypto.aes128CBC(.encrypt, key: keys.encryption, iv: lastMAC.map { ~$0 }, data: padded)
        } catch { throw SecureChannelError.crypto("\(error)") }
    }

    public static func decrypt(_ keys: SessionKeys, lastMAC: [UInt8], data: [UInt8]) throws -> [UInt8] {
        guard !data.isEmpty, data.count % 16 == 0 else { throw SecureChannelError.badPadding }
        let plain: [UInt8]
        do {
            plain = try Crypto.aes128CBC(.decrypt, key: keys.encryption, iv: lastMAC.map { ~$0 }, data: data)
        } catch { throw SecureChannelError.crypto("\(error)") }
        guard let end = plain.lastIndex(where: { $0 != 0 }), plain[end] == 0x80 else {
            throw SecureChannelError.badPadding
        }
        return Array(plain[..<end])
    }
}

/// One established session, the CP's side: the keys and the MAC chain. `seal` turns a
/// command into wire bytes (MAC, encryption); `open` checks a reply and returns it in clear.
/// A failed `open` leaves the chain as it was; the caller ends the session (a bad MAC means
/// the two ends no longer agree, and the spec says restart the handshake).
public struct SecureSession: Sendable {
    public let keys: SecureChannel.SessionKeys
    /// The last reply MAC (R-MAC), the IV of the next command's MAC.
    public private(set) var replyMAC: [UInt8]
    /// The last command MAC (C-MAC), the IV of the next reply's MAC.
    public private(set) var commandMAC: [UInt8]

    public init(keys: SecureChannel.SessionKeys, initialRMAC: [UInt8]) {
        self.keys = keys
        self.replyMAC = initialRMAC
        self.commandMAC = [UInt8](repeating: 0, count: 16)
    }

    /// The wire bytes of a command inside the session (SCS_15 without data, SCS_17 with).
    public mutating func seal(address: UInt8, sequence: UInt8, usesCRC: Bool, command: Command) throws -> [UInt8] {
        let payload = command.payload
        var frame = Frame(
            address: address, isReply: false, sequence: sequence, usesCRC: usesCRC,
            securityBlock: SecurityBlock(payload.isEmpty ? .scs15 : .scs17), code: command.code)
        if !payload.isEmpty { frame.data = try SecureChannel.encrypt(keys, lastMAC: replyMAC, data: payload) }
        var body = try frame.encodedBody(macLength: 4)
        let mac = try SecureChannel.mac(keys, iv: replyMAC, message: body)
        commandMAC = mac
        body += mac[0..<4]
        OSDP.appendCheck(to: &body, crc: usesCRC)
        return body
    }

    /// Checks a reply of the session and returns its code and clear data.
    public mutating func open(_ frame: Frame) throws -> (code: UInt8, data: [UInt8]) {
        guard let block = frame.securityBlock else { throw SecureChannelError.plaintextInSession(code: frame.code) }
        guard block.kind == .scs16 || block.kind == .scs18, let wireMAC = frame.mac else {
            throw SecureChannelError.unexpectedSecurityBlock(block.kind.rawValue)
        }
        let mac = try SecureChannel.mac(keys, iv: commandMAC, message: frame.macInput)
        guard Crypto.constantTimeEqual(Array(mac[0..<4]), wireMAC) else { throw SecureChannelError.badMAC }
        var data = frame.data
        if block.kind == .scs18 { data = try SecureChannel.decrypt(keys, lastMAC: commandMAC, data: data) }
        replyMAC = mac
        return (frame.code, data)
    }
}

extension SecureChannel.SessionKeys: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { "SessionKeys(<redacted>)" }
    public var debugDescription: String { description }
}

extension SecureSession: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String { "SecureSession(<redacted>)" }
    public var debugDescription: String { description }
}
