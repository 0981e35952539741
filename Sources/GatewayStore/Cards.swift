import DoorCore

extension GatewayStore {
    /// Enrols a card number an outdoor reader sends (issue 35, kind
    /// `wiegand`): an active row for `action` straight away, keyed by the
    /// card's registry key (`CardNumber.registryKey`). A revoked card is
    /// refused; a card enrolled before is enrolled again (its row starts over).
    public func enrollCard(
        _ card: CardNumber, action: ActionIndex, label: String, limits: TagLimits = TagLimits(), now: Int64
    ) throws {
        try pool.write { db in
            try Self.issueTag(
                db, uid: card.registryKey, action: action, secretID: nil, label: label, limits: limits,
                kind: .wiegand, state: .active, now: now)
        }
    }
}
