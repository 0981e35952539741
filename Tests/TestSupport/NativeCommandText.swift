import DoorCore

/// A native remote command (docs/formats.md §5) as a client writes it.
public enum NativeCommandText {
    /// `{"action","ts","nonce","device","mac"}`, the MAC over `macAction`
    /// (`action` unless a test alters it after signing) with `key`; `spaced`:
    /// a space after each colon and comma.
    public static func make(
        action: Int64, ts: Int64, nonce: String, device: String, key: [UInt8], macAction: Int64? = nil,
        spaced: Bool = false
    ) -> String {
        let message = CommandJudge.nativeMACMessage(device: device, action: macAction ?? action, ts: ts, nonce: nonce)
        let mac = Hex.encode(Crypto.hmacSHA256(key: key, message: message))
        let s = spaced ? " " : ""
        let fields = [
            #""action":\#(s)\#(action)"#, #""ts":\#(s)\#(ts)"#, #""nonce":\#(s)"\#(nonce)""#,
            #""device":\#(s)"\#(device)""#, #""mac":\#(s)"\#(mac)""#,
        ]
        return "{" + fields.joined(separator: "," + s) + "}"
    }

    /// A fresh nonce: 16 random bytes in hex.
    public static func nonce() throws -> String { Hex.encode(try Crypto.randomBytes(16)) }
}
