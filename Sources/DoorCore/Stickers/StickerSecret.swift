/// Where a sticker secret came from (docs/design.md "Keys"). v1 stickers verify
/// only with imported secrets; the gateway's own stickers are v2.
public enum SecretOrigin: String, Sendable, Hashable, Codable, CaseIterable {
    case generated, imported
}

/// A sticker secret: 32 bytes, bound to one action.
public struct StickerSecret: Equatable, Sendable, Hashable {
    public var id: Int64
    public var action: ActionIndex
    public var label: String
    public var key: [UInt8]
    /// Unix seconds.
    public var created: Int64
    public var origin: SecretOrigin
    public var active: Bool

    public init(
        id: Int64, action: ActionIndex, label: String = "", key: [UInt8], created: Int64 = 0,
        origin: SecretOrigin, active: Bool = true
    ) {
        self.id = id
        self.action = action
        self.label = label
        self.key = key
        self.created = created
        self.origin = origin
        self.active = active
    }
}

/// Producing stickers (the gateway signs v2; v1 is what the phone app writes).
public enum StickerSigner {
    public static func signV1(action: Int, timestamp: Int64, key: [UInt8]) -> StickerURL {
        var url = StickerURL(action: action, timestamp: timestamp, signature: [])
        url.signature = Crypto.hmacSHA256(key: key, message: url.signedMessage)
        return url
    }

    public static func signV2(action: Int, timestamp: Int64, key: [UInt8], uid: TagUID) -> StickerURL {
        var url = signV1(action: action, timestamp: timestamp, key: key)
        url.uidBinding = Array(Crypto.hmacSHA256(key: key, message: url.uidMessage(uid)).prefix(16))
        return url
    }
}
