import DoorCore

extension GatewayConfiguration {
    /// An action's `credentials` (docs/ntag424.md): which kinds of credential
    /// a tap may open it with.
    ///
    ///     credentials = ["ntag424", "sticker-v2", "sticker-v1", "uid"]
    ///
    /// Absent: `CredentialKind.defaults` (every sticker kind; `"uid"` is an
    /// explicit opt-in). An empty list is allowed: no tap opens the action
    /// (the button and remote commands still do). An unknown or repeated
    /// name is a configuration error.
    static func readCredentials(_ t: TableReader) -> Set<CredentialKind> {
        let known = CredentialKind.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        var seen: Set<String> = []
        let names = t.stringList("credentials", CredentialKind.defaults.map(\.rawValue)) { name in
            guard CredentialKind(rawValue: name) != nil else {
                return "\"\(name.prefix(32))\" is not a credential kind (kinds: \(known))"
            }
            return seen.insert(name).inserted ? nil : "\"\(name)\" is listed twice"
        }
        return Set(names.compactMap(CredentialKind.init(rawValue:)))
    }
}

extension GatewayConfiguration {
    /// `config check`'s warning for each action that lists `"ntag424-sun"`
    /// (docs/ntag424.md "The SUN-only tier"): a SUN URL alone opens it, so
    /// anyone who reads the tag once can pre-play.
    var credentialWarnings: [String] {
        door.actions.filter { $0.credentials.contains(.ntag424SUN) }.map { a in
            "actions[\(a.index)] (\(a.name)) lists \"ntag424-sun\": an NTAG 424 DNA's SUN URL alone opens it, "
                + "without the chip proving its key; anyone who reads the tag once with a phone holds a URL the "
                + "door has not seen and can open once before the owner's next tap (pre-play). List \"ntag424\" "
                + "alone where the reader completes EV2"
        }
    }
}
