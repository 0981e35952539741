import DoorCore
import GatewayControl
import Glibc
import Dispatch
import Logging
import Synchronization
import NFCReader

/// The reader adapter as the daemon uses it (NFCReader implements it; tests
/// can fake it). Every call is blocking and bounded.
protocol TagReaderPort: AnyObject {
    func open() throws
    func close()
    /// The next tap, as the core decides it (DoorCore's `TapFacts`), or nil when none came.
    func waitForTag(timeout: Duration) throws -> TapFacts?
    func isPresent(_ uid: TagUID) throws -> Bool
    /// Writes, reads back and verifies; the device key derives the tag's
    /// password (docs/formats.md §4), used when the tag is protected or `protect` is set.
    func write(_ message: NDEFMessage, to uid: TagUID, overwrite: Bool, deviceKey: [UInt8], protect: Bool) throws
    var healthText: String { get }
}

/// Runs the reader on its own thread: keeps a wait in flight, reports a tag
/// once when it arrives and again when it leaves, performs a pending
/// provisioning write on the tag in the field, and reopens a lost reader with
/// backoff (0.2 s doubling to 5 s) without restarting the process.
///
/// The reader port is not shared: it waits in `port` until `start()`, whose
/// thread takes it out and is from then on its only user. What other threads
/// ask of the loop (stop, a write, an NTAG 424 job) and read from it (the
/// last error) is in `state`.
final class ReaderLoop: Sendable {
    enum Report {
        case arrived(TapFacts)
        case departed(TagUID)
        case fault(String)
        case recovered
        /// The first open succeeded.
        case opened
        case written(uid: TagUID, error: String?)
        /// An NTAG 424 DNA provisioned and verified (its SUN counter), or why not.
        case ntag424Provisioned(uid: TagUID, Result<NTAG424Issued, NTAG424JobFailure>)
        /// A key from an outdoor reader's keypad (issue 35, OutdoorReaders.swift).
        case keypad(reader: String, KeypadKey)
    }

    struct WriteRequest {
        var uid: TagUID
        var message: NDEFMessage
        var overwrite: Bool
        var deviceKey: [UInt8]
        var protect: Bool
    }

    private struct State {
        var running = true
        var started = false
        var pendingWrite: WriteRequest?
        var pendingNTAG424: NTAG424Job?
        var lastErrorText: String?
    }

    /// Until `start()`'s thread takes it (nil after).
    private let port: Mutex<(any TagReaderPort)?>
    private let log: Logger
    private let state = Mutex(State())
    private let stopped = DispatchSemaphore(value: 0)
    /// The last reader error (read by `reader info` on a control thread).
    var lastError: String? { state.withLock { $0.lastErrorText } }

    init(reader: sending any TagReaderPort, log: Logger) {
        port = Mutex(reader)
        self.log = log
    }

    /// Starts the reader thread, which reports to `deliver` (the door runtime).
    func start(deliver: @escaping @Sendable (Report) -> Void) {
        do {
            try Threads.detach(name: "gatewayd.reader") { [self] in
                let reader = port.withLock { slot -> (any TagReaderPort)? in
                    let taken = slot
                    slot = nil
                    return taken
                }
                if let reader { run(reader, deliver: deliver) }
                stopped.signal()
            }
            state.withLock { $0.started = true }
        } catch {
            state.withLock { $0.lastErrorText = "\(error)" }
            log.error("reader: \(error)")
        }
    }

    /// Asks the loop to finish its current (bounded) call and close the reader.
    func stop() {
        let started = state.withLock {
            $0.running = false
            return $0.started
        }
        if started { _ = stopped.wait(timeout: .now() + 3) }
    }

    func requestWrite(_ request: WriteRequest) { state.withLock { $0.pendingWrite = request } }

    /// Provisioning or reset of the NTAG 424 DNA in the field (NTAG424Door.swift).
    func requestNTAG424(_ job: NTAG424Job) { state.withLock { $0.pendingNTAG424 = job } }

    private var isRunning: Bool { state.withLock { $0.running } }

    private func noteError(_ error: any Error) {
        let text = "\(error)"
        state.withLock { $0.lastErrorText = text }
    }

    /// On the reader thread, which owns `reader`.
    private func run(_ reader: any TagReaderPort, deliver: @Sendable (Report) -> Void) {
        var open = false
        var faulted = false
        var backoff = Duration.milliseconds(200)
        var current: TagUID?
        while isRunning {
            if !open {
                do {
                    try reader.open()
                    open = true
                    backoff = .milliseconds(200)
                    if faulted {
                        faulted = false
                        deliver(.recovered)
                    } else {
                        deliver(.opened)
                    }
                } catch {
                    noteError(error)
                    if !faulted { faulted = true; deliver(.fault("\(error)")) }
                    sleep(backoff)
                    backoff = min(backoff * 2, .seconds(5))
                    continue
                }
            }
            do {
                if let request = state.withLock({ s -> WriteRequest? in
                    defer { s.pendingWrite = nil }
                    return s.pendingWrite
                }) {
                    var failure: String?
                    do {
                        try reader.write(
                            request.message, to: request.uid, overwrite: request.overwrite,
                            deviceKey: request.deviceKey,
                            protect: request.protect)
                    } catch {
                        failure = "\(error)"
                    }
                    deliver(.written(uid: request.uid, error: failure))
                    continue
                }
                if let job = state.withLock({ s -> NTAG424Job? in
                    defer { s.pendingNTAG424 = nil }
                    return s.pendingNTAG424
                }) {
                    if let report = job.run(on: reader) { deliver(report) }
                    continue
                }
                if let uid = current {
                    if try reader.isPresent(uid) {
                        sleep(.milliseconds(100))
                    } else {
                        current = nil
                        deliver(.departed(uid))
                    }
                } else if let tag = try reader.waitForTag(timeout: .milliseconds(100)) {
                    current = tag.uid
                    deliver(.arrived(tag))
                }
            } catch {
                noteError(error)
                log.warning("reader: \(error)")
                if let uid = current { current = nil; deliver(.departed(uid)) }
                if !isReaderLevel(error) { continue }
                reader.close()
                open = false
                faulted = true
                deliver(.fault("\(error)"))
            }
        }
        reader.close()
    }

    /// A tag that left or answered badly is not a reader fault; anything else is.
    private func isReaderLevel(_ error: Error) -> Bool {
        (error as? ReaderPortError)?.readerLost ?? true
    }

    private func sleep(_ d: Duration) {
        let ms = max(1, Int(d.millisecondsClamped))
        usleep(UInt32(ms) * 1000)
    }
}

/// Errors the reader port uses to say whether the reader itself is gone.
protocol ReaderPortError: Error {
    var readerLost: Bool { get }
}

// MARK: - The port over libnfc

extension ReaderError: ReaderPortError {}

/// The daemon's reader port over the libnfc adapter.
final class LibnfcReaderPort: TagReaderPort {
    let reader: NFCReader
    /// `[provisioning] auth_limit` in effect at each write (a reload changes it).
    let authLimit: () -> Int
    /// The NTAG 424 site master key (docs/ntag424.md), read at each 424 tap
    /// (nil: none yet, so no 424 can prove a key). Never logged.
    let siteKey: () -> [UInt8]?
    /// The key issue a 424's tap runs AuthenticateEV2First with (its registry
    /// row's salt and version), or nil when it skips EV2: its action opens on
    /// the SUN alone (`"ntag424-sun"`, docs/ntag424.md).
    let ev2Issue: (TagUID) -> NTAG424.KeyIssue?

    init(
        connstring: String, authLimit: @escaping () -> Int, log: Logger,
        ev2Issue: @escaping (TagUID) -> NTAG424.KeyIssue? = { _ in .legacy },
        siteKey: @escaping () -> [UInt8]? = { nil }
    ) {
        reader = NFCReader(connstring: connstring)
        self.authLimit = authLimit
        self.ev2Issue = ev2Issue
        self.siteKey = siteKey
    }

    func open() throws { try reader.open() }
    func close() { reader.close() }

    func waitForTag(timeout: Duration) throws -> TapFacts? {
        // Key 0 of each 424, diversified for its UID and its row's issue (AN10922, NTAG424.DoorKeys).
        let master = siteKey()
        let key = { [ev2Issue] (uid: TagUID) -> [UInt8]? in
            guard let master, uid.bytes.count == 7, let issue = ev2Issue(uid) else { return nil }
            return try? NTAG424.tagKey(masterKey: master, uid: uid.bytes, keyNumber: 0, issue: issue)
        }
        guard let polled = try reader.pollTap(ntag424Key: key) else { return nil }
        isoDep = polled.isISODEP ? polled.uid : nil
        switch polled {
        case .type2(let tag): return TapFacts(uid: tag.uid, message: tag.message)
        case .ntag424(let tap): return TapFacts(uid: tap.uid, message: tap.message, ntag424: tap.proof)
        case .torn(let uid): return TapFacts(uid: uid, ntag424: .torn)
        // Another ISO-DEP card (a bank card, a DESFire fob): its UID alone (an enrolled fob at most).
        case .otherISODEP(let uid, _): return TapFacts(uid: uid)
        }
    }

    /// The ISO-DEP target last polled (its presence is checked by activation, not READ).
    private var isoDep: TagUID?

    func isPresent(_ uid: TagUID) throws -> Bool {
        uid == isoDep ? try reader.isPresentISODep(uid) : try reader.isPresent(uid)
    }

    func write(_ message: NDEFMessage, to uid: TagUID, overwrite: Bool, deviceKey: [UInt8], protect: Bool) throws {
        // A tag protected earlier is authenticated with the device key's
        // password even when this write does not ask for protection.
        let options = WriteOptions(
            overwrite: overwrite, password: NTAGPassword.derive(deviceKey: deviceKey, uid: uid), protect: protect,
            authLimit: authLimit())
        try reader.write(message, to: uid, options: options)
    }

    var healthText: String { reader.health.description }
}
