import DoorCore
import Dispatch
import GatewayConfig
import GatewayControl
import GatewayStore
import Glibc
import Logging
import OSDP
import Synchronization

/// Where a reader's Secure Channel key lives (the store, `GatewayStore.osdpReaderKey`).
protocol OSDPKeyStore: Sendable {
    func key(for reader: String) throws -> [UInt8]?
    func store(_ key: [UInt8], for reader: String) throws
}

/// A card an OSDP reader read, as the reader sent it (osdp_RAW): the port the door's tap
/// decision takes card reads from (issue 35). `secure`: read inside a Secure Channel session.
struct OSDPCardRead: Equatable, Sendable {
    var reader: String
    /// 0: raw, 1: Wiegand (P/data/P).
    var format: UInt8
    var bitCount: Int
    /// The bits, first sent first, padded with zeros to whole bytes.
    var bits: [UInt8]
    var secure: Bool
    /// An osdp_FMT read: the characters the reader sent (ASCII card number), `bits` unused.
    var formatted: [UInt8]? = nil
}

/// The OSDP readers of `[[readers]]` (issue 35): one thread per serial line (an RS-485 bus
/// may hold several readers, one command on the line at a time), a `ControlPanel` per reader
/// polling it, its Secure Channel key from the store, its news reported to `deliver`.
///
/// Secure Channel is enforced: a reader is driven with its own key (`.required`) or, named
/// `insecure = true`, without Secure Channel; a reader with no key yet is not driven at all
/// until `gatewayctl reader osdp install NAME` opens its install window (SCBK-D, then
/// osdp_KEYSET with a fresh key, stored before the window closes). A refusal (plaintext
/// reader, wrong key, a bad MAC, a downgrade) is reported once per cause, and nothing a
/// refused frame says is delivered. A reader that stops answering is reported offline within
/// about 0.7 s (three 200 ms reply timeouts); the door keeps deciding with its other readers.
final class OSDPReaders: Sendable {
    enum Report: Equatable, Sendable {
        case online(reader: String, secure: Bool)
        case offline(reader: String)
        /// The reader was refused, or could not be driven (why, for the audit row and the log).
        case refused(reader: String, why: String)
        case card(OSDPCardRead)
        case keypad(reader: String, keys: [UInt8])
        /// Tamper and power as the reader reports them (osdp_LSTATR), when they change.
        case status(reader: String, tamper: Bool, powerFailure: Bool)
        /// The install window stored a new key for the reader.
        case installed(reader: String)
        /// The install window closed without a key (why).
        case installClosed(reader: String, why: String)
    }

    /// What `status` and `reader osdp` print of one reader.
    struct Status: Equatable, Sendable {
        var online = false
        var secure = false
        var tamper = false
        var powerFailure = false
        var installing = false
        var lastRefusal: String?
    }

    enum InstallError: Error, CustomStringConvertible {
        case unknownReader(String)
        case insecure(String)
        case notRunning
        var description: String {
            switch self {
            case .unknownReader(let name): return "no OSDP reader named \"\(name)\" in [[readers]]"
            case .insecure(let name):
                return "reader \"\(name)\" is insecure = true: it has no Secure Channel key to install"
            case .notRunning: return "the OSDP readers are not running"
            }
        }
    }

    private struct Shared {
        var running = true
        var statuses: [String: Status] = [:]
        var feedback: [String: [Command]] = [:]
        /// Install windows asked for and not yet taken by the bus thread: reader → length (ms).
        var installRequests: [String: UInt64] = [:]
    }

    let readers: [ReaderSettings]
    private let keys: any OSDPKeyStore
    private let log: Logger
    private let shared = Mutex(Shared())
    private let finished = DispatchSemaphore(value: 0)
    private let threads = Mutex(0)
    /// The control panel's timing (tests shorten it).
    let timing: ControlPanelTiming

    struct ControlPanelTiming: Sendable {
        var pollInterval: UInt64 = 50
        var replyTimeout: UInt64 = 200
        var retries = 2
        var reconnectInterval: UInt64 = 1000
    }

    init(readers: [ReaderSettings], keys: any OSDPKeyStore, log: Logger, timing: ControlPanelTiming = .init()) {
        self.readers = readers.filter { $0.kind == .osdp && $0.osdp != nil }
        self.keys = keys
        self.log = log
        self.timing = timing
        shared.withLock { s in for r in self.readers { s.statuses[r.name] = Status() } }
    }

    var statuses: [String: Status] { shared.withLock { $0.statuses } }

    /// One thread per serial line; each reports to `deliver` (the door runtime's port).
    func start(deliver: @escaping @Sendable (Report) -> Void) {
        var buses: [String: [ReaderSettings]] = [:]
        var order: [String] = []
        for reader in readers {
            guard let device = reader.osdp?.device else { continue }
            if buses[device] == nil { order.append(device) }
            buses[device, default: []].append(reader)
        }
        for device in order {
            let members = buses[device] ?? []
            do {
                try Threads.detach(name: "gatewayd.osdp") { [self] in
                    runBus(device: device, readers: members, deliver: deliver)
                    finished.signal()
                }
                threads.withLock { $0 += 1 }
            } catch {
                log.error("osdp \(device): \(error)")
                for r in members { deliver(.refused(reader: r.name, why: "\(error)")) }
            }
        }
    }

    /// Stops every bus thread and waits for them (each within one poll wait).
    func stop() {
        shared.withLock { $0.running = false }
        let count = threads.withLock { n -> Int in
            defer { n = 0 }
            return n
        }
        for _ in 0..<count { finished.wait() }
    }

    /// The door's feedback pattern on every OSDP reader (what the door decided, shown outside).
    func show(_ pattern: FeedbackPattern) {
        let commands = ReaderFeedback.commands(for: pattern)
        guard !commands.isEmpty else { return }
        shared.withLock { s in
            for r in readers where s.statuses[r.name]?.online == true { s.feedback[r.name, default: []] += commands }
        }
    }

    /// Opens `reader`'s install window for `milliseconds`: the reader is driven with SCBK-D,
    /// given a fresh key by osdp_KEYSET and the key stored; the window closes itself then, or
    /// when it times out. Outside it no reader is ever driven with SCBK-D.
    func openInstallWindow(reader name: String, milliseconds: UInt64) throws(InstallError) {
        guard let reader = readers.first(where: { $0.name == name }) else { throw .unknownReader(name) }
        guard reader.osdp?.insecure != true else { throw .insecure(name) }
        try shared.withLock { s throws(InstallError) in
            guard s.running else { throw .notRunning }
            s.installRequests[name] = milliseconds
        }
    }

    // MARK: The bus thread

    /// One reader on the bus: its control panel and what the thread tracks of it.
    private struct Link {
        let settings: ReaderSettings
        var cp: ControlPanel?
        var installUntil: UInt64?
        /// The key sent in osdp_KEYSET, stored once the reader acknowledges it.
        var pendingKey: [UInt8]?
        var lastReported: String?
        var status = Status()
        /// Whether `cp.start` ran (a control panel starts on its first turn on the line).
        var cpStarted = false
        var name: String { settings.name }
    }

    private static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1000 + UInt64(ts.tv_nsec) / 1_000_000
    }

    private func controlPanel(_ link: inout Link, install: Bool, now: UInt64, deliver: (Report) -> Void)
        -> ControlPanel?
    {
        guard let osdp = link.settings.osdp else { return nil }
        let security: ControlPanel.Security
        if install {
            security = .install
        } else if osdp.insecure {
            security = .insecure
        } else {
            let key: [UInt8]?
            do { key = try keys.key(for: link.name) } catch {
                note(&link, "its key is unreadable (\(error))", deliver)
                return nil
            }
            guard let key else {
                note(&link, "no Secure Channel key yet: run gatewayctl reader osdp install \(link.name)", deliver)
                return nil
            }
            security = .required(scbk: key)
        }
        var configuration = ControlPanel.Configuration(address: UInt8(osdp.address), security: security)
        configuration.pollInterval = timing.pollInterval
        configuration.replyTimeout = timing.replyTimeout
        configuration.retries = timing.retries
        configuration.reconnectInterval = timing.reconnectInterval
        return ControlPanel(configuration)
    }

    /// A refusal or a problem, reported once until it changes (a refused reader is asked again
    /// every reconnect interval; the audit log gets one row, not one a second).
    private func note(_ link: inout Link, _ why: String, _ deliver: (Report) -> Void) {
        guard link.lastReported != why else { return }
        link.lastReported = why
        link.status.lastRefusal = why
        log.warning("osdp reader \(link.name): refused: \(why)")
        deliver(.refused(reader: link.name, why: why))
    }

    private func runBus(
        device: String, readers settings: [ReaderSettings], deliver: @escaping @Sendable (Report) -> Void
    ) {
        let baud = settings.first?.osdp?.baud ?? 9600
        var line: SerialLine?
        var nextOpen: UInt64 = 0
        var lineError: String?
        var links = settings.map { Link(settings: $0) }
        var turn = 0
        for i in links.indices {
            links[i].cp = controlPanel(&links[i], install: false, now: Self.now(), deliver: deliver)
        }

        func publish(_ i: Int) {
            let status = links[i].status
            shared.withLock { $0.statuses[links[i].name] = status }
        }

        func restart(_ i: Int, install: Bool, now: UInt64) {
            links[i].cp = controlPanel(&links[i], install: install, now: now, deliver: deliver)
            links[i].pendingKey = nil
            links[i].cpStarted = false
        }

        func send(_ bytes: [UInt8]) {
            guard let l = line else { return }
            if !l.write(bytes) {
                log.warning("osdp \(device): write failed; reopening the line")
                line = nil
            }
        }

        func handle(_ i: Int, _ out: ControlPanel.Output, now: UInt64) {
            if let bytes = out.send { send(bytes) }
            for event in out.events { handleEvent(i, event, now: now) }
            publish(i)
        }

        func handleEvent(_ i: Int, _ event: ControlPanel.Event, now: UInt64) {
            let name = links[i].name
            switch event {
            case .online(_, _, let secure):
                links[i].lastReported = nil
                links[i].status.lastRefusal = nil
                // A session under the install key is not the reader online: status says "installing".
                if links[i].installUntil == nil {
                    links[i].status.online = true
                    links[i].status.secure = secure
                }
                if links[i].installUntil != nil {
                    // SCBK-D is up: hand the reader its own key, inside this session.
                    do {
                        let key = try Crypto.randomBytes(16)
                        links[i].pendingKey = key
                        links[i].cp?.enqueue(.keyset(key: key))
                        log.info("osdp reader \(name): install mode, sending its new key")
                    } catch {
                        log.error("osdp reader \(name): no random key (\(error)); install window closed")
                        closeInstall(i, why: "no random key", now: now)
                    }
                } else {
                    log.info(
                        "osdp reader \(name): online\(secure ? " (Secure Channel)" : " WITHOUT Secure Channel (insecure = true)")"
                    )
                    deliver(.online(reader: name, secure: secure))
                }
            case .offline:
                let wasOnline = links[i].status.online
                links[i].status.online = false
                links[i].status.secure = false
                if wasOnline, links[i].installUntil == nil {
                    log.warning("osdp reader \(name): offline")
                    deliver(.offline(reader: name))
                }
            case .refused(let refusal):
                let wasOnline = links[i].status.online
                links[i].status.online = false
                links[i].status.secure = false
                if wasOnline, links[i].installUntil == nil { deliver(.offline(reader: name)) }
                note(&links[i], Self.text(refusal), deliver)
            case .card(let read):
                // A read in install mode came under the well-known SCBK-D: not a credential.
                guard links[i].installUntil == nil else { return }
                deliver(
                    .card(
                        OSDPCardRead(
                            reader: name, format: read.format, bitCount: Int(read.bitCount), bits: read.bits,
                            secure: links[i].cp?.isSecure ?? false)))
            case .keypad(_, let keys):
                guard links[i].installUntil == nil else { return }
                deliver(.keypad(reader: name, keys: keys))
            case .localStatus(let tamper, let power):
                let (t, p) = (tamper != 0, power != 0)
                if t != links[i].status.tamper || p != links[i].status.powerFailure {
                    links[i].status.tamper = t
                    links[i].status.powerFailure = p
                    deliver(.status(reader: name, tamper: t, powerFailure: p))
                }
            case .keysetAccepted:
                guard let key = links[i].pendingKey, links[i].installUntil != nil else { return }
                do {
                    try keys.store(key, for: name)
                    log.info("osdp reader \(name): its new key is stored; install window closed")
                    links[i].installUntil = nil
                    links[i].status.installing = false
                    links[i].lastReported = nil
                    deliver(.installed(reader: name))
                    restart(i, install: false, now: now)
                } catch {
                    // The reader holds a key the door could not keep: say so plainly.
                    log.error(
                        "osdp reader \(name): the new key could not be stored (\(error)); reset the reader to install mode and try again"
                    )
                    closeInstall(i, why: "the key could not be stored: \(error)", now: now)
                }
            case .cardFormatted(_, let characters):
                // osdp_FMT: an ASCII card number (OSDP/CardData.swift), decided like a RAW read.
                guard links[i].installUntil == nil else { return }
                deliver(
                    .card(
                        OSDPCardRead(
                            reader: name, format: 0, bitCount: 0, bits: [], secure: links[i].cp?.isSecure ?? false,
                            formatted: characters)))
            case .nak, .malformed, .badReply:
                break
            }
        }

        func closeInstall(_ i: Int, why: String, now: UInt64) {
            links[i].installUntil = nil
            links[i].status.installing = false
            deliver(.installClosed(reader: links[i].name, why: why))
            restart(i, install: false, now: now)
        }

        while shared.withLock({ $0.running }) {
            let now = Self.now()
            if line == nil, now >= nextOpen {
                do {
                    line = try SerialLine(path: device, baud: baud)
                    if lineError != nil { log.info("osdp \(device): line open again") }
                    lineError = nil
                } catch {
                    let text = "\(error)"
                    if lineError != text {
                        log.error("osdp \(device): \(text)")
                        for i in links.indices { note(&links[i], "serial line: \(text)", deliver) }
                    }
                    lineError = text
                    nextOpen = now + 1000
                }
            }
            // Requests from other threads: install windows, the door's feedback.
            // Only this bus's readers' requests: another bus thread takes its own.
            let names = links.map(\.name)
            let (installs, feedback) = shared.withLock { s -> ([String: UInt64], [String: [Command]]) in
                var installs: [String: UInt64] = [:]
                var feedback: [String: [Command]] = [:]
                for name in names {
                    installs[name] = s.installRequests.removeValue(forKey: name)
                    feedback[name] = s.feedback.removeValue(forKey: name)
                }
                return (installs, feedback)
            }
            for (name, length) in installs {
                guard let i = links.firstIndex(where: { $0.name == name }) else { continue }
                links[i].installUntil = now + length
                links[i].status.installing = true
                links[i].status.online = false
                log.info("osdp reader \(name): install window open for \(length / 1000) s")
                restart(i, install: true, now: now)
                publish(i)
            }
            for i in links.indices {
                if let until = links[i].installUntil, now >= until, links[i].cp?.isAwaitingReply != true {
                    log.warning("osdp reader \(links[i].name): install window closed without a key (timed out)")
                    closeInstall(i, why: "timed out", now: now)
                    publish(i)
                }
                if let commands = feedback[links[i].name], links[i].cp?.isOnline == true, links[i].installUntil == nil {
                    for command in commands { links[i].cp?.enqueue(command) }
                }
            }
            // One command on the line at a time: the reader waiting for its reply, or the next
            // one (round robin) whose time has come.
            var active = links.indices.first { links[$0].cp?.isAwaitingReply == true }
            if active == nil, !links.isEmpty {
                for k in 0..<links.count {
                    let i = (turn + k) % links.count
                    guard var cp = links[i].cp else { continue }
                    var out: ControlPanel.Output
                    if !links[i].cpStarted {
                        out = cp.start(now: now)
                        links[i].cpStarted = true
                    } else {
                        guard cp.nextDeadline <= now else { continue }
                        out = cp.tick(now: now)
                    }
                    links[i].cp = cp
                    handle(i, out, now: now)
                    if links[i].cp?.isAwaitingReply == true {
                        active = i
                        turn = (i + 1) % links.count
                        break
                    }
                }
            } else if let i = active, var cp = links[i].cp {
                let out = cp.tick(now: now)
                links[i].cp = cp
                handle(i, out, now: now)
            }
            // Wait for the reply, or until the next deadline (at most 20 ms: requests above).
            let deadlines = links.compactMap { link -> UInt64? in
                guard let cp = link.cp else { return nil }
                return link.cpStarted ? cp.nextDeadline : now
            }
            let wait = Int32(clamping: min(20, max(1, Int64(deadlines.min() ?? now + 20) - Int64(Self.now()))))
            guard let l = line else {
                usleep(UInt32(wait) * 1000)
                continue
            }
            guard let bytes = l.read(waiting: wait) else {
                // The line is gone (an adapter unplugged): reopened each second; the readers
                // go offline through their reply timeouts.
                if lineError == nil { log.warning("osdp \(device): the line hung up; reopening") }
                lineError = "hung up"
                line = nil
                nextOpen = Self.now() + 1000
                continue
            }
            if !bytes.isEmpty, let i = links.indices.first(where: { links[$0].cp?.isAwaitingReply == true }),
                var cp = links[i].cp
            {
                let out = cp.received(bytes, now: Self.now())
                links[i].cp = cp
                handle(i, out, now: Self.now())
            }
        }
    }

    static func text(_ refusal: ControlPanel.Refusal) -> String {
        switch refusal {
        case .noSecureChannel:
            return "the reader does not offer Secure Channel (plaintext refused; insecure = true would allow it)"
        case .wrongKey: return "wrong Secure Channel key (the reader's cryptogram does not match the stored key)"
        case .secureChannel(let error): return "Secure Channel broken: \(error) (frame dropped, session restarted)"
        case .handshake(let code): return "Secure Channel handshake answered with 0x\(String(code, radix: 16))"
        }
    }
}

/// The store as the readers' key store.
struct StoreOSDPKeys: OSDPKeyStore {
    let store: GatewayStore
    func key(for reader: String) throws -> [UInt8]? { try store.osdpReaderKey(reader) }
    func store(_ key: [UInt8], for reader: String) throws {
        try store.setOSDPReaderKey(reader, key, now: Int64(time(nil)))
    }
}
