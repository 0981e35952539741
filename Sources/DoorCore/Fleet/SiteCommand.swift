// The site's signed commands (issue 36, docs/fleet.md "Site commands"):
// lockdown start and end, and the fire alarm from the site. Signed with the
// site key (Ed25519) that signs fleet documents, heard on the fleet's topics
// (MQTT) or keys (NATS) beside them, and judged here, pure: envelope,
// signature over the exact body, site, freshness, replay record.
//
//     {"site_command":1,"body":"<base64url of the body>","sig":"<base64url Ed25519>"}
//
// The signature covers "doorgateway-site-command-v1\n" followed by the body's
// bytes, so no document signature can pass for a command and no command for
// a document. The body:
//
//     {"site":"main-site","command":"lockdown_start","by":"alice","ts":1795000000,"nonce":"<32 hex>"}

/// What a site command asks of every door.
public enum SiteCommandKind: String, Equatable, Hashable, Sendable, CaseIterable {
    case lockdownStart = "lockdown_start"
    case lockdownEnd = "lockdown_end"
    /// The fire alarm from the site: releases as the door's own input does.
    case fireAlarm = "fire_alarm"
    /// The site's alarm is over: the door's outputs stay released until its
    /// own input (if any) is clear and an operator resets (`gatewayctl fire reset`).
    case fireClear = "fire_clear"

    /// The state it sets: commands of one state are accepted in timestamp order.
    var state: String {
        switch self {
        case .lockdownStart, .lockdownEnd: return "lockdown"
        case .fireAlarm, .fireClear: return "fire"
        }
    }
}

/// One site command, its signature checked.
public struct SiteCommand: Equatable, Hashable, Sendable {
    public var site: String
    public var kind: SiteCommandKind
    /// Who signed it off (the audit's `by`), at most 64 bytes.
    public var by: String
    /// Unix seconds; the door takes it within `[mqtt.commands] tolerance_s`.
    public var timestamp: Int64
    /// 32 hex digits: each command once.
    public var nonce: String

    public static let format = 1
    public static let signingContext = Array("doorgateway-site-command-v1\n".utf8)

    public init(site: String, kind: SiteCommandKind, by: String, timestamp: Int64, nonce: String) {
        self.site = site
        self.kind = kind
        self.by = by
        self.timestamp = timestamp
        self.nonce = nonce
    }

    public var bodyBytes: [UInt8] {
        Array(
            JSONValue.object([
                ("site", .string(site)), ("command", .string(kind.rawValue)), ("by", .string(by)),
                ("ts", .int(Int(timestamp))), ("nonce", .string(nonce)),
            ]).serialized.utf8)
    }

    /// Signed with the site's Ed25519 seed: the bytes to publish.
    public func signed(seed: [UInt8]) throws -> [UInt8] {
        let body = bodyBytes
        let sig = try Crypto.Ed25519.sign(seed: seed, message: Self.signingContext + body)
        return Array(
            JSONValue.object([
                ("site_command", .int(Self.format)), ("body", .string(Base64URL.encode(body))),
                ("sig", .string(Base64URL.encode(sig))),
            ]).serialized.utf8)
    }

    /// Whether bytes heard on a fleet topic are a site command's envelope
    /// (and not a fleet document): they are then judged here, never as a document.
    public static func isEnvelope(_ bytes: [UInt8]) -> Bool {
        bytes.starts(with: Array(#"{"site_command":"#.utf8))
    }
}

/// Why a site command was refused (the audit's `reason`, `site_command_refused`).
public typealias SiteCommandRefusal = Refusal<SiteCommandRefusalCode>

public enum SiteCommandRefusalCode: String, Sendable, CaseIterable {
    case malformed, badSignature = "bad_signature", wrongSite = "wrong_site"
    case stale, future, replay, olderThanHighest = "older_than_highest"
    case replayRecordFull = "replay_record_full", clockUnsynchronised = "clock_unsynchronised"
}

/// Judges the bytes of a site command. Pure; the daemon persists the new
/// replay record before the door acts on the command.
public enum SiteCommandRules {
    /// The replay record's key for site commands.
    public static let replayKey = "site"

    public static func judge(
        _ bytes: [UInt8], sitePublicKey: [UInt8], siteID: String, now: WallClock, tolerance: Int64,
        replay: inout ReplayGuard
    ) -> Result<SiteCommand, SiteCommandRefusal> {
        func refuse(_ c: SiteCommandRefusal.Code, _ d: String) -> Result<SiteCommand, SiteCommandRefusal> {
            .failure(SiteCommandRefusal(c, d))
        }
        let envelope: JSONValue
        do { envelope = try JSONValue.parse(bytes, maxBytes: 4096) } catch {
            return refuse(.malformed, error.description)
        }
        guard case .object(let members) = envelope, members.count == 3,
            case .int(let format)? = envelope["site_command"], format == SiteCommand.format,
            case .string(let bodyText)? = envelope["body"], let body = Base64URL.decode(bodyText),
            case .string(let sigText)? = envelope["sig"], let sig = Base64URL.decode(sigText),
            sig.count == Crypto.Ed25519.signatureLength
        else { return refuse(.malformed, "expected exactly site_command (1), body and sig (base64url)") }
        guard
            Crypto.Ed25519.verify(
                publicKey: sitePublicKey, signature: sig, message: SiteCommand.signingContext + body)
        else { return refuse(.badSignature, "the signature does not verify with the site public key") }
        let json: JSONValue
        do { json = try JSONValue.parse(body, maxBytes: 4096) } catch {
            return refuse(.malformed, error.description)
        }
        guard case .object(let fields) = json, fields.count == 5,
            case .string(let site)? = json["site"], case .string(let name)? = json["command"],
            let kind = SiteCommandKind(rawValue: name), case .string(let by)? = json["by"],
            (1...64).contains(by.utf8.count), case .int(let ts)? = json["ts"],
            case .string(let nonce)? = json["nonce"], nonce.utf8.count == 32, Hex.decode(nonce) != nil
        else {
            return refuse(
                .malformed,
                "expected exactly site, command (\(SiteCommandKind.allCases.map(\.rawValue).joined(separator: ", "))), by, ts, nonce (32 hex)"
            )
        }
        guard site == siteID else { return refuse(.wrongSite, "for site \(site.prefix(64)), this is \(siteID)") }
        let window = CommandJudge(tolerance: tolerance, deviceID: siteID)
        if let r = window.fresh(ts, now: now) {
            switch r.code {
            case .clockUnsynchronised: return refuse(.clockUnsynchronised, r.detail)
            case .future: return refuse(.future, r.detail)
            default: return refuse(.stale, r.detail)
            }
        }
        if let r = replay.admit(
            keyID: replayKey, fingerprint: nonce.lowercased(), timestamp: ts, now: now.unixSeconds,
            tolerance: window.tolerance, orderKey: replayKey + "/" + kind.state)
        {
            switch r.code {
            case .olderThanHighest: return refuse(.olderThanHighest, r.detail)
            case .replayRecordFull: return refuse(.replayRecordFull, r.detail)
            default: return refuse(.replay, r.detail)
            }
        }
        return .success(SiteCommand(site: site, kind: kind, by: by, timestamp: ts, nonce: nonce.lowercased()))
    }
}
