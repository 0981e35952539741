import DoorCore
import GatewayControl
import GatewayStore

extension GatewayStore {
    /// docs/design.md: provisioning signs with the action's newest active generated
    /// secret, created on first use — never with an imported one.
    func newestGeneratedSecretCreatingIfNeeded(action: ActionIndex, now: Int64) throws -> StickerSecret {
        if let s = try newestGeneratedSecret(action: action) { return s }
        return try addSecret(
            action: action, key: try Crypto.randomBytes(32), label: "generated", origin: .generated, now: now)
    }
}
