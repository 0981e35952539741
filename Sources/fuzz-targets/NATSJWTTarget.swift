import DoorCore
import GatewayNATS

/// A user JWT pushed on `<prefix>.<id>.creds.jwt` (docs/security.md "M2"):
/// `UserJWT` parses what anyone allowed to publish there sends, then the
/// door's checks (`check`, `checkTrusted`, `issuedInTime`). The bytes are
/// also taken as the claims of a JWT signed by the target's account key, so
/// the checks after a valid signature are reached.
enum NATSJWTTarget {
    static let accountSeed = [UInt8](repeating: 0xAC, count: 32)
    static let accountKey = NKey.accountPublicKey(raw: try! Crypto.Ed25519.publicKey(seed: accountSeed))
    static let otherDoor = NKey.userPublicKey(
        raw: try! Crypto.Ed25519.publicKey(seed: [UInt8](repeating: 0xD0, count: 32)))
    static let now: Int64 = 1_757_216_934
    static let header = Base64URL.encode(Array(#"{"typ":"JWT","alg":"ed25519-nkey"}"#.utf8))

    static func run(_ data: [UInt8]) {
        check(String(decoding: data, as: UTF8.self))
        guard data.count <= 8 << 10 else { return }
        let signed = header + "." + Base64URL.encode(data)
        let signature = try! Crypto.Ed25519.sign(seed: accountSeed, message: Array(signed.utf8))
        guard let jwt = check(signed + "." + Base64URL.encode(signature)) else { return }
        do {
            try jwt.checkTrusted(accountKeys: [accountKey], now: now)
        } catch .badSignature {
            expect(false, "a JWT signed by the account failed its signature check")
        } catch .untrustedIssuer {
            expect(jwt.issuer != accountKey, "the account's own JWT: issuer not trusted")
        } catch .issuedAhead {
            expect(!jwt.issuedInTime(now: now), "refused as issued ahead, yet issued in time")
        } catch {
            expect(false, "checkTrusted: \(error)")
        }
    }

    /// Parses; for a JWT that parses, the invariants of what the door then relies on.
    @discardableResult
    static func check(_ text: String) -> UserJWT? {
        guard let jwt = try? UserJWT(text) else { return nil }
        expect(NKey.isUserPublicKey(jwt.subject), "`sub` is not a user nkey")
        expect(jwt.text.utf8.count <= 16_384, "a JWT over 16 KiB")
        for t in [jwt.issuedAt, jwt.expires] {
            if let t { expect(t >= 0 && t <= 253_402_300_799, "a time out of range: \(t)") }
        }
        if let iat = jwt.issuedAt, let exp = jwt.expires { expect(exp >= iat, "`exp` before `iat`") }
        expect((try? UserJWT(jwt.text)) == jwt, "the kept text does not parse back to the same JWT")
        do {
            try jwt.check(publicKey: otherDoor, now: now)
            expect(jwt.subject == otherDoor, "another door's JWT passed")
        } catch .notForThisDoor {
            expect(jwt.subject != otherDoor, "this door's JWT refused as another's")
        } catch .expired(let exp) {
            expect(exp <= now, "refused as expired before it expires")
        } catch {
            expect(false, "check: \(error)")
        }
        for at in [Int64.min, -1, 0, now, Int64.max - 300, Int64.max] { _ = jwt.issuedInTime(now: at) }
        do {
            try jwt.checkTrusted(accountKeys: [], now: now)
            expect(false, "trusted with no account keys")
        } catch .noAccountKeys {
        } catch {
            expect(false, "no account keys, yet: \(error)")
        }
        if (try? jwt.checkTrusted(accountKeys: [accountKey], now: now)) != nil {
            expect(jwt.issuer == accountKey && jwt.issuedInTime(now: now), "trusted without its issuer or in time")
        }
        return jwt
    }
}
