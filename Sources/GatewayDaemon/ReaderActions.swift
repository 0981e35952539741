import DoorCore
import GatewayConfig

/// `[[readers]]` at the tap (issue 35): the reader's name on every tap it reads, and the
/// actions its credentials may trigger.
extension DoorRuntime {
    /// A PN532 tap names the PN532 of `[[readers]]` when the file lists its readers (events
    /// then say `reader:NAME`); without `[[readers]]` a tap is as before (`tag`).
    func named(_ facts: TapFacts) -> TapFacts {
        guard facts.reader == nil, facts.card == nil, configuration.readers != [.legacy],
            let pn532 = configuration.readers.first(where: { $0.kind == .pn532 })
        else { return facts }
        var named = facts
        named.reader = pn532.name
        return named
    }

    /// A grant for an action the reader's `actions` leave out is a denial
    /// (`credential_not_allowed`), with nothing asked of the store: a guest pass's use, a
    /// counter, a PIN wait belong to a grant only.
    func heldToReader(_ presentation: TagPresentation) -> TagPresentation {
        guard case .grant(let action, _) = presentation.verdict, let name = presentation.reader,
            let reader = configuration.readers.first(where: { $0.name == name }), !reader.allows(action: action)
        else { return presentation }
        var denied = presentation
        denied.verdict = .deny(reason: Denial.credentialNotAllowed.reason, countsTowardLockout: false)
        denied.needs = StoreNeeds()
        denied.pinRequired = false
        return denied
    }
}
