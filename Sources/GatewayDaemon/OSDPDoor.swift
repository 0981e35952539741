import DoorCore
import GatewayConfig
import GatewayControl
import Logging

/// The OSDP readers wired to the door (issue 35): their news as audit events naming the
/// reader, the door's feedback on their LED and buzzer, and their card reads handed to
/// `osdpCard` — the port the tap decision takes them from.
final class OutdoorReaderService: Sendable, MadeWithParts {
    let parts: ServiceParts
    let osdpReaders: OSDPReaders

    init(parts: ServiceParts, osdpReaders: OSDPReaders) {
        self.parts = parts
        self.osdpReaders = osdpReaders
    }

    /// The OSDP readers' place in the daemon's service list.
    var osdpService: DoorService {
        DoorService(
            name: "osdp readers", start: { [self] in startOSDPReaders() }, stop: { [osdpReaders] in osdpReaders.stop() }
        )
    }

    /// An OSDP keypad's character (osdp_KEYPAD: ASCII digits, 0x7F or '*' clear, 0x0D or '#' enter).
    static func keypadKey(_ byte: UInt8) -> KeypadKey? {
        switch byte {
        case 0x30...0x39: return .digit(byte - 0x30)
        case 0x7F, 0x2A: return .clear
        case 0x0D, 0x23: return .enter
        default: return nil
        }
    }

    func startOSDPReaders() {
        guard !osdpReaders.readers.isEmpty else { return }
        runtime.setShowFeedback { [osdpReaders] in osdpReaders.show($0) }
        osdpReaders.start { [self] in osdpReport($0) }
    }

    /// On the reader's bus thread: each report as the door's event (audited, published), with
    /// the reader's name as its source.
    func osdpReport(_ report: OSDPReaders.Report) {
        // Home Assistant's reader entities (the state document's `readers`, OutdoorReaderState.swift).
        switch report {
        case .online(let reader, _): runtime.outdoorReaderStatus(reader, online: true)
        case .offline(let reader), .refused(let reader, _): runtime.outdoorReaderStatus(reader, online: false)
        case .status(let reader, let tamper, _): runtime.outdoorReaderStatus(reader, tamper: tamper)
        default: break
        }
        switch report {
        case .online(let reader, let secure):
            runtime.note(
                DoorEvent(
                    .readerRecovered,
                    reason: secure ? "osdp online, secure channel" : "osdp online WITHOUT secure channel",
                    source: "reader:\(reader)"))
        case .offline(let reader):
            runtime.note(DoorEvent(.readerFault, reason: "osdp offline", source: "reader:\(reader)"))
        case .refused(let reader, let why):
            runtime.note(DoorEvent(.readerFault, reason: "osdp refused: \(why)", source: "reader:\(reader)"))
        case .status(let reader, let tamper, let powerFailure):
            let text = [tamper ? "tamper" : nil, powerFailure ? "power failure" : nil].compactMap { $0 }
            runtime.note(
                DoorEvent(
                    text.isEmpty ? .readerRecovered : .readerFault,
                    reason: text.isEmpty ? "osdp tamper and power normal" : "osdp " + text.joined(separator: ", "),
                    source: "reader:\(reader)"))
        case .installed(let reader):
            runtime.note(DoorEvent(.readerRecovered, reason: "osdp key installed", source: "reader:\(reader)"))
        case .installClosed(let reader, let why):
            runtime.note(
                DoorEvent(.readerFault, reason: "osdp install window closed: \(why)", source: "reader:\(reader)"))
        case .card(let read):
            osdpCard(read)
        case .keypad(let reader, let keys):
            // To the keypad desk, key by key (PINs: card + PIN, PIN-only codes, duress); never logged.
            for key in keys.compactMap(Self.keypadKey) { runtime.readerReport(.keypad(reader: reader, key)) }
        }
    }

    /// A card an OSDP reader read: decided by the door as a card number (`TapFacts(card:)`,
    /// `TapDecision`), naming its reader. Read inside Secure Channel it is an `osdp` credential;
    /// from a reader named `insecure` it is as weak as Wiegand (`osdp-plain`). Bits the door
    /// cannot key (more than `CardNumber.maxBits`, or padding that is not zero) are logged and
    /// dropped: nothing opens.
    func osdpCard(_ read: OSDPCardRead) {
        if let characters = read.formatted {
            // osdp_FMT (OSDP/CardData.swift): an ASCII card number, keyed apart from RAW bits.
            guard let number = CardNumber(formatted: characters) else {
                log.warning(
                    "osdp reader \(read.reader): a formatted card read (\(characters.count) bytes) the door cannot key; dropped"
                )
                return
            }
            let card = CardRead(number: number, reader: read.reader, link: read.secure ? .osdpSecure : .osdpPlain)
            runtime.readerReport(.arrived(TapFacts(card: card)))
            return
        }
        guard let number = CardNumber(bits: read.bits, bitCount: read.bitCount) else {
            log.warning("osdp reader \(read.reader): a card read of \(read.bitCount) bits the door cannot key; dropped")
            return
        }
        let card = CardRead(number: number, reader: read.reader, link: read.secure ? .osdpSecure : .osdpPlain)
        runtime.readerReport(.arrived(TapFacts(card: card)))
    }
}

extension ControlService {
    /// `reader.osdp.install`: opens the reader's install window (it closes itself).
    func osdpInstall(_ p: [String: JSONValue]) throws -> JSONValue {
        let name = try p.string("reader")
        let seconds = try p.int("seconds", default: 60)
        guard (10...600).contains(seconds) else { throw DaemonError.request("seconds must be 10…600") }
        do { try osdpReaders.openInstallWindow(reader: name, milliseconds: UInt64(seconds) * 1000) } catch {
            throw DaemonError.request(error.description)
        }
        runtime.note(
            DoorEvent(.readerFault, reason: "osdp install window open for \(seconds) s", source: "reader:\(name)"))
        return .object([("reader", .string(name)), ("install_window_s", .int(seconds))])
    }

    /// `reader.osdp.status`: each OSDP reader's link (never its key).
    func osdpStatus() -> JSONValue {
        let statuses = osdpReaders.statuses
        return .array(
            osdpReaders.readers.map { reader in
                let s = statuses[reader.name] ?? .init()
                return .object([
                    ("reader", .string(reader.name)), ("device", .string(reader.osdp?.device ?? "")),
                    ("address", .int(reader.osdp?.address ?? 0)), ("online", .bool(s.online)),
                    ("secure_channel", .bool(s.secure)), ("insecure_configured", .bool(reader.osdp?.insecure ?? false)),
                    ("tamper", .bool(s.tamper)), ("power_failure", .bool(s.powerFailure)),
                    ("install_window", .bool(s.installing)), ("last_refusal", .optional(s.lastRefusal)),
                ])
            })
    }
}
