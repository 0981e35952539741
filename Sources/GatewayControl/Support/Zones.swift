import DoorCore
import Glibc

/// The door's time zone (docs/policy.md): `clock.time_zone` from
/// /usr/share/zoneinfo, else the system's /etc/localtime, else UTC.
package enum Zones {
    static let directory = "/usr/share/zoneinfo"

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// The zone named in the configuration, or the system's.
    package static func load(_ name: String?) throws -> TimeZoneRules {
        if let name {
            let path = directory + "/" + name
            guard let bytes = Files.contents(path) else {
                throw Failure(
                    description:
                        "clock.time_zone \"\(name)\": \(path) cannot be read (is tzdata installed? apt-get install tzdata)"
                )
            }
            do { return try TimeZoneRules(tzif: bytes, name: name) } catch {
                throw Failure(description: "clock.time_zone \"\(name)\": \(path): \(error)")
            }
        }
        guard let bytes = Files.contents("/etc/localtime") else { return .utc }
        do { return try TimeZoneRules(tzif: bytes, name: systemZoneName() ?? "/etc/localtime") } catch {
            throw Failure(description: "/etc/localtime: \(error) (set clock.time_zone)")
        }
    }

    /// `Europe/Berlin` when /etc/localtime links into the zoneinfo directory.
    static func systemZoneName() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/etc/localtime", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let target = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = target.split(separator: "/", omittingEmptySubsequences: true)
        guard let i = parts.lastIndex(of: "zoneinfo"), i + 1 < parts.count else { return nil }
        return parts[(i + 1)...].joined(separator: "/")
    }

    /// `--at`: RFC 3339 with an offset or `Z`, or a local date and time
    /// without one (read in `zone`). Returns the instant and, for a local
    /// time in the repeated autumn hour, a note on which one was taken.
    package static func parseTime(_ text: String, zone: TimeZoneRules) throws -> (unix: Int64, note: String?) {
        let bad = Failure(
            description:
                "--at \"\(text.prefix(40))\": give RFC 3339 (2026-03-30T06:30:00Z, 2026-03-30T08:30:00+02:00) or a local time (2026-03-29T02:30)"
        )
        let parts = text.split(separator: "T", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let date = CivilDate(String(parts[0])) else { throw bad }
        var clock = Substring(parts[1])
        var offset: Int?
        if clock.hasSuffix("Z") || clock.hasSuffix("z") {
            offset = 0
            clock = clock.dropLast()
        } else if let sign = clock.lastIndex(where: { $0 == "+" || $0 == "-" }) {
            let o = clock[clock.index(after: sign)...].split(separator: ":", omittingEmptySubsequences: false)
            guard o.count == 2, o[0].count == 2, o[1].count == 2, let h = Int(o[0]), let m = Int(o[1]), h < 24, m < 60
            else { throw bad }
            offset = (h * 3600 + m * 60) * (clock[sign] == "-" ? -1 : 1)
            clock = clock[..<sign]
        }
        let t = clock.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(t.count), t.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isNumber) }),
            let h = Int(t[0]), let m = Int(t[1]), h < 24, m < 60
        else { throw bad }
        let s = t.count == 3 ? Int(t[2]) ?? 60 : 0
        guard s < 60 else { throw bad }
        let second = h * 3600 + m * 60 + s
        if let offset { return (date.dayNumber * 86_400 + Int64(second - offset), nil) }
        switch zone.resolve(date: date, secondOfDay: second) {
        case .unique(let u): return (u, nil)
        case .ambiguous(let first, let second):
            return (
                first,
                "\(text) happens twice in \(zone.name) (the clocks go back): read as the first, \(zone.local(first)); the second is \(zone.local(second))"
            )
        case .nonexistent(let gapEnd):
            throw Failure(
                description:
                    "--at \(text) does not exist in \(zone.name): the clocks go forward at \(zone.local(gapEnd - 1)) to \(zone.local(gapEnd)); give an offset or another time"
            )
        }
    }
}
