import DoorCore

extension GatewayConfiguration {
    /// An action's anti-passback (issue 36, docs/policy.md "Entry, exit and anti-passback"):
    ///
    ///     passback = "hard"              # "off" (default), "soft" or "hard"
    ///     passback_reset_minutes = 720   # optional: an entry counts as out again after this
    ///
    /// A reset without a rule is refused (it would do nothing). Read only in a file with
    /// `[[readers]]` or an action that names them, so a file of before asks for no new key
    /// (as `[[readers]]` itself, ConfigReaders.swift).
    static func readPassback(_ t: TableReader, fileHasReaders: Bool) -> PassbackRule {
        guard fileHasReaders || t.has("passback") || t.has("passback_reset_minutes") else { return .off }
        let mode = t.choice("passback", PassbackMode.off)
        let minutes = t.optionalInt("passback_reset_minutes", 1...525_600)
        if minutes != nil, mode == .off {
            t.fail("passback_reset_minutes", "needs passback = \"soft\" or \"hard\" (passback is \"off\")")
        }
        return PassbackRule(mode: mode, resetAfter: minutes.map { Int64($0) * 60 })
    }

    /// A rule needs a door that knows who is in: an entry and an exit reader in
    /// `[[readers]]`. Without an exit reader nobody ever leaves, and a hard rule
    /// would let each credential in once.
    static func checkPassback(_ root: TableReader, actions: [ActionDefinition], readers: [ReaderSettings]) {
        guard !tracksPassage(readers) else { return }
        for action in actions where action.passback.mode != .off {
            root.sink.add(
                "actions[\(action.index)].passback",
                "\"\(action.passback.mode.rawValue)\" needs an entry and an exit reader in [[readers]] (side = \"entry\" / \"exit\")"
            )
        }
    }

    /// Whether the door records passages: it has a reader on each side.
    static func tracksPassage(_ readers: [ReaderSettings]) -> Bool {
        readers.contains { $0.side == .entry } && readers.contains { $0.side == .exit }
    }

    /// Whether this door records who is in (an entry and an exit reader).
    public var tracksPassage: Bool { Self.tracksPassage(readers) }

    /// The side of the reader named `name`, when the door records passages.
    public func passageSide(reader name: String?) -> PassageSide? {
        guard tracksPassage, let name, let reader = readers.first(where: { $0.name == name }) else { return nil }
        return reader.side == .entry ? .entry : .exit
    }
}
