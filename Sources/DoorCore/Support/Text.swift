extension StringProtocol {
    /// Whether `other` occurs in this text, compared byte for byte in UTF-8
    /// (what the door's own texts need: names, markers, log phrases).
    ///
    /// Not `contains(_: String)`: that one is `_StringProcessing`'s, and one
    /// call links it and the regex parser (1.2 MB of the stripped gateway) into the static
    /// binary; `scripts/static.sh` refuses a build that has them.
    public func includes(_ other: some StringProtocol) -> Bool {
        let hay = Array(utf8)
        let needle = Array(other.utf8)
        guard needle.count <= hay.count else { return false }
        return (0...(hay.count - needle.count)).contains { hay[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}
