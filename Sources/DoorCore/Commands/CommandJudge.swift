/// What a remote command asks for.
public enum CommandTarget: Equatable, Hashable, Sendable, CustomStringConvertible {
    case action(ActionIndex)
    /// Command 5 of the ESP32 firmware: publish a device report (no OTP needed).
    case report
    /// Home Assistant's mode selector (refused in lockdown).
    case mode(DoorMode)
    /// Home Assistant's "clear lockout" button.
    case clearLockout
    /// Home Assistant's admin screen: arm provisioning with this job
    /// (`home_assistant_admin`; refused in lockdown).
    case provision(ProvisioningJob)
    /// Home Assistant's admin screen: disarm provisioning.
    case cancelProvisioning
    /// An answer to an approval request (docs/policy.md "Approval"): a
    /// native command naming its code, or Home Assistant's Approve/Deny
    /// buttons (nil: the pending request).
    case approval(code: String?, approve: Bool)
    public var description: String {
        switch self {
        case .action(let a): return "action \(a)"
        case .report: return "report"
        case .mode(let m): return "mode \(m.rawValue)"
        case .clearLockout: return "clear lockout"
        case .provision(let job): return "provision action \(job.action)"
        case .cancelProvisioning: return "cancel provisioning"
        case .approval(let code, let approve): return "\(approve ? "approve" : "deny") \(code ?? "the pending request")"
        }
    }
}

/// Why a remote command was refused. Codes are stable (events, `--json`).
public typealias CommandRejection = Refusal<CommandRejectionCode>

public enum CommandRejectionCode: String, Sendable, Hashable, CaseIterable {
    case retained, deviceReport = "device_report", malformed
    case unknownCommand = "unknown_command", unknownAction = "unknown_action"
    case badChecksum = "bad_checksum", stale, future, replay
    case olderThanHighest = "older_than_highest", replayRecordFull = "replay_record_full"
    case badMAC = "bad_mac", wrongDevice = "wrong_device"
    case clockUnsynchronised = "clock_unsynchronised", noKey = "no_key"
}

/// A refusal with a stable code (its raw value is what events and the audit
/// say) and a detail for people: remote commands' (`CommandRejection`) and
/// site commands' (`SiteCommandRefusal`).
public struct Refusal<C: RawRepresentable & Hashable & Sendable>: Error, Hashable, Sendable,
    CustomStringConvertible
where C.RawValue == String {
    public typealias Code = C
    public var code: Code
    public var detail: String
    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }
    public var description: String { "\(code.rawValue): \(detail)" }
}

/// The verdict on one remote command message, with what was learnt on the
/// way (for `gatewayctl otp inspect` and events).
public struct CommandVerdict: Equatable, Sendable {
    public enum Kind: String, Sendable { case compat, native }
    public var kind: Kind
    public var command: Int?
    public var target: CommandTarget?
    /// The timestamp inside the OTP block or the native message.
    public var timestamp: Int64?
    /// now − timestamp, seconds.
    public var skew: Int64?
    public var checksumOK: Bool?
    public var rejection: CommandRejection?

    public var accepted: Bool { rejection == nil }

    /// This verdict, refused with `rejection`.
    func rejected(_ rejection: CommandRejection) -> CommandVerdict {
        var v = self
        v.rejection = rejection
        return v
    }
}

/// Judges remote commands, docs/formats.md §3 (compat) and §5 (native). The replay
/// guard is passed in so the caller owns its persistence.
public struct CommandJudge: Equatable, Sendable {
    /// Compat command number → target (default 1→0, 2→1, 3→2, 4→3, 5→report).
    public var mapping: [Int: CommandTarget]
    /// Freshness window, seconds: `|now − ts| ≤ tolerance`; clamped to 0…30.
    public var tolerance: Int64
    public var deviceID: String
    public var actionCount: Int

    public static let defaultMapping: [Int: CommandTarget] = [
        1: .action(0), 2: .action(1), 3: .action(2), 4: .action(3), 5: .report,
    ]
    public static let maximumTolerance: Int64 = 30

    public init(
        mapping: [Int: CommandTarget] = defaultMapping, tolerance: Int64 = 5, deviceID: String, actionCount: Int = 4
    ) {
        self.mapping = mapping
        self.tolerance = min(max(tolerance, 0), Self.maximumTolerance)
        self.deviceID = deviceID
        self.actionCount = actionCount
    }

    /// A compat command (`{"command": n, "otp-auth": "<32 hex>"}`).
    public func judgeCompat(
        payload: [UInt8], retained: Bool, key: [UInt8]?, now: WallClock,
        replay: inout ReplayGuard
    ) -> CommandVerdict {
        var v = CommandVerdict(kind: .compat)
        let json: JSONValue
        do { json = try Self.screenedJSON(payload: payload, retained: retained) } catch { return v.rejected(error) }
        guard case .object(let members) = json else {
            return v.rejected(CommandRejection(.malformed, "not a JSON object"))
        }
        guard case .int(let number)? = json["command"] else {
            return v.rejected(CommandRejection(.malformed, "\"command\" must be an integer"))
        }
        if let extra = members.first(where: { $0.0 != "command" && $0.0 != "otp-auth" }) {
            return v.rejected(CommandRejection(.malformed, "unexpected key \"\(extra.0.prefix(32))\""))
        }
        v.command = Int(clamping: number)
        guard let target = mapping[Int(clamping: number)] else {
            return v.rejected(CommandRejection(.unknownCommand, "command \(number) is not mapped"))
        }
        v.target = target
        if target == .report { return v }
        guard case .string(let otp)? = json["otp-auth"] else {
            return v.rejected(CommandRejection(.malformed, "\"otp-auth\" must be a string"))
        }
        guard let key else { return v.rejected(CommandRejection(.noKey, "no timestamp key is configured")) }
        let block: OTPBlock
        do { block = try OTPBlock.decrypt(hex: otp, key: key) } catch { return v.rejected(error) }
        v.checksumOK = block.checksumOK
        guard block.checksumOK else {
            return v.rejected(CommandRejection(.badChecksum, "checksum does not match (wrong key or damaged block)"))
        }
        v.timestamp = block.timestamp
        v.skew = Self.skew(now: now.unixSeconds, ts: block.timestamp)
        if let r = fresh(block.timestamp, now: now) { return v.rejected(r) }
        if let r = replay.admit(
            keyID: "compat", fingerprint: otp.lowercased(), timestamp: block.timestamp,
            now: now.unixSeconds, tolerance: tolerance)
        {
            return v.rejected(r)
        }
        return v
    }

    /// The key a door checks native commands (docs/formats.md §5) with: derived from
    /// the site command key (the store's `native_command` key, the one the
    /// fleet shares) and the door's device id, HKDF-SHA256 (RFC 5869) with
    /// salt `doorgateway-command-v1` and info = the device id, 32 bytes
    /// (issue 24 M3, docs/security.md "M3"). A client given one door's key
    /// (`gatewayctl keys command export`) can make commands for that door
    /// only: the site key stays on the doors.
    public static func doorCommandKey(siteKey: [UInt8], device: String) -> [UInt8] {
        // HKDF with L = 32: PRK = HMAC(salt, IKM); OKM = HMAC(PRK, info ‖ 0x01).
        let prk = Crypto.hmacSHA256(key: Array("doorgateway-command-v1".utf8), message: siteKey)
        return Crypto.hmacSHA256(key: prk, message: Array(device.utf8) + [1])
    }

    /// A native command (`{"action","ts","nonce","device","mac"}`, docs/formats.md §5).
    public func judgeNative(
        payload: [UInt8], retained: Bool, key: [UInt8]?, now: WallClock,
        replay: inout ReplayGuard
    ) -> CommandVerdict {
        let v = CommandVerdict(kind: .native)
        let json: JSONValue
        do { json = try Self.screenedJSON(payload: payload, retained: retained) } catch { return v.rejected(error) }
        if json["approval"] != nil {
            return judgeNativeApproval(json, key: key, now: now, replay: &replay)
        }
        guard case .object(let members) = json, members.count == 5,
            case .int(let action)? = json["action"], case .int(let ts)? = json["ts"],
            case .string(let nonce)? = json["nonce"], case .string(let device)? = json["device"],
            case .string(let macHex)? = json["mac"]
        else {
            return v.rejected(
                CommandRejection(.malformed, "expected exactly action, ts (integers), nonce, device, mac (strings)"))
        }
        return verifySigned(
            v, ts: ts, nonce: nonce, device: device, macHex: macHex, key: key, now: now, replay: &replay,
            message: Array(Self.nativeMACMessage(device: device, action: action, ts: ts, nonce: nonce).utf8)
        ) {
            guard action >= 0, action < actionCount else {
                return .failure(CommandRejection(.unknownAction, "action \(action) is not configured"))
            }
            return .success(.action(Int(action)))
        }
    }

    /// A native answer to an approval request (docs/mqtt.md "Approval"):
    /// `{"approval": CODE, "answer": "approve"|"deny", "ts", "nonce", "device", "mac"}`,
    /// MAC'd with the phone's command key over `apr1|<device>|<CODE>|<answer>|<ts>|<nonce>`;
    /// the same freshness window and replay guard as a native command.
    func judgeNativeApproval(
        _ json: JSONValue, key: [UInt8]?, now: WallClock, replay: inout ReplayGuard
    ) -> CommandVerdict {
        let v = CommandVerdict(kind: .native)
        guard case .object(let members) = json, members.count == 6,
            case .string(let code)? = json["approval"], case .string(let answer)? = json["answer"],
            case .int(let ts)? = json["ts"], case .string(let nonce)? = json["nonce"],
            case .string(let device)? = json["device"], case .string(let macHex)? = json["mac"]
        else {
            return v.rejected(
                CommandRejection(
                    .malformed, "expected exactly approval, answer, nonce, device, mac (strings) and ts (integer)"))
        }
        guard code.utf8.count == ApprovalDesk.codeLength,
            code.uppercased().allSatisfy({ ApprovalDesk.alphabet.contains($0) })
        else {
            return v.rejected(
                CommandRejection(.malformed, "approval must be a \(ApprovalDesk.codeLength)-character code"))
        }
        guard answer == "approve" || answer == "deny" else {
            return v.rejected(CommandRejection(.malformed, "answer must be \"approve\" or \"deny\""))
        }
        return verifySigned(
            v, ts: ts, nonce: nonce, device: device, macHex: macHex, key: key, now: now, replay: &replay,
            message: Array(
                Self.approvalMACMessage(device: device, code: code, answer: answer, ts: ts, nonce: nonce).utf8)
        ) { .success(.approval(code: code.uppercased(), approve: answer == "approve")) }
    }

    /// What a native command and a native approval answer share once their
    /// own fields are read (docs/formats.md §5): the nonce (32 hex digits) and MAC (64),
    /// the timestamp and skew recorded, addressed to this door, `message`'s
    /// HMAC-SHA256 under `key` compared in constant time, then `target` (the
    /// command's own check after the MAC, e.g. the action's range), freshness
    /// and the replay guard ("native" nonces, one record for both) — in that
    /// order, so a rejection names the first check that fails.
    func verifySigned(
        _ verdict: CommandVerdict, ts: Int64, nonce: String, device: String, macHex: String, key: [UInt8]?,
        now: WallClock, replay: inout ReplayGuard, message: @autoclosure () -> [UInt8],
        target: () -> Result<CommandTarget, CommandRejection>
    ) -> CommandVerdict {
        var v = verdict
        guard nonce.utf8.count == 32, Hex.decode(nonce) != nil else {
            return v.rejected(CommandRejection(.malformed, "nonce must be 32 hex digits"))
        }
        guard macHex.utf8.count == 64, let mac = Hex.decode(macHex) else {
            return v.rejected(CommandRejection(.malformed, "mac must be 64 hex digits"))
        }
        v.timestamp = ts
        v.skew = Self.skew(now: now.unixSeconds, ts: ts)
        guard device == deviceID else {
            return v.rejected(CommandRejection(.wrongDevice, "addressed to \(device.prefix(64)), this is \(deviceID)"))
        }
        guard let key else { return v.rejected(CommandRejection(.noKey, "no command key is configured")) }
        guard Crypto.constantTimeEqual(Crypto.hmacSHA256(key: key, message: message()), mac) else {
            return v.rejected(CommandRejection(.badMAC, "the MAC does not verify"))
        }
        switch target() {
        case .failure(let r): return v.rejected(r)
        case .success(let t): v.target = t
        }
        if let r = fresh(ts, now: now) { return v.rejected(r) }
        if let r = replay.admit(
            keyID: "native", fingerprint: nonce.lowercased(), timestamp: ts,
            now: now.unixSeconds, tolerance: tolerance)
        {
            return v.rejected(r)
        }
        return v
    }

    /// `apr1|<device>|<CODE>|<answer>|<ts>|<nonce>`: what a native approval's MAC covers.
    public static func approvalMACMessage(device: String, code: String, answer: String, ts: Int64, nonce: String)
        -> String
    {
        "apr1|\(device)|\(code)|\(answer)|\(ts)|\(nonce)"
    }

    /// A signed native approval answer (the phone's side; tests and tools).
    public static func approvalCommand(
        key: [UInt8], device: String, code: String, approve: Bool, ts: Int64, nonce: String
    ) -> [UInt8] {
        let answer = approve ? "approve" : "deny"
        let mac = Crypto.hmacSHA256(
            key: key,
            message: Array(approvalMACMessage(device: device, code: code, answer: answer, ts: ts, nonce: nonce).utf8))
        let json = JSONValue.object([
            ("approval", .string(code)), ("answer", .string(answer)), ("ts", .int(Int(ts))),
            ("nonce", .string(nonce)), ("device", .string(device)), ("mac", .string(Hex.encode(mac))),
        ])
        return Array(json.serialized.utf8)
    }

    /// `cmd1|<device>|<action>|<ts>|<nonce>`: what a native command's MAC covers.
    public static func nativeMACMessage(device: String, action: Int64, ts: Int64, nonce: String) -> String {
        "cmd1|\(device)|\(action)|\(ts)|\(nonce)"
    }

    /// Retained messages and device reports are never commands (docs/formats.md §3).
    /// What every command starts with: a retained message or a device report
    /// is refused, then the payload must be JSON.
    static func screenedJSON(payload: [UInt8], retained: Bool) throws(CommandRejection) -> JSONValue {
        if retained { throw CommandRejection(.retained, "retained messages are ignored") }
        if payload.starts(with: Array(#"{"TT_ID""#.utf8)) {
            throw CommandRejection(.deviceReport, "a device report, not a command")
        }
        do { return try JSONValue.parse(payload) } catch { throw CommandRejection(.malformed, error.description) }
    }

    func fresh(_ ts: Int64, now: WallClock) -> CommandRejection? {
        guard now.synchronised else {
            return CommandRejection(
                .clockUnsynchronised, "the system clock is not synchronised; remote commands are refused")
        }
        let skew = Self.skew(now: now.unixSeconds, ts: ts)
        if skew > tolerance { return CommandRejection(.stale, "\(skew) s old, the window is \(tolerance) s") }
        if skew < -tolerance {
            return CommandRejection(.future, "\(ts) is ahead of now (\(now.unixSeconds)), the window is \(tolerance) s")
        }
        return nil
    }

    /// now − ts, saturated: a native `ts` is any JSON integer, so the
    /// difference may not fit in Int64 and must not trap.
    static func skew(now: Int64, ts: Int64) -> Int64 {
        let (d, overflow) = now.subtractingReportingOverflow(ts)
        return overflow ? (ts < 0 ? .max : .min) : d
    }
}
