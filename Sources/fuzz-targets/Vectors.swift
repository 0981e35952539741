import DoorCore

/// Keys and identities from the interop vectors (Tests/Fixtures/compat.json,
/// docs/formats.md "Test vectors"), so seeds from those vectors get past
/// the cryptographic checks and reach what follows them.
enum Vectors {
    static func hex(_ s: String) -> [UInt8] { Hex.decode(s)! }

    /// tags_v1[0]: imported (the phone app's), action 1.
    static let importedSecret = StickerSecret(
        id: 1, action: 1, key: hex("2291d8cdc310411e7ec27378a661c935187c07e4d5636e9bc3c400b27244b8cd"),
        origin: .imported)
    /// tags_v2[1]: gateway-generated, action 0 (v2 stickers of UID 043EBECC676AAA).
    static let generatedSecret = StickerSecret(
        id: 2, action: 0, key: hex("2fa1feb9dc4b1ebe55e5b8f9b680eff76c81d4e9ab304d4896f9e17fd8f08164"),
        origin: .generated)
    /// tags_v2[3] and the dumps: generated, action 2 (UID 04B3527F791D06).
    static let dumpSecret = StickerSecret(
        id: 3, action: 2, key: hex("ee4108d7f1ac1215de047303c1c1473f441ccc9f2f584a112a284187f32ba845"),
        origin: .generated)
    static let secrets = [importedSecret, generatedSecret, dumpSecret]
    static let uid = TagUID(hex: "043EBECC676AAA")!

    /// otp[0]: the compat timestamp key and the time of its block.
    static let compatKey = hex("a1ccb184733986a60765ac93cd52a8a1")
    static let compatNow: Int64 = 1_757_216_934
    /// The native command key of the tests (GatewayMQTTTests).
    static let nativeKey = [UInt8](repeating: 0x42, count: 32)
    static let deviceID = "front-door"
}
