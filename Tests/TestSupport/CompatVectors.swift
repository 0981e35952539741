import Foundation

/// The interop vectors, `Tests/Fixtures/compat.json`; docs/formats.md "Test vectors"
/// says which group belongs to which format.
public struct CompatVectors: Decodable, Sendable {
    public struct TagV1: Decodable, Sendable {
        public let secret: String; public let idx: Int; public let ts: Int; public let url: String;
        public let ndef_tlv: String
    }
    public struct TagV2: Decodable, Sendable {
        public let secret: String; public let uid: String; public let idx: Int; public let ts: Int;
        public let url: String; public let ndef_tlv: String; public let ndef_bytes: Int
    }
    public struct OTP: Decodable, Sendable {
        public let key: String; public let ts: Int; public let plain: String; public let otp_auth: String;
        public let message: String?; public let bad_checksum: Bool?
    }
    public struct Share: Decodable, Sendable {
        public let idx: Int; public let key: String; public let label: String; public let link: String
    }
    public struct BadTag: Decodable, Sendable {
        public let why: String; public let secret: String; public let uid: String?; public let url: String
    }
    public struct OTPCase: Decodable, Sendable {
        public let message: String; public let key: String; public let now: Int; public let tolerance: Int;
        public let accept: Bool; public let why: String
    }
    public struct StickerCase: Decodable, Sendable {
        public let url: String; public let secret: String; public let origin: String; public let accept: Bool;
        public let why: String; public let uid: String?
    }
    public struct NDEFCase: Decodable, Sendable {
        public let why: String; public let tlv: String; public let url: String?; public let error: Bool?
    }
    public struct Dump: Decodable, Sendable {
        public let type: String; public let bytes: Int; public let uid: String; public let url: String;
        public let hex: String
    }

    public let tags_v1: [TagV1]
    public let tags_v2: [TagV2]
    public let otp: [OTP]
    public let share: [Share]
    public let bad_tags: [BadTag]
    public let otp_cases: [OTPCase]
    public let sticker_cases: [StickerCase]
    public let ndef_cases: [NDEFCase]
    public let dumps: [Dump]

    /// Loads the vectors; traps only in tests, with the path in the message.
    public static func load() -> CompatVectors {
        let url = Fixtures.url("compat.json")
        do {
            return try JSONDecoder().decode(CompatVectors.self, from: Data(contentsOf: url))
        } catch {
            fatalError("cannot load \(url.path): \(error)")
        }
    }
}

/// Paths inside the repository, found from this file's location.
public enum Fixtures {
    /// The repository root (the directory holding Package.swift).
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static func url(_ name: String) -> URL {
        root.appendingPathComponent("Tests/Fixtures").appendingPathComponent(name)
    }
}

/// A small deterministic PRNG (SplitMix64) for property tests: failures reproduce.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Mutates `input`: flips, inserts, deletes, truncates or duplicates bytes.
    public mutating func mutate(_ input: [UInt8]) -> [UInt8] {
        var b = input
        let rounds = Int.random(in: 1...4, using: &self)
        for _ in 0..<rounds {
            switch Int.random(in: 0..<6, using: &self) {
            case 0 where !b.isEmpty:
                b[Int.random(in: 0..<b.count, using: &self)] ^= UInt8(1 << Int.random(in: 0..<8, using: &self))
            case 1: b.insert(UInt8.random(in: 0...255, using: &self), at: Int.random(in: 0...b.count, using: &self))
            case 2 where !b.isEmpty: b.remove(at: Int.random(in: 0..<b.count, using: &self))
            case 3 where !b.isEmpty: b = Array(b.prefix(Int.random(in: 0..<b.count, using: &self)))
            case 4 where !b.isEmpty:
                b[Int.random(in: 0..<b.count, using: &self)] = UInt8.random(in: 0...255, using: &self)
            case 5 where !b.isEmpty:
                let i = Int.random(in: 0..<b.count, using: &self)
                b.insert(contentsOf: b[i..<min(b.count, i + Int.random(in: 1...8, using: &self))], at: i)
            default: break
            }
        }
        return b
    }
}
