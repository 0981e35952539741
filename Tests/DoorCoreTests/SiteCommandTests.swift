import DoorCore
import XCTest

/// The site's signed commands (docs/fleet.md "Site commands"): only the
/// site key's signature over the command's own context, for this site,
/// fresh, and once.
final class SiteCommandTests: XCTestCase {
    let now = WallClock(unixSeconds: 1_799_064_000, synchronised: true)

    func command(
        _ kind: SiteCommandKind = .lockdownStart, site: String = "main-site", ts: Int64 = 1_799_064_000,
        nonce: String = "5f0c6e1d2b3a49587f6e5d4c3b2a1908"
    ) -> SiteCommand {
        SiteCommand(site: site, kind: kind, by: "alice", timestamp: ts, nonce: nonce)
    }

    func judge(_ bytes: [UInt8], key: [UInt8], now: WallClock? = nil, replay: inout ReplayGuard) -> String {
        switch SiteCommandRules.judge(
            bytes, sitePublicKey: key, siteID: "main-site", now: now ?? self.now, tolerance: 5, replay: &replay)
        {
        case .success(let c): return "ok \(c.kind.rawValue) by \(c.by)"
        case .failure(let r): return r.code.rawValue
        }
    }

    /// A lockdown end the door missed, replayed after a newer start inside the
    /// window, is refused (review finding: the window alone let it through and
    /// unlocked the door); the fire commands are ordered on their own.
    func testAnOlderCommandOfTheSameStateIsRefusedAfterANewerOne() throws {
        let seed = try Crypto.Ed25519.generateSeed()
        let key = try Crypto.Ed25519.publicKey(seed: seed)
        var replay = ReplayGuard()
        let missedEnd = try command(.lockdownEnd, ts: 1_799_063_998, nonce: "00000000000000000000000000000011")
            .signed(seed: seed)
        let start = try command(.lockdownStart, ts: 1_799_064_000, nonce: "00000000000000000000000000000012")
            .signed(seed: seed)
        XCTAssertEqual(judge(start, key: key, replay: &replay), "ok lockdown_start by alice")
        XCTAssertEqual(judge(missedEnd, key: key, replay: &replay), "older_than_highest")
        let fire = try command(.fireAlarm, ts: 1_799_063_998, nonce: "00000000000000000000000000000013")
            .signed(seed: seed)
        XCTAssertEqual(judge(fire, key: key, replay: &replay), "ok fire_alarm by alice", "another state")
        let laterEnd = try command(.lockdownEnd, ts: 1_799_064_000, nonce: "00000000000000000000000000000014")
            .signed(seed: seed)
        XCTAssertEqual(judge(laterEnd, key: key, replay: &replay), "ok lockdown_end by alice")
    }

    func testOnlyAFreshCommandSignedByTheSiteKeyForThisSitePassesOnce() throws {
        let seed = try Crypto.Ed25519.generateSeed()
        let key = try Crypto.Ed25519.publicKey(seed: seed)
        var replay = ReplayGuard()
        let signed = try command().signed(seed: seed)
        XCTAssertTrue(SiteCommand.isEnvelope(signed))
        XCTAssertEqual(judge(signed, key: key, replay: &replay), "ok lockdown_start by alice")
        XCTAssertEqual(judge(signed, key: key, replay: &replay), "replay", "the same command heard again")

        // Signed by another key (a compromised door holds none of the site's).
        let forged = try command(nonce: "00000000000000000000000000000001").signed(
            seed: try Crypto.Ed25519.generateSeed())
        XCTAssertEqual(judge(forged, key: key, replay: &replay), "bad_signature")
        // The body changed after signing (lockdown_end put in a start's envelope).
        let start = try command(nonce: "00000000000000000000000000000002").signed(seed: seed)
        let startText = String(decoding: start, as: UTF8.self)
        let endBody = Base64URL.encode(command(.lockdownEnd, nonce: "00000000000000000000000000000002").bodyBytes)
        let swapped = startText.replacingOccurrences(
            of: Base64URL.encode(command(nonce: "00000000000000000000000000000002").bodyBytes), with: endBody)
        XCTAssertNotEqual(swapped, startText)
        XCTAssertEqual(judge(Array(swapped.utf8), key: key, replay: &replay), "bad_signature")
        // A fleet document's signature does not make a command (another context).
        let sig = try Crypto.Ed25519.sign(
            seed: seed,
            message: FleetDocument.signingContext + command(nonce: "00000000000000000000000000000003").bodyBytes)
        let crossed = JSONValue.object([
            ("site_command", .int(1)),
            ("body", .string(Base64URL.encode(command(nonce: "00000000000000000000000000000003").bodyBytes))),
            ("sig", .string(Base64URL.encode(sig))),
        ]).serialized
        XCTAssertEqual(judge(Array(crossed.utf8), key: key, replay: &replay), "bad_signature")

        XCTAssertEqual(
            judge(
                try command(site: "other-site", nonce: "00000000000000000000000000000004").signed(seed: seed), key: key,
                replay: &replay),
            "wrong_site")
        XCTAssertEqual(
            judge(
                try command(ts: 1_799_063_990, nonce: "00000000000000000000000000000005").signed(seed: seed), key: key,
                replay: &replay),
            "stale")
        XCTAssertEqual(
            judge(
                try command(ts: 1_799_064_010, nonce: "00000000000000000000000000000006").signed(seed: seed), key: key,
                replay: &replay),
            "future")
        XCTAssertEqual(
            judge(
                try command(nonce: "00000000000000000000000000000007").signed(seed: seed), key: key,
                now: WallClock(unixSeconds: 1_799_064_000, synchronised: false), replay: &replay),
            "clock_unsynchronised")
        for garbage in ["", "{", #"{"site_command":1}"#, #"{"site_command":2,"body":"","sig":""}"#, "[1,2,3]"] {
            XCTAssertEqual(judge(Array(garbage.utf8), key: key, replay: &replay), "malformed", garbage)
        }
        // The end, fresh and new: accepted; the record now holds two.
        XCTAssertEqual(
            judge(
                try command(.lockdownEnd, nonce: "00000000000000000000000000000008").signed(seed: seed), key: key,
                replay: &replay),
            "ok lockdown_end by alice")
        XCTAssertEqual(replay.entries.filter { $0.keyID == SiteCommandRules.replayKey }.count, 2)
        XCTAssertFalse(SiteCommand.isEnvelope(Array(#"{"fleet":1,"body":"","sig":""}"#.utf8)))
    }
}
