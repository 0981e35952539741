import Arguments
import DoorCore
import GatewayConfig
import GatewayControl
import GatewayStore
@preconcurrency import Glibc

/// What `gatewayctl fleet push` signs, made in the gatewayctl process (root,
/// holding the site key) from the door's configuration and its store, read
/// directly — never from an answer of gatewayd, which runs as another user
/// and may be compromised (issue 24 H2, docs/security.md "H2"):
///
/// - the version is the applied one + 1, the applied one being what the
///   store's `fleet_state` records *and* the document kept beside it says,
///   that document's signature checked with the site key (the two must
///   agree, or nothing is signed). When the document cannot be checked (none
///   kept: applied before the store kept them; or signed with a previous site
///   key), the recorded version is shown as unchecked and nothing is signed
///   until the operator names the version to follow (`--after-version N`);
/// - the body is `FleetRules.snapshot` of the store's revocations and
///   active issued tags, with (`--secrets`) its active secrets and remote
///   keys sealed to the site box;
/// - `diff` is what it changes against the last applied document, for the
///   operator to read before it is signed.
struct FleetPushPlan {
    /// The document this push follows.
    enum Baseline: Equatable {
        /// Nothing of this site applied here.
        case none
        /// The applied document, its signature checked with the site key.
        case verified(FleetDocument, FleetAppliedRecord)
        /// The store records a version whose document cannot be checked,
        /// with why: nothing is compared with it.
        case unchecked(FleetAppliedRecord, why: String)

        var version: Int64 {
            switch self {
            case .none: return 0
            case .verified(_, let r), .unchecked(let r, _): return r.version
            }
        }
    }

    struct Refusal: Error, CustomStringConvertible {
        let description: String
    }

    var baseline: Baseline
    /// The version given with `--after-version`, when given.
    var afterVersion: Int64?
    var document: FleetDocument
    /// What `document` carries sealed (nil without `--secrets`).
    var secrets: FleetSecrets?
    var diff: FleetDiff

    /// The version the new document would follow rests on the store alone,
    /// unchecked: nothing is signed without `--after-version`.
    var versionUnchecked: Bool {
        if case .unchecked = baseline, afterVersion == nil { return true }
        return false
    }

    /// `boxPrivateKey`: the site box key ([fleet] box_key_file) when readable;
    /// `boxKeyProblem` why it is not, when it is not. `afterVersion`: the
    /// operator's `--after-version`, which must be the checked applied
    /// version when there is one.
    static func make(
        fleet: GatewayConfiguration.Fleet, deviceID: String, store: GatewayStore, by: String, withSecrets: Bool,
        boxPrivateKey: [UInt8]?, boxKeyProblem: String? = nil, afterVersion: Int64? = nil, shareOTPKey: Bool = false,
        now: Int64
    ) throws -> FleetPushPlan {
        let baseline = try baseline(store.fleetApplied(), fleet: fleet)
        var follows = baseline.version
        if let afterVersion {
            guard afterVersion >= 0 else { throw Refusal(description: "--after-version: 0 or more") }
            if case .verified(let doc, _) = baseline, afterVersion != doc.version {
                throw Refusal(
                    description:
                        "--after-version \(afterVersion): the applied document here, checked with the site key, is "
                        + "version \(doc.version): nothing signed")
            }
            follows = afterVersion
        }
        guard follows < Int64.max else {
            throw Refusal(
                description:
                    "the site's fleet version is at its maximum (\(follows)): no later version can be signed; "
                    + "start the site over with a new site_id")
        }
        let version = follows + 1
        var secrets: FleetSecrets?
        var sealed: Crypto.SiteBox.Sealed?
        if withSecrets {
            guard let boxPrivateKey else {
                throw Refusal(
                    description:
                        "--secrets needs the site box key ([fleet] box_key_file): \(boxKeyProblem ?? "not set")")
            }
            var plain = try store.fleetSecrets()
            // The phone's OTP key stays this door's unless asked (issue 24
            // M3): a docs/formats.md §3 block names no door, so a block seen at one
            // door would open every door holding the same key.
            if !shareOTPKey {
                plain.compatTimestampKey = nil
                plain.compatTimestampGeneration = nil
            }
            sealed = try plain.seal(
                to: try Crypto.SiteBox.publicKey(privateKey: boxPrivateKey), site: fleet.siteID, version: version)
            secrets = plain
        }
        let document = FleetRules.snapshot(
            try store.fleetLocal(), site: fleet.siteID, version: version, origin: "\(deviceID)/\(by)", now: now,
            sealedSecrets: sealed)

        var old: FleetDocument?
        var oldSecrets: FleetSecrets?
        var unreadable: String?
        if case .verified(let doc, _) = baseline {
            old = doc
            if doc.sealedSecrets != nil, secrets != nil {
                if let boxPrivateKey {
                    do { oldSecrets = try FleetSecrets.open(doc, boxPrivateKey: boxPrivateKey) } catch {
                        unreadable = error.description
                    }
                } else {
                    unreadable = "no site box key here"
                }
            }
        }
        var diff = FleetDiff.between(
            old, oldSecrets: oldSecrets, oldSecretsUnreadable: unreadable, document, newSecrets: secrets)
        diff.otpKeyPerDoor = withSecrets && !shareOTPKey
        return FleetPushPlan(
            baseline: baseline, afterVersion: afterVersion, document: document, secrets: secrets, diff: diff)
    }

    /// The applied document as the store holds it, checked with the site key.
    /// A kept document that verifies but is not what `fleet_state` records
    /// (another version or body) signs nothing: the store was altered.
    static func baseline(_ record: FleetAppliedRecord?, fleet: GatewayConfiguration.Fleet) throws -> Baseline {
        guard let record, record.site == fleet.siteID else { return .none }
        guard let envelope = record.document else {
            return .unchecked(
                record, why: "the store keeps no document for it (applied before gatewayd kept them)")
        }
        let verdict = FleetRules.judge(envelope, sitePublicKey: fleet.sitePublicKey, siteID: fleet.siteID, applied: nil)
        guard case .apply(let accepted) = verdict else {
            var why = "is refused"
            if case .refuse(let e) = verdict { why = "is refused (\(e))" }
            return .unchecked(
                record,
                why: "the document the store keeps for it \(why) with this site key: signed with a previous "
                    + "site key, or the store was altered")
        }
        guard accepted.document.version == record.version, Crypto.constantTimeEqual(accepted.digest, record.digest)
        else {
            let body = accepted.document.version == record.version ? " with another body" : ""
            throw Refusal(
                description:
                    "the store's fleet_state records version \(record.version), but the applied document it keeps "
                    + "is version \(accepted.document.version)\(body); the store was altered (gatewayd's user can "
                    + "write it): nothing signed")
        }
        return .verified(accepted.document, record)
    }

    /// The summary printed before anything is signed.
    var summary: [String] {
        let site = FleetDiff.printable(document.site)
        let follows = document.version - 1
        var out: [String] = []
        switch baseline {
        case .none where afterVersion == nil:
            out.append("fleet push: site \(site), version \(document.version) (no document of this site applied here)")
        case .none:
            out.append(
                "fleet push: site \(site), version \(document.version), after version \(follows) "
                    + "(--after-version; no document of this site applied here)")
        case .verified(let doc, let record):
            out.append(
                "fleet push: site \(site), version \(document.version), after version \(doc.version) "
                    + "(from \(FleetDiff.printable(doc.origin)), applied here \(UTCTime.iso8601(record.applied)); "
                    + "its signature checked with the site key)")
        case .unchecked(let record, let why):
            let said = afterVersion == nil ? "as the store records it" : "--after-version"
            out.append(
                "fleet push: site \(site), version \(document.version), after version \(follows) (\(said); "
                    + "the store records version \(record.version) from \(FleetDiff.printable(record.origin)), "
                    + "applied here \(UTCTime.iso8601(record.applied)))")
            out.append(
                "warning: version \(record.version) cannot be checked: \(why); compare `gatewayctl fleet status` "
                    + "at another door. Every entry below is listed as added")
        }
        out.append("origin: \(FleetDiff.printable(document.origin))")
        out += diff.lines()
        if case .verified = baseline, diff.isEmpty {
            out.append("nothing differs from version \(baseline.version): this republishes it as \(document.version)")
        }
        return out
    }
}

extension FleetCommand {
    struct Push: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "push",
            abstract: "Sign this door's revocations and issued tags with the site key and publish them.",
            discussion: """
                The document is made here, from the door's configuration and its store (read \
                directly: run as root), never from gatewayd's answer: version = the applied one + 1, \
                the applied document's signature checked with the site key. What it changes against \
                the last applied document is printed, and on a terminal you are asked to confirm \
                before it is signed; --yes signs without asking (scripts). Without a terminal and \
                without --yes nothing is signed. When the applied version cannot be checked (a \
                previous site key, a store from before gatewayd kept documents), nothing is signed \
                without --after-version N. gatewayd only publishes the signed document.
                """)
        @OptionGroup var socket: SocketOptions
        @Option(help: "The site's private key file (64 hex digits, mode 0600; `fleet keygen`).")
        var siteKey: String
        @Option(help: "Who pushes, recorded as the origin (default: the user running gatewayctl).")
        var by: String?
        @Flag(
            help:
                "Also carry this door's action secrets and its command key (the site's; each door derives its own from it), sealed to the site box key."
        )
        var secrets = false
        @Flag(
            help:
                "With --secrets, also carry this door's otp key (the phone app's timestamp key), so every door takes it: a phone's OTP block seen at one door then opens the others within the freshness window (the block names no door). Off: each door keeps its own."
        )
        var shareOTPKey = false
        @Flag(help: "Sign without asking (after the summary is printed); needed when not on a terminal.")
        var yes = false
        @OptionGroup var config: ConfigOptions
        @Option(
            help:
                "The version this document follows, when the store's applied one cannot be checked with the site key (a previous site key, a store from before gatewayd kept documents) or none is applied here yet; it must be the applied version when that is checked."
        )
        var afterVersion: Int64?

        func fail(_ text: String) -> ExitCode {
            printError("gatewayctl: \(text)\n")
            return ExitCode(1)
        }

        func run() throws {
            let seed: [UInt8]
            do { seed = try SiteKeyFile.read(siteKey) } catch { throw fail("\(error)") }
            let path = config.path()
            let configuration = try config.load()
            let fleet = configuration.fleet
            guard fleet.enabled else { throw fail("the fleet is off in \(path) ([fleet] enabled = false)") }
            guard try Crypto.Ed25519.publicKey(seed: seed) == fleet.sitePublicKey else {
                throw fail(
                    "site key \(siteKey) is not the private key of [fleet] site_public_key in \(path): nothing signed")
            }
            guard !shareOTPKey || secrets else { throw fail("--share-otp-key goes with --secrets") }
            let by = self.by ?? SiteKeyFile.userName()
            guard !by.isEmpty, by.utf8.count <= 64, !by.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
                throw fail("--by: 1…64 bytes, no control characters")
            }

            let store: GatewayStore
            do { store = try GatewayStore.forRootTool(stateDirectory: configuration.paths.stateDirectory) } catch {
                throw fail(
                    "fleet push reads the door's store itself, not through gatewayd, so it runs as root: \(error)")
            }
            var boxPrivateKey: [UInt8]?
            var boxKeyProblem: String?
            if let file = fleet.boxKeyFile {
                do { boxPrivateKey = try SiteKeyFile.read(file) } catch { boxKeyProblem = "\(error)" }
            }
            let plan: FleetPushPlan
            do {
                plan = try FleetPushPlan.make(
                    fleet: fleet, deviceID: configuration.deviceID, store: store, by: by, withSecrets: secrets,
                    boxPrivateKey: boxPrivateKey, boxKeyProblem: boxKeyProblem, afterVersion: afterVersion,
                    shareOTPKey: shareOTPKey, now: Int64(time(nil)))
            } catch {
                throw fail("\(error)")
            }

            // The summary goes where people read it; with --json, stdout keeps the answer alone.
            let summary = plan.summary.joined(separator: "\n") + "\n"
            if socket.json { printError(summary) } else { print(summary, terminator: "") }
            fflush(stdout)
            if plan.versionUnchecked {
                throw fail(
                    "not signed: the version this document follows cannot be checked (see the warning above); "
                        + "give it with --after-version N: the applied version `gatewayctl fleet status` shows "
                        + "at the site's other doors")
            }
            try confirm(version: plan.document.version)

            let document = try plan.document.signed(seed: seed)
            let answer = try socket.request(.fleetPublish, [("document", .string(Base64URL.encode(document)))])
            let result = JSONValue.object([
                ("published", answer["published"] ?? .null), ("site", .string(plan.document.site)),
                ("version", .int(plan.document.version)),
            ])
            print(socket.json ? result.serialized : result.pretty)
        }

        /// --yes, or "y" typed on the terminal; otherwise nothing is signed.
        func confirm(version: Int64) throws {
            if yes { return }
            guard isatty(STDIN_FILENO) == 1 else {
                throw fail(
                    "not signed: nobody confirmed the summary above (standard input is not a terminal); "
                        + "run it on a terminal, or add --yes to sign without asking")
            }
            printError("Sign version \(version) with the site key and publish it? [y/N] ")
            let answer = readLine()?.trimmed.lowercased()
            guard answer == "y" || answer == "yes" else { throw fail("not signed") }
        }
    }
}
