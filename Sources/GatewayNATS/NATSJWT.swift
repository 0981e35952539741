import CNATS
import DoorCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The link's JWT (NATSLink.swift's header says how credentials work): what
/// libnats' credential callbacks hand it, a JWT pushed on `creds.jwt` checked,
/// tried on a trial connection and installed, and the request for a new one
/// before the current one expires.
extension NATSLink {
    /// The JWT as the file holds it now: a refreshed one is used at the next (re)connect.
    func userJWT(
        _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
        _ errText: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
    ) -> natsStatus {
        guard let creds = settings.credentials else { return NATS_ERR }
        do {
            let jwt = try creds.readJWT()
            out?.pointee = strdup(jwt)
            return NATS_OK
        } catch {
            errText?.pointee = strdup("user JWT: \(error)")
            return NATS_ERR
        }
    }

    func sign(
        _ errText: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
        _ sig: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?, _ sigLen: UnsafeMutablePointer<Int32>?,
        _ nonce: UnsafePointer<CChar>?
    ) -> natsStatus {
        seed.withLock { seed -> natsStatus in
            guard let seed, let nonce else {
                errText?.pointee = strdup("no nkey seed")
                return NATS_ERR
            }
            return seed.withUnsafeBufferPointer { nats_Sign($0.baseAddress, nonce, sig, sigLen) }
        }
    }

    static func wipe(_ bytes: inout [CChar]) {
        for i in bytes.indices { bytes[i] = 0 }
    }

    /// A JWT pushed on `creds.jwt`, checked here: this door's, unexpired,
    /// signed by one of `accountKeys`, not issued ahead of the clock, not
    /// older than the one in place. The manager thread then tries it on a
    /// trial connection and installs it only if the server accepts it; until
    /// then `user.jwt` keeps the JWT that works. Never logged; a seed never
    /// travels (a payload with one is refused).
    func installPushed(_ payload: [UInt8]) {
        guard let creds = settings.credentials else { return }
        let text = String(decoding: payload, as: UTF8.self)
        guard !text.includes("SEED") else {
            return noteError("creds.jwt: refused a payload carrying a seed (only a JWT is accepted there)")
        }
        do {
            let pushed = try checkPushed(String(text.split(whereSeparator: \.isWhitespace).first ?? ""), creds)
            log.info("nats: a new JWT for \(pushed.subject) passed the checks; trying it on a trial connection")
            queue.update { $0.pushed = pushed.text }
        } catch {
            noteError("creds.jwt: refused: \(error)")
        }
    }

    /// The checks a pushed JWT must pass, on arrival and again just before it is installed.
    func checkPushed(_ text: String, _ creds: NATSCredentialFiles) throws -> UserJWT {
        let now = Int64(time(nil))
        let pushed = try UserJWT(text)
        try pushed.check(publicKey: try creds.publicKey(), now: now)
        try pushed.checkTrusted(accountKeys: trustedIssuers(creds, now: now), now: now)
        // Not older than the JWT in place (a replayed push): only `gatewayctl
        // creds import`, run by hand, may go back. An `iat` in place that is
        // itself ahead of the clock (a junk JWT installed before these checks
        // existed) does not hold real refreshes off.
        if let installed = try? UserJWT(creds.readJWT()), installed.issuedInTime(now: now),
            let held = installed.issuedAt, (pushed.issuedAt ?? 0) < held
        {
            throw NATSError.refused("issued before the JWT in place (a replayed push?)")
        }
        return pushed
    }

    /// The keys a pushed JWT may be signed by: `accountKeys`; without them,
    /// the issuer of the JWT in place, when that JWT's own signature holds and
    /// its `iat` is not ahead of the clock — the key the server accepted this
    /// door's JWT from (pushes arrive over the connection it opened). A new
    /// issuer (a rotated signing key) then needs `account_keys` or
    /// `gatewayctl creds import`.
    func trustedIssuers(_ creds: NATSCredentialFiles, now: Int64) -> [String] {
        if !settings.accountKeys.isEmpty { return settings.accountKeys }
        guard let installed = try? UserJWT(creds.readJWT()), let iss = installed.issuer,
            (try? installed.checkTrusted(accountKeys: [iss], now: now)) != nil
        else { return [] }
        return [iss]
    }

    /// The trial, then the install: the old JWT stays until the new one has connected.
    func installAfterTrial(_ text: String) {
        guard let creds = settings.credentials else { return }
        if let why = trialConnect(text) {
            return noteError(
                "creds.jwt: refused: the server did not accept the new JWT: \(why); the JWT in place is kept")
        }
        do {
            // Again: `user.jwt` may have changed while the trial ran.
            let pushed = try checkPushed(text, creds)
            let jwt = try creds.install(pushed.text, now: Int64(time(nil)))
            shared.withLock {
                $0.refreshes += 1
                $0.nextRequest = 0
            }
            let exp = jwt.expires.map { UTCTime.iso8601($0) } ?? "never"
            log.info("nats: installed a new JWT for \(jwt.subject), expires \(exp) (the server accepted it)")
        } catch {
            noteError("creds.jwt: refused: \(error)")
        }
    }

    /// What a trial connection's JWT callback hands libnats; the seed is the link's.
    final class TrialBox: Sendable {
        let jwt: String
        private let box = Box()
        var link: NATSLink? { box.link }
        init(jwt: String, link: NATSLink) {
            self.jwt = jwt
            box.link = link
        }
    }

    /// Connects once with `jwt` (no reconnects, no subscriptions, no other
    /// callbacks) and closes again: nil when the server accepted it, else why not.
    func trialConnect(_ jwt: String) -> String? {
        guard let opts = baseOptions(name: settings.name + " (new JWT trial)") else {
            return "options: " + (core.lastError ?? "failed")
        }
        defer { natsOptions_Destroy(opts) }
        let trial = Unmanaged.passRetained(TrialBox(jwt: jwt, link: self)).toOpaque()
        // Released after the connection is destroyed, below (defers run last first).
        defer { Unmanaged<TrialBox>.fromOpaque(trial).release() }
        let jwtCB: natsUserJWTHandler = { out, _, closure in
            guard let closure else { return NATS_ERR }
            out?.pointee = strdup(Unmanaged<TrialBox>.fromOpaque(closure).takeUnretainedValue().jwt)
            return NATS_OK
        }
        let sigCB: natsSignatureHandler = { errText, sig, sigLen, nonce, closure in
            guard let closure, let link = Unmanaged<TrialBox>.fromOpaque(closure).takeUnretainedValue().link else {
                return NATS_ERR
            }
            return link.sign(errText, sig, sigLen, nonce)
        }
        guard ok(natsOptions_SetAllowReconnect(opts, false), "trial: no reconnects"),
            ok(natsOptions_SetUserCredentialsCallbacks(opts, jwtCB, trial, sigCB, trial), "trial: credentials")
        else { return "the trial connection could not be set up" }
        var nc: OpaquePointer?
        let s = natsConnection_Connect(&nc, opts)
        let why = s == NATS_OK ? nil : Self.lastError(s)
        if let nc {
            natsConnection_Close(nc)
            natsConnection_Destroy(nc)
        }
        return why
    }

    /// Asks for a new JWT once `refreshFraction` of the current one's
    /// lifetime has passed; again every quarter of what is left (at least 1 s).
    /// Not when no key could vouch for the answer (no `accountKeys` and no
    /// trustworthy issuer in place): every pushed JWT would be refused.
    func requestRefreshIfDue() {
        guard let creds = settings.credentials, isConnected else { return }
        let now = Int64(time(nil))
        guard !trustedIssuers(creds, now: now).isEmpty else { return }
        guard let jwt = try? UserJWT(creds.readJWT()), let exp = jwt.expires else { return }
        let iat = jwt.issuedAt ?? exp
        let due = iat + Int64(Double(exp - iat) * settings.refreshFraction)
        let next = shared.withLock { $0.nextRequest }
        guard now >= due, now >= next else { return }
        shared.withLock { $0.nextRequest = now + max(1, (exp - now) / 4) }
        let request = JSONValue.object([
            ("device", .string(deviceID)), ("public_key", .string(jwt.subject)), ("expires", .int(exp)),
            ("expires_in", .int(exp - now)),
        ])
        publishDirect(subjects.credsRequest, Array(request.serialized.utf8))
        log.info("nats: asked for a new JWT on \(subjects.credsRequest) (the current one expires in \(exp - now) s)")
    }
}
