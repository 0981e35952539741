import DoorCore
import GatewayConfig
import GatewayControl

/// The OSDP readers wired to the door (issue 35): their news as audit events naming the
/// reader, the door's feedback on their LED and buzzer, and their card reads handed to
/// `osdpCard` — the port the tap decision takes them from.
extension Daemon {
    /// Whether the door has a PN532 (`[[readers]]` may list none; without it, the PN532 of `[reader]`).
    var hasPN532: Bool { configuration.readers.contains { $0.kind == .pn532 } }

    func startOSDPReaders() {
        guard !osdpReaders.readers.isEmpty else { return }
        runtime.setShowFeedback { [osdpReaders] in osdpReaders.show($0) }
        osdpReaders.start { [self] in osdpReport($0) }
    }

    /// On the reader's bus thread: each report as the door's event (audited, published), with
    /// the reader's name as its source.
    func osdpReport(_ report: OSDPReaders.Report) {
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
            // PINs are the Wiegand branch's (issue 35, H6); the keys are not logged.
            log.info("osdp reader \(reader): \(keys.count) key(s) pressed (PINs are not wired yet)")
        }
    }
}

extension Daemon {
    /// A card an OSDP reader read: the tap decision's port. Until the card-number credential
    /// (the Wiegand branch's: its kind in the store and in `TapDecision`) is merged, the read is
    /// logged with its reader and nothing opens.
    func osdpCard(_ read: OSDPCardRead) {
        let hex = read.bits.map {
            String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
        }
        .joined()
        log.info(
            "osdp reader \(read.reader): card \(read.bitCount) bits \(hex)\(read.secure ? " (secure channel)" : " (no secure channel)"); card credentials are not wired yet"
        )
    }
}

extension Daemon {
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
