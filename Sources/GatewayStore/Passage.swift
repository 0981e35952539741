import DoorCore

/// Who is in (issue 36, migration `v17-passage`): each credential's last granted passage at a
/// door with an entry and an exit reader — in at an entry reader, out at an exit reader —
/// keyed by the credential's registry key (a tag's UID, a card's `CardNumber.registryKey`).
/// The anti-passback rule reads it before a tap is decided (`Passback`); `gatewayctl occupancy`
/// and its roll-call export list the rows that are in, with the registry's label. Per door:
/// nothing here goes into a fleet document.
extension GatewayStore {
    /// One person in, for `gatewayctl occupancy`.
    public struct Occupant: Equatable, Sendable {
        public var uid: TagUID
        /// The registry row's label ("" when it has none, or no row is left).
        public var label: String
        public var since: Int64
        public var reader: String
    }

    /// The credential's last passage, nil when none is recorded.
    public func presence(_ uid: TagUID) throws -> Presence? {
        try pool.read { db in
            guard
                let row = try db.fetchAll(
                    sql: "SELECT inside, since, reader FROM passage WHERE uid = ?", arguments: [uid.hex]
                ).first
            else { return nil }
            return Presence(
                inside: try row.get(0, as: Bool.self), since: try row.get(1, as: Int64.self),
                reader: try row.get(2, as: String.self))
        }
    }

    /// Records a granted passage (replacing the last one).
    public func recordPassage(_ uid: TagUID, _ presence: Presence) throws {
        try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO passage (uid, inside, since, reader) VALUES (?, ?, ?, ?)
                    ON CONFLICT(uid) DO UPDATE SET inside = excluded.inside, since = excluded.since,
                      reader = excluded.reader
                    """, arguments: [uid.hex, presence.inside, presence.since, presence.reader])
        }
    }

    /// Everyone in, oldest entry first.
    public func occupants() throws -> [Occupant] {
        try pool.read { db in
            try db.fetchAll(
                sql: """
                    SELECT p.uid, IFNULL(t.label, ''), p.since, p.reader FROM passage p
                    LEFT JOIN issued_tag t ON t.uid = p.uid WHERE p.inside = 1 ORDER BY p.since, p.uid
                    """
            ).compactMap { row in
                guard let uid = TagUID(hex: try row.get(0, as: String.self)) else { return nil }
                return Occupant(
                    uid: uid, label: try row.get(1, as: String.self), since: try row.get(2, as: Int64.self),
                    reader: try row.get(3, as: String.self))
            }
        }
    }

    /// `gatewayctl passback reset UID`: forgets the credential's passage (it may enter
    /// again; occupancy no longer lists it). Returns whether it had one.
    @discardableResult
    public func resetPassage(_ uid: TagUID) throws -> Bool {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM passage WHERE uid = ?", arguments: [uid.hex])
            return db.changesCount > 0
        }
    }

    /// `gatewayctl passback reset --all`: forgets every passage; returns how many.
    @discardableResult
    public func resetAllPassages() throws -> Int {
        try pool.write { db in
            try db.execute(sql: "DELETE FROM passage")
            return db.changesCount
        }
    }
}
