import DoorCore

/// The daemon's verdict on a tag read (DoorRuntime → `TapJudge`): blank,
/// foreign or ours, the sticker verdict, the registry's rules.
enum Judgement {
    /// Every UID issued and active, nothing revoked, no expiry: the
    /// registry never stands between a valid sticker and a grant.
    struct OpenRegistry: TagRegistryView {
        func issuedTag(_ uid: TagUID) throws -> IssuedTagView? { IssuedTagView(state: .active) }
        func isRevoked(uid: TagUID, signature: [UInt8]?) throws -> Bool { false }
    }

    static func check(uid: TagUID, message: NDEFMessage?) {
        let result = TapJudge.judge(
            uid: uid, message: message, secrets: Vectors.secrets, actionCount: 4, registry: OpenRegistry(),
            now: 1_757_216_934)
        guard case .grant(let action, _) = result.presentation.verdict else { return }
        expect(result.sticker?.isValid == true, "a grant without a valid sticker verdict")
        expect(action == result.sticker?.action, "granted action \(action) is not the sticker's")
    }
}
