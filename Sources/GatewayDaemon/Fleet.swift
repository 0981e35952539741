import Dispatch
import DoorCore
import GatewayConfig
import GatewayControl
import GatewayMQTT
import GatewayNATS
import GatewayStore
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The fleet on the daemon's side (docs/fleet.md): documents heard on the
/// fleet topics (or read from the NATS bucket) are judged by `FleetRules` (DoorCore) against the applied
/// version in the store, applied through the store in one transaction with
/// their audit row, or refused and audited. One serial queue: documents
/// apply in the order they arrive, one at a time.
final class FleetReceiver: FleetDocumentHandler, Sendable {
    let settings: GatewayConfiguration.Fleet
    let store: GatewayStore
    /// The actions configured now (a reload may add one: the next document's
    /// tags for it are then taken).
    let actions: @Sendable () -> Set<ActionIndex>
    let log: Logger
    /// Where this door publishes (its own retained topic, or its key in the
    /// NATS bucket) and what it reads.
    let publishTopic: String
    let subscription: String
    let queue = DispatchQueue(label: "gatewayd.fleet")
    /// The site box private key (opens documents' secrets), when configured and readable.
    let boxPrivateKey: [UInt8]?

    private struct Seen {
        /// Digests of refused payloads already audited by this process: a
        /// stale retained document heard at every reconnect is audited once.
        var refused: Set<[UInt8]> = []
        var lastRefusal: (time: Int64, reason: String, detail: String, topic: String)?
        /// A document the store has not taken yet (a storage failure: retried),
        /// until a document applies.
        var notApplied: (time: Int64, version: Int64, attempts: Int, why: String, topic: String, retrying: Bool)?
    }
    /// Retries of a document the store did not take (every `retryDelay`).
    static let retries = 60
    static let retryDelay = 5
    private let seen = Mutex(Seen())
    /// Writes this door's own topic (or key) with the given envelope (security
    /// review L2, docs/security.md): set by `attachFleet` before the link
    /// starts; false when not connected.
    var republish: (@Sendable ([UInt8]) -> Bool)? {
        get { republishHook.withLock { $0 } }
        set { republishHook.withLock { $0 = newValue } }
    }
    private let republishHook = Mutex<(@Sendable ([UInt8]) -> Bool)?>(nil)
    /// Where a signed site command heard on the fleet's topics goes (SiteLockdown.swift).
    var siteCommands: SiteCommands? {
        get { siteCommandsHook.withLock { $0 } }
        set { siteCommandsHook.withLock { $0 = newValue } }
    }
    private let siteCommandsHook = Mutex<SiteCommands?>(nil)
    /// The newest applied envelope still has to reach this door's own topic
    /// (at start: it may have been applied before doors carried it, and an
    /// empty topic is never heard; later: applied while the publish failed).
    /// On the fleet queue only.
    private var republishPending: Bool {
        get { pending.withLock { $0 } }
        set { pending.withLock { $0 = newValue } }
    }
    private let pending = Mutex(true)

    init(
        settings: GatewayConfiguration.Fleet, publishTopic: String, subscription: String, store: GatewayStore,
        actions: @escaping @Sendable () -> Set<ActionIndex>, log: Logger
    ) {
        self.settings = settings
        self.store = store
        self.actions = actions
        self.log = log
        self.publishTopic = publishTopic
        self.subscription = subscription
        if let file = settings.boxKeyFile {
            do {
                boxPrivateKey = try SiteKeyFile.read(file)
            } catch {
                log.error("fleet: \(error); the secrets of documents are not read")
                boxPrivateKey = nil
            }
        } else {
            boxPrivateKey = nil
        }
    }

    /// The parent of the door's prefix, any door, its fleet topic:
    /// `doorgateway/front-door` → `doorgateway/+/fleet/<site>`.
    static func defaultSubscription(prefix: String, site: String) -> String {
        guard let slash = prefix.lastIndex(of: "/") else { return "+/fleet/" + site }
        return String(prefix[..<slash]) + "/+/fleet/" + site
    }

    func received(fleetDocument payload: [UInt8], topic source: String, retained: Bool) {
        queue.async { [self] in _ = handle(payload, source: source) }
    }

    /// Judges and applies one document; on the fleet queue.
    @discardableResult
    func handle(_ payload: [UInt8], source: String, attempt: Int = 1) -> FleetRules.Verdict {
        // Security review L2: this door's own topic holds the newest document it
        // applied, whatever the publisher's topic now says (its account may
        // put an older signed copy back there): put back when it holds
        // anything else, and written when pending (heard after a reconnect).
        defer {
            if source == publishTopic {
                keepOwnCopy(heard: payload)
            } else if republishPending {
                republishKept()
            }
        }
        // An empty retained message clears a topic: nothing to judge.
        guard !payload.isEmpty else { return .alreadyApplied }
        // A site command is judged as one, never as a document (SiteCommand.swift).
        if SiteCommand.isEnvelope(payload) {
            siteCommands?.received(payload, source: source)
            return .alreadyApplied
        }
        let now = Int64(time(nil))
        let applied: FleetAppliedRecord?
        do { applied = try store.fleetApplied() } catch {
            log.error("fleet: cannot read the applied version (\(error)); document from \(source) not applied")
            return .refuse(.malformed("store unreadable"))
        }
        let verdict = FleetRules.judge(
            payload, sitePublicKey: settings.sitePublicKey, siteID: settings.siteID,
            applied: applied.map(\.rules))
        switch verdict {
        case .apply(let accepted):
            let doc = accepted.document
            var secrets: FleetSecrets?
            var note: String?
            if doc.sealedSecrets != nil {
                if let boxPrivateKey {
                    do { secrets = try FleetSecrets.open(doc, boxPrivateKey: boxPrivateKey) } catch {
                        note = error.description
                    }
                } else {
                    note = "no site box key here ([fleet] box_key_file)"
                }
            }
            do {
                let changes = try store.applyFleet(
                    accepted, actions: actions(), secrets: secrets, secretsNote: note, now: now)
                seen.withLock { $0.notApplied = nil }
                log.notice(
                    "fleet: applied site \(doc.site) version \(doc.version) from \(doc.origin): \(changes.summary)")
                logNotCarried(changes.notCarried, version: doc.version)
                // Another door's document: carried on this door's topic too, so an
                // older copy put back on the publisher's cannot win anywhere.
                if source != publishTopic && source != Self.controlSource { republishPending = true }
            } catch FleetStoreError.superseded(let v, let a) {
                seen.withLock { if $0.notApplied?.version == doc.version { $0.notApplied = nil } }
                refuse(.stale(version: v, applied: a), payload: payload, source: source, now: now)
            } catch let error as SQLiteError where Self.isTheDocuments(error) {
                // The same document breaks the same constraint every time: refused
                // (audited once, `last_refused`), not retried in silence; a
                // storage failure noted for it before is over.
                seen.withLock { if $0.notApplied?.version == doc.version { $0.notApplied = nil } }
                refuse(
                    .notStorable(version: doc.version, why: error.description), payload: payload, source: source,
                    now: now)
            } catch {
                // The store did not take it (full disk, I/O): nothing was written; try again
                // (the retained copy also comes back at the next reconnect or `fleet pull`).
                let retrying = attempt < Self.retries
                seen.withLock {
                    $0.notApplied = (now, doc.version, attempt, "\(error)", source, retrying)
                }
                let then =
                    retrying ? "" : "; not retried again until the document is heard again (reconnect, `fleet pull`)"
                log.error("fleet: version \(doc.version) not applied (attempt \(attempt)): \(error)\(then)")
                if retrying {
                    queue.asyncAfter(deadline: .now() + .seconds(Self.retryDelay)) { [self] in
                        _ = handle(payload, source: source, attempt: attempt + 1)
                    }
                }
            }
        case .alreadyApplied:
            break
        case .refuse(let error):
            refuse(error, payload: payload, source: source, now: now)
        }
        return verdict
    }

    static let controlSource = "control socket"

    /// Whether the store refused a document for a reason of the document's
    /// own, which retrying does not change: a constraint it breaks (or a
    /// value too big, of the wrong type). Anything else — full disk, I/O,
    /// busy, read-only, a damaged store — is the store's: retried.
    static func isTheDocuments(_ error: SQLiteError) -> Bool {
        // SQLITE_TOOBIG 18, SQLITE_CONSTRAINT 19, SQLITE_MISMATCH 20.
        [18, 19, 20].contains(error.code)
    }

    /// One line per entry of a kind the fleet does not carry (at most 32,
    /// then a count): the credential's name and the UID, no key material.
    private func logNotCarried(_ entries: [FleetDocument.Tag], version: Int64) {
        let carried = FleetDocument.Tag.carriedCredentials.sorted().joined(separator: ", ")
        for tag in entries.prefix(FleetAudit.skippedRowsPerDocument) {
            let name = tag.credential ?? "-"
            log.warning(
                "fleet: version \(version): entry \(tag.uid.hex) (credential \(name)) skipped: not a kind the fleet carries (\(carried)); nothing stored for it"
            )
        }
        if entries.count > FleetAudit.skippedRowsPerDocument {
            log.warning(
                "fleet: version \(version): and \(entries.count - FleetAudit.skippedRowsPerDocument) more entries skipped"
            )
        }
    }

    /// The applied document's entries this door did not store (a kind the
    /// fleet does not carry), from the kept envelope (verified when applied).
    private func skippedEntries(_ applied: FleetAppliedRecord?) -> [FleetDocument.Tag] {
        guard let envelope = applied?.document,
            let body = try? FleetDocument.openEnvelope(envelope).body,
            let document = try? FleetDocument.parseBody(body)
        else { return [] }
        var seen = Set<TagUID>()
        return document.tags.filter { seen.insert($0.uid).inserted && !$0.isCarried }
    }

    /// The applied envelope, when it still verifies with the site key (one
    /// kept from before a key rotation is not carried on).
    private func keptEnvelope() -> [UInt8]? {
        guard let kept = try? store.fleetApplied()?.document else { return nil }
        guard
            case .apply = FleetRules.judge(
                kept, sitePublicKey: settings.sitePublicKey, siteID: settings.siteID, applied: nil)
        else { return nil }
        return kept
    }

    /// This door's topic (or key) was heard with `payload`: anything other
    /// than the kept envelope is replaced with it.
    private func keepOwnCopy(heard payload: [UInt8]) {
        guard let kept = keptEnvelope(), kept != payload else {
            republishPending = false
            return
        }
        republishKept(kept)
    }

    /// Publishes the kept envelope on this door's topic; pending again when
    /// not connected (the next document heard, at the latest the retained
    /// ones after a reconnect, tries again).
    private func republishKept(_ envelope: [UInt8]? = nil) {
        guard let republish, let kept = envelope ?? keptEnvelope() else {
            republishPending = false
            return
        }
        republishPending = !republish(kept)
        if !republishPending {
            log.info("fleet: carried the applied document on \(publishTopic)")
        }
    }

    private func refuse(_ error: FleetError, payload: [UInt8], source: String, now: Int64) {
        let first = seen.withLock { s -> Bool in
            s.lastRefusal = (now, error.reason, error.description, source)
            // Bounded: a flood of distinct garbage must not grow memory.
            if s.refused.count >= 1024 { s.refused.removeAll() }
            return s.refused.insert(Crypto.sha256(payload)).inserted
        }
        guard first else { return }
        log.warning("fleet: refused the document on \(source): \(error)")
        do { try store.recordFleetRefusal(error, source: source, now: now) } catch {
            log.error("fleet: cannot audit a refused document: \(error)")
        }
    }

    /// How many skipped entries `fleet status` lists (the total beside them).
    static let listedSkippedEntries = 20

    func status(connected: Bool) throws -> JSONValue {
        let applied = try store.fleetApplied().flatMap { $0.site == settings.siteID ? $0 : nil }
        var refused: JSONValue = .null
        if let last = seen.withLock({ $0.lastRefusal }) {
            refused = .object([
                ("time", .string(UTCTime.iso8601(last.time))), ("reason", .string(last.reason)),
                ("why", .string(last.detail)), ("topic", .string(last.topic)),
            ])
        } else if let row = try store.newestAudit(kinds: [FleetAudit.refused], limit: 1).first {
            refused = .object([
                ("time", .string(UTCTime.iso8601(row.time))), ("reason", .optional(row.reason)),
                ("why", .optional(row.detail)), ("topic", .optional(row.source)),
            ])
        }
        let skipped = skippedEntries(applied)
        var notApplied: JSONValue = .null
        if let n = seen.withLock({ $0.notApplied }) {
            notApplied = .object([
                ("version", .int(n.version)), ("attempts", .int(n.attempts)), ("retrying", .bool(n.retrying)),
                ("time", .string(UTCTime.iso8601(n.time))), ("why", .string(n.why)), ("topic", .string(n.topic)),
            ])
        }
        return .object([
            ("site", .string(settings.siteID)),
            ("site_public_key", .string(Hex.encode(settings.sitePublicKey))),
            ("applied_version", applied.map { .int($0.version) } ?? .null),
            ("origin", .optional(applied?.origin)),
            ("applied_at", applied.map { .string(UTCTime.iso8601($0.applied)) } ?? .null),
            // The applied document's entries of a kind the fleet does not carry: not stored here.
            (
                "skipped_entries",
                .array(
                    skipped.prefix(Self.listedSkippedEntries).map { tag in
                        .object([
                            ("uid", .string(tag.uid.hex)), ("credential", .optional(tag.credential)),
                            ("action", .int(tag.action)), ("why", .string("credential not carried by the fleet")),
                        ])
                    })
            ),
            ("skipped_entries_total", .int(skipped.count)),
            ("not_applied", notApplied),
            ("last_refused", refused),
            ("publish", .string(publishTopic)), ("subscribe", .string(subscription)),
            ("broker_connected", .bool(connected)), ("site_box_key", .bool(boxPrivateKey != nil)),
        ])
    }
}

extension RemoteService {
    /// The fleet receiver, for the transport to hand documents to (`makeFleet`
    /// in RemoteMQTT.swift, RemoteNATS.swift); the transport sends its own back.
    func makeFleetReceiver(publish: String, subscription: String) -> FleetReceiver {
        let receiver = FleetReceiver(
            settings: configuration.fleet, publishTopic: publish, subscription: subscription, store: store,
            actions: { [live] in Set(live.current.door.actions.map(\.index)) }, log: log)
        receiver.siteCommands = makeSiteCommands(ownTopic: publish)
        fleetReceiver = receiver
        log.info("fleet: site \(configuration.fleet.siteID), reading \(subscription)")
        return receiver
    }
}

extension ControlService {
    /// `gatewayctl fleet status|push|pull`. The daemon is not asked what to
    /// sign (docs/security.md "H2"): `push` makes the document in gatewayctl
    /// from the store and hands the daemon only the signed document, which
    /// it judges as any door would and publishes.
    func answerFleet(_ method: ControlMethod, _ p: [String: JSONValue]) throws -> JSONValue {
        guard let receiver = remote.fleetReceiver, let link = remote.transport else {
            throw DaemonError.request(
                configuration.fleet.enabled
                    ? "the fleet needs the remote transport (\(configuration.remote.transport.rawValue)), "
                        + "which did not start (see the log)"
                    : "the fleet is off ([fleet] enabled = false)")
        }
        switch method {
        case .fleetPublish:
            guard let document = Base64URL.decode(try p.string("document")) else {
                throw DaemonError.request("document: base64url expected")
            }
            // Judged as any door will judge it, before it reaches the broker.
            let applied = try store.fleetApplied()
            let verdict = FleetRules.judge(
                document, sitePublicKey: configuration.fleet.sitePublicKey, siteID: configuration.fleet.siteID,
                applied: applied.map(\.rules))
            guard case .apply(let accepted) = verdict else {
                if case .refuse(let e) = verdict { throw DaemonError.request("not published: \(e)") }
                throw DaemonError.request("not published: this version is already applied")
            }
            guard link.publishFleet(document) else {
                throw DaemonError.request("not published: not connected to the broker (or it refused; see the log)")
            }
            // Applied here at once; its copy from the broker is then "already applied".
            receiver.queue.sync { _ = receiver.handle(document, source: FleetReceiver.controlSource) }
            return .object([
                ("published", .string(receiver.publishTopic)), ("version", .int(accepted.document.version)),
                ("site", .string(accepted.document.site)),
            ])
        case .fleetPull:
            guard link.refreshFleet() else {
                throw DaemonError.request("not connected to the broker")
            }
            return .object([("requested", .string(receiver.subscription))])
        default:
            return try receiver.queue.sync { try receiver.status(connected: link.isConnected) }
        }
    }
}
