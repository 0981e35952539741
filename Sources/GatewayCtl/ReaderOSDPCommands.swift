import Arguments
import GatewayControl

/// `gatewayctl reader osdp …` (issue 35): the OSDP readers of `[[readers]]`, through the daemon.
struct ReaderOSDP: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "osdp", abstract: "The door's OSDP readers: their links, and a reader's install window.",
        subcommands: [ReaderOSDPInstall.self, ReaderOSDPStatus.self])
}

struct ReaderOSDPInstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Give an OSDP reader its own Secure Channel key: opens its install window.",
        discussion: """
            For the window (60 s unless --seconds) the door talks to the reader with the
            well-known install key (SCBK-D) — a reader fresh from the box, or reset to install
            mode — sends it a new random key (osdp_KEYSET) and stores it. The window closes itself
            when the key is stored or the time is up; outside it no reader is ever accepted with
            the install key. Follow it with `gatewayctl reader osdp status` or the log.
            """)
    @OptionGroup var socket: SocketOptions
    @Argument(help: "The reader's name in [[readers]].") var name: String
    @Option(help: "How long the window stays open, 10…600 seconds.") var seconds: Int = 60

    func run() throws {
        guard (10...600).contains(seconds) else { throw ValidationError("--seconds must be 10…600") }
        try socket.call(.readerOSDPInstall, [("reader", .string(name)), ("seconds", .int(seconds))])
    }
}

struct ReaderOSDPStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Each OSDP reader: online, Secure Channel, tamper, power, install window.")
    @OptionGroup var socket: SocketOptions
    func run() throws { try socket.call(.readerOSDPStatus) }
}
