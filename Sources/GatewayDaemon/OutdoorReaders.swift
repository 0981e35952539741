import DoorCore
import DoorIO
import Logging
import Synchronization

/// A Wiegand reader's settings (issue 35). INTERIM: until `[[readers]]`
/// drives Wiegand readers (it parses them and warns at start), gatewayd takes
/// one Wiegand reader from the environment variable `GATEWAYD_WIEGAND_INTERIM`:
///
///     GATEWAYD_WIEGAND_INTERIM="name=gate,chip=gpiochip0,d0=GPIO6,d1=GPIO13,frame_gap_ms=50"
///
/// (`chip` defaults to the board's; `frame_gap_ms` to 50, clamped to 25–100).
/// Unset: no Wiegand reader. A malformed value is logged and reported as a
/// reader fault (the door goes on with its other readers).
struct WiegandSettings: Equatable {
    static let variable = "GATEWAYD_WIEGAND_INTERIM"
    var lines: WiegandLines

    struct Invalid: Error, CustomStringConvertible {
        var description: String
    }

    static func interim(_ environment: [String: String], defaultChip: String) throws -> WiegandSettings? {
        guard let text = environment[variable], !text.isEmpty else { return nil }
        var fields: [String: String] = [:]
        for part in text.split(separator: ",") {
            let kv = part.split(separator: "=", maxSplits: 1).map { String($0).trimmingSpaces }
            guard kv.count == 2, !kv[1].isEmpty,
                ["name", "chip", "d0", "d1", "frame_gap_ms"].contains(kv[0]), fields[kv[0]] == nil
            else {
                throw Invalid(
                    description: "\(variable): \"\(part.prefix(40))\" is not name=, chip=, d0=, d1= or frame_gap_ms=")
            }
            fields[kv[0]] = kv[1]
        }
        guard let name = fields["name"], name.utf8.count <= 32,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { throw Invalid(description: "\(variable): name= is 1–32 letters, digits, - or _") }
        guard let d0 = fields["d0"], let d1 = fields["d1"], d0 != d1 else {
            throw Invalid(description: "\(variable): d0= and d1= name two different lines")
        }
        var gap = Duration.milliseconds(50)
        if let ms = fields["frame_gap_ms"] {
            guard let n = Int(ms), (25...100).contains(n) else {
                throw Invalid(description: "\(variable): frame_gap_ms= is 25–100")
            }
            gap = .milliseconds(n)
        }
        return WiegandSettings(
            lines: WiegandLines(
                name: name, chip: fields["chip"] ?? defaultChip, d0: LineSpec(d0), d1: LineSpec(d1), frameGap: gap))
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}

/// The Wiegand reader as one of the daemon's services: its frames go to the
/// door runtime as a card read (`TapFacts(card:)`, link `wiegand`) or a
/// keypad key; noise is logged, never a tap.
final class WiegandService: Sendable {
    let settings: WiegandSettings
    private let reader = Mutex<WiegandReader?>(nil)
    private let log: Logger

    init(settings: WiegandSettings, log: Logger) {
        self.settings = settings
        self.log = log
    }

    func start(runtime: DoorRuntime) {
        let name = settings.lines.name
        let log = log
        do {
            let started = try WiegandReader.start(settings.lines, logger: log) { frame in
                switch frame {
                case .card(let number):
                    runtime.readerReport(
                        .arrived(TapFacts(card: CardRead(number: number, reader: name, link: .wiegand))))
                case .key(let key):
                    runtime.readerReport(.keypad(reader: name, key))
                case .invalid(let bits, let reason):
                    log.notice("wiegand '\(name)': \(bits)-bit frame dropped (\(reason))")
                }
            }
            reader.withLock { $0 = started }
        } catch {
            // The door keeps its other readers; this one is reported.
            log.error("wiegand reader '\(name)' not started: \(error)")
            // Its own fault event, naming it: not the PN532's reader state
            // (readerReport(.fault) put the whole door in reader fault, and
            // nothing from the PN532 would ever clear it).
            runtime.note(DoorEvent(.readerFault, reason: "wiegand not started: \(error)", source: "reader:\(name)"))
        }
    }

    func stop() { reader.withLock { $0.take() }?.stop() }
}

extension OutdoorReaderService {
    /// The Wiegand reader's service (nothing when none is set); see `WiegandSettings`.
    func wiegandService() -> DoorService {
        let settings: WiegandSettings
        do {
            guard let s = try WiegandSettings.interim(environment, defaultChip: configuration.chip) else {
                return DoorService(name: "wiegand reader")
            }
            settings = s
        } catch {
            return DoorService(
                name: "wiegand reader",
                start: { [log, runtime] in
                    log.error("wiegand reader not started: \(error)")
                    runtime.note(
                        DoorEvent(.readerFault, reason: "wiegand settings: \(error)", source: "reader:wiegand"))
                })
        }
        let service = WiegandService(settings: settings, log: log)
        return DoorService(
            name: "wiegand reader", start: { [runtime] in service.start(runtime: runtime) },
            stop: { service.stop() })
    }
}
