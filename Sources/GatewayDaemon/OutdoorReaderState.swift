import DoorCore
import GatewayControl
import Glibc
import GatewayConfig

/// An OSDP reader's link and tamper switch as it last reported them.
struct OutdoorReaderReport: Equatable, Sendable {
    var online = false
    var tamper = false
}

extension DoorRuntime {
    /// The state document's `readers` (issue 35, Home Assistant's reader
    /// entities): per outdoor reader of `[[readers]]`, its keypad's lockout,
    /// and for an OSDP reader its link (`online`) and tamper switch as it
    /// last reported them (offline and untampered until it does).
    static func outdoorReadersDocument(
        _ readers: [ReaderSettings], _ reported: [String: OutdoorReaderReport],
        keypadLocked: [String: MonotonicInstant]
    ) -> JSONValue {
        .object(
            readers.filter { $0.kind != .pn532 }.map { r -> (String, JSONValue) in
                var fields: [(String, JSONValue)] = [("keypad_lockout", .bool(keypadLocked[r.name] != nil))]
                if r.kind == .osdp {
                    let s = reported[r.name] ?? OutdoorReaderReport()
                    fields = [("online", .bool(s.online)), ("tamper", .bool(s.tamper))] + fields
                }
                return (r.name, .object(fields))
            })
    }
}

extension ControlService {
    /// `lockout status`'s `keypads`: each outdoor reader whose keypad is
    /// locked out (issue 35), the time left and its end on the wall clock.
    /// Kept in memory like the door's tag lockouts: a restart ends them.
    func keypadLockoutList(now: MonotonicInstant) -> JSONValue {
        let wall = Int64(time(nil))
        return .array(
            runtime.keypadLockouts.sorted { $0.key < $1.key }.map {
                let remaining = $0.value.since(now).millisecondsClamped
                return .object([
                    ("reader", .string($0.key)), ("remaining_ms", .int(Int(remaining))),
                    ("until", .string(UTCTime.iso8601(wall + Int64((remaining + 999) / 1000)))),
                ])
            })
    }
}
