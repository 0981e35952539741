/// Where a tap is decided (issue 34 Move A): one pure function from what the
/// reader established (`TapFacts`) and what the door knows — the registry
/// (read through `TagRegistryView`), the secrets (`TapSecrets`), the clock
/// floor's expiry time and the schedules (`TapPolicy`) — to the verdict the
/// door machine acts on, with the store actions that verdict still needs
/// (`StoreNeeds`: accept a SUN counter, take a guest pass's use, touch
/// `last_seen`). The machine asks the store for them (`DoorEffect.store`) and
/// finishes the tap with the answers (`DoorInput.storeAnswered`); nothing
/// here writes, and the registry reads fail closed (`registry_unavailable`).
///
/// The rules, per credential (docs/design.md "blank / ours / foreign",
/// docs/formats.md §1/§4, docs/ntag424.md, docs/policy.md):
/// - no NDEF, or NDEF that is not ours: an enrolled `uid` fob (`fob`), else
///   `blank` / `not_ours` (a SUN URL on a tag that is not a 424: `sun_copy`);
/// - a sticker (`sticker`): its signature verdict, then revocation, expiry,
///   for v2 an active row, the action's credentials, the schedules;
/// - an NTAG 424 DNA (`ntag424`): an active `ntag424` row, the chip's proof
///   (or the SUN-only tier), the SUN, the schedules; the counter last.
public enum TapDecision {
    /// Decides one tap. `now` is the time expiry is judged at (the clock
    /// floor's `expiryTime`); `policy` nil decides signatures and the
    /// registry only (the fuzz target, old callers).
    public static func decide(
        _ facts: TapFacts, secrets: TapSecrets, actionCount: Int, registry: some TagRegistryView, now: Int64,
        policy: TapPolicy?
    ) -> Outcome {
        var outcome = decideCredential(
            facts, secrets: secrets, actionCount: actionCount, registry: registry, now: now, policy: policy)
        outcome.presentation = Passback.apply(outcome.presentation, passage: facts.passage, policy: policy, now: now)
        outcome.presentation.reader = facts.reader
        // A card read and a keypad code are one event each, never "present" on a reader.
        outcome.presentation.cardRead = facts.card != nil || facts.pinCode != nil
        return outcome
    }

    static func decideCredential(
        _ facts: TapFacts, secrets: TapSecrets, actionCount: Int, registry: some TagRegistryView, now: Int64,
        policy: TapPolicy?
    ) -> Outcome {
        if let code = facts.pinCode {
            return Outcome(presentation: pinCode(code, registry: registry, now: now, policy: policy), sticker: nil)
        }
        if let read = facts.card {
            return Outcome(presentation: card(read, registry: registry, now: now, policy: policy), sticker: nil)
        }
        if let proof = facts.ntag424 {
            guard let policy else {
                return Outcome(presentation: deny(facts.uid, .unknownAction), sticker: nil)
            }
            return Outcome(
                presentation: ntag424(
                    uid: facts.uid, uri: facts.uri, proof: proof, siteKey: secrets.siteKey, registry: registry,
                    now: now, policy: policy),
                sticker: nil)
        }
        return tag(
            facts.uid, message: facts.message, secrets: secrets.stickers, actionCount: actionCount,
            registry: registry, now: now, policy: policy)
    }

    /// A decision: the presentation the machine is given (its `needs` set),
    /// and the sticker verdict when the tag carries a sticker in our format.
    public struct Outcome: Equatable, Sendable {
        public var presentation: TagPresentation
        public var sticker: StickerVerdict?
        public init(presentation: TagPresentation, sticker: StickerVerdict?) {
            self.presentation = presentation
            self.sticker = sticker
        }
    }

    static func deny(_ uid: TagUID, _ why: Denial, content: TagPresentation.Content = .ours) -> TagPresentation {
        TagPresentation(uid: uid, content: content, verdict: why.verdict)
    }

    /// A grant of ours, with what it still needs from the store: a guest
    /// pass's use (its row has `uses_left`), else `last_seen`; a 424's counter.
    static func grant(
        _ uid: TagUID, action: ActionIndex, reason: String, row: IssuedTagView?, counter: UInt32? = nil
    ) -> TagPresentation {
        let guest = row?.usesLeft != nil
        return TagPresentation(
            uid: uid, content: .ours, verdict: .grant(action: action, reason: reason),
            needs: StoreNeeds(sunCounter: counter, guestPass: guest, touchLastSeen: !guest))
    }

    // MARK: NTAG21x and other Type 2 tags: stickers, fobs

    static func tag(
        _ uid: TagUID, message: NDEFMessage?, secrets: [StickerSecret], actionCount: Int,
        registry: some TagRegistryView, now: Int64, policy: TapPolicy?
    ) -> Outcome {
        guard let message, !message.isEmpty else {
            if let fob = fob(uid: uid, registry: registry, now: now, policy: policy) {
                return Outcome(presentation: fob, sticker: nil)
            }
            return Outcome(presentation: deny(uid, .blank, content: .blank), sticker: nil)
        }
        let uri = message.records.lazy.compactMap { try? $0.uri() }.first
        guard let uri, uri.hasPrefix(StickerURL.prefix) else {
            // A SUN URL on a tag that did not activate as an NTAG 424 DNA: a
            // copy of a 424's NDEF (the SUN proves nothing without the chip's
            // key, docs/ntag424.md).
            if let uri, (try? SUNURL.parse(uri)) != nil {
                return Outcome(presentation: deny(uid, .sunCopy, content: .foreign), sticker: nil)
            }
            if let fob = fob(uid: uid, registry: registry, now: now, policy: policy) {
                return Outcome(presentation: fob, sticker: nil)
            }
            return Outcome(presentation: deny(uid, .notOurs, content: .foreign), sticker: nil)
        }
        let verdict = StickerJudge.judge(uri, uid: uid, secrets: secrets, actionCount: actionCount)
        return Outcome(
            presentation: sticker(uid, verdict, registry: registry, now: now, policy: policy), sticker: verdict)
    }

    /// A sticker in our format (docs/formats.md §4) and the registry's rules on
    /// top: a v2 sticker needs its UID active here; revocation by UID and (v1)
    /// by signature; expiry; the action's credentials; the schedules.
    static func sticker(
        _ uid: TagUID, _ verdict: StickerVerdict, registry: some TagRegistryView, now: Int64, policy: TapPolicy?
    ) -> TagPresentation {
        guard verdict.isValid, let url = verdict.url else { return deny(uid, .sticker(verdict.reason)) }
        let row: IssuedTagView?
        do {
            if try registry.isRevoked(uid: uid, signature: url.version == .v1 ? url.signature : nil) {
                return deny(uid, .revoked)
            }
            row = try registry.issuedTag(uid)
        } catch {
            return deny(uid, .registryUnavailable)
        }
        if let why = RegistryRules.sticker(row: row, version: url.version, now: now) { return deny(uid, why) }
        // Schedules, a guest pass's start and uses: an authentic sticker at
        // the wrong time is not an attack, so these do not count toward lockout.
        if let policy {
            let kind: CredentialKind = url.version == .v2 ? .stickerV2 : .stickerV1
            let definition = policy.actions.first { $0.index == url.action }
            if let why = RegistryRules.action(definition, kind: kind, row: row, policy: policy) {
                return deny(uid, why)
            }
        }
        return grant(uid, action: ActionIndex(url.action), reason: verdict.reason.rawValue, row: row)
    }

    /// A plain key fob or card (`"uid"` credentials, docs/ntag424.md): it opens
    /// on its UID alone — trivially cloned — so only an action that lists
    /// `"uid"`, and only when the registry holds the UID as an active `uid`
    /// tag; granted `weak_credential`. nil when the UID is not enrolled as a
    /// fob (the caller's verdict stands).
    static func fob(uid: TagUID, registry: some TagRegistryView, now: Int64, policy: TapPolicy?) -> TagPresentation? {
        let row: IssuedTagView
        do {
            guard let r = try registry.issuedTag(uid), r.kind == .uid else { return nil }
            row = r
            if try registry.isRevoked(uid: uid, signature: nil) { return deny(uid, .revoked) }
        } catch {
            return deny(uid, .registryUnavailable)
        }
        if let why = RegistryRules.enrolled(row: row, now: now) { return deny(uid, why) }
        guard let policy, let action = row.action,
            let definition = policy.actions.first(where: { $0.index == action })
        else { return deny(uid, .unknownAction) }
        if let why = RegistryRules.action(definition, kind: .uid, row: row, policy: policy) { return deny(uid, why) }
        return grant(uid, action: action, reason: GrantReason.weakCredential, row: row)
    }

    // MARK: Card numbers from outdoor readers

    /// A card number an outdoor reader read (issue 35, `CardRead`): it opens
    /// only as an enrolled `wiegand` row (`gatewayctl tags enroll-card`),
    /// active, not revoked, not expired, for an action that lists a kind the
    /// read's line gives — `osdp` (Secure Channel; granted `osdp_secure_channel`)
    /// or `wiegand` (any reader; granted `weak_credential`) — within its
    /// schedules. A number nobody enrolled is `unknown_tag` (counted toward
    /// that number's lockout, not the door's: anyone can hold up any card).
    static func card(_ read: CardRead, registry: some TagRegistryView, now: Int64, policy: TapPolicy?)
        -> TagPresentation
    {
        let uid = read.number.registryKey
        let found = enrolledRow(
            uid, kind: .wiegand, missing: deny(uid, .unknownTag, content: .foreign), registry: registry, now: now,
            policy: policy)
        guard case .found(let row, let action, let definition, let policy) = found else { return found.denial }
        // "card+pin" is the stricter rule and wins: an action that lists it
        // opens for no card alone, whatever else it lists (review finding:
        // with "wiegand" beside it, a cloned card opened without its PIN).
        let needsPIN = definition.credentials.contains(.cardPIN)
        let kind = needsPIN ? nil : read.acceptedBy.first(where: definition.credentials.contains)
        guard kind != nil || needsPIN else {
            return deny(uid, .credentialNotAllowed)
        }
        if let why = RegistryRules.schedule(definition, row: row, policy: policy) { return deny(uid, why) }
        guard let kind else {
            // "card+pin": granted once its PIN is typed on this reader (`KeypadDesk`). Read over a
            // line that cannot be secured (Wiegand, OSDP without Secure Channel) card and PIN both
            // crossed it in clear: weak, audited `weak_credential` as the card alone is there.
            let reason = read.link == .osdpSecure ? GrantReason.cardPIN : GrantReason.weakCredential
            var held = grant(uid, action: action, reason: reason, row: row)
            held.pinRequired = true
            return held
        }
        let reason = kind == .osdp ? GrantReason.osdpSecureChannel : GrantReason.weakCredential
        return grant(uid, action: action, reason: reason, row: row)
    }

    /// A card's or a PIN-only code's row, its action and the policy, or the denial.
    enum EnrolledRow {
        case found(IssuedTagView, ActionIndex, ActionDefinition, TapPolicy)
        case denied(TagPresentation)
        var denial: TagPresentation {
            guard case .denied(let p) = self else { preconditionFailure("not a denial") }
            return p
        }
    }

    /// The registry's steps a card and a PIN-only code share: not revoked,
    /// a row of `kind` (else `missing`), enrolled now, for an action the
    /// policy has; a store that cannot be read denies `registry_unavailable`.
    static func enrolledRow(
        _ uid: TagUID, kind: CredentialKind, missing: @autoclosure () -> TagPresentation,
        registry: some TagRegistryView, now: Int64, policy: TapPolicy?
    ) -> EnrolledRow {
        let row: IssuedTagView
        do {
            if try registry.isRevoked(uid: uid, signature: nil) { return .denied(deny(uid, .revoked)) }
            guard let r = try registry.issuedTag(uid), r.kind == kind else { return .denied(missing()) }
            row = r
        } catch {
            return .denied(deny(uid, .registryUnavailable))
        }
        if let why = RegistryRules.enrolled(row: row, now: now) { return .denied(deny(uid, why)) }
        guard let policy, let action = row.action,
            let definition = policy.actions.first(where: { $0.index == action })
        else { return .denied(deny(uid, .unknownAction)) }
        return .found(row, action, definition, policy)
    }

    /// A PIN-only code a keypad entry matched (`KeypadDesk`, issue 35): its
    /// `pin` row active, not revoked, not expired, for an action that lists
    /// `"pin"` — a duress code also where it lists `"card+pin"` — within its
    /// schedules and its uses (a guest's code). Granted `pin` (a duress code
    /// too: the reader and the event show nothing different).
    static func pinCode(_ code: PINCodeMatch, registry: some TagRegistryView, now: Int64, policy: TapPolicy?)
        -> TagPresentation
    {
        let uid = code.key
        let found = enrolledRow(
            uid, kind: .pin, missing: deny(uid, .wrongPIN), registry: registry, now: now, policy: policy)
        guard case .found(let row, let action, let definition, let policy) = found else { return found.denial }
        guard
            definition.credentials.contains(.pin) || (code.duress && definition.credentials.contains(.cardPIN))
        else { return deny(uid, .credentialNotAllowed) }
        if let why = RegistryRules.schedule(definition, row: row, policy: policy) { return deny(uid, why) }
        return grant(uid, action: action, reason: GrantReason.pin, row: row)
    }

    // MARK: NTAG 424 DNA

    /// An NTAG 424 DNA tap (issue 26, docs/ntag424.md): the registry must hold
    /// the UID as an active `ntag424` tag, the tag must have proved the key
    /// diversified for it from the site master key (AuthenticateEV2First)
    /// with GetCardUID naming the same UID, its action must list `"ntag424"`,
    /// and where the NDEF carries a SUN URL it must verify with the door's
    /// keys; its read counter (`needs.sunCounter`) must then be strictly above
    /// the last one accepted for that UID — the store's answer, asked for only
    /// for a tap that is granted otherwise.
    ///
    /// The SUN-only tier (`"ntag424-sun"`, docs/ntag424.md "The SUN-only
    /// tier"): an action that lists it also opens for a tap that did not
    /// prove the key — EV2 skipped (`wantsEV2`) or failed — when its SUN URL
    /// verifies, names the anticollision UID and carries a fresh counter;
    /// granted `valid_sun_only` (pre-play opens too). A tap that proved the
    /// key is granted `ntag424` wherever it opens.
    static func ntag424(
        uid: TagUID, uri: String?, proof: TapFacts.NTAG424Proof, siteKey: TapSecrets.SiteKey,
        registry: some TagRegistryView, now: Int64, policy: TapPolicy
    ) -> TagPresentation {
        // The site key could not be read: fail closed (before anything else, as the door always has).
        if case .unreadable = siteKey { return deny(uid, .registryUnavailable) }
        // A torn tap is no attempt at anything: denied, not counted.
        if proof == .torn { return deny(uid, .tagLost) }
        let row: IssuedTagView
        do {
            if try registry.isRevoked(uid: uid, signature: nil) { return deny(uid, .revoked) }
            guard let r = try registry.issuedTag(uid) else { return deny(uid, .unknownTag) }
            row = r
        } catch {
            return deny(uid, .registryUnavailable)
        }
        // A 424 enrolled as a plain fob is judged as one (weak, opt-in).
        if row.kind == .uid {
            return fob(uid: uid, registry: registry, now: now, policy: policy) ?? deny(uid, .unknownTag)
        }
        guard row.kind == .ntag424 else { return deny(uid, .unknownTag) }
        if let why = RegistryRules.enrolled(row: row, now: now) { return deny(uid, why) }
        let definition = row.action.flatMap { action in policy.actions.first { $0.index == action } }
        let byKey = definition?.credentials.contains(.ntag424) ?? false
        let bySUN = definition?.credentials.contains(.ntag424SUN) ?? false
        let sunURL = uri.flatMap { try? SUNURL.parse($0) }
        let proved: Bool
        switch proof {
        case .authenticated(let cardUID):
            guard cardUID == uid.bytes else { return deny(uid, .uidMismatch) }
            proved = true
        case .notTried, .refused, .torn:
            // Without the chip's proof only the SUN-only tier can open, and only on a SUN.
            guard bySUN, sunURL != nil else { return deny(uid, .authFailed) }
            proved = false
        }
        guard let action = row.action, let definition else { return deny(uid, .unknownAction) }
        guard byKey || bySUN else { return deny(uid, .credentialNotAllowed) }
        // The SUN, where the NDEF carries one (always, on the SUN-only tier).
        var counter: UInt32?
        if let sun = sunURL {
            guard case .key(let siteKey) = siteKey else { return deny(uid, .authFailed) }
            do {
                let keys = try NTAG424.DoorKeys(masterKey: siteKey, uid: uid.bytes, issue: row.keyIssue ?? .legacy)
                let verdict = try sun.verify(
                    metaReadKey: keys[NTAG424.DoorKeys.metaRead], fileReadKey: keys[NTAG424.DoorKeys.fileRead])
                guard verdict.macOK, let c = verdict.piccData.counter, let piccUID = verdict.piccData.uid else {
                    return deny(uid, .sunInvalid)
                }
                guard piccUID == uid.bytes else { return deny(uid, .uidMismatch) }
                counter = c
            } catch {
                return deny(uid, .sunInvalid)
            }
        }
        // Schedules, a guest pass's start and uses: not an attack.
        if let why = RegistryRules.schedule(definition, row: row, policy: policy) { return deny(uid, why) }
        return grant(
            uid, action: action, reason: proved ? GrantReason.ntag424 : GrantReason.validSUNOnly, row: row,
            counter: counter)
    }

    /// Whether the door runs AuthenticateEV2First on this UID's tap. Not when
    /// the registry holds it as an `ntag424` tag whose action lists
    /// `"ntag424-sun"` and not `"ntag424"`: that action opens on the SUN alone,
    /// so the tap skips the EV2 round trip. Any doubt (no such row, an
    /// unreadable registry, an unknown action) answers true.
    public static func wantsEV2(_ row: IssuedTagView?, actions: [ActionDefinition]) -> Bool {
        guard let row, row.kind == .ntag424, let action = row.action,
            let definition = actions.first(where: { $0.index == action })
        else { return true }
        return definition.credentials.contains(.ntag424) || !definition.credentials.contains(.ntag424SUN)
    }

    /// The key issue a tap of `uid` authenticates key 0 with, or nil when it
    /// skips EV2 (`wantsEV2`): the registry row's issue, the legacy one for a
    /// row without a salt or no row at all (such a tap is denied either way).
    /// One registry read (this runs on the reader thread before EV2).
    public static func ev2Issue(uid: TagUID, registry: some TagRegistryView, actions: [ActionDefinition])
        -> NTAG424.KeyIssue?
    {
        let row = try? registry.issuedTag(uid)
        guard wantsEV2(row, actions: actions) else { return nil }
        guard let row, row.kind == .ntag424 else { return .legacy }
        return row.keyIssue ?? .legacy
    }
}

extension TapDecision {
    /// A tag as `explain` is asked about it: its registry row (nil: none),
    /// whether its UID is revoked, and until when (Unix seconds) the door
    /// holds it — or every tag — locked out (nil: not locked out).
    public struct ExplainedTag: Equatable, Sendable {
        public var row: IssuedTagView?
        public var revoked: Bool
        public var lockedOutUntil: Int64?
        public init(row: IssuedTagView?, revoked: Bool = false, lockedOutUntil: Int64? = nil) {
            self.row = row
            self.revoked = revoked
            self.lockedOutUntil = lockedOutUntil
        }
    }

    /// What the door decides for an authentic credential tapped for `action`
    /// at `policy.wall` (`gatewayctl policy explain`, PolicyExplain): nil when
    /// it opens. The same rules as a tap, in the order the door applies them
    /// for the credential's kind — the row's kind; a row without one, or no
    /// row at all, a v2 sticker — with the store's last word on a guest pass
    /// (`no_uses_left`) and the machine's lockout. Without a tag, the action's
    /// schedules alone.
    public static func explain(action: ActionDefinition, tag: ExplainedTag?, policy: TapPolicy) -> Denial? {
        let now = policy.wall.unixSeconds
        guard let tag else { return RegistryRules.schedule(action, row: nil, policy: policy) }
        if let until = tag.lockedOutUntil, now < until { return .lockedOut }
        if tag.revoked { return .revoked }
        if let row = tag.row, [.uid, .ntag424, .wiegand, .pin].contains(row.kind) {
            if let why = RegistryRules.enrolled(row: row, now: now) { return why }
            if row.kind == .uid { return RegistryRules.action(action, kind: .uid, row: row, policy: policy) }
            if row.kind == .pin { return RegistryRules.action(action, kind: .pin, row: row, policy: policy) }
            // A card number opens on any kind its action lists (which one depends on the reader, and its PIN).
            if row.kind == .wiegand {
                guard !action.credentials.isDisjoint(with: [.wiegand, .osdp, .cardPIN]) else {
                    return .credentialNotAllowed
                }
                return RegistryRules.schedule(action, row: row, policy: policy)
            }
            // A 424 opens on either tier its action lists.
            guard action.credentials.contains(.ntag424) || action.credentials.contains(.ntag424SUN) else {
                return .credentialNotAllowed
            }
            return RegistryRules.schedule(action, row: row, policy: policy)
        }
        let version: StickerVersion = tag.row?.kind == .stickerV1 ? .v1 : .v2
        if let why = RegistryRules.sticker(row: tag.row, version: version, now: now) { return why }
        return RegistryRules.action(
            action, kind: version == .v1 ? .stickerV1 : .stickerV2, row: tag.row, policy: policy)
    }
}

/// The registry's and the policy's rules, each once: the tap decision and
/// `gatewayctl policy explain` (PolicyExplain) both call them.
public enum RegistryRules {
    /// A sticker's row (nil: none): expiry first (a v1 sticker needs no row),
    /// then, for v2, a row that is active.
    public static func sticker(row: IssuedTagView?, version: StickerVersion, now: Int64) -> Denial? {
        if let until = row?.validUntil, now > until { return .expired }
        guard version == .v2 else { return nil }
        guard let row else { return .notIssued }
        guard row.state == .active else { return .tagState(row.state) }
        return nil
    }

    /// An enrolled tag's row (a 424, a fob): active, then not expired.
    public static func enrolled(row: IssuedTagView, now: Int64) -> Denial? {
        guard row.state == .active else { return .tagState(row.state) }
        if let until = row.validUntil, now > until { return .expired }
        return nil
    }

    /// The action's side: it lists the credential's kind, and its schedules
    /// (and the row's window and uses) allow the tap now.
    public static func action(
        _ definition: ActionDefinition?, kind: CredentialKind, row: IssuedTagView?, policy: TapPolicy
    ) -> Denial? {
        guard definition?.credentials.contains(kind) ?? false else { return .credentialNotAllowed }
        return schedule(definition, row: row, policy: policy)
    }

    /// The schedules, a guest pass's start and uses (docs/policy.md).
    public static func schedule(_ definition: ActionDefinition?, row: IssuedTagView?, policy: TapPolicy) -> Denial? {
        policy.policy.denial(actionSchedule: definition?.schedule, tag: row, wall: policy.wall).map { .policy($0) }
    }
}
