/// The commands a control panel (CP) sends and the replies a peripheral device (PD) gives,
/// as values: `Command.code`/`payload` build the bytes after the code, `Reply.decode` reads
/// them back with a `MessageError` for every length or field that is wrong.

public enum MessageError: Error, Equatable, Sendable {
    /// The reply's data has the wrong length for its code.
    case badLength(code: UInt8, length: Int)
    /// A field's value is out of its range (named).
    case badField(String)
}

/// The commands of the CP (osdp_…), with their codes.
public enum Command: Equatable, Sendable {
    case poll
    /// osdp_ID: the PD's identity (reply osdp_PDID).
    case id
    /// osdp_CAP: the PD's capabilities (reply osdp_PDCAP).
    case capabilities
    /// osdp_LSTAT: tamper and power (reply osdp_LSTATR).
    case localStatus
    case led(LEDCommand)
    case buzzer(BuzzerCommand)
    /// osdp_COMSET: a new address and baud rate (reply osdp_COM).
    case comset(address: UInt8, baudRate: UInt32)
    /// osdp_KEYSET: a new SCBK (key type 1), only inside a secure channel.
    case keyset(key: [UInt8])
    /// osdp_CHLNG: the CP's random RND.A (8 bytes), SCS_11.
    case challenge(random: [UInt8])
    /// osdp_SCRYPT: the server cryptogram (16 bytes), SCS_13.
    case serverCryptogram([UInt8])

    public var code: UInt8 {
        switch self {
        case .poll: return 0x60
        case .id: return 0x61
        case .capabilities: return 0x62
        case .localStatus: return 0x64
        case .led: return 0x69
        case .buzzer: return 0x6A
        case .comset: return 0x6E
        case .keyset: return 0x75
        case .challenge: return 0x76
        case .serverCryptogram: return 0x77
        }
    }

    /// The bytes after the code.
    public var payload: [UInt8] {
        switch self {
        case .poll, .localStatus: return []
        case .id, .capabilities: return [0x00]  // reply type: standard
        case .led(let led): return led.encoded
        case .buzzer(let buzzer): return buzzer.encoded
        case .comset(let address, let baudRate):
            return [address] + OSDPBytes.le32(baudRate)
        case .keyset(let key): return [0x01, UInt8(key.count)] + key
        case .challenge(let random): return random
        case .serverCryptogram(let cryptogram): return cryptogram
        }
    }
}

/// osdp_LED for one LED: a temporary pattern (with its timer) and the permanent state.
public struct LEDCommand: Equatable, Sendable {
    public enum Color: UInt8, Sendable { case black = 0, red, green, amber, blue, magenta, cyan, white }
    public struct Temporary: Equatable, Sendable {
        /// 0: no change, 1: cancel the temporary pattern, 2: set it.
        public var control: UInt8
        /// On and off times in units of 100 ms.
        public var onTime: UInt8, offTime: UInt8
        public var onColor: Color, offColor: Color
        /// How long the temporary pattern lasts, in units of 100 ms.
        public var timer: UInt16
        public init(control: UInt8, onTime: UInt8, offTime: UInt8, onColor: Color, offColor: Color, timer: UInt16) {
            (self.control, self.onTime, self.offTime, self.onColor, self.offColor, self.timer) =
                (control, onTime, offTime, onColor, offColor, timer)
        }
        public static let none = Temporary(
            control: 0, onTime: 0, offTime: 0, onColor: .black, offColor: .black, timer: 0)
    }
    public struct Permanent: Equatable, Sendable {
        /// 0: no change, 1: set.
        public var control: UInt8
        public var onTime: UInt8, offTime: UInt8
        public var onColor: Color, offColor: Color
        public init(control: UInt8, onTime: UInt8, offTime: UInt8, onColor: Color, offColor: Color) {
            (self.control, self.onTime, self.offTime, self.onColor, self.offColor) =
                (control, onTime, offTime, onColor, offColor)
        }
        public static let none = Permanent(control: 0, onTime: 0, offTime: 0, onColor: .black, offColor: .black)
    }
    public var reader: UInt8
    public var led: UInt8
    public var temporary: Temporary
    public var permanent: Permanent
    public init(reader: UInt8 = 0, led: UInt8 = 0, temporary: Temporary = .none, permanent: Permanent = .none) {
        (self.reader, self.led, self.temporary, self.permanent) = (reader, led, temporary, permanent)
    }
    var encoded: [UInt8] {
        [
            reader, led, temporary.control, temporary.onTime, temporary.offTime, temporary.onColor.rawValue,
            temporary.offColor.rawValue, UInt8(temporary.timer & 0xFF), UInt8(temporary.timer >> 8),
            permanent.control, permanent.onTime, permanent.offTime, permanent.onColor.rawValue,
            permanent.offColor.rawValue,
        ]
    }
}

/// osdp_BUZ: tone 0 none, 1 off, 2 the default tone; times in units of 100 ms; count 0 = until stopped.
public struct BuzzerCommand: Equatable, Sendable {
    public var reader: UInt8, tone: UInt8, onTime: UInt8, offTime: UInt8, count: UInt8
    public init(reader: UInt8 = 0, tone: UInt8 = 2, onTime: UInt8, offTime: UInt8, count: UInt8) {
        (self.reader, self.tone, self.onTime, self.offTime, self.count) = (reader, tone, onTime, offTime, count)
    }
    var encoded: [UInt8] { [reader, tone, onTime, offTime, count] }
}

/// The PD's identity (osdp_PDID).
public struct DeviceIdentity: Equatable, Sendable {
    /// The IEEE OUI, 3 bytes, as sent (least significant first).
    public var vendor: [UInt8]
    public var model: UInt8, version: UInt8
    public var serialNumber: UInt32
    /// Major, minor, build.
    public var firmware: [UInt8]
}

/// One entry of osdp_PDCAP: a function code, its compliance level and number of items.
public struct Capability: Equatable, Sendable {
    public var function: UInt8, compliance: UInt8, items: UInt8
    public init(function: UInt8, compliance: UInt8, items: UInt8) {
        (self.function, self.compliance, self.items) = (function, compliance, items)
    }
    /// Function 9: communication security; compliance bit 0 = AES-128 supported.
    public static let communicationSecurity: UInt8 = 9
    /// Function 8: check character support; compliance bit 0 = CRC-16 supported.
    public static let checkCharacter: UInt8 = 8
}

/// A card read as raw bits (osdp_RAW).
public struct CardRead: Equatable, Sendable {
    public var reader: UInt8
    /// 0: raw, unspecified format; 1: Wiegand.
    public var format: UInt8
    public var bitCount: UInt16
    /// The bits, most significant first, padded with zeros to whole bytes.
    public var bits: [UInt8]
}

/// The replies of the PD, decoded.
public enum Reply: Equatable, Sendable {
    case ack
    /// osdp_NAK: the error code (1 checksum/CRC, 2 command length, 3 unknown command, 4 sequence,
    /// 5 secure channel unsupported, 6 secure channel condition, …) and any further bytes.
    case nak(code: UInt8, detail: [UInt8])
    case identity(DeviceIdentity)
    case capabilities([Capability])
    /// osdp_LSTATR: tamper (0 normal, 1 tamper) and power (0 normal, 1 failure).
    case localStatus(tamper: UInt8, power: UInt8)
    case cardRaw(CardRead)
    /// osdp_FMT: a card number as characters (reader, direction, the characters).
    case cardFormatted(reader: UInt8, direction: UInt8, characters: [UInt8])
    /// osdp_KEYPAD: the keys pressed, as ASCII ('0'…'9', 0x7F '*', 0x0D '#').
    case keypad(reader: UInt8, keys: [UInt8])
    case com(address: UInt8, baudRate: UInt32)
    /// osdp_BUSY: ask again later (same sequence number).
    case busy
    /// osdp_CCRYPT: the PD's client UID, its random RND.B and the client cryptogram.
    case clientCryptogram(clientUID: [UInt8], random: [UInt8], cryptogram: [UInt8])
    /// osdp_RMAC_I: the initial reply MAC.
    case initialRMAC([UInt8])
    /// A reply this CP does not act on (code, data kept).
    case other(code: UInt8, data: [UInt8])

    public static func decode(code: UInt8, data: [UInt8]) throws -> Reply {
        func need(_ ok: Bool) throws {
            guard ok else { throw MessageError.badLength(code: code, length: data.count) }
        }
        switch code {
        case 0x40:
            try need(data.isEmpty)
            return .ack
        case 0x41:
            try need(!data.isEmpty)
            return .nak(code: data[0], detail: Array(data.dropFirst()))
        case 0x45:
            try need(data.count == 12)
            return .identity(
                DeviceIdentity(
                    vendor: Array(data[0..<3]), model: data[3], version: data[4],
                    serialNumber: OSDPBytes.readLE32(data, at: 5), firmware: Array(data[9..<12])))
        case 0x46:
            try need(data.count % 3 == 0)
            return .capabilities(
                stride(from: 0, to: data.count, by: 3).map {
                    Capability(function: data[$0], compliance: data[$0 + 1], items: data[$0 + 2])
                })
        case 0x48:
            try need(data.count == 2)
            return .localStatus(tamper: data[0], power: data[1])
        case 0x50:
            try need(data.count >= 4)
            let bitCount = UInt16(data[2]) | UInt16(data[3]) << 8
            try need(data.count - 4 == (Int(bitCount) + 7) / 8)
            return .cardRaw(CardRead(reader: data[0], format: data[1], bitCount: bitCount, bits: Array(data[4...])))
        case 0x51:
            try need(data.count >= 3 && data.count - 3 == Int(data[2]))
            return .cardFormatted(reader: data[0], direction: data[1], characters: Array(data[3...]))
        case 0x53:
            try need(data.count >= 2 && data.count - 2 == Int(data[1]))
            return .keypad(reader: data[0], keys: Array(data[2...]))
        case 0x54:
            try need(data.count == 5)
            return .com(address: data[0], baudRate: OSDPBytes.readLE32(data, at: 1))
        case 0x79:
            try need(data.isEmpty)
            return .busy
        case 0x76:
            try need(data.count == 32)
            return .clientCryptogram(
                clientUID: Array(data[0..<8]), random: Array(data[8..<16]), cryptogram: Array(data[16..<32]))
        case 0x78:
            try need(data.count == 16)
            return .initialRMAC(data)
        default:
            return .other(code: code, data: data)
        }
    }
}

enum OSDPBytes {
    static func le32(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
    }
    static func readLE32(_ bytes: [UInt8], at i: Int) -> UInt32 {
        UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24
    }
}

// A key never reaches a log line through a command's interpolation.
extension Command: CustomStringConvertible, CustomDebugStringConvertible {
    public var description: String {
        switch self {
        case .keyset(let key): return "keyset(<\(key.count) bytes>)"
        case .challenge: return "challenge"
        case .serverCryptogram: return "serverCryptogram"
        default: return "command 0x" + String(code, radix: 16)
        }
    }
    public var debugDescription: String { description }
}
