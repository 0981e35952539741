import Dispatch
import DoorCore
import GatewayControl
import Glibc
import GatewayMQTT
import GatewayStore
import Logging
import Synchronization

/// Home Assistant as the admin screen (`[mqtt] home_assistant_admin`,
/// docs/home-assistant.md). HA's selectors, text and buttons reach this
/// through `StoreCommands` once `RemoteJudge` has allowed and parsed them;
/// this keeps what they chose (the action and label of the next sticker, the
/// tag to revoke), resolves each request against the menu it last gave HA,
/// and publishes the issued tags, the last denied tag and the selections.
/// Arming and cancelling go to the door machine (which audits them); a
/// selection or a revoke is audited here, with source `homeassistant`;
/// anything it cannot resolve is refused and audited (`remote_rejected`).
/// UIDs reach HA hashed with the device key only, whatever `uid_in_events`.
///
/// With the option off it only clears, at each connect, the retained
/// documents an earlier run left on the broker (labels are often names).
///
/// Requests and events are handled on `queue`, one at a time; what they
/// change is in `state`, a `Mutex` held around its reads and writes only,
/// never across a call to the link, the store or the door runtime.
final class HomeAssistantAdmin: Sendable {
    let queue = DispatchQueue(label: "gatewayd.ha-admin")
    let enabled: Bool
    private let link: any HomeAssistantLink
    private let store: GatewayStore
    /// Where arming, cancelling and the audited selections go; its
    /// `committed()` is waited for before the tags are read after an event.
    let runtime: DoorRuntime
    let log: Logger
    /// The configuration's actions now (a reload changes them).
    private let actions: @Sendable () -> [(index: ActionIndex, name: String)]
    /// `[provisioning] action` now (a reload changes it): the selector's
    /// choice at start, and again after a reload that changes it.
    private let defaultAction: @Sendable () -> ActionIndex
    private let hashed: @Sendable (TagUID) -> String?
    /// The discovery entries with a given menu (the revoke selector's options follow the tags).
    private let discovery: @Sendable (HomeAssistantAdminMenu) -> [(topic: String, payload: [UInt8])]

    private struct State {
        var published: [String: [UInt8]] = [:]
        var menu: HomeAssistantAdminMenu
        var action: ActionIndex
        /// The `[provisioning] action` the selector last took.
        var defaultAction: ActionIndex
        var label = ""
        var chosenTag: TagUID?
        var lastTags: [UInt8]?
        var lastState: [UInt8]?
        /// The machine's last provisioning arming came from HA: its label is
        /// spent when that sticker is written.
        var armedFromHA = false
    }
    /// Changed on `queue` (and by `initialDiscovery` while wiring, before the link starts).
    private let state: Mutex<State>

    static let source = CommandSource.homeAssistant

    init(
        enabled: Bool, link: any HomeAssistantLink, store: GatewayStore, runtime: DoorRuntime, log: Logger,
        actions: @escaping @Sendable () -> [(index: ActionIndex, name: String)],
        defaultAction: @escaping @Sendable () -> ActionIndex,
        hashed: @escaping @Sendable (TagUID) -> String?,
        discovery: @escaping @Sendable (HomeAssistantAdminMenu) -> [(topic: String, payload: [UInt8])]
    ) {
        self.enabled = enabled
        self.link = link
        self.store = store
        self.runtime = runtime
        self.log = log
        self.actions = actions
        self.defaultAction = defaultAction
        self.hashed = hashed
        self.discovery = discovery
        let configured = actions()
        let initial = defaultAction()
        let action = configured.contains { $0.index == initial } ? initial : (configured.first?.index ?? 0)
        var menu = HomeAssistantAdminMenu(actions: configured, tags: [])
        if enabled {
            menu = HomeAssistantAdminMenu(
                actions: configured, tags: Self.activeTags(store.issuedTagsOrEmpty(log), hashed: hashed))
        }
        state = Mutex(State(menu: menu, action: action, defaultAction: initial))
    }

    /// The discovery entries for the link's first announcement.
    var initialDiscovery: [(topic: String, payload: [UInt8])] {
        let entries = discovery(state.withLock { $0.menu })
        state.withLock { s in for e in entries { s.published[e.topic] = e.payload } }
        return entries
    }

    /// With the option off, how long after a connect the retained documents
    /// an earlier run left are cleared: after Home Assistant has removed the
    /// entities reading them (their discovery configs are emptied at the
    /// connect), which would otherwise each log an error for the empty payload.
    static let clearAfter = DispatchTimeInterval.seconds(5)

    /// Before the link starts: the documents HA's entities read (kept by the
    /// link and re-sent at each connect); or with the option off, what the
    /// link runs after each connect (`RemoteWiring.afterConnect`): the
    /// clearing of what an earlier run left (labels are often names).
    func prepare() -> (@Sendable () -> Void)? {
        queue.sync { () -> (@Sendable () -> Void)? in
            guard enabled else {
                let topics = [link.topics.tags, link.topics.denied, link.topics.adminState]
                return { @Sendable [queue, link, topics, clearAfter = Self.clearAfter] in
                    queue.asyncAfter(deadline: .now() + clearAfter) {
                        for topic in topics { link.clearRetained(topic: topic) }
                    }
                }
            }
            publishState()
            refreshTags()
            publishLastDenied()
            return nil
        }
    }

    // MARK: Requests from HA

    func received(_ request: HomeAssistantAdminRequest) {
        queue.async { [self] in handle(request) }
    }

    private func handle(_ request: HomeAssistantAdminRequest) {
        guard enabled else {
            // RemoteJudge refuses first; never reached with the option off.
            return refuse("ha_admin_disabled", "[mqtt] home_assistant_admin = false")
        }
        switch request {
        case .chooseAction(let option):
            guard let index = state.withLock({ $0.menu.action(option) }) else {
                return refuse("unknown_option", "no action \"\(option)\" in the provisioning selector")
            }
            state.withLock { $0.action = index }
            publishState()
            accepted("provision_action", detail: "provisioning action \(index) (\(option))")
        case .setLabel(let text):
            state.withLock { $0.label = text }
            publishState()
            accepted("provision_label", detail: "label of the next sticker: \"\(text)\"")
        case .arm:
            let job = state.withLock { ProvisioningJob(action: $0.action, label: $0.label) }
            runtime.submit(.remoteCommand(.accepted(.provision(job), source: Self.source)))
        case .cancel:
            runtime.submit(.remoteCommand(.accepted(.cancelProvisioning, source: Self.source)))
        case .chooseTag(let option):
            if option == HomeAssistantAdminMenu.noTag {
                state.withLock { $0.chosenTag = nil }
                publishState()
                return accepted("revoke_tag", detail: "no tag chosen")
            }
            refreshTags()
            guard let uid = state.withLock({ $0.menu.tag(option) }) else {
                publishState()
                return refuse("unknown_option", "no active tag \"\(option)\" in the revoke selector")
            }
            state.withLock { $0.chosenTag = uid }
            publishState()
            runtime.note(
                DoorEvent(.remoteAccepted, reason: "revoke_tag", uid: uid, source: Self.source.rawValue),
                detail: "tag chosen to revoke: \(option)")
        case .revoke:
            refreshTags()
            guard let uid = state.withLock({ $0.chosenTag }) else {
                return refuse("no_tag_chosen", "choose a tag in the revoke selector first")
            }
            guard let option = state.withLock({ $0.menu.tagOption(uid) }) else {
                state.withLock { $0.chosenTag = nil }
                publishState()
                return refuse("unknown_tag", "the tag chosen is no longer active")
            }
            do {
                try store.revoke(uid: uid, reason: "home_assistant", now: Int64(time(nil)))
            } catch {
                log.error("home assistant admin: revoking \(option) failed: \(error)")
                return refuse("store", "revocation not saved: \(error)")
            }
            state.withLock { $0.chosenTag = nil }
            runtime.note(
                DoorEvent(.tagRevoked, uid: uid, source: Self.source.rawValue),
                detail: "revoked from Home Assistant: \(option)")
            refreshTags()
            publishState()
        case .lockdown(let on):
            lockdownSwitch(on)  // SiteLockdown.swift
        case .enrollCard(let text):
            // Issue 35: a card number for the provisioning selector's action and
            // label (the label is spent), as `gatewayctl tags enroll-card` enrols it.
            guard let card = CardNumber(text: text) else { return refuse("malformed", "not a card number") }
            let (action, label) = state.withLock { ($0.action, $0.label) }
            do {
                try store.enrollCard(card, action: action, label: label, now: Int64(time(nil)))
            } catch {
                log.error("home assistant admin: enrolling a card failed: \(error)")
                return refuse("store", "card not enrolled: \(error)")
            }
            state.withLock { $0.label = "" }
            runtime.note(
                DoorEvent(
                    .provisioningWritten, reason: "card_enrolled", action: action, uid: card.registryKey,
                    source: Self.source.rawValue),
                detail: "kind wiegand (weak credential), card \(card), label \"\(label)\", from Home Assistant")
            refreshTags()
            publishState()
        }
    }

    private func refuse(_ code: String, _ detail: String) {
        runtime.submit(.remoteCommand(.rejected(code: code, detail: detail, source: Self.source)))
    }

    private func accepted(_ reason: String, detail: String) {
        runtime.note(DoorEvent(.remoteAccepted, reason: reason, source: Self.source.rawValue), detail: detail)
    }

    // MARK: What the door did

    /// Every event, as the door queue hands it on (right after the relay,
    /// before its audit row commits: a provisioned tag's row turns active in
    /// that commit, so the tag list is read once `runtime.committed()`).
    func observe(_ event: DoorEvent, at time: Int64) {
        guard enabled else { return }
        switch event.kind {
        case .accessDenied, .accessGranted, .provisioningArmed, .provisioningWritten, .provisioningFailed,
            .provisioningCancelled, .provisioningRefused:
            break
        default: return
        }
        queue.async { [self] in
            runtime.committed()
            switch event.kind {
            case .accessDenied:
                guard let uid = event.uid else { return }
                let label: String?
                do { label = try store.issuedTag(uid)?.label } catch {
                    log.error("home assistant admin: label of a denied tag: \(error)")
                    label = nil
                }
                link.publishKept(
                    topic: link.topics.denied,
                    payload: Payloads.denied(
                        hashed: hashed(uid), reason: event.reason ?? "denied", time: time,
                        label: label.flatMap { $0.isEmpty ? nil : $0 }))
            case .provisioningArmed:
                let fromHA = event.source == Self.source.rawValue
                state.withLock { $0.armedFromHA = fromHA }
            case .provisioningWritten:
                let spent = state.withLock { s -> Bool in
                    defer { s.armedFromHA = false }
                    guard s.armedFromHA && !s.label.isEmpty else { return false }
                    s.label = ""
                    return true
                }
                if spent { publishState() }
                refreshTags()
            case .provisioningFailed, .provisioningCancelled:
                state.withLock { $0.armedFromHA = false }
                refreshTags()
            default:
                refreshTags()  // last_seen of a granted tag
            }
        }
    }

    /// The registry changed outside HA (`gatewayctl tags …`).
    func registryChanged() {
        guard enabled else { return }
        queue.async { [self] in
            refreshTags()
            publishState()
        }
    }

    /// A reload: the provisioning selector offers the actions now configured
    /// (a removed one chosen falls back to the first) and takes a changed
    /// `[provisioning] action`, and every discovery entry is offered again,
    /// so HA adds or removes an action's button.
    func configurationReloaded() {
        queue.async { [self] in
            let fresh = HomeAssistantAdminMenu(
                actions: actions(), tags: Self.activeTags(store.issuedTagsOrEmpty(log), hashed: hashed))
            let entries = discovery(fresh)
            let newDefault = defaultAction()
            state.withLock { s in
                if newDefault != s.defaultAction {
                    s.defaultAction = newDefault
                    s.action = newDefault
                }
                Self.adopt(fresh, &s)
                s.published = Dictionary(entries.map { ($0.topic, $0.payload) }, uniquingKeysWith: { $1 })
            }
            link.replaceDiscovery(entries)
            publishState()
        }
    }

    // MARK: Documents

    /// `…/tags` when it changed, and the revoke selector's options when
    /// the active tags did.
    private func refreshTags() {
        let tags = store.issuedTagsOrEmpty(log)
        let doc = Payloads.tags(
            tags.map {
                (
                    hashed: hashed($0.uid), label: $0.label, state: $0.state.rawValue, action: $0.action,
                    issued: $0.issued, lastSeen: $0.lastSeen
                )
            })
        let tagsChanged = state.withLock {
            guard doc != $0.lastTags else { return false }
            $0.lastTags = doc
            return true
        }
        if tagsChanged { link.publishKept(topic: link.topics.tags, payload: doc) }
        let fresh = HomeAssistantAdminMenu(actions: actions(), tags: Self.activeTags(tags, hashed: hashed))
        let menuChanged = state.withLock { s -> Bool in
            guard fresh != s.menu else { return false }
            Self.adopt(fresh, &s)
            return true
        }
        guard menuChanged else { return }
        let entries = discovery(fresh)
        let changed = state.withLock { s in
            let changed = entries.filter { s.published[$0.topic] != $0.payload }
            for e in changed { s.published[e.topic] = e.payload }
            return changed
        }
        if !changed.isEmpty { link.updateDiscovery(changed) }
        publishState()
    }

    /// A new menu, wherever it comes from: a chosen action or tag it no longer
    /// offers falls back (the first action; no tag), so the state published
    /// never names an option HA does not have.
    private static func adopt(_ fresh: HomeAssistantAdminMenu, _ s: inout State) {
        s.menu = fresh
        if fresh.actionOption(s.action) == nil { s.action = fresh.actions.first?.index ?? 0 }
        if let chosen = s.chosenTag, fresh.tagOption(chosen) == nil { s.chosenTag = nil }
    }

    private static func activeTags(
        _ tags: [IssuedTag], hashed: @Sendable (TagUID) -> String?
    ) -> [HomeAssistantAdminMenu.Tag] {
        tags.filter { $0.state == .active }.map { .init(uid: $0.uid, label: $0.label, hashed: hashed($0.uid)) }
    }

    /// `…/admin/state`: what the selectors and the label show.
    private func publishState() {
        let doc = state.withLock { s -> [UInt8]? in
            let doc = Payloads.adminState(
                provisionAction: s.menu.actionOption(s.action) ?? "",
                provisionLabel: s.label,
                revokeTag: s.chosenTag.flatMap(s.menu.tagOption) ?? HomeAssistantAdminMenu.noTag)
            guard doc != s.lastState else { return nil }
            s.lastState = doc
            return doc
        }
        if let doc { link.publishKept(topic: link.topics.adminState, payload: doc) }
    }

    /// `…/denied` from the newest denial in the audit log, so a restart keeps it.
    private func publishLastDenied() {
        do {
            guard let row = try store.newestAudit(kinds: [DoorEvent.Kind.accessDenied.rawValue], limit: 1).first,
                let uid = row.uid.flatMap(TagUID.init(hex:))
            else { return }
            let label = try store.issuedTag(uid)?.label
            link.publishKept(
                topic: link.topics.denied,
                payload: Payloads.denied(
                    hashed: hashed(uid), reason: row.reason ?? "denied", time: row.time,
                    label: label.flatMap { $0.isEmpty ? nil : $0 }))
        } catch {
            log.error("home assistant admin: the last denied tag not read from the audit log: \(error)")
        }
    }
}

extension GatewayStore {
    /// Issued tags, or none (logged) when the store cannot be read.
    func issuedTagsOrEmpty(_ log: Logger) -> [IssuedTag] {
        do { return try issuedTags() } catch {
            log.error("home assistant admin: issued tags not read: \(error)")
            return []
        }
    }
}
