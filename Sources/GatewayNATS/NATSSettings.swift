import DoorCore

/// Where the NATS server is and how the link talks to it: the daemon fills it
/// from `[nats]` (GatewayConfig is not a dependency of this transport).
public struct NATSSettings: Sendable {
    public struct TLS: Equatable, Sendable {
        public var enabled: Bool
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        public init(enabled: Bool, caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil) {
            self.enabled = enabled
            self.caFile = caFile
            self.certFile = certFile
            self.keyFile = keyFile
        }
    }
    /// `nats://host:port` or `tls://host:port`, tried in order.
    public var servers: [String]
    /// First subject token; subjects are `<prefix>.<device-id>.…`.
    public var prefix: String
    public var tls: TLS
    /// The user JWT and nkey seed (decentralised auth); nil: no credentials.
    public var credentials: NATSCredentialFiles?
    /// A user and password, or a token (a server's own `authorization`),
    /// instead of `credentials`.
    public var login: NATSLogin?
    /// The account public keys (`A…`) a JWT pushed on `creds.jwt` must be
    /// signed by; empty: every pushed JWT is refused.
    public var accountKeys: [String]
    /// Publish outbox rows through JetStream and delete them on its PubAck;
    /// without a stream on the subject (no responders) or with this off,
    /// rows are deleted after a plain publish and a successful flush (PING/PONG).
    public var jetStream: Bool
    /// libnats' wait between reconnect attempts of one connection.
    public var reconnectWaitMilliseconds: Int
    /// Share of the JWT's lifetime (iat → exp) after which a new one is requested.
    public var refreshFraction: Double
    /// How long a flush (or a JetStream ack) may take before the rows are retried.
    public var ackTimeoutMilliseconds: Int
    /// Connection name shown by the server.
    public var name: String

    public init(
        servers: [String], prefix: String = "doorgateway", tls: TLS = TLS(enabled: false),
        credentials: NATSCredentialFiles? = nil, accountKeys: [String] = [], jetStream: Bool = false,
        reconnectWaitMilliseconds: Int = 500, refreshFraction: Double = 0.75, ackTimeoutMilliseconds: Int = 2000,
        name: String = "doorgateway"
    ) {
        self.servers = servers
        self.prefix = prefix
        self.tls = tls
        self.credentials = credentials
        self.accountKeys = accountKeys
        self.jetStream = jetStream
        self.reconnectWaitMilliseconds = reconnectWaitMilliseconds
        self.refreshFraction = refreshFraction
        self.ackTimeoutMilliseconds = ackTimeoutMilliseconds
        self.name = name
    }

    /// The host of `url` (`tls://host:port`, `nats://[v6]:port`, with or without user info).
    public static func host(of url: String) -> String? {
        let parts = url.split(separator: "/", omittingEmptySubsequences: false)
        // `scheme://rest` splits as [scheme:, "", rest…]; a bare host:port is one part.
        var rest = parts.count >= 3 && parts[0].hasSuffix(":") && parts[1].isEmpty ? parts[2] : parts[0]
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            return String(rest[rest.index(after: rest.startIndex)..<close])
        }
        let host = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return host.isEmpty ? nil : String(host)
    }

    /// `url` with its host (as `host(of:)` finds it: after `scheme://` and
    /// any `user@`) replaced by `address`.
    public static func url(_ url: String, withHost host: String, replacedBy address: String) -> String {
        var start = url.startIndex
        if let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") {
            start = url.index(colon, offsetBy: 3)
        }
        let hostEnd = url[start...].firstIndex(of: "/") ?? url.endIndex
        if let at = url[start..<hostEnd].lastIndex(of: "@") { start = url.index(after: at) }
        guard url[start...].hasPrefix(host) else { return url }
        return String(url[..<start]) + address + String(url[url.index(start, offsetBy: host.count)...])
    }

    /// The name TLS verifies: the servers' host when they share one. With
    /// several hosts each is verified only by a static build (see docs/nats.md).
    public var verifiedHost: String? {
        let hosts = Set(servers.compactMap(Self.host(of:)))
        return hosts.count == 1 ? hosts.first : nil
    }

    /// Whether `token` can be one subject token (prefix tokens, a device id):
    /// not empty, no `.`, `*`, `>` or white space.
    public static func isSubjectToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= 128
            && !token.unicodeScalars.contains {
                ".*>".unicodeScalars.contains($0) || $0.value <= 0x20 || $0.value == 0x7F
            }
    }

    /// A prefix: one or more subject tokens separated by dots.
    public static func isSubjectPrefix(_ prefix: String) -> Bool {
        let tokens = prefix.split(separator: ".", omittingEmptySubsequences: false)
        return !tokens.isEmpty && tokens.allSatisfy { isSubjectToken(String($0)) }
    }
}

/// A server's own `authorization`: a user and its password, or a token. Its
/// description never holds the secret (it may end up in a log line).
public enum NATSLogin: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    case user(String, password: String)
    case token(String)

    public var description: String {
        switch self {
        case .user(let name, _): return "user \(name), password not shown"
        case .token: return "a token, not shown"
        }
    }
    public var debugDescription: String { description }
}

/// The subjects of one door: `<prefix>.<device-id>.<leaf>`.
public struct NATSSubjects: Sendable {
    public let base: String
    public init(prefix: String, deviceID: String) { base = prefix + "." + deviceID }
    public var telemetry: String { base + ".telemetry" }
    public var event: String { base + ".event" }
    public var state: String { base + ".state" }
    public var availability: String { base + ".availability" }
    public var lastAccess: String { base + ".last_access" }
    public var tag: String { base + ".tag" }
    public var report: String { base + ".report" }
    /// Reply subjects (JetStream acks): `<base>.inbox.<random>`.
    public var inbox: String { base + ".inbox" }
    /// Every command subject (one subscription).
    public var commands: String { base + ".command.>" }
    public var commandNative: String { base + ".command.native" }
    public var commandCompat: String { base + ".command.compat" }
    public var commandLock: String { base + ".command.lock" }
    public var commandMode: String { base + ".command.mode" }
    public var commandLockoutClear: String { base + ".command.lockout_clear" }
    public var commandAction: String { base + ".command.action" }
    /// The door asks for a new JWT here.
    public var credsRequest: String { base + ".creds.request" }
    /// A new JWT for the door arrives here.
    public var credsJWT: String { base + ".creds.jwt" }

    /// The channel of a command subject; nil for any other subject.
    public func channel(of subject: String) -> RemoteChannel? {
        switch subject {
        case commandNative: return .native
        case commandCompat: return .compat
        case commandLock: return .homeAssistantLock
        case commandMode: return .homeAssistantMode
        case commandLockoutClear: return .homeAssistantLockoutClear
        case commandAction: return .homeAssistantAction
        default: return nil
        }
    }

    /// The subject for an outbox row: rows are written with NATS subjects;
    /// a row left by the MQTT transport (`…/event`) goes to the subject with
    /// the same leaf, so switching transports loses no backlog.
    public func subject(forRow topic: String) -> String {
        guard topic.contains("/") else { return topic }
        let leaf = topic.split(separator: "/").last.map(String.init) ?? "event"
        return base + "." + (NATSSettings.isSubjectToken(leaf) ? leaf : "event")
    }
}
