import DoorCore
import GatewayConfig
import GatewayStore

/// Who is in (issue 36), as `gatewayctl occupancy` shows it: the daemon answers it from its store,
/// and `occupancy export --from-store` (root, gatewayd not answering) reads the store itself —
/// one document either way.
///
/// `fromStore`: the door's own store, opened read-only (`GatewayStore.forRootTool`).
package enum OccupancyReport {
    package struct Person: Sendable {
        package var label: String
        /// A card as `tags list` shows it (26:FACILITY:NUMBER), a tag by its UID in hex.
        package var credential: String
        package var since: Int64
        package var reader: String
        package init(label: String, credential: String, since: Int64, reader: String) {
            (self.label, self.credential, self.since, self.reader) = (label, credential, since, reader)
        }
        /// A card as `tags list` shows it, a tag by its UID.
        package init(_ o: GatewayStore.Occupant) {
            self.init(
                label: o.label, credential: o.uid.card?.description ?? o.uid.hex, since: o.since, reader: o.reader)
        }
    }

    /// A door without an entry and an exit reader counts nobody.
    package static let untracked: JSONValue = .object([
        ("tracked", .bool(false)), ("count", .int(0)), ("people", .array([])),
        ("note", .string("this door has no entry and exit reader pair in [[readers]]: nobody is counted")),
    ])

    package static func fromStore(_ configuration: GatewayConfiguration, now: Int64) throws -> JSONValue {
        guard configuration.tracksPassage else { return untracked }
        let store = try GatewayStore.forRootTool(stateDirectory: configuration.paths.stateDirectory)
        let zone = try Zones.load(configuration.timeZone)
        return json(try store.occupants().map(Person.init), zone: zone, now: now)
    }

    package static func json(_ people: [Person], zone: TimeZoneRules, now: Int64) -> JSONValue {
        .object([
            ("tracked", .bool(true)), ("at", .string(UTCTime.iso8601(now))), ("zone", .string(zone.name)),
            ("count", .int(people.count)),
            (
                "people",
                .array(
                    people.map { p in
                        .object([
                            ("label", .string(p.label)), ("uid", .string(p.credential)),
                            ("since", .string(UTCTime.iso8601(p.since))),
                            ("since_local", .string(zone.local(p.since).description)), ("reader", .string(p.reader)),
                        ])
                    })
            ),
        ])
    }
}
