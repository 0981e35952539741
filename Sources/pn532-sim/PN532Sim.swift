#if canImport(Glibc)
    @preconcurrency import Glibc
#else
    import Darwin
#endif
import Arguments
import DoorCore
import PN532Emulator
import CPseudoTerminal

/// `pn532-sim`: a PN532 on a pseudo-terminal's HSU link — or on an I2C bus
/// or SPI chip select presented through CUSE as /dev/i2c-N or
/// /dev/spidevB.C — with NTAG21x stickers put in and taken out of its field
/// over a control socket, so the real libnfc `pn532_uart`, `pn532_i2c` and
/// `pn532_spi` drivers can be run against it.
@main
struct PN532Sim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pn532-sim",
        abstract: "Emulate a PN532 (HSU, I2C or SPI) with NTAG213/215/216 tags.",
        discussion: """
            Prints the pseudo-terminal's path on standard output, then serves it until
            SIGTERM or SIGINT. Point libnfc at it with LIBNFC_DEVICE=pn532_uart:<path>.
            With --i2c /dev/i2c-N or --spi /dev/spidevB.C it registers that character
            device through /dev/cuse instead (root, the cuse module) and prints its
            path: pn532_i2c:/dev/i2c-N, pn532_spi:/dev/spidevB.C[:HZ].
            --control SOCKET --send LINE sends LINEs to a running pn532-sim.

            A tag is in the field at start when --tag, --uid or --type is given.
            Control socket lines (each answered by one 'ok …' or 'error …' line):
              insert [UID] [IMAGE|ntag213|ntag215|ntag216]   remove   reinsert
              insert ntag424 [UID] (a factory NTAG 424 DNA)
              ntag424-fault keeps-keys|card-uid UID|off (tests: the 424 acknowledges
                   ChangeKey but keeps its keys, or GetCardUID names another UID)
              tear-after N (no tag in the field: the next one)   mute   hang   unmute
              nad (the next InDataExchange/PowerDown/… status byte has bit 7 set:
                   libnfc 1.8.0 calls abort() on it)
              mi-empty (the next InDataExchange answer has MI set, its continuation
                   no status byte: libnfc 1.8.0 copies SIZE_MAX bytes, SIGSEGV)
              dump [PATH]   stats [reset]   status
              absent   present   (I2C/SPI: the chip leaves the bus or comes back)
            """)

    @Option(help: "Also make a symbolic link to the pseudo-terminal at this path.")
    var link: String?

    @Option(help: "Listen for control commands on this Unix socket.")
    var control: String?

    @Option(help: "Be a PN532 at I2C address 0x24 on this i2c-dev node (through CUSE), e.g. /dev/i2c-1.")
    var i2c: String?

    @Option(help: "Be a PN532 on this spidev node (through CUSE), e.g. /dev/spidev0.0.")
    var spi: String?

    @Option(help: "I2C bus clock in Hz: each transfer takes its bus time (--i2c).")
    var i2cSpeed = 100_000

    @Option(
        help: ArgumentHelp(
            "Longest I2C clock stretch, in µs, on a read while the chip is still preparing its answer (--i2c).",
            discussion: """
                SCL is held after the address byte until the answer is ready, at most this long; the \
                status byte is sampled when it is released. 0 turns it off; at most 100000. The 1 ms \
                wake-up stretch is separate. No controller's clock-stretch timeout or stretching bug \
                is modelled: the host's read just takes longer.
                """))
    var i2cBusyStretch = 1000

    @Option(
        help: ArgumentHelp(
            "After each frame the host writes, the chip leaves its I2C address unacknowledged this long, in µs (--i2c).",
            discussion: """
                Its firmware is still reading the frame (UM0701-02 §6.2.4: the PN532 may not \
                acknowledge its own address right after an exchange): a transfer in that time fails \
                with EREMOTEIO, as i2c-bcm2835 reports a NACK, and the ACK and the answer are ready \
                no earlier than its end. 0 (the default) turns it off; at most 100000.
                """))
    var i2cNackAfterWrite = 0

    @Flag(help: "Start off the I2C/SPI bus (control 'present' brings the chip in).")
    var absent = false

    @Option(
        help: ArgumentHelp(
            "Send this control line to the pn532-sim at --control, print its answer, and exit.",
            discussion: "Repeatable; exits 1 when an answer is 'error …'."))
    var send: [String] = []

    @Option(help: "Start with this tag dump in the field (180/540/924 bytes, pages from page 0).")
    var tag: String?

    @Option(help: "Start with a tag of this UID (7 bytes hex) in the field; overrides the dump's.")
    var uid: String?

    @Option(help: "Type of blank tags: ntag213, ntag215 or ntag216.")
    var type: String?

    @Option(help: "Add wire time for each byte sent, as a UART at this baud rate (10 bits a byte).")
    var baud: Int?

    @Flag(help: "Add the RF exchange time of each tag command.")
    var rfTiming = false

    @Flag(help: "Log every byte on the host link to standard error.")
    var trace = false

    @Option(
        help: ArgumentHelp(
            "Exit (as on SIGTERM) when the process with this pid, our parent, dies.",
            discussion: "gatewayd passes its own pid, so a SIGKILLed or crashed daemon leaves no emulator behind."))
    var parentPid: Int32?

    func validate() throws {
        if let uid, TagUID(hex: uid)?.bytes.count != 7 {
            throw ValidationError("--uid: '\(uid)' is not 7 bytes of hex")
        }
        if let type, Self.parseType(type) == nil {
            throw ValidationError("--type: '\(type)' is not ntag213, ntag215 or ntag216")
        }
        if let baud, baud <= 0 { throw ValidationError("--baud must be positive") }
        if let parentPid, parentPid <= 1 { throw ValidationError("--parent-pid must be a process id above 1") }
        if tag != nil && type != nil { throw ValidationError("--type describes blank tags; --tag gives the image") }
        if i2c != nil && spi != nil { throw ValidationError("--i2c and --spi: one bus at a time") }
        if (i2c != nil || spi != nil) && link != nil {
            throw ValidationError("--link names a pty; the bus device has its own path")
        }
        if i2cSpeed <= 0 { throw ValidationError("--i2c-speed must be positive") }
        if !(0...100_000).contains(i2cBusyStretch) { throw ValidationError("--i2c-busy-stretch is 0…100000 µs") }
        if !(0...100_000).contains(i2cNackAfterWrite) {
            throw ValidationError("--i2c-nack-after-write is 0…100000 µs")
        }
        if absent && i2c == nil && spi == nil { throw ValidationError("--absent: only with --i2c or --spi") }
        if !send.isEmpty && control == nil { throw ValidationError("--send needs --control SOCKET") }
    }

    static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func parseType(_ s: String) -> NTAGType? {
        NTAGType.allCases.first { $0.rawValue.lowercased() == s.lowercased() }
    }

    func run() throws {
        setvbuf(stdout, nil, _IOLBF, 0)
        if let control, !send.isEmpty {
            var failed = false
            for line in send {
                let answer = try ControlServer.send(line, to: control)
                print(answer)
                failed = failed || !answer.hasPrefix("ok")
            }
            if failed { throw ExitCode.failure }
            return
        }
        let defaultType = type.flatMap(Self.parseType) ?? .ntag213
        var chip = PN532Chip()
        if tag != nil || uid != nil || type != nil {
            let t = try makeTag(image: tag, uid: uid.flatMap { TagUID(hex: $0) }, type: defaultType)
            _ = chip.insert(t)
        }
        let bus: BusFront?
        if let path = i2c ?? spi {
            bus = try BusFront(
                kind: i2c != nil ? .i2c(hz: i2cSpeed) : .spi, path: path,
                busyStretchLimit: i2c != nil ? UInt64(i2cBusyStretch) * 1000 : 0,
                nackAfterWrite: i2c != nil ? UInt64(i2cNackAfterWrite) * 1000 : 0)
            bus?.absent = absent
        } else {
            bus = nil
        }
        let pty = bus == nil ? try PseudoTerminal() : nil
        if let link, let pty {
            unlink(link)
            guard symlink(pty.slavePath, link) == 0 else { throw SystemError("symlink", link) }
        }
        // Removed only while it still points at our pty: a successor (gatewayd
        // restarted after a crash) may already have linked its own.
        defer { if let link, let pty, Self.readLink(link) == pty.slavePath { unlink(link) } }
        let server = try control.map { try ControlServer(path: $0) }
        signal(SIGTERM) { _ in stopRequested = 1 }
        signal(SIGINT) { _ in stopRequested = 1 }
        signal(SIGPIPE, SIG_IGN)
        if let parentPid {
            switch door_die_with_parent(parentPid, SIGTERM) {
            case 0: break
            case 1:
                fputs("pn532-sim: parent \(parentPid) is already gone; exiting\n", stderr)
                throw ExitCode.failure
            default: throw SystemError("prctl(PR_SET_PDEATHSIG)", "--parent-pid")
            }
        }

        let sim = Simulator(
            chip: chip, pty: pty, bus: bus, control: server,
            options: .init(baud: baud, rfTiming: rfTiming, trace: trace, defaultType: defaultType))
        // Effective configuration at start (DEVELOPERS.md "Conventions" §13).
        sim.log(
            (bus.map { $0.name + ($0.absent ? " (absent)" : "") }
                ?? "pty \(pty!.slavePath)\(link.map { " (link \($0))" } ?? "")")
                + ", control \(control ?? "none"), baud \(baud.map(String.init) ?? "unlimited")"
                + ", rf-timing \(rfTiming ? "on" : "off")"
                + ", tag \(chip.tag.map { "\($0.type) \($0.uid.hex)" } ?? "none")")
        print(bus?.device.path ?? pty!.slavePath)
        try sim.run()
    }
}
