#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif
import DoorCore
import PN532Emulator

/// Set by SIGTERM / SIGINT; the poll loop checks it.
// nonisolated(unsafe): a sig_atomic_t written only by the signal handler, read by the one poll loop.
nonisolated(unsafe) var stopRequested: sig_atomic_t = 0

/// The driver around `PN532Chip`: moves bytes between the pty and the chip,
/// runs the control socket and the chip's timers, and carries out effects
/// (DEVELOPERS.md "Conventions" §1: effects at the edge).
final class Simulator {
    struct Options {
        var baud: Int?
        var rfTiming = false
        var trace = false
        var defaultType: NTAGType = .ntag213
    }

    var chip: PN532Chip
    /// `stash`: a copy of an NTAG 424 DNA kept aside, which `unstash` brings into the field.
    private var stashed: NTAG424DNA?
    /// The host link: a pty (HSU), or a bus device through CUSE (I2C, SPI).
    private let pty: PseudoTerminal?
    let bus: BusFront?
    private let control: ControlServer?
    let options: Options
    private var timers: [(deadline: UInt64, token: Int)] = []
    /// A host has the slave open (the master reports no hang-up).
    private var hostPresent = false
    private var lastByteAt: UInt64 = 0
    /// A frame left unfinished this long is dropped (the chip's receive timeout).
    private let frameGapNanos: UInt64 = 50_000_000

    init(chip: PN532Chip, pty: PseudoTerminal?, bus: BusFront? = nil, control: ControlServer?, options: Options) {
        self.chip = chip
        self.pty = pty
        self.bus = bus
        self.control = control
        self.options = options
    }

    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    func run() throws {
        while stopRequested == 0 {
            var fds: [pollfd] = []
            if let bus {
                fds.append(pollfd(fd: bus.device.fd, events: Int16(POLLIN), revents: 0))
            } else if let pty, pollReportsHangUp(pty) {
                if hostPresent {
                    // The host closed the port: leave the slave ready for the next one.
                    hostPresent = false
                    log("host closed the port")
                    try pty.resetSlave()
                }
            } else if let pty {
                hostPresent = true
                fds.append(pollfd(fd: pty.master, events: Int16(POLLIN), revents: 0))
            }
            let controlFDs = control?.descriptors ?? []
            fds += controlFDs.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let n = poll(&fds, nfds_t(fds.count), pollTimeout(watchingHost: bus != nil || fds.first?.fd == pty?.master))
            if n < 0 && errno != EINTR { throw SystemError("poll") }
            try fireTimers()
            for p in fds where p.revents != 0 {
                if p.fd == bus?.device.fd {
                    if p.revents & Int16(POLLIN) != 0 { try busReadable() }
                    if p.revents & Int16(POLLERR | POLLHUP) != 0 {
                        throw SystemError("poll", "/dev/cuse hung up", errno: ENODEV)
                    }
                } else if p.fd == pty?.master {
                    try hostReadable(p.revents)
                } else if p.fd == control?.listener {
                    control?.accept()
                } else {
                    try controlReadable(p.fd)
                }
            }
            if chipFrameStalled() { chip.linkIdle() }
        }
    }

    /// Polls the master alone, without waiting, for a hang-up (no host has the slave open).
    private func pollReportsHangUp(_ pty: PseudoTerminal) -> Bool {
        var p = pollfd(fd: pty.master, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLHUP) != 0 && p.revents & Int16(POLLIN) == 0
    }

    private func pollTimeout(watchingHost: Bool) -> Int32 {
        var ms: Int64 = 200
        if !watchingHost { ms = 20 }  // no host: look again soon for one opening the slave
        if let next = timers.map(\.deadline).min() {
            let now = Self.now()
            ms = min(ms, next > now ? Int64((next - now) / 1_000_000) + 1 : 0)
        }
        if lastByteAt != 0 { ms = min(ms, Int64(frameGapNanos / 1_000_000)) }
        return Int32(ms)
    }

    private func chipFrameStalled() -> Bool {
        guard lastByteAt != 0, Self.now() - lastByteAt > frameGapNanos else { return false }
        lastByteAt = 0
        return true
    }

    private func hostReadable(_ revents: Int16) throws {
        guard revents & Int16(POLLIN) != 0, let bytes = try pty?.read(), !bytes.isEmpty else { return }
        lastByteAt = Self.now()
        trace("host>", bytes)
        try apply(chip.receive(bytes))
    }

    private func fireTimers() throws {
        let now = Self.now()
        let due = timers.filter { $0.deadline <= now }
        timers.removeAll { $0.deadline <= now }
        for t in due { try apply(chip.timerFired(t.token)) }
    }

    func apply(_ effects: [ChipEffect]) throws {
        for effect in effects {
            switch effect {
            case .send(let bytes) where bus != nil:
                // The host pulls it over I2C/SPI once the chip's RF work is done.
                let now = Self.now()
                bus!.queue.push(bytes, readyAt: max(now, bus!.busyUntil))
            case .airTime(let us) where bus != nil:
                if options.rfTiming { bus!.busyUntil = max(Self.now(), bus!.busyUntil) + UInt64(us) * 1000 }
            case .send(let bytes):
                if let baud = options.baud, baud > 0 {
                    // 10 bits a byte on the wire: start, 8 data, stop.
                    usleep(UInt32(bytes.count * 10 * 1_000_000 / baud))
                }
                trace("chip<", bytes)
                try pty?.write(bytes)
            case .airTime(let us):
                if options.rfTiming { usleep(UInt32(us)) }
            case .startTimer(let token, let ms):
                timers.append((Self.now() + UInt64(ms) * 1_000_000, token))
            }
        }
    }

    // MARK: Control socket

    private func controlReadable(_ fd: Int32) throws {
        guard let control else { return }
        let (lines, closed) = control.readLines(fd)
        for line in lines where !line.allSatisfy({ $0.isWhitespace && !$0.isNewline }) {
            let answer = try perform(line)
            log("control: \(line) -> \(answer)")
            control.reply(fd, answer)
        }
        if closed { control.drop(fd) }
    }

    /// Runs one control line; returns the `ok …` / `error …` answer.
    func perform(_ line: String) throws -> String {
        let command: ControlCommand
        do {
            command = try ControlCommand.parse(line)
        } catch {
            return "error \(error)"
        }
        switch command {
        case .insert(let uid, let path, let type):
            let tag: NTAG21x
            do {
                tag = try makeTag(image: path, uid: uid, type: type ?? options.defaultType)
            } catch {
                return "error \(error)"
            }
            try apply(chip.insert(tag))
            return "ok inserted \(tag.type) \(tag.uid.hex)"
        case .insertNTAG424(let uid):
            var rng = SystemRandomNumberGenerator()
            let tag = NTAG424DNA(uid: (uid ?? NTAG21x.randomUID(using: &rng)).bytes)
            try apply(chip.insert(tag))
            return "ok inserted NTAG424DNA \(tag.uid.hex)"
        case .ntag424Fault(let fault):
            guard chip.setNTAG424Fault(fault) else { return "error no NTAG 424 DNA in the field or to reinsert" }
            switch fault {
            case nil: return "ok the NTAG 424 DNA is honest"
            case .keepsKeys?: return "ok the NTAG 424 DNA acknowledges ChangeKey and keeps its keys"
            case .cardUID(let other)?:
                return "ok the NTAG 424 DNA's GetCardUID names \(Hex.encode(other, uppercase: true))"
            case .keyVersions(let v)?:
                return "ok the NTAG 424 DNA's GetKeyVersion names \(v.map(String.init).joined(separator: ","))"
            }
        case .ntag424ChangeKeys:
            guard let dna = chip.currentOrDepartedDNA else {
                return "error no NTAG 424 DNA in the field or to reinsert"
            }
            return "ok \(dna.application.changeKeyCommands)"
        case .stash:
            guard let dna = chip.currentOrDepartedDNA else {
                return "error no NTAG 424 DNA in the field or to reinsert"
            }
            stashed = dna
            return "ok stashed NTAG424DNA \(dna.uid.hex)"
        case .unstash:
            guard let dna = stashed else { return "error nothing stashed" }
            try apply(chip.insert(dna))
            return "ok inserted NTAG424DNA \(dna.uid.hex)"
        case .remove:
            guard chip.hasTag else { return "error no tag in the field" }
            chip.remove()
            return "ok removed"
        case .reinsert:
            let back =
                chip.departedDNA.map { "NTAG424DNA \($0.uid.hex)" }
                ?? chip.departedTag.map { "\($0.type) \($0.uid.hex)" }
            guard let back, let effects = chip.reinsert() else {
                return "error no tag has left the field"
            }
            try apply(effects)
            // An armed tear-after may have taken it away again during the
            // activation a waiting InAutoPoll ran as it entered.
            return "ok inserted \(back)\(chip.hasTag ? "" : " (and it left again)")"
        case .tearAfter(let n):
            guard chip.hasTag else {
                // Armed for the next tag: it leaves mid-activation or mid-read
                // however soon the host polls after `insert`/`reinsert`.
                guard n > 0 else { return "error no tag in the field" }
                chip.tear(after: n)
                return "ok the next tag leaves after \(n) exchanges"
            }
            chip.tear(after: n)
            return n == 0 ? "ok removed" : "ok tag leaves after \(n) exchanges"
        case .mute:
            chip.muted = true
            return "ok muted"
        case .hang:
            chip.hung = true
            return "ok hanging"
        case .nad:
            chip.nadArmed = true
            return "ok the next status answer carries a NAD"
        case .miEmpty:
            chip.miEmptyArmed = true
            return "ok the next InDataExchange answer has MI set and its continuation no status byte"
        case .unmute:
            chip.unmute()
            return "ok unmuted"
        case .dump(let path):
            guard let tag = chip.tag ?? chip.departedTag else {
                return chip.hasTag ? "error an NTAG 424 DNA has no page image" : "error no tag"
            }
            guard let path else { return "ok \(Hex.encode(tag.memory))" }
            do {
                try Files.write(tag.memory, to: path)
            } catch {
                return "error \(path): \(error)"
            }
            return "ok wrote \(tag.memory.count) bytes to \(path)"
        case .stats(let reset):
            if reset {
                chip.resetStats()
                bus?.stats = BusFront.Stats()
                bus?.lastReplyAt = 0
                return "ok reset"
            }
            return "ok \(chip.stats.summary)\(bus.map { " " + $0.stats.summary } ?? "")"
        case .status:
            return "ok \(statusLine())"
        case .absent(let gone):
            guard let bus else { return "error absent/present: only on --i2c or --spi" }
            bus.absent = gone
            return gone ? "ok absent" : "ok present"
        }
    }

    private func statusLine() -> String {
        let power: String
        switch chip.power {
        case .normal: power = "normal"
        case .lowVBat: power = "lowvbat"
        case .powerDown: power = "powerdown"
        }
        var s = bus.map { "bus=\($0.absent ? "absent" : "present") " } ?? ""
        s += "power=\(power) rf=\(chip.rfOn ? "on" : "off") busy=\(chip.isBusy ? "yes" : "no")"
        s += " muted=\(chip.muted ? "yes" : "no") hung=\(chip.hung ? "yes" : "no")"
        if chip.nadArmed { s += " nad=armed" }
        if chip.miEmptyArmed { s += " mi_empty=armed" }
        if let t = chip.tag {
            s += " tag=\(t.uid.hex) type=\(t.type) state=\(t.state) auth_failures=\(t.failedAuthentications)"
            s += " tear_after=\(chip.tearAfter.map(String.init) ?? "-")"
        } else if let d = chip.dna {
            s += " tag=\(d.uid.hex) type=NTAG424DNA state=\(d.state)"
            s += " tear_after=\(chip.tearAfter.map(String.init) ?? "-")"
        } else {
            s += " tag=none"
        }
        if let n = chip.tearNext { s += " tear_next=\(n)" }
        return s
    }

    // MARK: Output

    private func trace(_ dir: String, _ bytes: [UInt8]) {
        guard options.trace else { return }
        log("\(dir) \(bytes.map { Hex.encode([$0]) }.joined(separator: " "))")
    }

    func log(_ message: String) {
        let line = Array("pn532-sim: \(message)\n".utf8)
        var done = 0
        while done < line.count {
            let n = line.withUnsafeBytes { write(2, $0.baseAddress! + done, line.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            done += n
        }
    }
}

/// A tag for `insert` and the command-line flags: the dump file at `image`,
/// or a blank tag of `type`; `uid` overrides the image's UID, and a blank
/// tag without one gets a random UID.
func makeTag(image: String?, uid: TagUID?, type: NTAGType) throws -> NTAG21x {
    if let image {
        let bytes: [UInt8]
        do {
            bytes = try Files.read(image)
        } catch {
            throw SimulatorError.unreadableImage(image, "\(error)")
        }
        return try NTAG21x(image: try TagImage(dump: bytes), uid: uid)
    }
    var rng = SystemRandomNumberGenerator()
    return NTAG21x(image: try TagImage.make(type: type, uid: uid ?? NTAG21x.randomUID(using: &rng)))
}

enum SimulatorError: Error, CustomStringConvertible {
    case unreadableImage(String, String)
    var description: String {
        switch self {
        case .unreadableImage(let path, let why): return "cannot read \(path): \(why)"
        }
    }
}
