import DoorCore

/// Which transport carries events and commands (`[remote] transport`).
public enum RemoteTransportKind: String, Sendable, CaseIterable { case mqtt, nats }

extension GatewayConfiguration {
    /// `[remote]`: the transport. MQTT (the default, so existing files keep
    /// working) or NATS; `[mqtt]`'s command rules, `uid_in_events`,
    /// `outbox_limit` and `telemetry_s` apply to either.
    public struct Remote: Equatable, Sendable {
        public var transport: RemoteTransportKind = .mqtt
        public init(transport: RemoteTransportKind = .mqtt) { self.transport = transport }
    }

    /// `[nats]`: the NATS server, subjects, TLS and decentralised credentials
    /// (user JWT + nkey seed, files in the state directory).
    public struct NATS: Equatable, Sendable {
        public struct TLS: Equatable, Sendable {
            public var enabled = true
            public var caFile: String?
            public var certFile: String?
            public var keyFile: String?
        }
        /// `tls://host:4222` (or `nats://` without TLS), tried in order.
        public var servers: [String] = []
        /// Subjects are `<prefix>.<device.id>.…`.
        public var prefix = "doorgateway"
        public var tls = TLS()
        /// Holds `user.jwt` and `user.nk`; default `<state_dir>/nats`.
        public var credentialsDirectory: String?
        /// Explicit files instead of the directory's (both or neither).
        public var jwtFile: String?
        public var seedFile: String?
        /// The account public keys (`A…`: the account's key, its signing
        /// keys) a JWT pushed on `creds.jwt` must be signed by. Empty: pushed
        /// JWTs are refused (and none is asked for).
        public var accountKeys: [String] = []
        /// Delete outbox rows on JetStream's PubAck (a stream must take the subjects).
        public var jetStream = false
        public var reconnectWaitMilliseconds = 500
        /// Ask for a new JWT after this share of its lifetime (percent).
        public var refreshPercent = 75
        /// The JetStream key-value bucket of the fleet's documents (`[fleet]`).
        public var fleetBucket = "doorgateway-fleet"
        /// A server's own users (`authorization { users = [...] }`): `user`,
        /// and the password in a file — an absolute path, or the name of a
        /// systemd credential (`nats.password`). Never the password itself.
        public var user: String?
        public var passwordFile: String?
        /// A server's `authorization { token: … }`: the token in a file (or
        /// the systemd credential `nats.token`).
        public var tokenFile: String?
        /// Send the password or token over plain TCP to a `*.local` server
        /// all the same (issue 32 L-6: whoever answers multicast DNS gets it).
        public var allowPasswordOverPlainMulticastDNS = false
        public init() {}

        /// A password or token would go in the clear to whoever answers
        /// multicast DNS for one of `servers`.
        public var sendsSecretOverPlainMulticastDNS: Bool {
            login != .jwt && !tls.enabled && servers.contains { Self.isMulticastDNSServer($0) }
        }

        /// `nats://NAME.local:4222`: the host part of a server URL ends in `.local`.
        static func isMulticastDNSServer(_ url: String) -> Bool {
            // `scheme://rest` splits as [scheme:, "", rest…] (no regex: the static binary keeps it out).
            let parts = url.split(separator: "/", omittingEmptySubsequences: false)
            var rest = parts.count >= 3 && parts[0].hasSuffix(":") && parts[1].isEmpty ? parts[2] : parts[0]
            if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
            return MQTT.isMulticastDNSName(String(rest.prefix { $0 != ":" && $0 != "/" }))
        }

        /// How the door logs in: the decentralised JWT (the default), a
        /// user and password, or a token.
        public enum Login: Equatable, Sendable { case jwt, password, token }
        public var login: Login { tokenFile != nil ? .token : user != nil ? .password : .jwt }

        /// The JWT and seed paths for a state directory.
        public func credentialPaths(stateDirectory: String) -> (jwt: String, seed: String) {
            if let j = jwtFile, let s = seedFile { return (j, s) }
            let dir = credentialsDirectory ?? stateDirectory + "/nats"
            return (dir + "/user.jwt", dir + "/user.nk")
        }
    }

    static func readRemote(_ root: TableReader) -> Remote {
        let t = root.table("remote")
        let remote = Remote(transport: t?.choice("transport", RemoteTransportKind.mqtt) ?? .mqtt)
        t?.finish()
        return remote
    }

    static func readNATS(_ root: TableReader, required: Bool) -> NATS {
        var n = NATS()
        let t = root.table("nats")
        n.servers = t?.stringList("servers", [], Check.natsURL) ?? []
        if required && n.servers.isEmpty {
            root.sink.add(
                "nats.servers", "is required with remote.transport = \"nats\": e.g. [\"tls://nats.example:4222\"]")
        }
        n.prefix = t?.string("prefix", "doorgateway", Check.natsPrefix) ?? "doorgateway"
        n.credentialsDirectory = t?.optionalString("creds_dir", Check.absolutePath)
        n.jwtFile = t?.optionalString("jwt_file", Check.absolutePath)
        n.seedFile = t?.optionalString("seed_file", Check.absolutePath)
        if let t, t.has("jwt_file") != t.has("seed_file") {
            t.fail(
                t.has("jwt_file") ? "seed_file" : "jwt_file",
                "is required with the other: the JWT and its seed go together")
        }
        n.accountKeys = t?.stringList("account_keys", [], Check.natsAccountKey) ?? []
        n.jetStream = t?.bool("jetstream", false) ?? false
        n.reconnectWaitMilliseconds = t?.int("reconnect_wait_ms", 500, 100...60_000) ?? 500
        n.refreshPercent = t?.int("refresh_percent", 75, 10...95) ?? 75
        n.fleetBucket = t?.string("fleet_bucket", "doorgateway-fleet", Check.natsBucket) ?? "doorgateway-fleet"
        if let t { readNATSLogin(t, into: &n) }
        let tls = t?.table("tls")
        n.tls.enabled = tls?.bool("enabled", true) ?? true
        n.tls.caFile = tls?.optionalString("ca_file", Check.absolutePath)
        n.tls.certFile = tls?.optionalString("cert_file", Check.absolutePath)
        n.tls.keyFile = tls?.optionalString("key_file", Check.absolutePath)
        if let tls, tls.has("cert_file") != tls.has("key_file") {
            tls.fail(
                tls.has("cert_file") ? "key_file" : "cert_file",
                "is required with the other: the client certificate and its key go together")
        }
        n.allowPasswordOverPlainMulticastDNS = t?.bool("allow_password_over_plain_mdns", false) ?? false
        if let t, required, n.sendsSecretOverPlainMulticastDNS, !n.allowPasswordOverPlainMulticastDNS {
            t.fail(
                n.login == .token ? "token_file" : "password_file",
                "would be sent over plain TCP (nats.tls.enabled = false) to a server named *.local, found by "
                    + "multicast DNS: whoever on the network answers the query first receives it. Use TLS, or a "
                    + "DNS name or address; to send it all the same, set [nats] allow_password_over_plain_mdns = true")
        }
        if required && n.tls.enabled && n.tls.caFile == nil {
            root.sink.add(
                "nats.tls.ca_file", "is required with TLS on (or nats.tls.enabled = false for a plain-TCP server)")
        }
        tls?.finish()
        t?.finish()
        return n
    }
}

extension GatewayConfiguration {
    /// `user` + `password_file`, or `token_file` (issue 23 §2): one way to
    /// log in, never a secret in the file itself.
    static func readNATSLogin(_ t: TableReader, into n: inout NATS) {
        n.user = t.optionalString("user", Check.text(max: 256))
        n.passwordFile = t.optionalString("password_file", Check.secretFile)
        n.tokenFile = t.optionalString("token_file", Check.secretFile)
        for (inline, file) in [("password", "password_file"), ("token", "token_file")] where t.has(inline) {
            _ = t.node(inline)
            t.fail(
                inline,
                "is never written in gateway.toml: put it in a file (0640 root:doorgateway) and name that with "
                    + "\(file), or a systemd credential")
        }
        if t.has("password_file") != t.has("user") {
            t.fail(
                t.has("user") ? "password_file" : "user",
                "is required with the other: the server matches the password to a user")
        }
        if t.has("token_file") && (t.has("user") || t.has("password_file")) {
            t.fail("token_file", "not with user/password_file: one way to log in")
        }
        if t.has("user") || t.has("token_file") {
            for key in ["jwt_file", "seed_file", "creds_dir", "account_keys"] where t.has(key) {
                t.fail(
                    key,
                    "is for a JWT login, and this file logs in with \(t.has("token_file") ? "token_file" : "user"): "
                        + "one way to log in")
            }
        }
    }
}

extension Check {
    /// `nats://host:port` or `tls://host:port`.
    static func natsURL(_ s: String) -> String? {
        if let why = text(max: 512)(s) { return why }
        guard s.hasPrefix("nats://") || s.hasPrefix("tls://") else {
            return "\"\(s)\": expected nats://HOST:PORT or tls://HOST:PORT"
        }
        if s.unicodeScalars.contains(where: { $0.value <= 0x20 }) { return "\"\(s)\" has a space" }
        // `nats://user:secret@host`: a secret in gateway.toml (and in every log line naming the server).
        let authority = s.split(separator: "/", omittingEmptySubsequences: false).dropFirst(2).first ?? ""
        return authority.contains("@")
            ? "a user or password in the URL: use [nats] user and password_file, or token_file" : nil
    }

    /// An account public key: an nkey `A…` (prefix and checksum).
    static func natsAccountKey(_ s: String) -> String? {
        NKey.accountKey(s) != nil
            ? nil
            : "\"\(s.prefix(64))\": expected an account public key (56 characters starting with A, as nsc prints it)"
    }

    /// A JetStream bucket name: letters, digits, '-' and '_', at most 64.
    static func natsBucket(_ s: String) -> String? {
        let ok =
            !s.isEmpty && s.utf8.count <= 64
            && s.utf8.allSatisfy { b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D
                    || b == 0x5F
            }
        return ok ? nil : "\"\(s)\": a bucket name of letters, digits, '-' and '_' (at most 64)"
    }

    /// Subject tokens separated by dots: no wildcards, spaces or empty tokens.
    static func natsPrefix(_ s: String) -> String? {
        let tokens = s.split(separator: ".", omittingEmptySubsequences: false)
        let ok =
            s.utf8.count <= 128
            && tokens.allSatisfy { t in
                !t.isEmpty && !t.unicodeScalars.contains { "*>".unicodeScalars.contains($0) || $0.value <= 0x20 }
            }
        return ok ? nil : "\"\(s)\": subject tokens separated by '.', without '*', '>' or spaces"
    }
}
