#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// The parsers the door feeds with outside bytes, one libFuzzer target each.
/// Every target calls the code the daemon runs on those bytes (no copies),
/// and aborts (a finding) when an invariant of that code breaks.
enum FuzzTarget: String, CaseIterable {
    /// NDEF messages (and the daemon's verdict on them), Type 2 TLV areas (whole
    /// and read page by page), NTAG dumps.
    case ndef
    /// Sticker URLs v1/v2, share links, the sticker judge, the URI record round trip.
    case sticker
    /// Phone-app compat commands: strict JSON, the AES `otp-auth` block, freshness, replay.
    case compat
    /// Native commands: JSON, MAC, device, action, freshness, replay.
    case native
    /// `gateway.toml` through the whole loader (TOMLParser, the strict reader).
    case toml
    /// Control-socket request lines: line framing, the request parser, parameter readers.
    case control
    /// What the PN532 and the tag answer NFCReader (InAutoPoll, READ, FAST_READ, GET_VERSION, writes).
    case reader
    /// MQTT payloads on the topics the door subscribes to: MQTTLink.channel, then RemoteJudge.
    case mqtt
    /// Fleet documents as heard: the envelope (before the signature), then FleetRules.
    case fleet
    /// A user JWT pushed over NATS on `creds.jwt`: UserJWT and the door's checks.
    case natsjwt
    /// A datagram heard while a `*.local` broker is looked up: MulticastDNS.parse.
    case mdns
    /// NTAG 424 DNA: SUN URLs (parse and verify) and the tag's answers to the reader's EV2 half.
    case ntag424
    /// OSDP (issue 35): what a reader sends on the RS-485 bus, framed and decoded.
    case osdp
    /// OSDP: the control panel fed a reader's answers, insecure and inside a Secure Channel session.
    case osdpcp

    var summary: String {
        switch self {
        case .ndef: return "NDEFMessage.decode, Type2 TLVs/scan, TagImage(dump:), TapJudge"
        case .sticker: return "StickerURL.parse, ShareLink.parse, StickerJudge.judge"
        case .compat: return "CommandJudge.judgeCompat, OTPBlock.decrypt, JSONValue.parse"
        case .native: return "CommandJudge.judgeNative, JSONValue.parse"
        case .toml: return "GatewayConfiguration.load(toml:)"
        case .control: return "LineConnection.readLine, ControlServer.parse, request parameters"
        case .reader: return "NFCReader open/poll/isPresent/details/write on chip answers, TapJudge"
        case .mqtt: return "MQTTLink.channel, RemoteJudge.judge (commands, Home Assistant topics)"
        case .fleet: return "FleetDocument.openEnvelope, FleetRules.judge, FleetDocument.parseBody"
        case .natsjwt: return "UserJWT(_:), check, checkTrusted, issuedInTime"
        case .mdns: return "MulticastDNS.parse, Response.ipv4Addresses"
        case .ntag424: return "SUNURL.parse/verify, NTAG424.EV2 reader half, Session.openResponse"
        case .osdp: return "FrameAssembler, Frame.parse, Reply.decode"
        case .osdpcp: return "ControlPanel.received/tick (SecureSession.open), insecure and secure"
        }
    }

    func run(_ data: [UInt8]) {
        switch self {
        case .ndef: NDEFTarget.run(data)
        case .sticker: StickerTarget.run(data)
        case .compat: CompatTarget.run(data)
        case .native: NativeTarget.run(data)
        case .toml: TOMLTarget.run(data)
        case .control: ControlTarget.run(data)
        case .reader: ReaderTarget.run(data)
        case .mqtt: MQTTTarget.run(data)
        case .fleet: FleetTarget.run(data)
        case .natsjwt: NATSJWTTarget.run(data)
        case .mdns: MulticastDNSTarget.run(data)
        case .ntag424: NTAG424Target.run(data)
        case .osdp: OSDPTarget.run(data)
        case .osdpcp: OSDPControlPanelTarget.run(data)
        }
    }
}

/// A broken invariant is a finding: say which, then abort so libFuzzer (or
/// the replayer's caller) sees a crash and keeps the input.
func expect(
    _ condition: @autoclosure () -> Bool, _ what: @autoclosure () -> String, file: StaticString = #fileID,
    line: UInt = #line
) {
    guard !condition() else { return }
    fputs("fuzz-targets: invariant broken (\(file):\(line)): \(what())\n", stderr)
    abort()
}

/// libFuzzer's entry point. The target is named by `FUZZ_TARGET` (scripts/fuzz.sh sets it).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    selectedTarget.run(bytes)
    return 0
}

let selectedTarget: FuzzTarget = {
    let name = getenv("FUZZ_TARGET").map { String(cString: $0) } ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        fputs("fuzz-targets: set FUZZ_TARGET to one of: \(names)\n", stderr)
        exit(2)
    }
    return target
}()
