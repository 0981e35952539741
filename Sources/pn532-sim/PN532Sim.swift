#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif
import ArgumentParser
import DoorCore
import Foundation
import PN532Emulator
import CPseudoTerminal

/// `pn532-sim`: a PN532 on a pseudo-terminal's HSU link, with NTAG21x
/// stickers put in and taken out of its field over a control socket, so the
/// real libnfc `pn532_uart` driver can be run against it.
@main
struct PN532Sim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pn532-sim",
        abstract: "Emulate a PN532 (HSU) with NTAG213/215/216 tags on a pseudo-terminal.",
        discussion: """
            Prints the pseudo-terminal's path on standard output, then serves it until
            SIGTERM or SIGINT. Point libnfc at it with LIBNFC_DEVICE=pn532_uart:<path>.

            A tag is in the field at start when --tag, --uid or --type is given.
            Control socket lines (each answered by one 'ok …' or 'error …' line):
              insert [UID] [IMAGE|ntag213|ntag215|ntag216]   remove   reinsert
              tear-after N   mute   hang   unmute   dump [PATH]   stats [reset]   status
            """)

    @Option(help: "Also make a symbolic link to the pseudo-terminal at this path.")
    var link: String?

    @Option(help: "Listen for control commands on this Unix socket.")
    var control: String?

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
        let defaultType = type.flatMap(Self.parseType) ?? .ntag213
        var chip = PN532Chip()
        if tag != nil || uid != nil || type != nil {
            let t = try makeTag(image: tag, uid: uid.flatMap { TagUID(hex: $0) }, type: defaultType)
            _ = chip.insert(t)
        }
        let pty = try PseudoTerminal()
        if let link {
            unlink(link)
            guard symlink(pty.slavePath, link) == 0 else { throw SystemError("symlink", link) }
        }
        // Removed only while it still points at our pty: a successor (gatewayd
        // restarted after a crash) may already have linked its own.
        defer { if let link, Self.readLink(link) == pty.slavePath { unlink(link) } }
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
            chip: chip, pty: pty, control: server,
            options: .init(baud: baud, rfTiming: rfTiming, trace: trace, defaultType: defaultType))
        // Effective configuration at start (STYLE.md §13).
        sim.log(
            "pty \(pty.slavePath)\(link.map { " (link \($0))" } ?? "")"
                + ", control \(control ?? "none"), baud \(baud.map(String.init) ?? "unlimited")"
                + ", rf-timing \(rfTiming ? "on" : "off")"
                + ", tag \(chip.tag.map { "\($0.type) \($0.uid.hex)" } ?? "none")")
        print(pty.slavePath)
        try sim.run()
    }
}
