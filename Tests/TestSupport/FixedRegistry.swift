import DoorCore

/// A registry view that answers every UID alike: `row` (nil: not issued) and
/// `revoked`; `unreadable`, a store that cannot be read (each call throws).
public struct FixedRegistry: TagRegistryView {
    public var row: IssuedTagView?
    public var revoked: Bool
    public var unreadable: Bool
    public struct Down: Error {}

    public init(row: IssuedTagView? = nil, revoked: Bool = false, unreadable: Bool = false) {
        self.row = row
        self.revoked = revoked
        self.unreadable = unreadable
    }

    public func issuedTag(_ uid: TagUID) throws -> IssuedTagView? {
        if unreadable { throw Down() }
        return row
    }

    public func isRevoked(uid: TagUID, signature: [UInt8]?) throws -> Bool {
        if unreadable { throw Down() }
        return revoked
    }
}
