import DoorCore

// Issue 36 (docs/policy.md "Lockdown"): the site's lockdown in force, so a
// restarted door is still locked down, and the replay record of the site's
// signed commands (SiteCommand.swift), kept apart from the native commands'
// (their handler owns that one in memory); and the fire alarm a restart keeps
// (FireLatch.swift, migration v18-site-fire).

extension GatewayStore {
    /// The lockdown in force (nil: none).
    public func lockdown() throws -> Lockdown? {
        try pool.read { db in
            guard let row = try db.fetchOne(sql: "SELECT * FROM site_state WHERE one = 1"),
                let by: String = try row.get("lockdown_by")
            else { return nil }
            let before: String? = try row.get("lockdown_mode_before")
            return Lockdown(
                by: by, source: (try row.get("lockdown_source") as String?) ?? "gatewayctl",
                since: (try row.get("lockdown_since") as Int64?) ?? 0,
                modeBefore: before.flatMap(DoorMode.init(rawValue:)) ?? .normal)
        }
    }

    /// Records the lockdown in force (nil: none), durably, before the door acts on it.
    public func saveLockdown(_ lockdown: Lockdown?) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT INTO site_state (one) VALUES (1) ON CONFLICT(one) DO NOTHING")
            try db.execute(
                sql:
                    "UPDATE site_state SET lockdown_by = ?, lockdown_source = ?, lockdown_since = ?, lockdown_mode_before = ? WHERE one = 1",
                arguments: [lockdown?.by, lockdown?.source, lockdown?.since, lockdown?.modeBefore.rawValue])
        }
    }

    /// The fire alarm a restart keeps (FireLatch.swift; `.normal`: none saved).
    public func fireLatch() throws -> FireLatch {
        try pool.read { db in
            guard let row = try db.fetchOne(sql: "SELECT fire_state, fire_site FROM site_state WHERE one = 1"),
                let raw: String = try row.get("fire_state")
            else { return .normal }
            guard let state = FireState(rawValue: raw), state != .normal else {
                throw StoreError.invalidValue("site_state.fire_state '\(raw)'")
            }
            return FireLatch(state: state, site: (try row.get("fire_site") as Bool?) ?? false)
        }
    }

    /// Records the fire alarm a restart keeps, durably.
    public func saveFireLatch(_ latch: FireLatch) throws {
        try pool.write { db in
            try db.execute(sql: "INSERT INTO site_state (one) VALUES (1) ON CONFLICT(one) DO NOTHING")
            try db.execute(
                sql: "UPDATE site_state SET fire_state = ?, fire_site = ? WHERE one = 1",
                arguments: [latch.state == .normal ? nil : latch.state.rawValue, latch.site])
        }
    }

    /// The site commands' replay record, as last saved.
    public func siteReplayGuard() throws -> ReplayGuard { try replayRecord(in: .site) }

    public func saveSiteReplayGuard(_ record: ReplayGuard) throws { try saveReplayRecord(record, in: .site) }
}
