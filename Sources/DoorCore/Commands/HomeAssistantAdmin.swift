/// Home Assistant as the admin screen (`[mqtt] home_assistant_admin`,
/// docs/home-assistant.md): what HA's admin entities send, parsed, and the
/// option lists its two selectors show. Pure: the daemon keeps the
/// selections and resolves a request against the menu it last published.
public enum HomeAssistantAdminRequest: Equatable, Hashable, Sendable {
    /// The provisioning selector: the option text of an action.
    case chooseAction(String)
    /// The label the next sticker armed from HA is written with ("" for none).
    case setLabel(String)
    /// The provisioning buttons.
    case arm, cancel
    /// The revoke selector: the option text of an active tag.
    case chooseTag(String)
    /// The revoke button: revokes the tag chosen.
    case revoke
    /// The lockdown switch: ON starts the lockdown, OFF ends it (Lockdown.swift).
    case lockdown(Bool)
    /// A card number to enroll (issue 35) for the action and label chosen
    /// for provisioning: a `CardNumber`'s text, checked by the judge.
    case enrollCard(String)

    /// The longest option text or label taken from HA (bytes of UTF-8).
    public static let maximumText = 128
    /// The longest label a sticker armed from HA gets (as the text entity's `max`).
    public static let maximumLabel = 64
}

/// The option lists of HA's two admin selectors: unique texts (HA's select
/// needs them), each naming one action or one tag. A tag is named by its
/// label; a label that is empty, repeated or equal to the placeholder gets
/// the tag's hashed UID (never the UID itself) in brackets.
public struct HomeAssistantAdminMenu: Equatable, Sendable {
    /// The first option of the tag selector: nothing chosen (a revoke then
    /// does nothing). The selector goes back to it after each revoke.
    public static let noTag = "(none)"
    /// At most this many tags in the selector (HA draws a dropdown).
    public static let maximumTags = 200

    public struct Tag: Equatable, Sendable {
        public var uid: TagUID
        public var label: String
        /// How the door names the UID in HA (hashed); nil when withheld.
        public var hashed: String?
        public init(uid: TagUID, label: String, hashed: String?) {
            self.uid = uid
            self.label = label
            self.hashed = hashed
        }
    }

    public private(set) var actions: [(option: String, index: ActionIndex)]
    public private(set) var tags: [(option: String, uid: TagUID)]

    /// `actions` in the configuration's order; `tags` the active ones.
    public init(actions: [(index: ActionIndex, name: String)], tags: [Tag]) {
        var used: Set<String> = []
        self.actions = []
        let actionCounts = Dictionary(actions.map { ($0.name, 1) }, uniquingKeysWith: +)
        for a in actions {
            let name = Self.clipped(a.name)
            var option =
                name.isEmpty
                ? "action \(a.index)" : actionCounts[a.name, default: 0] > 1 ? "\(name) (action \(a.index))" : name
            while !used.insert(option).inserted { option += " #\(a.index)" }
            self.actions.append((option, a.index))
        }
        used = [Self.noTag]
        self.tags = []
        let sorted = tags.sorted {
            ($0.label.lowercased(), $0.hashed ?? "", $0.uid) < ($1.label.lowercased(), $1.hashed ?? "", $1.uid)
        }.prefix(Self.maximumTags)
        let labelCounts = Dictionary(sorted.map { ($0.label, 1) }, uniquingKeysWith: +)
        for (n, tag) in sorted.enumerated() {
            let label = Self.clipped(tag.label)
            let mark = tag.hashed.map { String($0.prefix(8)) } ?? "tag \(n + 1)"
            var option = label
            if label.isEmpty || labelCounts[tag.label, default: 0] > 1 || label == Self.noTag {
                option = label.isEmpty ? "(\(mark))" : "\(label) (\(mark))"
            }
            if used.contains(option) { option = label + " (" + (tag.hashed ?? "tag \(n + 1)") + ")" }
            while !used.insert(option).inserted { option += " #\(n + 1)" }
            self.tags.append((option, tag.uid))
        }
    }

    /// The action selector's options, in the configuration's order.
    public var actionOptions: [String] { actions.map(\.option) }
    /// The tag selector's options: the placeholder, then the tags by label.
    public var tagOptions: [String] { [Self.noTag] + tags.map(\.option) }

    public func action(_ option: String) -> ActionIndex? { actions.first { $0.option == option }?.index }
    public func actionOption(_ index: ActionIndex) -> String? { actions.first { $0.index == index }?.option }
    public func tag(_ option: String) -> TagUID? { tags.first { $0.option == option }?.uid }
    public func tagOption(_ uid: TagUID) -> String? { tags.first { $0.uid == uid }?.option }

    public static func == (a: Self, b: Self) -> Bool {
        a.actions.elementsEqual(b.actions) { $0.option == $1.option && $0.index == $1.index }
            && a.tags.elementsEqual(b.tags) { $0.option == $1.option && $0.uid == $1.uid }
    }

    /// At most 64 characters of a name, for a dropdown.
    static func clipped(_ text: String) -> String {
        text.count <= 64 ? text : String(text.prefix(63)) + "…"
    }
}

extension RemoteJudge {
    /// HA's admin topics: retained messages are never commands; with
    /// `home_assistant_admin` off every message is refused (and audited by
    /// the door); otherwise the payload is parsed, and the daemon resolves
    /// the request against its menu.
    static func homeAssistantAdmin(_ message: RemoteMessage, policy: RemotePolicy) -> RemoteJudgement {
        let ha = CommandSource.homeAssistant
        func refuse(_ code: String, _ detail: String) -> RemoteJudgement {
            RemoteJudgement(outcome: .rejected(code: code, detail: detail, source: ha))
        }
        guard !message.retained else { return refuse("retained", "retained messages are ignored") }
        guard policy.homeAssistantAdmin else {
            return refuse(
                "ha_admin_disabled", "[mqtt] home_assistant_admin = false: HA may not provision or revoke tags")
        }
        guard message.payload.count <= HomeAssistantAdminRequest.maximumText,
            let text = String(validating: message.payload, as: UTF8.self),
            !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            return refuse("malformed", "at most \(HomeAssistantAdminRequest.maximumText) bytes of text")
        }
        let request: HomeAssistantAdminRequest
        switch message.channel {
        case .homeAssistantProvisionAction: request = .chooseAction(text)
        case .homeAssistantProvisionLabel:
            guard text.utf8.count <= HomeAssistantAdminRequest.maximumLabel else {
                return refuse("malformed", "a label is at most \(HomeAssistantAdminRequest.maximumLabel) bytes")
            }
            request = .setLabel(text)
        case .homeAssistantProvision:
            switch text {
            case "ARM": request = .arm
            case "CANCEL": request = .cancel
            default: return refuse("malformed", "provisioning payload must be ARM or CANCEL")
            }
        case .homeAssistantRevokeChoice: request = .chooseTag(text)
        case .homeAssistantRevoke:
            guard text == "REVOKE" else { return refuse("malformed", "revoke payload must be REVOKE") }
            request = .revoke
        case .homeAssistantLockdown:
            guard text == "ON" || text == "OFF" else {
                return refuse("malformed", "lockdown payload must be ON or OFF")
            }
            request = .lockdown(text == "ON")
        case .homeAssistantEnrollCard:
            guard let card = CardNumber(text: text) else {
                return refuse("malformed", "a card is 26:FACILITY:NUMBER (also 34 and 37), raw:BITS:HEX or fmt:DIGITS")
            }
            request = .enrollCard(card.description)
        default: return refuse("malformed", "not an admin topic")
        }
        return RemoteJudgement(outcome: nil, admin: request)
    }
}
