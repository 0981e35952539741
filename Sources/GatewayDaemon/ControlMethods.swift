import DoorCore
import DoorIO
import GatewayControl
import Glibc
import Dispatch
import GatewayConfig
import GatewayStore

/// The control socket's methods (newline-delimited JSON, `gatewayctl` is the
/// client). Door changes go through the door queue as admin inputs, so the
/// state machine decides exactly as it would for the button; store changes
/// go straight to the store. Secrets and keys leave only through `export`.
extension ControlService {
    func answer(_ method: ControlMethod, _ p: [String: JSONValue], peer: Peer) throws -> JSONValue {
        switch method {
        case .status: return status()
        case .clockResetFloor: return try resetClockFloor(by: "control:uid=\(peer.uid)")
        case .policyExplain: return try policyExplain(p)
        case .approvalAnswer: return try answerApproval(p, peer: peer)
        case .fireReset: return try fireReset(peer: peer)
        case .occupancy: return try occupancy()
        case .passbackReset: return try passbackReset(p, peer: peer)
        case .open:
            let action = try p.int("action", default: 0)
            guard configuration.door.actions.contains(where: { $0.index == action }) else {
                throw DaemonError.request("no action \(action)")
            }
            runtime.submit(.admin(.open(action)))
            return .object([("action", .int(action))])
        case .mode:
            guard let mode = DoorMode(rawValue: try p.string("mode")) else {
                throw DaemonError.request("mode must be normal, passage or lockdown")
            }
            try refuseModeInLockdown(mode)  // SiteLockdown.swift
            runtime.submit(.admin(.setMode(mode)))
            return .object([("mode", .string(mode.rawValue))])
        case .provision:
            let action = try p.int("action", default: configuration.door.provisioning.action)
            guard configuration.door.actions.contains(where: { $0.index == action }) else {
                throw DaemonError.request("no action \(action)")
            }
            var job = ProvisioningJob(
                action: action, label: try p.string("label", default: ""), protect: try p.bool("protect"),
                overwrite: try p.bool("overwrite"))
            try guestLimits(p, into: &job)
            if p["reissue"] != nil {
                guard let uid = TagUID(hex: try p.string("reissue")) else {
                    throw DaemonError.request("reissue: a UID in hex")
                }
                job.reissue = uid
            }
            runtime.submit(.admin(.armProvisioning(job)))
            return .object([("armed", .bool(true)), ("action", .int(action))])
        case .provisionCancel:
            runtime.submit(.admin(.cancelProvisioning))
            return .object([("cancelled", .bool(true))])
        case .provisionReset:
            let (uid, marked) = try runtime.resetNTAG424(by: "control:uid=\(peer.uid)")
            return .object([("uid", .string(uid.hex)), ("reset", .bool(true)), ("row_marked", .bool(marked))])
        case .lockoutStatus: return lockoutStatus()
        case .lockoutClear:
            runtime.submit(.admin(.clearLockout))
            return .object([("cleared", .bool(true))])
        case .feedbackPlay:
            guard let kind = FeedbackKind(rawValue: try p.string("pattern")) else {
                throw DaemonError.request(
                    "unknown pattern; one of: \(FeedbackKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            runtime.submit(.admin(.playFeedback(kind)))
            return .object([("pattern", .string(kind.rawValue))])
        case .readerInfo:
            return .object([
                ("health", .string(runtime.sync { runtime.readerHealth })), ("connstring", .string(readerConnstring)),
                ("last_error", .optional(readerLoop.lastError)),
            ])
        case .readerOSDPInstall: return try osdpInstall(p)  // OSDPDoor.swift
        case .readerOSDPStatus: return osdpStatus()
        case .secretsList:
            // A removed secret stays listed, inactive, as history (issue 24 M1).
            let removed = try store.secretTombstones()
            return .array(
                try store.secrets().map {
                    $0.listing(removed: removed.contains(FleetDocument.tombstone(of: $0.key)))
                })
        case .secretsNew:
            let action = try p.int("action")
            let secret = try store.addSecret(
                action: action, key: try Crypto.randomBytes(32), label: try p.string("label", default: ""),
                origin: .generated,
                now: Int64(time(nil)))
            return secret.listing()
        case .secretsRotate:
            // A new generated secret signs from now on; the old ones keep
            // validating the stickers already written until removed.
            let action = try p.int("action")
            let secret = try store.addSecret(
                action: action, key: try Crypto.randomBytes(32), label: try p.string("label", default: "rotated"),
                origin: .generated, now: Int64(time(nil)))
            return secret.listing()
        case .secretsRemove:
            try store.removeSecret(id: Int64(try p.int("id")), now: Int64(time(nil)))
            return .object([
                ("removed", .int(try p.int("id"))),
                (
                    "note",
                    .string(
                        "kept inactive as history; the next fleet push carries its removal, and no door takes it back"
                    )
                ),
            ])
        case .secretsImport:
            let link = try ShareLink.parse(try p.string("link"))
            let secret = try store.addSecret(
                action: link.action, key: link.key, label: link.label ?? "imported", origin: .imported,
                now: Int64(time(nil)))
            return secret.listing()
        case .secretsExport:
            return try exportSecret(id: Int64(try p.int("id")), allowV1: try p.bool("allow_v1"), peer: peer)
        case .keysNew, .keysImport, .keysExport:
            return try keys(method, p)
        case .simTap, .simRemove, .simReinsert, .simDump, .simPress, .simDoor, .simTear:
            return try simulate(method, p)
        #if DEBUG
            case .debugStall:
                guard environment["GATEWAYD_TEST_HOOKS"] == "1" else {
                    throw DaemonError.request("unknown method \(method.rawValue)")
                }
                // Debug builds' tests only (not compiled into a release binary):
                // block the door queue to prove the watchdog stops.
                let seconds = max(0, min(try p.double("seconds", default: 1), 30))
                runtime.queue.async { usleep(UInt32(seconds * 1_000_000)) }
                return .object([("stalled_s", .double(seconds))])
        #endif
        case .tagsList, .tagsRevoke, .tagsExpire, .tagsForget, .tagsEnrollUID, .tagsEnrollCard, .log, .logVerify,
            .backup:
            return try registryMethod(method, p, peer: peer)
        case .pinsSet, .pinsAddCode, .pinsRemove:
            return try pinMethod(method, p, now: Int64(time(nil)), source: "control:uid=\(peer.uid)")
        case .logFollow:
            throw DaemonError.request("log.follow is a stream; the control server answers it")
        case .fleetStatus, .fleetPublish, .fleetPull: return try answerFleet(method, p)
        case .lockdownStart, .lockdownEnd, .lockdownStatus, .siteCommand:
            return try answerLockdown(method, p, peer: peer)  // SiteLockdown.swift
        }
    }

    private var readerConnstring: String { simulator?.connstring ?? configuration.reader.connstring }

    func status() -> JSONValue {
        let (m, health, lastTag, events, lastUnlock, floor, schedule) = runtime.sync {
            (
                runtime.machine, runtime.readerHealth, runtime.lastTag, runtime.recentEvents, runtime.lastUnlock,
                runtime.clockFloor.unix, runtime.scheduleInfo
            )
        }
        let now = MonotonicClock.now()
        let lock = m.lockoutStatus(at: now)
        let outputs: [(String, JSONValue)] = configuration.outputs.map {
            ($0.name, JSONValue.string(m.outputState($0.name).rawValue))
        }
        let running: [JSONValue] = m.running.map {
            JSONValue.object([("action", .int(Int($0.action))), ("source", .string($0.source))])
        }
        let globalRemaining: JSONValue =
            lock.globalUntil.map { JSONValue.int(Int($0.since(now).millisecondsClamped)) } ?? .null
        var fields: [(String, JSONValue)] = [
            ("device", .string(configuration.deviceID)),
            ("state", .string(m.state.rawValue)),
            ("mode", .string(m.mode.rawValue)),
            ("door_open", .bool(m.doorOpen)),
            // The door contact's alarm and held-open stage (docs/policy.md "Door contact").
            ("door_alarm", .string(m.doorAlarm.rawValue)), ("held_open", .string(m.heldOpenStage.rawValue)),
            ("reader", .string(health)),
            ("clock_synchronised", .bool(runtime.clockSynchronised())),
            // Sticker expiry is judged no earlier than this (the latest synchronised time seen).
            ("clock_floor", floor > 0 ? .string(UTCTime.iso8601(floor)) : .null),
            ("uptime_s", .int(Int(now.since(started).millisecondsClamped / 1000))),
            ("outputs", .object(outputs)),
            ("running", .array(running)),
            (
                "lockout",
                .object([
                    ("global_remaining_ms", globalRemaining), ("tags", .int(Int(lock.tags.count))),
                    ("keypads", .int(runtime.keypadLockouts.count)),
                ])
            ),
            ("approval", Self.approvalStatus(m, now: now)),
            ("fire", Self.fireStatus(m)),
            ("lockdown", DoorRuntime.lockdownStatus(m)),
            ("broker", remote.status()),
            ("store", auditWriter.statusDocument),
            // The schedule Home Assistant is shown (docs/policy.md), or null.
            ("schedule", schedule ?? .null),
        ]
        if let snapshot = simulatedBoard?.snapshot() {
            let lines: [(String, JSONValue)] = snapshot.outputs.sorted { $0.key < $1.key }.map {
                ($0.key, JSONValue.string($0.value.state.rawValue))
            }
            let lights: [(String, JSONValue)] = snapshot.indicators.sorted { $0.key < $1.key }.map {
                ($0.key, JSONValue.bool($0.value))
            }
            fields.append(("board", .object([("outputs", .object(lines)), ("indicators", .object(lights))])))
        }
        if let t = lastTag {
            fields.append(
                (
                    "last_tag",
                    .object([
                        ("uid", .string(t.uid.hex)), ("content", .string(t.content)), ("verdict", .string(t.verdict)),
                    ])
                ))
        }
        if let lastUnlock { fields.append(("last_unlock_monotonic_ns", .int(Int(clamping: lastUnlock.nanoseconds)))) }
        // When the last events became durable (the relay does not wait for them: make bench-storage).
        if let durable = auditWriter.lastDurableAt {
            fields.append(("last_event_durable_monotonic_ns", .int(Int(clamping: durable.nanoseconds))))
        }
        // Each OSDP reader of [[readers]]: online, Secure Channel, tamper (OSDPDoor.swift, issue 35).
        if !osdpReaders.readers.isEmpty { fields.append(("outdoor_readers", osdpStatus())) }
        fields.append(("last_events", .array(events)))
        return .object(fields)
    }

    private func resetClockFloor(by caller: String) throws -> JSONValue {
        switch try runtime.resetClockFloor(by: caller) {
        case .lowered(let from, let to):
            return .object([
                ("reset", .bool(true)), ("from", .string(UTCTime.iso8601(from))),
                ("clock_floor", .string(UTCTime.iso8601(to))),
            ])
        case .notAhead(let floor):
            return .object([
                ("reset", .bool(false)), ("clock_floor", floor > 0 ? .string(UTCTime.iso8601(floor)) : .null),
                ("why", .string("the floor is not ahead of the clock")),
            ])
        case .clockUnsynchronised:
            throw DaemonError.request(
                "the clock is not synchronised: the floor is only lowered to a synchronised time (check NTP, e.g. timedatectl)"
            )
        }
    }

    /// A secret's share link (docs/formats.md §2). The link has no room for an
    /// origin (the phone app's and older gateways' parsers take idx, key and
    /// label only), so whoever imports it holds the key as imported, and v1
    /// stickers signed with it open there. For a key this gateway generated
    /// that includes every v2 sticker it wrote, its `u` cut off (review H1):
    /// such a key leaves only with `allow_v1`, and that export is audited.
    private func exportSecret(id: Int64, allowV1: Bool, peer: Peer) throws -> JSONValue {
        guard let secret = try store.secrets().first(where: { $0.id == id }) else {
            throw DaemonError.request("no secret \(id)")
        }
        var answer: [(String, JSONValue)] = [("id", .int(id)), ("origin", .string(secret.origin.rawValue))]
        if secret.origin == .generated {
            guard allowV1 else {
                throw DaemonError.request(
                    "secret \(id) was generated by this gateway and is exported only with --allow-v1. "
                        + ShareLinkWarning.generated
                        + " To share this door's stickers with other doors use the fleet (fleet push --secrets): "
                        + "the key stays v2-only there.")
            }
            try store.appendAudit(
                time: Int64(time(nil)), kind: "secret_exported", reason: "allow_v1", action: secret.action,
                source: "control:uid=\(peer.uid)",
                detail: "secret \(id) (generated) exported as a share link with --allow-v1")
            answer.append(("warning", .string("secret \(id) is gateway-generated. " + ShareLinkWarning.generated)))
        }
        let link = ShareLink(action: secret.action, key: secret.key, label: secret.label.isEmpty ? nil : secret.label)
        answer.insert(("link", .string(link.text)), at: 1)
        return .object(answer)
    }

    private func lockoutStatus() -> JSONValue {
        let m = runtime.sync { runtime.machine }
        let now = MonotonicClock.now()
        let lock = m.lockoutStatus(at: now)
        let globalRemaining: JSONValue =
            lock.globalUntil.map { JSONValue.int(Int($0.since(now).millisecondsClamped)) } ?? .null
        let tags: [JSONValue] = lock.tags.sorted { $0.key.hex < $1.key.hex }.map {
            JSONValue.object([
                ("uid", .string($0.key.hex)), ("remaining_ms", .int(Int($0.value.since(now).millisecondsClamped))),
            ])
        }
        let readers: [JSONValue] = lock.readers.sorted { $0.key < $1.key }.map {
            JSONValue.object([
                ("reader", .string($0.key)), ("remaining_ms", .int(Int($0.value.since(now).millisecondsClamped))),
            ])
        }
        return .object([
            ("global_remaining_ms", globalRemaining), ("tags", .array(tags)), ("readers", .array(readers)),
            ("keypads", keypadLockoutList(now: now)),
        ])
    }

    private func keys(_ method: ControlMethod, _ p: [String: JSONValue]) throws -> JSONValue {
        let name: KeyName
        switch try p.string("name") {
        case "otp": name = .compatTimestamp
        case "command": name = .nativeCommand
        default: throw DaemonError.request("key name must be otp or command")
        }
        let now = Int64(time(nil))
        switch method {
        case .keysNew:
            let generation = try store.setKey(name, try Crypto.randomBytes(name.length), now: now)
            return .object([
                ("name", .string(try p.string("name"))), ("created", .int(now)), ("generation", .int(generation)),
            ])
        case .keysImport:
            guard let key = Hex.decode(try p.string("key").filter { !$0.isWhitespace }), key.count == name.length else {
                throw DaemonError.request("the \(try p.string("name")) key is \(name.length * 2) hex digits")
            }
            let generation = try store.setKey(name, key, now: now)
            return .object([
                ("name", .string(try p.string("name"))), ("imported", .bool(true)), ("generation", .int(generation)),
            ])
        default:
            guard let key = try store.key(name) else {
                throw DaemonError.request(
                    "no \(try p.string("name")) key yet; make one with keys \(try p.string("name")) new")
            }
            guard name == .nativeCommand else {
                return .object([("name", .string(try p.string("name"))), ("key", .string(Hex.encode(key)))])
            }
            // Never the site command key: the key of one door (this one, or
            // --device), which opens that door only (docs/security.md "M3").
            let device = try p.string("device", default: configuration.deviceID)
            guard !device.isEmpty, device.utf8.count <= 64 else { throw DaemonError.request("device: 1…64 bytes") }
            return .object([
                ("name", .string(try p.string("name"))), ("device", .string(device)),
                ("key", .string(Hex.encode(CommandJudge.doorCommandKey(siteKey: key, device: device)))),
            ])
        }
    }

    /// When the insert went to pn532-sim (CLOCK_MONOTONIC, as `last_unlock_monotonic_ns`):
    /// where `make bench` starts a tap, as reader-bench starts its own (scripts/bench-daemon.py).
    private static func insertSent(_ t: MonotonicInstant) -> (String, JSONValue) {
        ("insert_sent_monotonic_ns", .int(Int(clamping: t.nanoseconds)))
    }

    private func simulate(_ method: ControlMethod, _ p: [String: JSONValue]) throws -> JSONValue {
        guard let control = simulatorControl, let sim = simulatedBoard else {
            throw DaemonError.request("sim commands need board.kind = \"sim\"")
        }
        let now = MonotonicClock.now()
        switch method {
        case .simTap:
            let uid: TagUID
            if let hex = p["uid"]?.stringValue {
                guard let u = TagUID(hex: hex), u.bytes.count == 7 else {
                    throw DaemonError.request("uid must be 7 bytes of hex (an NTAG21x UID)")
                }
                uid = u
            } else {
                uid = TagUID(try [0x04] + Crypto.randomBytes(6))
            }
            if try p.bool("ntag424") {
                // A factory-fresh NTAG 424 DNA (docs/ntag424.md).
                _ = try? SimulatorControl.send("remove", to: control)
                // Armed with no tag in the field, it counts from the tag's
                // arrival (armed after it, the door's polling may have begun).
                if let n = p["tear_after"]?.intValue { _ = try SimulatorControl.send("tear-after \(n)", to: control) }
                let sent = MonotonicClock.now()
                let answer = try SimulatorControl.send("insert ntag424 \(uid.hex)", to: control)
                return .object([("uid", .string(uid.hex)), ("simulator", .string(answer)), Self.insertSent(sent)])
            }
            let image: TagImage
            if let dump = p["dump"]?.stringValue {
                guard let bytes = Hex.decode(dump) else { throw DaemonError.request("dump must be hex") }
                image = try TagImage(dump: bytes)
            } else if try p.bool("blank") {
                image = try TagImage.make(type: .ntag213, uid: uid)
            } else {
                let url = try p.string("url")
                image = try TagImage.make(type: .ntag213, uid: uid, message: NDEFMessage(records: [.uri(url)]))
            }
            let file = configuration.paths.runtimeDirectory + "/sim-tap.dump"
            try Files.write(file, image.bytes)
            _ = try? SimulatorControl.send("remove", to: control)  // "error no tag in the field" is fine
            // A dump keeps its own UID unless one was given.
            let tagUID = p["dump"] != nil && p["uid"] == nil ? image.uid : uid
            // Armed before the tag comes (see above): N counts from its arrival.
            if let n = p["tear_after"]?.intValue { _ = try SimulatorControl.send("tear-after \(n)", to: control) }
            let sent = MonotonicClock.now()
            let answer = try SimulatorControl.send("insert \(tagUID.hex) \(file)", to: control)
            return .object([("uid", .string(tagUID.hex)), ("simulator", .string(answer)), Self.insertSent(sent)])
        case .simRemove:
            // Removing when the tag already left (torn away) is not an error.
            let answer = (try? SimulatorControl.send("remove", to: control)) ?? "no tag in the field"
            return .object([("simulator", .string(answer))])
        case .simTear:
            let n = try p.int("after")
            guard n >= 0 else { throw DaemonError.request("after must be 0 or more") }
            return .object([("simulator", .string(try SimulatorControl.send("tear-after \(n)", to: control)))])
        case .simReinsert:
            return .object([("simulator", .string(try SimulatorControl.send("reinsert", to: control)))])
        case .simDump:
            let file = configuration.paths.runtimeDirectory + "/sim-dump.bin"
            _ = try SimulatorControl.send("dump \(file)", to: control)
            guard let data = Files.contents(file) else {
                throw DaemonError.simulator("no dump written")
            }
            return .object([("bytes", .int(data.count)), ("dump", .string(Hex.encode(Array(data))))])
        case .simPress:
            let hold = max(0, min(try p.double("hold", default: 0.1), 60))
            // `input`: the button (default) or the request-to-exit input.
            let input: InputKind
            switch try p.string("input", default: "button") {
            case "button": input = .button
            case "request_to_exit": input = .requestToExit
            default: throw DaemonError.request("input must be button or request_to_exit")
            }
            sim.inject(InputEvent(input: input, active: true, at: now))
            DispatchQueue.global().asyncAfter(deadline: .now() + hold) {
                sim.inject(InputEvent(input: input, active: false, at: MonotonicClock.now()))
            }
            return .object([("hold_s", .double(hold)), ("input", .string(input.rawValue))])
        default:
            let open: Bool
            switch try p.string("state") {
            case "open": open = true
            case "closed": open = false
            default: throw DaemonError.request("door state must be open or closed")
            }
            sim.inject(InputEvent(input: .doorContact, active: open, at: now))
            return .object([("door", .string(open ? "open" : "closed"))])
        }
    }
}

extension StickerSecret {
    /// Never the key itself.
    func listing(removed: Bool = false) -> JSONValue {
        .object([
            ("id", .int(id)), ("action", .int(action)), ("label", .string(label)),
            ("created", .string(UTCTime.iso8601(created))), ("origin", .string(origin.rawValue)),
            ("active", .bool(active)), ("removed", .bool(removed)),
        ])
    }
}
