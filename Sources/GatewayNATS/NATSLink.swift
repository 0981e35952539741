import CNATS
import DoorCore
import RemoteLink
import Logging
import MulticastDNS
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the link reports for status and telemetry: the common counters
/// (`denied`: permission violations the server reported, publish or
/// subscribe), then NATS' own.
public struct NATSStatus: Sendable {
    public var common: TransportStatus
    public var connected: Bool { common.connected }
    public var lastError: String? { common.lastError }
    public var outboxDepth: Int { common.outboxDepth }
    public var published: Int { common.published }
    public var acknowledged: Int { common.acknowledged }
    public var denied: Int { common.denied }
    public var lastDenied: String? { common.lastDenied }
    /// Rows deleted on a JetStream PubAck (the rest: on a flush).
    public var jetStreamAcknowledged: Int
    /// Connections built (the first, and each rebuild after libnats closed one).
    public var connections: Int
    /// Reconnects libnats made on a connection (e.g. after a JWT expired).
    public var reconnects: Int
    /// New JWTs installed from `creds.jwt`.
    public var refreshes: Int
    public var credentials: CredentialState?
}

/// The NATS adapter: the only code that touches libnats, and a transport
/// only, beside GatewayMQTT and with the same ports (DoorCore/Ports): events
/// go through the daemon's durable `Outbox` (committed, published, deleted
/// once acknowledged: a JetStream PubAck where `jetStream` is on and a stream
/// takes the subject, else a successful flush), commands go to the daemon's
/// `RemoteCommandHandler`. Subjects are `<prefix>.<device-id>.…`.
///
/// Credentials: the user JWT is read from its file by libnats' JWT callback on
/// every (re)connect, and the nonce is signed with `nats_Sign` and the seed in
/// the signature callback; neither is logged. NATS cannot re-authenticate an
/// open connection: at the JWT's `exp` the server closes it and libnats
/// reconnects with whatever JWT the file holds then. The link asks for a new
/// JWT on `creds.request` after `refreshFraction` of its lifetime. A JWT
/// pushed on `creds.jwt` must be signed by one of `accountKeys` (and pass
/// `UserJWT.checkTrusted`); it replaces the file (atomically) only once the
/// server has accepted it on a trial connection, so a JWT the server refuses
/// never displaces the one that works. When libnats gives up
/// (CLOSED, after two authorisation violations) the link builds a new
/// connection with a backoff of 1 s doubling to 30 s.
///
/// What both transports keep alike (counters, error notes, kept documents,
/// the outbox round, telemetry, the threads, the event payloads) is
/// RemoteLink's `LinkCore`. Everything the link is given comes at `init` or
/// `start`; what changes after is in a `Mutex` or a `Condition`.
public final class NATSLink: RemoteTransport, CoreLink, Sendable {
    public var transportName: String { "nats" }

    public let settings: NATSSettings
    public var deviceID: String { core.deviceID }
    public let subjects: NATSSubjects
    /// The fleet's bucket and handler (NATSFleet.swift).
    public let fleet: NATSFleet?
    public let core: LinkCore
    public var eventTopic: String { subjects.event }
    var log: Logger { core.log }

    struct Shared {
        var jetStreamAcknowledged = 0
        var connections = 0
        var reconnects = 0
        /// The addresses `*.local` servers were last found at (logged when they change).
        var resolvedServers: [String] = []
        var refreshes = 0
        /// When the next `creds.request` may go out (unix seconds).
        var nextRequest: Int64 = 0
    }
    let shared = Mutex(Shared())

    /// The connection and its subscriptions; held while libnats is called
    /// with them, so the manager thread never destroys one in use.
    // @unchecked: libnats handles: built by the manager thread, then used only with `connection` locked until `teardown` takes them out to destroy them.
    struct Connection: @unchecked Sendable {
        var nc: OpaquePointer?
        var js: OpaquePointer?
        var subs: [OpaquePointer] = []
        /// The fleet's key-value bucket, bound by the fleet thread.
        var kv: OpaquePointer?
    }
    let connection = Mutex(Connection())
    /// The fleet's watcher; held while the fleet thread waits on it, so a
    /// teardown never destroys it in use (lock order: this, then `connection`).
    let fleetWatch = Mutex<OpaquePointer?>(nil)

    struct Queue {
        /// State, tag scans and reports waiting for the committer thread.
        var direct: [(subject: String, bytes: [UInt8])] = []
        var announce = false
        var closed = false
        var stopping = false
        var started = false
        /// A new fleet watcher is due (a connection built or rebuilt, `fleet pull`).
        var fleetRewatch = false
        /// A pushed JWT that passed the checks, waiting for its trial connection.
        var pushed: String?
    }
    let queue = Condition(Queue())
    /// The libnats callbacks' closure: a box with a weak reference, kept for
    /// the process (a callback may still run after `stop`: it is never released).
    private let box: Box
    private var boxPointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(box).toOpaque() }
    /// The seed, read at each connection build; only `nats_Sign` sees it.
    let seed = Mutex<[CChar]?>(nil)

    /// A weak reference to the link that libnats' callbacks (on its own
    /// threads) load: a callback may run after the link is gone.
    final class Box: Sendable {
        private struct Weak { weak var link: NATSLink? }
        private let ref = Mutex(Weak())
        var link: NATSLink? {
            get { ref.withLock { $0.link } }
            set { ref.withLock { $0.link = newValue } }
        }
    }

    public init(settings: NATSSettings, deviceID: String, outbox: any Outbox, log: Logger, fleet: NATSFleet? = nil) {
        self.settings = settings
        self.fleet = fleet
        let subjects = NATSSubjects(prefix: settings.prefix, deviceID: deviceID)
        self.subjects = subjects
        core = LinkCore(
            name: "nats", deviceID: deviceID, outbox: outbox, log: log, kept: [subjects.state, subjects.lastAccess])
        box = Box()
        _ = Unmanaged.passRetained(box)
        box.link = self
    }

    // MARK: Lifecycle

    public func start(_ wiring: RemoteWiring) throws {
        core.wire(wiring)
        guard NATSSettings.isSubjectPrefix(settings.prefix), NATSSettings.isSubjectToken(deviceID) else {
            throw NATSError.setup(
                "prefix \"\(settings.prefix)\" or device id \"\(deviceID)\" is not a NATS subject token")
        }
        guard !settings.servers.isEmpty else { throw NATSError.setup("no server URL") }
        if settings.credentials != nil && settings.accountKeys.isEmpty {
            log.warning(
                "nats: [nats] account_keys is empty: a JWT pushed on \(subjects.credsJWT) must be signed by the issuer of the JWT in place; a new issuer needs account_keys or `gatewayctl creds import`"
            )
        }
        try core.threads.start(name: "gatewayd.nats") { [self] in runManager() }
        // Also every second: a flush that timed out is retried while rows wait.
        try core.committer.start(name: "gatewayd.natsc", period: .milliseconds(1000)) { [self] round in
            commitRound(round)
        }
        if let fleet {
            try core.threads.start(name: "gatewayd.natskv") { [self] in runFleet(fleet) }
        }
        queue.update { $0.started = true }
    }

    /// Publishes `offline`, closes the connection and joins both threads.
    public func stop(flushWithin: Duration = .seconds(2)) {
        guard queue.read({ $0.started }) else { return }
        if isConnected {
            let deadline = ContinuousClock.now + flushWithin
            while ContinuousClock.now < deadline && (core.waitingRows() > 0 || queuedCount > 0) {
                core.committer.requestFlush()
                usleep(20_000)
            }
            sendNow(subjects.availability, Array("offline".utf8))
            connection.withLock { c in
                if let nc = c.nc { _ = natsConnection_FlushTimeout(nc, 500) }
            }
        }
        queue.update { $0.stopping = true }
        core.committer.requestStop()
        core.committer.waitStopped(within: .seconds(10))
        _ = core.threads.waitAll(within: .seconds(10))
        teardown()
        queue.update { $0.started = false }
    }

    public var status: NATSStatus {
        let creds = settings.credentials?.state(now: Int64(time(nil)))
        let own = shared.withLock { $0 }
        var common = core.status(queued: queuedCount)
        common.details = [
            ("transport", .string("nats")), ("connections", .int(own.connections)),
            ("reconnects", .int(own.reconnects)), ("refreshes", .int(own.refreshes)),
            ("credentials", creds?.json ?? .null),
        ]
        return NATSStatus(
            common: common, jetStreamAcknowledged: own.jetStreamAcknowledged, connections: own.connections,
            reconnects: own.reconnects, refreshes: own.refreshes, credentials: creds)
    }

    /// The common counters; `transport`, connection counts and the credential state as details.
    public var transportStatus: TransportStatus { status.common }

    /// Messages queued or being committed.
    public var queuedCount: Int { core.committer.queuedCount }

    // MARK: The manager thread: build, watch, rebuild, refresh

    private func runManager() {
        var backoff = 1.0
        while !queue.read({ $0.stopping }) {
            if let pushed = queue.update({ q -> String? in
                defer { q.pushed = nil }
                return q.pushed
            }) {
                installAfterTrial(pushed)
            }
            if connection.withLock({ $0.nc == nil }) {
                if build() {
                    backoff = 1
                } else {
                    sleepInterruptibly(backoff)
                    backoff = min(backoff * 2, 30)
                    continue
                }
            }
            _ = queue.wait(for: .milliseconds(250)) { $0.stopping || $0.closed || $0.pushed != nil }
            let closed = queue.update { q -> Bool in
                defer { q.closed = false }
                return q.closed && !q.stopping
            }
            if closed {
                let creds = settings.credentials?.state(now: Int64(time(nil)))
                let why = creds.map { " (credentials: \($0.kind.rawValue)\($0.problem.map { ", \($0)" } ?? ""))" } ?? ""
                noteError("libnats closed the connection\(why); rebuilding in \(Int(backoff)) s")
                teardown()
                sleepInterruptibly(backoff)
                backoff = min(backoff * 2, 30)
                continue
            }
            requestRefreshIfDue()
        }
    }

    /// Waits out a backoff; ends early on `stop`, or when the JWT file
    /// changes (a `gatewayctl creds import` or a pushed JWT is tried at once,
    /// not after up to 30 s).
    private func sleepInterruptibly(_ seconds: Double) {
        let start = jwtFileStamp()
        let until = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < until {
            if queue.wait(for: .milliseconds(200), until: { $0.stopping }) { return }
            if jwtFileStamp() != start {
                log.info("nats: the JWT file changed: rebuilding now, not after the backoff")
                return
            }
        }
    }

    /// The JWT file's modification time and inode (a rename gives a new inode).
    private func jwtFileStamp() -> [Int] {
        guard let path = settings.credentials?.jwtPath else { return [] }
        var st = stat()
        guard stat(path, &st) == 0 else { return [-1] }
        return [Int(st.st_ino), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec)]
    }

    /// Options a connection and a trial connection share: servers, name,
    /// connect timeout, TLS. Nil (the error noted) on failure; the caller
    /// destroys them.
    func baseOptions(name: String) -> OpaquePointer? {
        var opts: OpaquePointer?
        guard natsOptions_Create(&opts) == NATS_OK, let opts else {
            noteError("natsOptions_Create failed")
            return nil
        }
        // `*.local` servers are asked for by multicast DNS on every build; TLS
        // still verifies the configured name (`verifiedHost`, below).
        let urls: [String]
        do { urls = try settings.servers.map(Self.resolved) } catch {
            noteError("\(error); retrying")
            natsOptions_Destroy(opts)
            return nil
        }
        if urls != settings.servers && urls != shared.withLock({ $0.resolvedServers }) {
            for (url, resolved) in zip(settings.servers, urls) where url != resolved {
                log.info("nats: \(url) is \(resolved) (multicast DNS)")
            }
            shared.withLock { $0.resolvedServers = urls }
        }
        var servers = urls.map { strdup($0) }
        defer { servers.forEach { free($0) } }
        let serversOK = servers.withUnsafeMutableBufferPointer { buffer -> Bool in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                ok(natsOptions_SetServers(opts, $0, Int32(buffer.count)), "servers")
            }
        }
        var fine =
            serversOK && ok(natsOptions_SetName(opts, name), "name")
            && ok(natsOptions_SetTimeout(opts, 5000), "timeout")
        switch settings.login {
        case .user(let user, let password)?: fine = fine && ok(natsOptions_SetUserInfo(opts, user, password), "user")
        case .token(let token)?: fine = fine && ok(natsOptions_SetToken(opts, token), "token")
        case nil: break
        }
        if fine && settings.tls.enabled {
            fine = ok(natsOptions_SetSecure(opts, true), "TLS")
            // Verify the server's name in both builds: Debian's shared libnats
            // checks it only when asked (the static one, built with upstream's
            // NATS_BUILD_TLS_FORCE_HOST_VERIFY, always does; measured).
            if fine, let host = settings.verifiedHost {
                fine = ok(natsOptions_SetExpectedHostname(opts, host), "TLS host name")
            }
            if fine, let ca = settings.tls.caFile {
                fine = ok(natsOptions_LoadCATrustedCertificates(opts, ca), "TLS CA \(ca)")
            }
            if fine, let cert = settings.tls.certFile {
                fine = ok(natsOptions_LoadCertificatesChain(opts, cert, settings.tls.keyFile), "TLS client certificate")
            }
        }
        guard fine else {
            natsOptions_Destroy(opts)
            return nil
        }
        return opts
    }

    /// `url` with a `*.local` host replaced by the IPv4 address a multicast
    /// DNS answer gives; any other URL as it is.
    static func resolved(_ url: String) throws(MulticastDNS.ResolveError) -> String {
        guard let host = NATSSettings.host(of: url), MulticastDNS.isLocalName(host) else { return url }
        let address = try MulticastDNS.resolveIPv4(host)[0]
        return NATSSettings.url(url, withHost: host, replacedBy: address)
    }

    func ok(_ s: natsStatus, _ what: String) -> Bool {
        if s == NATS_OK { return true }
        noteError("\(what): \(Self.lastError(s))")
        return false
    }

    /// One connection: options, credentials, TLS, callbacks, connect, subscriptions.
    private func build() -> Bool {
        guard let opts = baseOptions(name: settings.name) else { return false }
        defer { natsOptions_Destroy(opts) }
        // libnats reconnects to the addresses it was given: for a `*.local`
        // server it gives up after a few tries, and the manager rebuilds the
        // connection with a fresh answer (the address may have changed with
        // DHCP). Rows leave the outbox only once acknowledged, so none is lost.
        let localServer = settings.servers.contains { NATSSettings.host(of: $0).map(MulticastDNS.isLocalName) == true }
        guard ok(natsOptions_SetMaxReconnect(opts, localServer ? 3 : -1), "max reconnect"),
            ok(natsOptions_SetReconnectWait(opts, Int64(settings.reconnectWaitMilliseconds)), "reconnect wait"),
            // libnats' default jitter with TLS is up to 1 s on top of the wait.
            ok(natsOptions_SetReconnectJitter(opts, 100, 100), "reconnect jitter"),
            ok(natsOptions_SetReconnectBufSize(opts, 1 << 20), "reconnect buffer"),
            // Replies (JetStream acks) come to the door's own subjects, so its
            // user needs no `_INBOX.>` (which would let it read others' replies).
            ok(natsOptions_SetCustomInboxPrefix(opts, subjects.inbox), "inbox prefix")
        else { return false }
        if let creds = settings.credentials {
            do {
                let s = try creds.readSeed()
                seed.withLock { old in
                    if var o = old { Self.wipe(&o) }
                    old = Array(s.utf8CString)
                }
            } catch {
                noteError("credentials: \(error)")
                return false
            }
            let jwtCB: natsUserJWTHandler = { jwt, errText, closure in
                guard let link = NATSLink.from(closure) else { return NATS_ERR }
                return link.userJWT(jwt, errText)
            }
            let sigCB: natsSignatureHandler = { errText, sig, sigLen, nonce, closure in
                guard let link = NATSLink.from(closure) else { return NATS_ERR }
                return link.sign(errText, sig, sigLen, nonce)
            }
            guard ok(natsOptions_SetUserCredentialsCallbacks(opts, jwtCB, boxPointer, sigCB, boxPointer), "credentials")
            else { return false }
        }
        _ = natsOptions_SetErrorHandler(
            opts,
            { nc, _, status, closure in
                NATSLink.from(closure)?.asyncError(nc, status)
            }, boxPointer)
        // Callbacks of a connection already torn down (its close runs them late) are ignored.
        _ = natsOptions_SetDisconnectedCB(
            opts, { nc, closure in NATSLink.from(closure, current: nc)?.disconnected() }, boxPointer)
        _ = natsOptions_SetReconnectedCB(
            opts, { nc, closure in NATSLink.from(closure, current: nc)?.reconnected() }, boxPointer)
        _ = natsOptions_SetClosedCB(
            opts, { nc, closure in NATSLink.from(closure, current: nc)?.closedByLibrary() }, boxPointer)

        var nc: OpaquePointer?
        let s = natsConnection_Connect(&nc, opts)
        guard s == NATS_OK, let nc else {
            let creds = settings.credentials?.state(now: Int64(time(nil)))
            let why =
                creds.flatMap { $0.kind == .ok ? nil : " (credentials: \($0.kind.rawValue))" }
                ?? settings.login.map { " (\($0))" } ?? ""
            noteError("connect to \(settings.servers.joined(separator: ",")): \(Self.lastError(s))\(why)")
            return false
        }
        var c = Connection(nc: nc)
        for subject in [subjects.commands, subjects.credsJWT] {
            var sub: OpaquePointer?
            let rs = natsConnection_Subscribe(
                &sub, nc, subject,
                { _, _, msg, closure in
                    guard let msg else { return }
                    defer { natsMsg_Destroy(msg) }
                    NATSLink.from(closure)?.received(msg)
                }, boxPointer)
            if rs == NATS_OK, let sub {
                c.subs.append(sub)
            } else {
                noteError("subscribe \(subject): \(Self.lastError(rs))")
            }
        }
        // JetStream: the outbox's acknowledgements, and the fleet's bucket.
        if settings.jetStream || fleet != nil {
            var js: OpaquePointer?
            var jsOpts = jsOptions()
            jsOptions_Init(&jsOpts)
            // Requests (a consumer made or deleted, a bucket looked up) wait at
            // most this long, also when a teardown deletes the fleet's consumer.
            jsOpts.Wait = Int64(settings.ackTimeoutMilliseconds)
            if natsConnection_JetStream(&js, nc, &jsOpts) == NATS_OK { c.js = js }
        }
        connection.withLock { $0 = c }
        let number = shared.withLock { s -> Int in
            s.connections += 1
            return s.connections
        }
        core.update {
            $0.connected = true
            $0.lastError = nil
        }
        log.info("nats: connected to \(settings.servers.joined(separator: ",")) (connection \(number))")
        queue.update {
            $0.announce = true
            $0.fleetRewatch = true
        }
        core.committer.requestFlush()
        return true
    }

    /// Destroys the connection (the manager's, or `stop`'s, after the threads ended).
    private func teardown() {
        let c = connection.withLock { c -> Connection in
            defer { c = Connection() }
            return c
        }
        core.update { $0.connected = false }
        dropFleetWatcher()
        if let kv = c.kv { kvStore_Destroy(kv) }
        for sub in c.subs { natsSubscription_Destroy(sub) }
        if let js = c.js { jsCtx_Destroy(js) }
        if let nc = c.nc {
            natsConnection_Close(nc)
            natsConnection_Destroy(nc)
        }
    }

    // MARK: Callbacks (libnats' threads)

    private static func from(_ closure: UnsafeMutableRawPointer?) -> NATSLink? {
        guard let closure else { return nil }
        return Unmanaged<Box>.fromOpaque(closure).takeUnretainedValue().link
    }

    /// The link, if `nc` is its current connection.
    private static func from(_ closure: UnsafeMutableRawPointer?, current nc: OpaquePointer?) -> NATSLink? {
        guard let link = from(closure), let nc, link.connection.withLock({ $0.nc == nc }) else { return nil }
        return link
    }

    // MARK: Connection callbacks (libnats' threads)

    private func disconnected() {
        let was = core.update { s -> Bool in
            defer { s.connected = false }
            return s.connected
        }
        if was { log.warning("nats: disconnected; libnats reconnects every \(settings.reconnectWaitMilliseconds) ms") }
    }

    private func reconnected() {
        core.update { $0.connected = true }
        shared.withLock { $0.reconnects += 1 }
        log.info("nats: reconnected")
        queue.update {
            $0.announce = true
            // The consumer may be gone with the old socket: watch anew (the
            // bucket sends each key's newest document again).
            $0.fleetRewatch = true
        }
        core.committer.requestFlush()
    }

    private func closedByLibrary() {
        core.update { $0.connected = false }
        queue.update { $0.closed = true }
    }

    /// Asynchronous errors: permission violations (a publish or subscription
    /// outside the user's subjects), an expired JWT, slow consumer.
    private func asyncError(_ nc: OpaquePointer?, _ status: natsStatus) {
        var text: UnsafePointer<CChar>?
        if let nc { _ = natsConnection_GetLastError(nc, &text) }
        var message = text.map { String(cString: $0) } ?? ""
        // The text can already be gone; the status still names the kind.
        if message.isEmpty { message = String(cString: natsStatus_GetText(status)) }
        if message.localizedPermission {
            core.noteDenied(message, log: "the server refused: \(message); check this device's user permissions")
        } else {
            noteError("server error: \(message)")
        }
    }

    // MARK: Messages in

    private func received(_ msg: OpaquePointer) {
        let subject = String(cString: natsMsg_GetSubject(msg))
        let count = Int(natsMsg_GetDataLength(msg))
        let payload: [UInt8] =
            count > 0
            ? natsMsg_GetData(msg).withMemoryRebound(to: UInt8.self, capacity: count) {
                Array(UnsafeBufferPointer(start: $0, count: count))
            } : []
        if subject == subjects.credsJWT { return installPushed(payload) }
        guard let channel = subjects.channel(of: subject) else { return }
        core.commands?.received(RemoteMessage(channel: channel, payload: payload, retained: false))
    }

    // MARK: Publishing

    /// Not retained (core NATS keeps nothing), with the credential state.
    public func publishTelemetry(_ fields: [(String, JSONValue)], at time: Int64) {
        var all = fields
        if let creds = settings.credentials?.state(now: time) { all.append(("nats_credentials", creds.json)) }
        core.queueTelemetry(on: subjects.telemetry, retain: false, all, at: time)
    }

    /// The door state; re-sent after every (re)connect (core NATS keeps nothing).
    public func publishState(_ state: JSONValue) {
        core.kept.keep(Array(state.serialized.utf8), on: subjects.state) { publishDirect($0, $1) }
    }

    public func publishLastAccess(_ access: JSONValue) {
        core.kept.keep(Array(access.serialized.utf8), on: subjects.lastAccess) { publishDirect($0, $1) }
    }

    public func publishTagScan(uidText: String) {
        publishDirect(subjects.tag, LinkPayloads.tagScan(uidText: uidText))
    }

    public func publishReport(_ report: JSONValue) {
        publishDirect(subjects.report, Array(report.serialized.utf8))
    }

    /// Nothing: over NATS approval requests and their ends are events on
    /// `…event` (docs/nats.md), which went through the outbox.
    public func publishApproval(_ event: DoorEvent, at time: Int64, uidText: String?, label: String?) {}

    /// Handed to the committer thread: callers (the door's queue among them)
    /// never wait for the connection lock, which a flush holds across
    /// JetStream acknowledgements (seconds when the server is slow). The
    /// newest 256 are kept.
    func publishDirect(_ subject: String, _ bytes: [UInt8]) {
        guard isConnected else { return }
        queue.update { q in
            if q.direct.count >= 256 { q.direct.removeFirst() }
            q.direct.append((subject, bytes))
        }
        core.committer.wake()
    }

    private func sendNow(_ subject: String, _ bytes: [UInt8]) {
        guard isConnected else { return }
        connection.withLock { c in
            guard let nc = c.nc else { return }
            let s = natsConnection_Publish(nc, subject, bytes, Int32(bytes.count))
            if s != NATS_OK { noteError("publish \(subject): \(Self.lastError(s))") }
        }
    }

    /// One round of the committer thread: `online` and the kept documents
    /// after a (re)connect, the direct publishes, then what was queued
    /// committed (one transaction) and the waiting rows published.
    private func commitRound(_ round: OutboxCommitter.Round) {
        let (announce, direct) = queue.update { q -> (Bool, [(subject: String, bytes: [UInt8])]) in
            defer {
                q.direct = []
                q.announce = false
            }
            return (q.announce, q.direct)
        }
        if announce { announceOnline() }
        for message in direct { sendNow(message.subject, message.bytes) }
        core.commit(round)
        // Also every second while rows wait: a flush that timed out is retried.
        if round.flushRequested || !round.batch.isEmpty || isConnected { flush() }
    }

    /// The kept documents are copied out and sent after the copy: `resend`
    /// holds the documents' order lock, which the door's queue takes to keep
    /// a newer document, and `sendNow` waits for the connection lock, which a
    /// JetStream request on the fleet thread holds for seconds at a connect.
    /// A document kept meanwhile goes to `direct`, which this thread sends
    /// after these.
    private func announceOnline() {
        sendNow(subjects.availability, Array("online".utf8))
        var documents: [(topic: String, payload: [UInt8])] = []
        core.kept.resend { documents.append(($0, $1)) }
        for d in documents { sendNow(d.topic, d.payload) }
    }

    /// Publishes the waiting rows in order and deletes those acknowledged.
    func flush() {
        while isConnected {
            let rows: [OutboxRow]
            do { rows = try core.outbox.waiting(after: 0, limit: 200) } catch {
                return noteError("outbox: \(error)")
            }
            if rows.isEmpty { return }
            let acked = connection.withLock { c -> [Int64] in
                guard let nc = c.nc else { return [] }
                var acked: [Int64] = []
                var plain: [Int64] = []
                for row in rows {
                    let subject = subjects.subject(forRow: row.topic)
                    if settings.jetStream, let js = c.js {
                        var opts = jsPubOptions()
                        jsPubOptions_Init(&opts)
                        opts.MaxWait = Int64(settings.ackTimeoutMilliseconds)
                        var ack: UnsafeMutablePointer<jsPubAck>?
                        var code = jsErrCode(0)
                        let s = js_Publish(&ack, js, subject, row.payload, Int32(row.payload.count), &opts, &code)
                        if let ack { jsPubAck_Destroy(ack) }
                        if s == NATS_OK {
                            acked.append(row.seq)
                            continue
                        }
                        guard s == NATS_NO_RESPONDERS else {
                            noteError("JetStream publish \(subject): \(Self.lastError(s))")
                            break
                        }
                    }
                    guard natsConnection_Publish(nc, subject, row.payload, Int32(row.payload.count)) == NATS_OK
                    else {
                        noteError("publish \(subject): \(Self.lastError(NATS_ERR))")
                        break
                    }
                    plain.append(row.seq)
                }
                core.update { $0.published += acked.count + plain.count }
                shared.withLock { $0.jetStreamAcknowledged += acked.count }
                if !plain.isEmpty {
                    let s = natsConnection_FlushTimeout(nc, Int64(settings.ackTimeoutMilliseconds))
                    if s == NATS_OK { acked += plain } else { noteError("flush: \(Self.lastError(s)); rows retried") }
                }
                return acked
            }
            if acked.isEmpty || !core.acknowledge(acked) { return }
            if acked.count < rows.count { return }
        }
    }

    // MARK: Errors

    func noteError(_ text: String) { core.noteError(text) }

    static func lastError(_ s: natsStatus) -> String {
        var status = NATS_OK
        if let text = nats_GetLastError(&status), text.pointee != 0 { return String(cString: text) }
        return String(cString: natsStatus_GetText(s))
    }
}

extension String {
    fileprivate var localizedPermission: Bool { includes("Permissions Violation") || includes("Not Permitted") }
}

public enum NATSError: Error, CustomStringConvertible {
    case setup(String)
    /// A pushed JWT refused for a reason of the link's own (not the JWT's content).
    case refused(String)
    public var description: String {
        switch self {
        case .setup(let m): return "NATS setup: \(m)"
        case .refused(let m): return m
        }
    }
}
