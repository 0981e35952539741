import DoorCore
import GatewayConfig
import GatewayControl
import GatewayStore
import Glibc
import Synchronization

/// Entry and exit (issue 36, docs/policy.md "Entry, exit and anti-passback"): at a door with an
/// entry and an exit reader, the tap's passage is read before it is decided (the anti-passback
/// rule is the core's, `Passback`) and a granted tap's passage is recorded after its event, on
/// the door queue, so the next tap sees it. Who is in goes into the state document (`occupancy`:
/// Home Assistant's sensor) and to `gatewayctl occupancy`. Per door: nothing of it leaves in a
/// fleet document.
final class PassageBook: Sendable {
    /// The state document's `occupancy`, nil until first read (or after a change).
    private let cached = Mutex<JSONValue?>(nil)
    func get() -> JSONValue? { cached.withLock { $0 } }
    func set(_ value: JSONValue?) { cached.withLock { $0 = value } }

    /// At most this many people in the state document (the count is always whole).
    static let listedInState = 50
}

extension DoorRuntime {
    /// The tap with its reader's side and the credential's last passage, when the door has an
    /// entry and an exit reader and the tap names one of them.
    func withPassage(_ facts: TapFacts) -> TapFacts {
        guard let side = configuration.passageSide(reader: facts.reader) else { return facts }
        var f = facts
        do { f.passage = PassageFacts(side: side, last: try store.presence(facts.uid)) } catch {
            log.error("passage of \(facts.uid.hex) unreadable (a hard passback rule denies): \(error)")
            f.passage = PassageFacts(side: side, last: nil, unreadable: true)
        }
        return f
    }

    /// After a granted tap's event: in at an entry reader, out at an exit reader. A store that
    /// cannot be written loses only this passage (logged); the door has opened already.
    func notePassage(_ event: DoorEvent, at wall: Int64) {
        guard event.kind == .accessGranted, let uid = event.uid, let source = event.source,
            source.hasPrefix("reader:")
        else { return }
        let name = String(source.dropFirst("reader:".count))
        guard let side = configuration.passageSide(reader: name) else { return }
        do {
            try store.recordPassage(uid, Presence(inside: side == .entry, since: wall, reader: name))
        } catch {
            log.error("passage of \(uid.hex) at \(name) not saved: \(error)")
        }
        passages.set(nil)
    }

    /// The state document's `occupancy`: the count and who (label, since, reader), labels only
    /// when `[mqtt] label_in_events` lets them out (else the UID), oldest first.
    func occupancyDocument() -> JSONValue {
        if let cached = passages.get() { return cached }
        let doc: JSONValue
        do {
            let people = try store.occupants()
            let labels = configuration.mqtt.labelInEvents
            doc = .object([
                ("count", .int(people.count)),
                (
                    "people",
                    .array(
                        people.prefix(PassageBook.listedInState).map { p in
                            .object([
                                (
                                    "who",
                                    .string(labels && !p.label.isEmpty ? p.label : p.uid.card?.description ?? p.uid.hex)
                                ),
                                ("since", .string(UTCTime.iso8601(p.since))), ("reader", .string(p.reader)),
                            ])
                        })
                ),
            ])
        } catch {
            log.error("occupancy unreadable: \(error)")
            return .object([("count", .null), ("error", .string("store unreadable"))])
        }
        passages.set(doc)
        return doc
    }

    /// The state document with its `occupancy`, when the door records passages.
    func withOccupancy(_ doc: JSONValue) -> JSONValue {
        guard configuration.tracksPassage, case .object(let fields) = doc else { return doc }
        return .object(fields + [("occupancy", occupancyDocument())])
    }

    /// After `gatewayctl passback reset`: the state document shows it.
    func passagesChanged() {
        queue.async { [self] in
            passages.set(nil)
            stateChanged()
        }
    }
}

extension ControlService {
    /// `gatewayctl occupancy` (and its roll-call export): who is in, from this door's store.
    func occupancy() throws -> JSONValue {
        let configuration = runtime.sync { runtime.configuration }
        let zone = runtime.sync { runtime.zone }
        guard configuration.tracksPassage else { return OccupancyReport.untracked }
        return OccupancyReport.json(
            try store.occupants().map(OccupancyReport.Person.init), zone: zone, now: Int64(time(nil)))
    }

    /// `policy explain --reader NAME`: the reader's side and the tag's passage, as a tap there
    /// would be decided with.
    func explainedPassage(_ p: [String: JSONValue], uid: TagUID?) throws -> PassageFacts? {
        guard p["reader"] != nil else { return nil }
        let name = try p.string("reader")
        let configuration = runtime.sync { runtime.configuration }
        guard let side = configuration.passageSide(reader: name) else {
            throw DaemonError.request(
                "\"\(name.prefix(32))\" is no reader of a door with an entry and an exit reader (readers: \(configuration.readers.map(\.name).joined(separator: ", ")))"
            )
        }
        guard let uid else { return PassageFacts(side: side, last: nil) }
        return PassageFacts(side: side, last: try store.presence(uid))
    }

    /// `gatewayctl passback reset UID|--all`: the credential (or everyone) counts as out; audited
    /// `passback_reset` with who asked.
    func passbackReset(_ p: [String: JSONValue], peer: Peer) throws -> JSONValue {
        let source = "control:uid=\(peer.uid)"
        if try p.bool("all") {
            let n = try store.resetAllPassages()
            runtime.note(DoorEvent(.passbackReset, source: source), detail: "all: \(n)")
            runtime.passagesChanged()
            return .object([("reset", .int(n))])
        }
        let text = try p.string("uid")
        guard let uid = TagUID(hex: text) ?? CardNumber(text: text)?.registryKey else {
            throw DaemonError.request("uid must be 4, 7 or 10 bytes of hex, or a card number (26:FACILITY:NUMBER)")
        }
        guard try store.resetPassage(uid) else {
            throw DaemonError.request("\(uid.hex) has no recorded passage: nothing to reset")
        }
        runtime.note(DoorEvent(.passbackReset, uid: uid, source: source))
        runtime.passagesChanged()
        return .object([("reset", .int(1)), ("uid", .string(uid.hex))])
    }
}
