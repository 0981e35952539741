import DoorCore

/// Phone-app compat commands (docs/formats.md §3): `{"command": n, "otp-auth": "<32 hex>"}`.
enum CompatTarget {
    static let judge = CommandJudge(tolerance: 5, deviceID: Vectors.deviceID)

    static func run(_ data: [UInt8]) {
        JSONRoundTrip.check(data)
        let now = WallClock(unixSeconds: Vectors.compatNow, synchronised: true)
        var replay = ReplayGuard(capacity: 4)
        let first = judge.judgeCompat(
            payload: data, retained: false, key: Vectors.compatKey, now: now, replay: &replay)
        check(first, now: now)
        if first.accepted, first.target != .report {
            let again = judge.judgeCompat(
                payload: data, retained: false, key: Vectors.compatKey, now: now, replay: &replay)
            expect(!again.accepted, "a compat command was accepted twice")
        }
        let retained = judge.judgeCompat(
            payload: data, retained: true, key: Vectors.compatKey, now: now, replay: &replay)
        expect(retained.rejection?.code == .retained, "a retained message was not refused as retained")
        let unsynchronised = WallClock(unixSeconds: Vectors.compatNow, synchronised: false)
        let blind = judge.judgeCompat(
            payload: data, retained: false, key: Vectors.compatKey, now: unsynchronised, replay: &replay)
        expect(!blind.accepted || blind.target == .report, "accepted with an unsynchronised clock")
        // The block's own time, and around it: freshness and the replay record.
        guard case .string(let otp)? = (try? JSONValue.parse(data))?["otp-auth"],
            let block = try? OTPBlock.decrypt(hex: otp, key: Vectors.compatKey), block.checksumOK
        else { return }
        var record = ReplayGuard(capacity: 2)
        for delta in [Int64(-6), 5, 0, 0, -5, 6] {
            let at = WallClock(unixSeconds: block.timestamp + delta, synchronised: true)
            check(
                judge.judgeCompat(payload: data, retained: false, key: Vectors.compatKey, now: at, replay: &record),
                now: at)
        }
    }

    static func check(_ v: CommandVerdict, now: WallClock) {
        guard v.accepted else {
            expect(v.rejection != nil, "neither accepted nor rejected")
            return
        }
        expect(v.target != nil, "accepted without a target")
        if v.target != .report {
            expect(v.checksumOK == true, "accepted with a bad checksum")
            expect(inWindow(v.skew), "accepted outside the window: skew \(String(describing: v.skew))")
        }
    }
}

/// Native commands (docs/formats.md §5): `{"action","ts","nonce","device","mac"}`.
enum NativeTarget {
    static let judge = CommandJudge(tolerance: 5, deviceID: Vectors.deviceID, actionCount: 4)
    static let now = WallClock(unixSeconds: 1_757_216_934, synchronised: true)

    static func run(_ data: [UInt8]) {
        JSONRoundTrip.check(data)
        var replay = ReplayGuard(capacity: 4)
        check(judge.judgeNative(payload: data, retained: false, key: Vectors.nativeKey, now: now, replay: &replay))
        let retained = judge.judgeNative(
            payload: data, retained: true, key: Vectors.nativeKey, now: now, replay: &replay)
        expect(retained.rejection?.code == .retained, "a retained message was not refused as retained")
        // The same fields signed with the door's key (a MAC the fuzzer cannot
        // find), judged at the message's own time and around it, so what
        // follows the MAC check runs: action range, freshness, replay.
        guard case .object(var members)? = try? JSONValue.parse(data),
            case .int(let action)? = JSONValue.object(members)["action"],
            case .int(let ts)? = JSONValue.object(members)["ts"],
            case .string(let nonce)? = JSONValue.object(members)["nonce"],
            case .string(let device)? = JSONValue.object(members)["device"],
            let macIndex = members.firstIndex(where: { $0.0 == "mac" })
        else { return }
        let mac = Crypto.hmacSHA256(
            key: Vectors.nativeKey,
            message: CommandJudge.nativeMACMessage(device: device, action: action, ts: ts, nonce: nonce))
        members[macIndex].1 = .string(Hex.encode(mac))
        let signed = Array(JSONValue.object(members).serialized.utf8)
        var record = ReplayGuard(capacity: 2)
        var accepted = 0
        for delta in [Int64(-6), 5, 0, 0, -5, 6] {
            let (at, overflow) = ts.addingReportingOverflow(delta)
            if overflow { continue }
            let clock = WallClock(unixSeconds: at, synchronised: true)
            let v = judge.judgeNative(
                payload: signed, retained: false, key: Vectors.nativeKey, now: clock, replay: &record)
            check(v)
            if v.accepted { accepted += 1 }
        }
        // One nonce opens at most once, however often it comes back in its window.
        expect(accepted <= 1, "a signed native command was accepted \(accepted) times")
    }

    static func check(_ v: CommandVerdict) {
        guard v.accepted else {
            expect(v.rejection != nil, "neither accepted nor rejected")
            return
        }
        guard case .action(let a)? = v.target else {
            expect(false, "a native command accepted without an action")
            return
        }
        expect(a >= 0 && a < 4, "accepted action \(a)")
        expect(inWindow(v.skew), "accepted outside the window: skew \(String(describing: v.skew))")
    }
}

/// Whether a skew is within the ±5 s window the targets judge with.
func inWindow(_ skew: Int64?) -> Bool { skew.map { (-5...5).contains($0) } ?? false }

/// The JSON every remote command goes through: what parses serializes to
/// text that parses to the same value (the door's `--json` output and MQTT
/// payloads use the same serializer).
enum JSONRoundTrip {
    static func check(_ data: [UInt8]) {
        guard let value = try? JSONValue.parse(data) else { return }
        let text = value.serialized
        expect((try? JSONValue.parse(text)) == value, "parse(serialized) != value for \(text.prefix(200))")
    }
}
