/// Replay protection for remote commands (docs/formats.md §3, §5), stricter than the
/// ESP32 firmware: the highest accepted timestamp per key is kept, and a
/// message more than one window older than it is refused; every accepted
/// block or nonce is remembered until its own key's highest timestamp is two
/// windows past it, when that rule refuses it anyway. Forgetting follows the
/// authenticated timestamps only, never the wall clock: a clock stepped
/// forward and back again forgets nothing (issue 24 L1). A full record
/// rejects rather than evicts. Pure: the MQTT part persists `entries` and
/// `highest`.
public struct ReplayGuard: Equatable, Sendable, Codable {
    public struct Entry: Equatable, Hashable, Sendable, Codable {
        public var keyID: String
        /// The accepted `otp-auth` block (lowercase hex) or native nonce.
        public var fingerprint: String
        public var timestamp: Int64
        /// Wall-clock time of acceptance, Unix seconds.
        public var acceptedAt: Int64
        public init(keyID: String, fingerprint: String, timestamp: Int64, acceptedAt: Int64) {
            self.keyID = keyID
            self.fingerprint = fingerprint
            self.timestamp = timestamp
            self.acceptedAt = acceptedAt
        }
    }

    public private(set) var entries: [Entry]
    public private(set) var highest: [String: Int64]
    public var capacity: Int

    public init(entries: [Entry] = [], highest: [String: Int64] = [:], capacity: Int = 4096) {
        self.entries = entries
        self.highest = highest
        self.capacity = capacity
    }

    /// Drops the entries whose key's highest accepted timestamp is more than
    /// two windows past their own: the highest rule (older than the highest
    /// minus one window) refuses those already, so forgetting them opens
    /// nothing. The wall clock plays no part: pruning by it let a clock
    /// stepped forward, then back, forget a captured command (the other
    /// key's command accepted meanwhile had not raised this key's highest).
    public mutating func prune(tolerance: Int64) {
        let window = Self.clamp(tolerance)
        entries.removeAll { entry in
            guard let top = highest[entry.keyID] else { return false }
            let (horizon, overflow) = top.subtractingReportingOverflow(2 * window)
            return !overflow && entry.timestamp < horizon
        }
    }

    /// Checks a fresh-enough message; on success records it. Returns the rejection, if any.
    /// `now` is only recorded (`acceptedAt`); what is refused and what is
    /// forgotten follow the timestamps.
    /// `orderKey`: commands that set one state (a site's lockdown start and end)
    /// must also come in order: one older than the newest accepted under that
    /// key is refused even inside the window, so a missed end replayed after a
    /// newer start cannot undo it.
    public mutating func admit(
        keyID: String, fingerprint: String, timestamp: Int64, now: Int64,
        tolerance: Int64, orderKey: String? = nil
    ) -> CommandRejection? {
        let window = Self.clamp(tolerance)
        if let orderKey, let newest = highest[orderKey], timestamp < newest {
            return CommandRejection(
                .olderThanHighest,
                "timestamp \(timestamp) is older than the newest accepted command of its kind (\(newest))")
        }
        if let top = highest[keyID], case let (limit, false) = top.subtractingReportingOverflow(window),
            timestamp < limit
        {
            return CommandRejection(
                .olderThanHighest,
                "timestamp \(timestamp) is older than the newest accepted (\(top)) minus the window")
        }
        if entries.contains(where: { $0.keyID == keyID && $0.fingerprint == fingerprint }) {
            return CommandRejection(.replay, "this message was already accepted")
        }
        // Raised before the capacity check, so the entries it lets go are
        // refused by the highest rule even when this message is not recorded.
        highest[keyID] = max(highest[keyID] ?? timestamp, timestamp)
        prune(tolerance: tolerance)
        guard entries.count < capacity else {
            return CommandRejection(
                .replayRecordFull, "the replay record is full (\(capacity)); refusing rather than forgetting")
        }
        entries.append(Entry(keyID: keyID, fingerprint: fingerprint, timestamp: timestamp, acceptedAt: now))
        if let orderKey { highest[orderKey] = max(highest[orderKey] ?? timestamp, timestamp) }
        return nil
    }

    /// The window as `CommandJudge` allows it (0…30 s), so no arithmetic on it overflows.
    static func clamp(_ tolerance: Int64) -> Int64 { min(max(tolerance, 0), CommandJudge.maximumTolerance) }
}
