import Dispatch
import DoorCore
import DoorIO
import GatewayConfig
import Logging
import Synchronization

extension ReaderSettings {
    /// A Wiegand reader of `[[readers]]` as its adapter takes it: its lines on its chip
    /// (`[board] chip` unless it names its own), its frame gap and formats.
    func wiegandLines(boardChip: String) -> WiegandLines? {
        guard kind == .wiegand, let w = wiegand else { return nil }
        return WiegandLines(
            name: name, chip: w.chip ?? boardChip, d0: LineSpec(w.d0.description), d1: LineSpec(w.d1.description),
            frameGap: .milliseconds(w.frameGapMilliseconds), cardBits: w.bits, keypadBurst: w.keypadBurst)
    }
}

/// One Wiegand reader of `[[readers]]` as one of the daemon's services: its frames go to the
/// door runtime as a card read (`TapFacts(card:)`, link `wiegand`) or a keypad key; noise is
/// logged, never a tap. A reader that cannot start, or whose thread ends on an error (the chip
/// gone, a failed read), is reported offline — a `reader_fault` naming it, once per cause —
/// and started again each `retry` until it is back (`reader_recovered`, "wiegand online").
/// The door keeps its other readers meanwhile.
final class WiegandService: Sendable {
    /// The adapter's start, as `WiegandReader.start` (tests give another).
    typealias Starter =
        @Sendable (
            WiegandLines, Logger, _ deliver: @escaping @Sendable (WiegandDecoder.Frame) -> Void,
            _ failed: @escaping @Sendable (String) -> Void
        ) throws -> StoppableReader

    let lines: WiegandLines
    let retry: Duration
    private let starter: Starter
    private let log: Logger
    private let state = Mutex(State())

    private struct State {
        var reader: StoppableReader?
        var stopped = false
        /// The fault last reported, nil while online (a repeat of it is not reported again).
        var fault: String?
    }

    init(lines: WiegandLines, log: Logger, retry: Duration = .seconds(1), starter: Starter? = nil) {
        self.lines = lines
        self.log = log
        self.retry = retry
        self.starter =
            starter ?? { lines, log, deliver, failed in
                try WiegandReader.start(lines, logger: log, deliver: deliver, failed: failed)
            }
    }

    /// What it tells the door: its frames and its faults and recoveries (events naming it).
    struct Sink: Sendable {
        var frame: @Sendable (WiegandDecoder.Frame) -> Void
        var note: @Sendable (DoorEvent) -> Void
    }

    func start(_ sink: Sink) { attempt(sink) }

    /// The door runtime as the sink: cards and keys to the door, faults as its events.
    func start(runtime: DoorRuntime) {
        let name = lines.name
        let log = log
        start(
            Sink(
                frame: { frame in
                    switch frame {
                    case .card(let number):
                        runtime.readerReport(
                            .arrived(TapFacts(card: CardRead(number: number, reader: name, link: .wiegand))))
                    case .key(let key):
                        runtime.readerReport(.keypad(reader: name, key))
                    case .invalid(let bits, let reason):
                        log.notice("wiegand '\(name)': \(bits)-bit frame dropped (\(reason))")
                    }
                },
                // Its own events, naming it: not the PN532's reader state (readerReport(.fault)
                // put the whole door in reader fault, and nothing from the PN532 cleared it).
                note: { runtime.note($0) }))
    }

    private func attempt(_ sink: Sink) {
        let name = lines.name
        let outcome: Result<Void, Error> = state.withLock { s in
            guard !s.stopped, s.reader == nil else { return .success(()) }
            do {
                s.reader = try starter(lines, log, sink.frame) { [self] why in failed(why, sink) }
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success:
            let recovered = state.withLock { s -> Bool in
                guard s.reader != nil, s.fault != nil else { return false }
                s.fault = nil
                return true
            }
            if recovered {
                log.notice("wiegand reader '\(name)' online again")
                sink.note(DoorEvent(.readerRecovered, reason: "wiegand online", source: "reader:\(name)"))
            }
        case .failure(let error):
            offline("not started: \(error)", sink)
        }
    }

    /// On the reader's thread, its lines already released: it stopped on an error.
    private func failed(_ why: String, _ sink: Sink) {
        let reader = state.withLock { $0.reader.take() }
        reader?.stop()
        offline(why, sink)
    }

    private func offline(_ why: String, _ sink: Sink) {
        let name = lines.name
        let new = state.withLock { s -> Bool in
            guard !s.stopped, s.fault != why else { return false }
            s.fault = why
            return true
        }
        if new {
            log.error("wiegand reader '\(name)' offline: \(why); retrying every \(retry)")
            sink.note(DoorEvent(.readerFault, reason: "wiegand offline: \(why)", source: "reader:\(name)"))
        }
        let ms = Int(retry.components.seconds * 1000 + retry.components.attoseconds / 1_000_000_000_000_000)
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(ms)) { [self] in
            attempt(sink)
        }
    }

    func stop() {
        let reader = state.withLock { s -> StoppableReader? in
            s.stopped = true
            return s.reader.take()
        }
        reader?.stop()
    }

    /// Whether a reader is running now (tests).
    var online: Bool { state.withLock { $0.reader != nil } }
}

/// A running reader the service can stop (`WiegandReader`).
protocol StoppableReader: Sendable {
    func stop()
}

extension WiegandReader: StoppableReader {}

extension OutdoorReaderService {
    /// The Wiegand readers of `[[readers]]` as one service (nothing when there are none).
    func wiegandService() -> DoorService {
        let services = configuration.readers.compactMap { reader in
            reader.wiegandLines(boardChip: configuration.chip).map { WiegandService(lines: $0, log: log) }
        }
        guard !services.isEmpty else { return DoorService(name: "wiegand reader") }
        return DoorService(
            name: "wiegand reader",
            start: { [runtime] in for service in services { service.start(runtime: runtime) } },
            stop: { for service in services { service.stop() } })
    }
}
