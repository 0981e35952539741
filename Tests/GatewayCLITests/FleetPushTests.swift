import DoorCore
import Foundation
import GatewayStore
import Synchronization
import TestSupport
import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// `gatewayctl fleet push` against a compromised gatewayd (issue 24 H2,
/// docs/security.md "H2"): the daemon runs as `doorgateway`, gatewayctl as
/// root with the site key. Here the "daemon" is a fake on the control socket
/// that answers `fleet.snapshot` with a hostile body — version Int64.max
/// (the fleet frozen for good), every UID revoked, a tag and "imported"
/// sticker and remote keys of the attacker's, sealed to the real site box —
/// and records what it is asked to publish. The real gatewayctl binary runs
/// against it, with the door's real store and configuration.
final class FleetPushTests: XCTestCase {
    static let site = "main-site"
    var dir: String!
    var siteSeed: [UInt8] = []
    var boxPrivateKey: [UInt8] = []
    var store: GatewayStore!
    var daemon: HostileDaemon!

    let alice = TagUID(hex: "04A1B2C3D4E5F6")!
    let bob = TagUID(hex: "04112233445566")!
    let carol = TagUID(hex: "04CAFE00000001")!
    let lost = TagUID(hex: "04BAD000000002")!
    let mallory = TagUID(hex: "04DEAD0000BEEF")!
    let frontKey = [UInt8](repeating: 0x41, count: 32)
    let compatKey = [UInt8](repeating: 0x11, count: 16)
    let nativeKey = [UInt8](repeating: 0x22, count: 32)
    let attackerKey = [UInt8](repeating: 0x66, count: 32)

    var siteKeyFile: String { dir + "/site.key" }
    var boxKeyFile: String { dir + "/site-box.key" }
    var stateDirectory: String { dir + "/state" }
    var socket: String { dir + "/run/control.sock" }

    override func setUpWithError() throws {
        dir =
            FileManager.default.temporaryDirectory.appendingPathComponent("fleet-push-\(UUID().uuidString.prefix(8))")
            .path
        try FileManager.default.createDirectory(atPath: dir + "/etc", withIntermediateDirectories: true)
        siteSeed = try Crypto.Ed25519.generateSeed()
        try SiteKeyFile.create(siteKeyFile, seed: siteSeed)
        boxPrivateKey = try Crypto.SiteBox.generatePrivateKey()
        try SiteKeyFile.create(boxKeyFile, seed: boxPrivateKey)
        try writeConfig(sitePublicKey: try Crypto.Ed25519.publicKey(seed: siteSeed))
        store = try GatewayStore(stateDirectory: stateDirectory)
        try store.syncActions([
            ActionDefinition(index: 0, name: "front", steps: []), ActionDefinition(index: 1, name: "back", steps: []),
        ])
    }

    override func tearDownWithError() throws {
        daemon?.stop()
        daemon = nil
        store = nil
        try? FileManager.default.removeItem(atPath: dir)
    }

    func writeConfig(sitePublicKey: [UInt8]) throws {
        let text =
            ConfigText.simWithPlainMQTT(id: "door-b") + ConfigText.action(0, "front") + "\n"
            + ConfigText.action(1, "back") + "\n" + """
                [fleet]
                enabled = true
                site_id = "\(Self.site)"
                site_public_key = "\(Hex.encode(sitePublicKey))"
                box_key_file = "\(boxKeyFile)"
                [paths]
                state_dir = "\(stateDirectory)"
                runtime_dir = "\(dir!)/run"

                """
        try text.write(toFile: dir + "/etc/gateway.toml", atomically: true, encoding: .utf8)
    }

    /// The door's own truth: version 4 applied (alice issued, bob revoked,
    /// signed with the site key), then carol provisioned and a lost sticker
    /// revoked here; one generated secret and both remote keys.
    func makeTheStoresTruth(applied version: Int64? = 4) throws {
        if let version {
            try apply(
                FleetDocument(
                    site: Self.site, version: version, origin: "door-a/alice-admin", issued: 1_800_000_000,
                    revokedUIDs: [bob], tags: [FleetDocument.Tag(uid: alice, action: 0, label: "alice")]))
        }
        try store.addSecret(action: 0, key: frontKey, label: "front door", origin: .generated, now: 1_800_000_100)
        try store.setKey(.compatTimestamp, compatKey, now: 1_800_000_100)
        try store.setKey(.nativeCommand, nativeKey, now: 1_800_000_100)
        try store.createPendingTag(uid: carol, action: 1, secretID: nil, label: "carol", now: 1_800_000_200)
        try store.activateTag(uid: carol)
        try store.revoke(uid: lost, reason: "lost", now: 1_800_000_300)
    }

    func apply(_ document: FleetDocument) throws {
        let verdict = FleetRules.judge(
            try document.signed(seed: siteSeed), sitePublicKey: try Crypto.Ed25519.publicKey(seed: siteSeed),
            siteID: Self.site, applied: try store.fleetApplied().map(\.rules))
        guard case .apply(let accepted) = verdict else { return XCTFail("not accepted: \(verdict)") }
        try store.applyFleet(accepted, actions: [0, 1], now: 1_800_000_050)
    }

    /// What a compromised gatewayd hands gatewayctl to sign.
    func hostileBody() throws -> [UInt8] {
        let sealed = try FleetSecrets(
            secrets: [FleetSecrets.Secret(action: 0, key: attackerKey, label: "phone", origin: .imported)],
            compatTimestampKey: [UInt8](repeating: 0x77, count: 16),
            nativeCommandKey: [UInt8](repeating: 0x88, count: 32)
        ).seal(to: try Crypto.SiteBox.publicKey(privateKey: boxPrivateKey), site: Self.site, version: .max)
        return FleetDocument(
            site: Self.site, version: .max, origin: "door-b/root", issued: 1_800_000_400,
            revokedUIDs: [alice, bob, carol, lost], tags: [FleetDocument.Tag(uid: mallory, action: 0, label: "x")],
            sealedSecrets: sealed
        ).bodyBytes
    }

    func startHostileDaemon() throws {
        daemon = HostileDaemon(path: socket, body: try hostileBody())
        try daemon.start()
    }

    /// `push --yes` with the hostile daemon started: refused (status 1), the
    /// `warning` on standard output.
    func pushWithYesRefused(warning: String, file: StaticString = #filePath, line: UInt = #line) throws
        -> ProcessResult
    {
        try startHostileDaemon()
        let r = try push(["--yes"])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr, file: file, line: line)
        XCTAssertTrue(r.stdout.contains(warning), r.stdout, file: file, line: line)
        return r
    }

    /// The real gatewayctl, as root would run it: the configuration from
    /// `$CONFIGURATION_DIRECTORY`, the daemon at `$DOORGATEWAY_SOCKET`,
    /// standard input a pipe (not a terminal).
    func push(_ extra: [String], stdin: String? = nil) throws -> ProcessResult {
        var env = ProcessInfo.processInfo.environment
        env["DOORGATEWAY_SOCKET"] = socket
        env["CONFIGURATION_DIRECTORY"] = dir + "/etc"
        for name in ["STATE_DIRECTORY", "RUNTIME_DIRECTORY"] { env[name] = nil }
        return try Run.process(
            Run.product("gateway"), ["ctl", "fleet", "push", "--site-key", siteKeyFile] + extra, stdin: stdin,
            environment: env, timeout: 30)
    }

    /// The documents gatewayctl signed and handed to the daemon, checked
    /// with the site public key as every door checks them.
    func published() throws -> [FleetDocument] {
        try daemon.published.map { bytes in
            let verdict = FleetRules.judge(
                bytes, sitePublicKey: try Crypto.Ed25519.publicKey(seed: siteSeed), siteID: Self.site, applied: nil)
            guard case .apply(let accepted) = verdict else { throw E2E("a published document is refused: \(verdict)") }
            return accepted.document
        }
    }

    func describe(_ docs: [FleetDocument]) -> String {
        docs.map {
            "version \($0.version), \($0.revokedUIDs.count) revoked UIDs, tags \($0.tags.map(\.uid.hex)), "
                + "secrets \($0.sealedSecrets != nil)"
        }.joined(separator: "; ")
    }

    // MARK: The attack

    /// Before the fix, gatewayctl signed the daemon's body as it came: with
    /// stdin not a terminal and no --yes, nothing at all may be signed.
    func testAHostileSnapshotIsNotSignedWithoutConfirmation() throws {
        try makeTheStoresTruth()
        try startHostileDaemon()
        let r = try push(["--secrets"])
        let docs = try published()
        XCTAssertEqual(docs.count, 0, "gatewayctl signed and published: \(describe(docs))")
        XCTAssertFalse(docs.contains { $0.version == .max }, "the fleet frozen at Int64.max")
        XCTAssertNotEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stderr.contains("--yes"), r.stderr)
        XCTAssertFalse(daemon.methods.contains("fleet.snapshot"), "the daemon is not asked for the body")
    }

    /// With --yes (a script), what is signed is the store's truth at
    /// applied + 1, never the daemon's body.
    func testWithYesTheStoresTruthIsSignedNotTheDaemonsBody() throws {
        try makeTheStoresTruth()
        try startHostileDaemon()
        let r = try push(["--secrets", "--yes", "--by", "alice-admin"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertFalse(daemon.methods.contains("fleet.snapshot"), "the daemon is not asked for the body")
        let docs = try published()
        XCTAssertEqual(docs.count, 1, describe(docs))
        let doc = try XCTUnwrap(docs.first)
        XCTAssertEqual(doc.version, 5, "the applied version (4) + 1")
        XCTAssertEqual(doc.origin, "door-b/alice-admin")
        XCTAssertEqual(Set(doc.revokedUIDs), [bob, lost])
        XCTAssertEqual(doc.tags.map(\.uid), [alice, carol].sorted { $0.hex < $1.hex })
        let secrets = try XCTUnwrap(try FleetSecrets.open(doc, boxPrivateKey: boxPrivateKey))
        XCTAssertEqual(secrets.secrets.map(\.key), [frontKey])
        XCTAssertEqual(secrets.secrets.map(\.origin), [.generated])
        XCTAssertNil(secrets.compatTimestampKey, "the otp key stays per door (M3)")
        XCTAssertEqual(secrets.nativeCommandKey, nativeKey)
        XCTAssertEqual(secrets.nativeCommandGeneration, 1)
    }

    // MARK: Issue 24 M3: one phone key opened every door

    /// Door A, as gatewayd applies door B's push: its own store, the
    /// document checked with the site key, the secrets opened with the box key.
    func doorA(otpKey: [UInt8]?) throws -> GatewayStore {
        let a = try GatewayStore(stateDirectory: dir + "/door-a")
        try a.syncActions([
            ActionDefinition(index: 0, name: "front", steps: []), ActionDefinition(index: 1, name: "back", steps: []),
        ])
        if let otpKey { try a.setKey(.compatTimestamp, otpKey, now: 1_800_000_000) }
        for bytes in daemon.published {
            let verdict = FleetRules.judge(
                bytes, sitePublicKey: try Crypto.Ed25519.publicKey(seed: siteSeed), siteID: Self.site,
                applied: try a.fleetApplied().map(\.rules))
            guard case .apply(let accepted) = verdict else { throw E2E("door A refuses the push: \(verdict)") }
            try a.applyFleet(
                accepted, actions: [0, 1],
                secrets: try FleetSecrets.open(accepted.document, boxPrivateKey: boxPrivateKey),
                now: 1_800_000_500)
        }
        return a
    }

    /// The phone app's block (docs/formats.md §3) names no door: one seen on door
    /// B's topic, replayed at door A within the window, opened A whenever A
    /// held B's OTP key — which `fleet push --secrets` at B gave every door.
    /// Now the push leaves the OTP key out (`--share-otp-key` carries it):
    /// A keeps its own key, or none, and refuses B's block.
    func testAPhonesOTPBlockSeenAtOneDoorDoesNotOpenAnotherAfterAPush() throws {
        try makeTheStoresTruth()
        // B's key of a newer generation than A's own (B rotated it once more).
        try store.setKey(.compatTimestamp, compatKey, now: 1_800_000_110)
        try startHostileDaemon()
        let r = try push(["--secrets", "--yes"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        let ownKey = [UInt8](repeating: 0x5C, count: 16)
        let withKey = try doorA(otpKey: ownKey)
        try FileManager.default.removeItem(atPath: dir + "/door-a")
        let withoutKey = try doorA(otpKey: nil)

        let now: Int64 = 1_800_000_600
        let block = try OTPBlock.make(timestamp: UInt32(now), random: try Crypto.randomBytes(11), key: compatKey)
        let payload = Array(#"{"command": 1, "otp-auth": "\#(block)"}"#.utf8)
        let clock = WallClock(unixSeconds: now, synchronised: true)
        func judge(_ key: [UInt8]?, device: String) -> CommandVerdict {
            var replay = ReplayGuard()
            return CommandJudge(deviceID: device).judgeCompat(
                payload: payload, retained: false, key: key, now: clock, replay: &replay)
        }
        XCTAssertTrue(judge(try store.key(.compatTimestamp), device: "door-b").accepted, "B takes its phone's block")
        let atA = judge(try withKey.key(.compatTimestamp), device: "door-a")
        XCTAssertFalse(atA.accepted, "B's block opened door A: the push gave A door B's OTP key")
        XCTAssertEqual(try withKey.key(.compatTimestamp), ownKey)
        let atBare = judge(try withoutKey.key(.compatTimestamp), device: "door-a")
        XCTAssertFalse(atBare.accepted, "B's block opened door A, which had no OTP key before the push")
    }

    /// Sharing the OTP key is the operator's explicit choice, and the
    /// summary says what it costs.
    func testShareOTPKeyCarriesItAndSaysSo() throws {
        try makeTheStoresTruth()
        try startHostileDaemon()
        let withoutSecrets = try push(["--share-otp-key", "--yes"])
        XCTAssertEqual(withoutSecrets.status, 1)
        XCTAssertTrue(withoutSecrets.stderr.contains("--share-otp-key goes with --secrets"), withoutSecrets.stderr)
        let plain = try push(["--secrets", "--yes"])
        XCTAssertTrue(
            plain.stdout.contains(
                "otp key (COMPAT §3): not carried: each door keeps its own (a block names no door: with one key, "
                    + "a block seen at one door opens the others; --share-otp-key carries it)"), plain.stdout)
        daemon.stop()
        try? FileManager.default.removeItem(atPath: socket)
        try startHostileDaemon()
        let shared = try push(["--secrets", "--share-otp-key", "--yes"])
        XCTAssertEqual(shared.status, 0, shared.stdout + shared.stderr)
        XCTAssertTrue(
            shared.stdout.contains("otp key (COMPAT §3): added \(FleetDiff.fingerprint(compatKey))"), shared.stdout)
        let doc = try XCTUnwrap(try published().first)
        XCTAssertEqual(try FleetSecrets.open(doc, boxPrivateKey: boxPrivateKey)?.compatTimestampKey, compatKey)
        XCTAssertEqual(try doorA(otpKey: nil).key(.compatTimestamp), compatKey)
    }

    /// Native commands (docs/formats.md §5): the push shares the site command key,
    /// but each door checks commands with its own key derived from it and
    /// its device id, and that is the key a client is given (`keys command
    /// export`). A client holding door B's key cannot make a command door A
    /// takes; B's command replayed at A is addressed to B; a command MAC'd
    /// with the site key itself opens no door.
    func testANativeCommandKeyOpensOnlyItsDoor() throws {
        try makeTheStoresTruth()
        try startHostileDaemon()
        XCTAssertEqual(try push(["--secrets", "--yes"]).status, 0)
        let a = try doorA(otpKey: nil)
        XCTAssertEqual(try a.key(.nativeCommand), nativeKey, "the site command key is shared")
        let keyB = CommandJudge.doorCommandKey(siteKey: nativeKey, device: "door-b")
        XCTAssertNotEqual(keyB, CommandJudge.doorCommandKey(siteKey: nativeKey, device: "door-a"))
        XCTAssertEqual(
            keyB,
            try Crypto.SiteBox.hkdfSHA256(
                ikm: nativeKey, salt: Array("doorgateway-command-v1".utf8), info: Array("door-b".utf8), length: 32))

        let now: Int64 = 1_800_000_600
        func command(for device: String, key: [UInt8]) throws -> [UInt8] {
            let nonce = try NativeCommandText.nonce()
            return Array(
                NativeCommandText.make(action: 0, ts: now, nonce: nonce, device: device, key: key, spaced: true).utf8)
        }
        /// As gatewayd judges it: the store's site key, derived for the door.
        func judge(_ payload: [UInt8], at door: GatewayStore, _ device: String) throws -> CommandVerdict {
            guard case .key(let key) = RemoteKey(try door.key(.nativeCommand)).doorCommandKey(device: device) else {
                throw E2E("no command key at \(device)")
            }
            var replay = ReplayGuard()
            return CommandJudge(deviceID: device).judgeNative(
                payload: payload, retained: false, key: key, now: WallClock(unixSeconds: now, synchronised: true),
                replay: &replay)
        }
        XCTAssertTrue(try judge(try command(for: "door-b", key: keyB), at: store, "door-b").accepted)
        XCTAssertEqual(try judge(try command(for: "door-a", key: keyB), at: a, "door-a").rejection?.code, .badMAC)
        XCTAssertEqual(try judge(try command(for: "door-b", key: keyB), at: a, "door-a").rejection?.code, .wrongDevice)
        XCTAssertEqual(try judge(try command(for: "door-a", key: nativeKey), at: a, "door-a").rejection?.code, .badMAC)
        XCTAssertTrue(
            try judge(
                try command(for: "door-a", key: CommandJudge.doorCommandKey(siteKey: nativeKey, device: "door-a")),
                at: a, "door-a"
            ).accepted)
    }

    /// Nothing applied yet: version 1, whatever the daemon says.
    func testTheFirstVersionIsOne() throws {
        try makeTheStoresTruth(applied: nil)
        try startHostileDaemon()
        let r = try push(["--yes"])
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertEqual(try published().map(\.version), [1])
    }

    /// Pushes refused with --yes, each with its reason and nothing signed,
    /// every case on a fresh store and daemon:
    /// - an applied document at Int64.max (signed with the site key: nothing
    ///   later can be) is refused clearly, not trapped on;
    /// - fleet_state's version raised behind the kept document's back (the
    ///   store is writable by gatewayd's user);
    /// - a site key that is not the configuration's: refused before anything
    ///   is printed.
    func testPushesThatDoNotAddUpAreRefusedAndSignNothing() throws {
        let cases: [(name: String, prepare: () throws -> Void, stderr: String, stdoutEmpty: Bool)] = [
            ("applied at the maximum", { try self.makeTheStoresTruth(applied: .max) }, "maximum", false),
            (
                "fleet_state above its document",
                {
                    try self.makeTheStoresTruth()
                    try self.store.pool.write {
                        try $0.execute(sql: "UPDATE fleet_state SET version = 9223372036854775806")
                    }
                },
                "fleet_state records version 9223372036854775806, but the applied document it keeps is version 4",
                false
            ),
            (
                "another site key",
                {
                    try self.makeTheStoresTruth()
                    try self.writeConfig(
                        sitePublicKey: try Crypto.Ed25519.publicKey(seed: try Crypto.Ed25519.generateSeed()))
                },
                "is not the private key of [fleet] site_public_key", true
            ),
        ]
        for (i, c) in cases.enumerated() {
            if i > 0 {
                try tearDownWithError()
                try setUpWithError()
            }
            try c.prepare()
            try startHostileDaemon()
            let r = try push(["--yes"])
            XCTAssertEqual(r.status, 1, "\(c.name): \(r.stdout + r.stderr)")
            XCTAssertTrue(r.stderr.contains(c.stderr), "\(c.name): \(r.stderr)")
            if c.stdoutEmpty { XCTAssertEqual(r.stdout, "", c.name) }
            XCTAssertEqual(try published().count, 0, c.name)
        }
    }

    // MARK: What the operator reads

    let dave = TagUID(hex: "04D0000000DA7E")!
    let phoneKey = [UInt8](repeating: 0x55, count: 32)

    /// Version 4 applied with secrets (the front door's generated one, a
    /// phone's imported one, both remote keys); since then, here: alice
    /// revoked, dave's expiry brought forward, carol provisioned (with a
    /// label that tries to move the terminal's cursor), the phone secret
    /// removed (issue 24 M1: a tombstone) and the otp key rotated.
    func makeAStoreThatChangedSinceVersion4() throws {
        let sealed = try FleetSecrets(
            secrets: [
                FleetSecrets.Secret(action: 0, key: frontKey, label: "front door", origin: .generated),
                FleetSecrets.Secret(action: 0, key: phoneKey, label: "phone", origin: .imported),
            ],
            compatTimestampKey: [UInt8](repeating: 0x10, count: 16), nativeCommandKey: nativeKey
        ).seal(to: try Crypto.SiteBox.publicKey(privateKey: boxPrivateKey), site: Self.site, version: 4)
        let v4 = FleetDocument(
            site: Self.site, version: 4, origin: "door-a/alice-admin", issued: 1_800_000_000, revokedUIDs: [bob],
            tags: [
                FleetDocument.Tag(uid: alice, action: 0, label: "alice"),
                FleetDocument.Tag(uid: dave, action: 1, label: "dave", validUntil: 1_811_000_000),
            ], sealedSecrets: sealed)
        let verdict = FleetRules.judge(
            try v4.signed(seed: siteSeed), sitePublicKey: try Crypto.Ed25519.publicKey(seed: siteSeed),
            siteID: Self.site, applied: nil)
        guard case .apply(let accepted) = verdict else { return XCTFail("not accepted: \(verdict)") }
        try store.applyFleet(
            accepted, actions: [0, 1], secrets: try FleetSecrets.open(v4, boxPrivateKey: boxPrivateKey),
            now: 1_800_000_050)

        try store.revoke(uid: alice, reason: "left", now: 1_800_000_100)
        try store.expire(uid: dave, at: 1_805_000_000)
        try store.createPendingTag(
            uid: carol, action: 1, secretID: nil, label: "carol\u{1B}[1A\u{1B}[2K", now: 1_800_000_200)
        try store.activateTag(uid: carol)
        let phone = try XCTUnwrap(try store.secrets().first { $0.key == phoneKey })
        try store.removeSecret(id: phone.id, now: 1_800_000_250)
        try store.setKey(.compatTimestamp, compatKey, now: 1_800_000_300)
    }

    /// The whole summary, against the applied version 4: what is added,
    /// revoked, left out, changed, rotated; then, not on a terminal and
    /// without --yes, a refusal that says how to go on, and nothing signed.
    func testTheSummaryAgainstTheLastAppliedDocumentAndTheRefusalWithoutATerminal() throws {
        try makeAStoreThatChangedSinceVersion4()
        try startHostileDaemon()
        let r = try push(["--secrets", "--by", "alice-admin"])
        XCTAssertEqual(
            r.stdout,
            #"""
            fleet push: site main-site, version 5, after version 4 (from door-a/alice-admin, applied here 2027-01-15T08:00:50Z; its signature checked with the site key)
            origin: door-b/alice-admin
            revoked UIDs: 2 (+1)
              + 04A1B2C3D4E5F6 (issued until now: action 0 "alice")
            revoked signatures: 0 (no change)
            issued tags: 2 (+1 -1 ~1)
              + 04CAFE00000001 action 1 "carol\u{1b}[1A\u{1b}[2K", valid until never
              - 04A1B2C3D4E5F6 action 0 "alice", valid until never (revoked)
              ~ 04D0000000DA7E: valid until 2027-05-22T15:33:20Z → 2027-03-14T04:53:20Z
            removed secrets (tombstones): 1 (+1)
              + action 0 imported "phone" key sha256:84126d0d: every door deactivates it; no push brings it back
            secrets: 1 sealed to the site box (1 removed: tombstones above)
            otp key (COMPAT §3): not carried: each door keeps its own (a block names no door: with one key, a block seen at one door opens the others; --share-otp-key carries it) (the last document carried sha256:9c744e43 without a generation)
            command key (COMPAT §5): unchanged (sha256:9f72ea0c generation 0)

            """#)
        XCTAssertEqual(
            r.stderr,
            "gatewayctl: not signed: nobody confirmed the summary above (standard input is not a terminal); "
                + "run it on a terminal, or add --yes to sign without asking\n")
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(try published().count, 0)
        XCTAssertEqual(daemon.methods, [], "gatewayd is not even asked")
    }

    /// With --yes the same summary is printed, then the document is signed.
    func testWithYesTheSummaryIsPrintedAndTheDocumentSigned() throws {
        try makeAStoreThatChangedSinceVersion4()
        try startHostileDaemon()
        let r = try push(["--yes"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stdout.hasPrefix("fleet push: site main-site, version 5, after version 4"), r.stdout)
        XCTAssertTrue(r.stdout.contains("secrets: not carried (push --secrets carries them)"), r.stdout)
        XCTAssertTrue(
            r.stdout.hasSuffix("published: doorgateway/door-b/fleet/main-site\nsite: main-site\nversion: 5\n"), r.stdout
        )
        XCTAssertEqual(try published().map(\.version), [5])
    }

    /// On a terminal (util-linux `script` gives gatewayctl one): the
    /// summary, the question, and only "y" signs.
    func onATerminal(answer: String) throws -> ProcessResult {
        let script = "/usr/bin/script"
        guard FileManager.default.isExecutableFile(atPath: script) else { throw XCTSkip("no \(script)") }
        var env = ProcessInfo.processInfo.environment
        env["DOORGATEWAY_SOCKET"] = socket
        env["CONFIGURATION_DIRECTORY"] = dir + "/etc"
        for name in ["STATE_DIRECTORY", "RUNTIME_DIRECTORY"] { env[name] = nil }
        let command = [Run.product("gateway").path, "ctl", "fleet", "push", "--site-key", siteKeyFile]
            .map { "'\($0)'" }.joined(separator: " ")
        return try Run.process(
            URL(fileURLWithPath: script), ["-qec", command, "/dev/null"], stdin: answer + "\n", environment: env,
            timeout: 30)
    }

    func testOnATerminalYSignsAfterTheQuestion() throws {
        try makeTheStoresTruth()
        try startHostileDaemon()
        let r = try onATerminal(answer: "y")
        XCTAssertEqual(r.status, 0, r.stdout + r.stderr)
        XCTAssertTrue(r.stdout.contains("Sign version 5 with the site key and publish it? [y/N]"), r.stdout)
        XCTAssertEqual(try published().map(\.version), [5])
    }

    func testOnATerminalAnythingButYSignsNothing() throws {
        try makeTheStoresTruth()
        try startHostileDaemon()
        for answer in ["n", "", "sure"] {
            let r = try onATerminal(answer: answer)
            XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
            XCTAssertTrue(r.stdout.contains("gatewayctl: not signed"), r.stdout)
        }
        XCTAssertEqual(try published().count, 0)
    }

    // MARK: A store that does not add up

    /// The kept document replaced by one signed with another key and the
    /// recorded version raised (what a compromised daemon could do to the
    /// store; a rotated site key also leaves a document that does not
    /// verify): shown as unchecked, and nothing is signed — not with --yes,
    /// not confirmed on a terminal — until the operator names the version.
    func testAKeptDocumentThatDoesNotVerifyNeedsTheOperatorsVersion() throws {
        try makeTheStoresTruth()
        let forged = try FleetDocument(site: Self.site, version: .max - 1, origin: "door-b/mallory", issued: 0)
            .signed(seed: try Crypto.Ed25519.generateSeed())
        try store.pool.write {
            try $0.execute(
                sql: "UPDATE fleet_state SET document = ?, version = 9223372036854775806", arguments: [forged])
        }
        let r = try pushWithYesRefused(
            warning: "warning: version 9223372036854775806 cannot be checked: the document the store keeps for it is "
                + "refused (the signature does not verify with the site public key) with this site key: signed "
                + "with a previous site key, or the store was altered")
        XCTAssertTrue(r.stderr.contains("give it with --after-version N"), r.stderr)
        let confirmed = try onATerminal(answer: "y")
        XCTAssertEqual(confirmed.status, 1, confirmed.stdout)
        XCTAssertEqual(try published().count, 0)

        let vouched = try push(["--yes", "--after-version", "4"])
        XCTAssertEqual(vouched.status, 0, vouched.stdout + vouched.stderr)
        XCTAssertTrue(
            vouched.stdout.hasPrefix(
                "fleet push: site main-site, version 5, after version 4 (--after-version; the store records "
                    + "version 9223372036854775806 from door-a/alice-admin"), vouched.stdout)
        XCTAssertEqual(try published().map(\.version), [5])
    }

    /// A row applied before the store kept documents: the same, its version
    /// named by the operator.
    func testAnAppliedVersionWithoutItsDocumentNeedsTheOperatorsVersion() throws {
        try makeTheStoresTruth()
        try store.pool.write { try $0.execute(sql: "UPDATE fleet_state SET document = NULL") }
        _ = try pushWithYesRefused(
            warning: "warning: version 4 cannot be checked: the store keeps no document for it (applied before "
                + "gatewayd kept them)")
        XCTAssertEqual(try published().count, 0)
        let vouched = try push(["--yes", "--after-version", "4"])
        XCTAssertEqual(vouched.status, 0, vouched.stdout + vouched.stderr)
        XCTAssertEqual(try published().map(\.version), [5])
    }

    /// --after-version cannot move a checked version; it can place a new door's first push.
    func testAfterVersionMustBeTheCheckedOneAndPlacesANewDoorsFirstPush() throws {
        try makeTheStoresTruth()
        try startHostileDaemon()
        let r = try push(["--yes", "--after-version", "7"])
        XCTAssertEqual(r.status, 1, r.stdout + r.stderr)
        XCTAssertTrue(
            r.stderr.contains("--after-version 7: the applied document here, checked with the site key, is version 4"),
            r.stderr)
        XCTAssertEqual(try published().count, 0)
        try store.pool.write { try $0.execute(sql: "DELETE FROM fleet_state") }
        let first = try push(["--yes", "--after-version", "9"])
        XCTAssertEqual(first.status, 0, first.stdout + first.stderr)
        XCTAssertTrue(
            first.stdout.hasPrefix("fleet push: site main-site, version 10, after version 9 (--after-version;"))
        XCTAssertEqual(try published().map(\.version), [10])
    }

}

struct E2E: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A compromised gatewayd on the control socket: `fleet.snapshot` answers
/// `body`, `fleet.publish` records the document, anything else is refused.
final class HostileDaemon: Sendable {
    let body: [UInt8]
    private let server: ControlServer
    private let _methods = Mutex<[String]>([])
    private let _published = Mutex<[[UInt8]]>([])

    init(path: String, body: [UInt8]) {
        self.body = body
        let holder = Box()
        server = ControlServer(path: path, adminGroup: "doorgateway-test-no-such-group") { request, _ in
            try holder.daemon!.answer(request)
        }
        holder.daemon = self
    }

    // @unchecked: `daemon` is set once, in init, before the server starts.
    final class Box: @unchecked Sendable { weak var daemon: HostileDaemon? }

    var methods: [String] { _methods.withLock { $0 } }
    var published: [[UInt8]] { _published.withLock { $0 } }

    func start() throws { _ = try server.start() }
    func stop() { server.stop() }

    func answer(_ request: ControlRequest) throws -> ControlAnswer {
        _methods.withLock { $0.append(request.method) }
        switch request.method {
        case "fleet.snapshot":
            return .value(
                .object([
                    ("site", .string(FleetPushTests.site)), ("version", .int(.max)), ("revocations", .int(4)),
                    ("tags", .int(1)), ("secrets", .bool(true)), ("body", .string(Base64URL.encode(body))),
                ]))
        case "fleet.publish":
            guard case .string(let b)? = request.params["document"], let document = Base64URL.decode(b) else {
                throw DaemonError.request("document: base64url expected")
            }
            _published.withLock { $0.append(document) }
            return .value(
                .object([
                    ("published", .string("doorgateway/door-b/fleet/\(FleetPushTests.site)")),
                    ("site", .string(FleetPushTests.site)),
                ]))
        default:
            throw DaemonError.request("not in this test: \(request.method)")
        }
    }
}
