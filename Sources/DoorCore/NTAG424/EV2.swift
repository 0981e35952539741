/// EV2 authentication and secure messaging (DS §9.1, AN12196 §5–6), both
/// sides: the reader (PCD) half the door runs and the tag (PICC) half the
/// emulator runs. The wire between them is the only thing the two share at
/// run time; what they share in code is this arithmetic, pinned by AN12196's
/// published exchanges.
extension NTAG424 {
    /// Communication modes of a command's data (DS §9.1.9).
    public enum CommMode: Sendable, Equatable { case plain, mac, full }

    /// An EV2 secure-messaging session: the session keys, the transaction
    /// identifier and the command counter (CmdCtr, 0 after AuthenticateEV2First,
    /// kept by AuthenticateEV2NonFirst).
    public struct Session: Sendable, Equatable {
        public var encKey: [UInt8]
        public var macKey: [UInt8]
        public var ti: [UInt8]
        public var commandCounter: UInt16
        /// The key number the session was authenticated with.
        public var keyNumber: UInt8

        public init(encKey: [UInt8], macKey: [UInt8], ti: [UInt8], commandCounter: UInt16 = 0, keyNumber: UInt8 = 0) {
            self.encKey = encKey
            self.macKey = macKey
            self.ti = ti
            self.commandCounter = commandCounter
            self.keyNumber = keyNumber
        }

        var counterBytes: [UInt8] { [UInt8(commandCounter & 0xFF), UInt8(commandCounter >> 8)] }

        /// SesAuthENCKey / SesAuthMACKey from the key and both randoms (DS §9.1.7):
        /// `ctx = RndA[0..1] ‖ RndA[2..7]⊕RndB[0..5] ‖ RndB[6..15] ‖ RndA[8..15]`,
        /// SV1 = A55A 0001 0080 ‖ ctx, SV2 = 5AA5 0001 0080 ‖ ctx, each key the CMAC of its vector.
        public static func keys(key: [UInt8], rndA: [UInt8], rndB: [UInt8]) throws -> (enc: [UInt8], mac: [UInt8]) {
            try check(rndA, 16, "RndA")
            try check(rndB, 16, "RndB")
            var ctx = Array(rndA[0..<2])
            for i in 0..<6 { ctx.append(rndA[2 + i] ^ rndB[i]) }
            ctx += rndB[6..<16] + rndA[8..<16]
            let enc = try cmac(key: key, [0xA5, 0x5A, 0x00, 0x01, 0x00, 0x80] + ctx)
            let mac = try cmac(key: key, [0x5A, 0xA5, 0x00, 0x01, 0x00, 0x80] + ctx)
            return (enc, mac)
        }

        // MARK: Arithmetic both sides use

        /// IV of command data in CommMode.Full: E(KENC, A55A ‖ TI ‖ CmdCtr ‖ 0^8).
        public func commandIV() throws -> [UInt8] {
            try ecbEncrypt(key: encKey, [0xA5, 0x5A] + ti + counterBytes + [UInt8](repeating: 0, count: 8))
        }

        /// IV of response data: E(KENC, 5AA5 ‖ TI ‖ CmdCtr ‖ 0^8), CmdCtr already advanced.
        public func responseIV() throws -> [UInt8] {
            try ecbEncrypt(key: encKey, [0x5A, 0xA5] + ti + counterBytes + [UInt8](repeating: 0, count: 8))
        }

        /// MACt(KMAC, INS ‖ CmdCtr ‖ TI ‖ header ‖ data) of a command.
        public func commandMAC(ins: UInt8, header: [UInt8], data: [UInt8]) throws -> [UInt8] {
            try macT(key: macKey, [ins] + counterBytes + ti + header + data)
        }

        /// MACt(KMAC, SW2 ‖ CmdCtr ‖ TI ‖ data) of a response, CmdCtr already advanced.
        public func responseMAC(status: UInt8, data: [UInt8]) throws -> [UInt8] {
            try macT(key: macKey, [status] + counterBytes + ti + data)
        }

        public mutating func advance() { commandCounter &+= 1 }

        // MARK: Reader (PCD) side

        /// The data field of a command: header, then the data (encrypted in
        /// Full mode), then the MAC in MAC and Full modes. CmdCtr is not advanced
        /// here; `openResponse` does that.
        public func sealCommand(ins: UInt8, header: [UInt8], data: [UInt8], mode: CommMode) throws -> [UInt8] {
            switch mode {
            case .plain:
                return header + data
            case .mac:
                return header + data + (try commandMAC(ins: ins, header: header, data: data))
            case .full:
                let c = data.isEmpty ? [] : try cbc(.encrypt, key: encKey, iv: try commandIV(), pad(data))
                return header + c + (try commandMAC(ins: ins, header: header, data: c))
            }
        }

        /// Checks and opens a successful response (`status` is SW2, 00 or AF): advances
        /// CmdCtr, verifies the MAC (MAC and Full) and decrypts (Full).
        public mutating func openResponse(_ body: [UInt8], status: UInt8, mode: CommMode) throws -> [UInt8] {
            advance()
            if mode == .plain { return body }
            guard body.count >= 8 else { throw Failure.integrity("response without a MAC") }
            let data = Array(body.dropLast(8)), mac = Array(body.suffix(8))
            guard Crypto.constantTimeEqual(try responseMAC(status: status, data: data), mac) else {
                throw Failure.integrity("response")
            }
            if mode == .mac || data.isEmpty { return data }
            guard data.count % 16 == 0 else { throw Failure.padding }
            return try unpad(try cbc(.decrypt, key: encKey, iv: try responseIV(), data))
        }

        // MARK: Tag (PICC) side

        /// Checks and opens a command's data field (header of `headerLength`
        /// bytes kept in front); CmdCtr is not advanced here.
        public func openCommand(ins: UInt8, body: [UInt8], headerLength: Int, mode: CommMode) throws -> [UInt8] {
            guard body.count >= headerLength else {
                throw Failure.length("command header", expected: headerLength, got: body.count)
            }
            if mode == .plain { return body }
            guard body.count >= headerLength + 8 else { throw Failure.integrity("command without a MAC") }
            let header = Array(body[..<headerLength])
            let data = Array(body[headerLength..<(body.count - 8)]), mac = Array(body.suffix(8))
            guard Crypto.constantTimeEqual(try commandMAC(ins: ins, header: header, data: data), mac) else {
                throw Failure.integrity("command")
            }
            if mode == .mac || data.isEmpty { return header + data }
            guard data.count % 16 == 0 else { throw Failure.padding }
            return header + (try unpad(try cbc(.decrypt, key: encKey, iv: try commandIV(), data)))
        }

        /// Advances CmdCtr and builds a successful response's data (encrypted in Full mode, MACed in MAC and Full).
        public mutating func sealResponse(_ data: [UInt8], status: UInt8, mode: CommMode) throws -> [UInt8] {
            advance()
            switch mode {
            case .plain: return data
            case .mac: return data + (try responseMAC(status: status, data: data))
            case .full:
                let c = data.isEmpty ? [] : try cbc(.encrypt, key: encKey, iv: try responseIV(), pad(data))
                return c + (try responseMAC(status: status, data: c))
            }
        }
    }

    // MARK: AuthenticateEV2First / NonFirst (DS §10.4, AN12196 Tables 14, 20, 24)

    public enum EV2 {
        /// Reader, step 2: decrypts E(K, RndB) and answers E(K, RndA ‖ RndB').
        public static func readerResponse(key: [UInt8], encryptedRndB: [UInt8], rndA: [UInt8]) throws -> (
            message: [UInt8], rndB: [UInt8]
        ) {
            try check(encryptedRndB, 16, "E(K, RndB)")
            try check(rndA, 16, "RndA")
            let rndB = try cbc(.decrypt, key: key, encryptedRndB)
            return (try cbc(.encrypt, key: key, rndA + rotateLeft(rndB)), rndB)
        }

        /// Reader, step 3 of AuthenticateEV2First: the tag's E(K, TI ‖ RndA' ‖ PDcap2 ‖ PCDcap2)
        /// must carry RndA'; then the session starts with CmdCtr 0.
        public static func readerFinishFirst(
            key: [UInt8], keyNumber: UInt8 = 0, rndA: [UInt8], rndB: [UInt8], answer: [UInt8]
        ) throws -> (session: Session, pdCap2: [UInt8], pcdCap2: [UInt8]) {
            try check(answer, 32, "AuthenticateEV2First answer")
            let p = try cbc(.decrypt, key: key, answer)
            guard Crypto.constantTimeEqual(Array(p[4..<20]), rotateLeft(rndA)) else {
                throw Failure.authenticationFailed
            }
            let k = try Session.keys(key: key, rndA: rndA, rndB: rndB)
            let session = Session(encKey: k.enc, macKey: k.mac, ti: Array(p[0..<4]), keyNumber: keyNumber)
            return (session, Array(p[20..<26]), Array(p[26..<32]))
        }

        /// Reader, step 3 of AuthenticateEV2NonFirst: E(K, RndA') only; TI and CmdCtr carry over.
        public static func readerFinishNonFirst(
            key: [UInt8], keyNumber: UInt8 = 0, rndA: [UInt8], rndB: [UInt8], answer: [UInt8], previous: Session
        ) throws -> Session {
            try check(answer, 16, "AuthenticateEV2NonFirst answer")
            let p = try cbc(.decrypt, key: key, answer)
            guard Crypto.constantTimeEqual(p, rotateLeft(rndA)) else { throw Failure.authenticationFailed }
            let k = try Session.keys(key: key, rndA: rndA, rndB: rndB)
            return Session(
                encKey: k.enc, macKey: k.mac, ti: previous.ti, commandCounter: previous.commandCounter,
                keyNumber: keyNumber)
        }

        /// Tag, step 1: E(K, RndB).
        public static func tagChallenge(key: [UInt8], rndB: [UInt8]) throws -> [UInt8] {
            try check(rndB, 16, "RndB")
            return try cbc(.encrypt, key: key, rndB)
        }

        /// Tag, step 2: checks RndB' in E(K, RndA ‖ RndB') and returns RndA.
        public static func tagVerify(key: [UInt8], rndB: [UInt8], message: [UInt8]) throws -> [UInt8] {
            try check(message, 32, "AuthenticateEV2 part 2")
            let p = try cbc(.decrypt, key: key, message)
            guard Crypto.constantTimeEqual(Array(p[16..<32]), rotateLeft(rndB)) else {
                throw Failure.authenticationFailed
            }
            return Array(p[0..<16])
        }

        /// Tag, step 3 of First: E(K, TI ‖ RndA' ‖ PDcap2 ‖ PCDcap2).
        public static func tagAnswerFirst(
            key: [UInt8], ti: [UInt8], rndA: [UInt8], pdCap2: [UInt8] = [0, 0, 0, 0, 0, 0],
            pcdCap2: [UInt8] = [0, 0, 0, 0, 0, 0]
        ) throws -> [UInt8] {
            try check(ti, 4, "TI")
            return try cbc(.encrypt, key: key, ti + rotateLeft(rndA) + pdCap2 + pcdCap2)
        }

        /// Tag, step 3 of NonFirst: E(K, RndA').
        public static func tagAnswerNonFirst(key: [UInt8], rndA: [UInt8]) throws -> [UInt8] {
            try cbc(.encrypt, key: key, rotateLeft(rndA))
        }
    }

    // MARK: ChangeKey (DS §10.6.1)

    /// The plaintext of ChangeKey's data (sent in CommMode.Full with header KeyNo):
    /// the key the session was authenticated with → `NewKey ‖ KeyVer`; any other →
    /// `(NewKey ⊕ OldKey) ‖ KeyVer ‖ CRC32NK(NewKey)`.
    public static func changeKeyData(newKey: [UInt8], version: UInt8, oldKey: [UInt8]?) throws -> [UInt8] {
        try check(newKey, keyLength, "new key")
        guard let oldKey else { return newKey + [version] }
        try check(oldKey, keyLength, "old key")
        return zip(newKey, oldKey).map { $0 ^ $1 } + [version] + crc32NK(newKey)
    }

    /// The tag's reading of ChangeKey data: the new key, or nil when the
    /// form or CRC does not hold.
    public static func newKey(fromChangeKeyData d: [UInt8], oldKey: [UInt8]?) -> (key: [UInt8], version: UInt8)? {
        guard let oldKey else { return d.count == 17 ? (Array(d[0..<16]), d[16]) : nil }
        guard d.count == 21, oldKey.count == 16 else { return nil }
        let key = zip(d[0..<16], oldKey).map { $0 ^ $1 }
        guard Crypto.constantTimeEqual(crc32NK(key), Array(d[17..<21])) else { return nil }
        return (key, d[16])
    }
}
