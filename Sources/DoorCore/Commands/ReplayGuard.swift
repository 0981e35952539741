/// Replay protection for remote commands (COMPAT §3, §5), stricter than the
/// ESP32 firmware: every accepted block or nonce is remembered for two
/// freshness windows, the highest accepted timestamp per key is kept, and a
/// full record rejects rather than evicts. Pure: the MQTT part persists
/// `entries` and `highest`.
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

    /// Drops entries older than two windows (by acceptance time or timestamp;
    /// whichever keeps them longer, so a clock moved backwards keeps them).
    public mutating func prune(now: Int64, tolerance: Int64) {
        let window = Self.clamp(tolerance)
        let (horizon, overflow) = now.subtractingReportingOverflow(2 * window)
        guard !overflow else { return }
        entries.removeAll { max($0.acceptedAt, $0.timestamp) < horizon && $0.acceptedAt <= now }
    }

    /// Checks a fresh-enough message; on success records it. Returns the rejection, if any.
    public mutating func admit(
        keyID: String, fingerprint: String, timestamp: Int64, now: Int64,
        tolerance: Int64
    ) -> CommandRejection? {
        prune(now: now, tolerance: tolerance)
        let window = Self.clamp(tolerance)
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
        guard entries.count < capacity else {
            return CommandRejection(
                .replayRecordFull, "the replay record is full (\(capacity)); refusing rather than forgetting")
        }
        entries.append(Entry(keyID: keyID, fingerprint: fingerprint, timestamp: timestamp, acceptedAt: now))
        highest[keyID] = max(highest[keyID] ?? timestamp, timestamp)
        return nil
    }

    /// The window as `CommandJudge` allows it (0…30 s), so no arithmetic on it overflows.
    static func clamp(_ tolerance: Int64) -> Int64 { min(max(tolerance, 0), CommandJudge.maximumTolerance) }
}
