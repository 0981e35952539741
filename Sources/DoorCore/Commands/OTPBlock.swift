/// The phone app's `%T` one-time block (docs/formats.md §3): AES-128-ECB of
/// random(4) | Unix seconds LE uint32 (4) | random(7) | checksum(1),
/// checksum = sum of bytes 0–14 mod 256.
public struct OTPBlock: Equatable, Sendable {
    public var plain: [UInt8]

    public var timestamp: Int64 {
        Int64(UInt32(plain[4]) | UInt32(plain[5]) << 8 | UInt32(plain[6]) << 16 | UInt32(plain[7]) << 24)
    }
    public var checksumOK: Bool { plain[15] == Self.checksum(plain) }

    static func checksum(_ b: [UInt8]) -> UInt8 { b.prefix(15).reduce(0, &+) }

    /// Decrypts the 32-hex-digit `otp-auth` text with the 16-byte timestamp key.
    public static func decrypt(hex: String, key: [UInt8]) throws(CommandRejection) -> OTPBlock {
        guard hex.utf8.count == 32, let block = Hex.decode(hex) else {
            throw CommandRejection(.malformed, "otp-auth must be 32 hex digits")
        }
        guard key.count == 16 else { throw CommandRejection(.noKey, "the timestamp key must be 16 bytes") }
        do {
            return OTPBlock(plain: try Crypto.aes128ECB(.decrypt, key: key, block: block))
        } catch {
            throw CommandRejection(.malformed, "cannot decrypt otp-auth: \(error)")
        }
    }

    /// Builds a block the way the phone app does (for tests and client tools).
    public static func make(timestamp: UInt32, random: [UInt8], key: [UInt8]) throws -> String {
        precondition(random.count == 11, "11 random bytes")
        var p = Array(random.prefix(4))
        p += [
            UInt8(timestamp & 0xFF), UInt8(timestamp >> 8 & 0xFF), UInt8(timestamp >> 16 & 0xFF),
            UInt8(timestamp >> 24),
        ]
        p += random.suffix(7)
        p.append(checksum(p))
        return Hex.encode(try Crypto.aes128ECB(.encrypt, key: key, block: p))
    }
}
