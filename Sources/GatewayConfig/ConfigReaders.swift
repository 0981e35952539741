import DoorCore

/// `[[readers]]` (issue 35): a door's readers, each with a name, a kind, the side of the door it
/// is on and the actions its credentials may trigger. Without `[[readers]]` the door has one
/// reader, the PN532 of `[reader]`, as before (`GatewayConfiguration.readers` says so).
public struct ReaderSettings: Equatable, Sendable {
    public enum Kind: String, Sendable, CaseIterable { case pn532, osdp, wiegand }
    public enum Side: String, Sendable, CaseIterable { case entry, exit }

    /// An OSDP reader on an RS-485 line (docs: board/wiring.md).
    public struct OSDP: Equatable, Sendable {
        /// The serial device, `/dev/ttyUSB0`, `/dev/ttyAMA0`.
        public var device: String
        public var baud: Int
        /// The reader's OSDP address, 0…126 (0x7F is the broadcast).
        public var address: Int
        /// No Secure Channel with this reader: only by explicit opt-in (`insecure = true`).
        public var insecure: Bool
        public init(device: String, baud: Int = 9600, address: Int = 0, insecure: Bool = false) {
            (self.device, self.baud, self.address, self.insecure) = (device, baud, address, insecure)
        }
    }

    /// A Wiegand reader on two GPIO input lines (board/wiring.md: through a 5 V → 3.3 V level shifter).
    public struct Wiegand: Equatable, Sendable {
        public var d0: LineRef
        public var d1: LineRef
        /// The GPIO chip of D0 and D1; nil: `[board] chip`.
        public var chip: String?
        /// The card frame length the reader sends: 26, 34 or 37 bits; nil: any (the named formats
        /// parity-checked, other lengths of 24 bits or more as raw bits).
        public var bits: Int?
        /// The keypad's burst per key: 4 or 8 bits; nil: both.
        public var keypadBurst: Int?
        /// The silence that ends a frame, 25…100 ms.
        public var frameGapMilliseconds: Int
        public init(
            d0: LineRef, d1: LineRef, chip: String? = nil, bits: Int? = nil, keypadBurst: Int? = nil,
            frameGapMilliseconds: Int = 50
        ) {
            (self.d0, self.d1, self.chip, self.bits, self.keypadBurst, self.frameGapMilliseconds) =
                (d0, d1, chip, bits, keypadBurst, frameGapMilliseconds)
        }
    }

    public var name: String
    public var kind: Kind
    public var side: Side
    /// The action indexes this reader's credentials may trigger; nil: every action.
    public var actions: [Int]?
    public var osdp: OSDP?
    public var wiegand: Wiegand?

    public init(
        name: String, kind: Kind, side: Side = .entry, actions: [Int]? = nil, osdp: OSDP? = nil,
        wiegand: Wiegand? = nil
    ) {
        (self.name, self.kind, self.side, self.actions, self.osdp, self.wiegand) =
            (name, kind, side, actions, osdp, wiegand)
    }

    /// The reader a file without `[[readers]]` has: the PN532 of `[reader]`, on the entry side,
    /// every action (the single-reader configuration, unchanged).
    public static let legacyName = "pn532"
    public static let legacy = ReaderSettings(name: legacyName, kind: .pn532)

    /// The baud rates a serial line takes (termios), 9600…115200.
    public static let baudRates = [9600, 19200, 38400, 57600, 115200]

    /// `street osdp /dev/ttyUSB0@9600 #0 entry` (no key: keys are in the store).
    public var summary: String {
        var text = "\(name) \(kind.rawValue)"
        if let osdp {
            text +=
                " \(osdp.device)@\(osdp.baud) #\(osdp.address)" + (osdp.insecure ? " INSECURE (no Secure Channel)" : "")
        }
        if let wiegand {
            text += " d0@\(wiegand.d0) d1@\(wiegand.d1)" + (wiegand.chip.map { " on \($0)" } ?? "")
            if let bits = wiegand.bits { text += " \(bits) bits" }
            if let burst = wiegand.keypadBurst { text += " keys \(burst) bits" }
            if wiegand.frameGapMilliseconds != 50 { text += " gap \(wiegand.frameGapMilliseconds) ms" }
        }
        text += " \(side.rawValue)"
        if let actions { text += " actions " + actions.map(String.init).joined(separator: "/") }
        return text
    }

    /// Whether this reader may trigger `action`.
    public func allows(action: Int) -> Bool { actions?.contains(action) ?? true }
}

extension GatewayConfiguration {
    /// The OSDP readers of `[[readers]]`.
    public var osdpReaders: [ReaderSettings] { readers.filter { $0.kind == .osdp } }

    /// The Wiegand readers of `[[readers]]`.
    public var wiegandReaders: [ReaderSettings] { readers.filter { $0.kind == .wiegand } }

    /// `[[readers]]`. Read only when the file has it, so a file without it (every file before
    /// issue 35) asks for no new key and loads exactly as before.
    /// A Wiegand reader's lines are claimed with the board's (relay, button, fire input…) when
    /// they are on `boardChip`, else with the other lines of their own chip.
    static func readReaders(
        _ root: TableReader, actions: [ActionDefinition], boardChip: String = Defaults.chip,
        _ lines: inout LineRegistry
    ) -> [ReaderSettings] {
        guard root.has("readers"), let tables = root.tables("readers") else { return [.legacy] }
        if tables.isEmpty { root.fail("readers", "at least one reader is needed (or leave [[readers]] out)") }
        var readers: [ReaderSettings] = []
        var buses: [String: (baud: Int, addresses: [Int: String])] = [:]
        var otherChips: [String: LineRegistry] = [:]
        for t in tables {
            let name = t.optionalString("name", Check.identifier(max: 32))
            if !t.has("name") { t.fail("name", "is required: the reader's name in events (letters, digits, - and _)") }
            let kind: ReaderSettings.Kind? = t.optionalChoice("kind")
            if !t.has("kind") { t.fail("kind", "is required: \"pn532\", \"osdp\" or \"wiegand\"") }
            let side = t.choice("side", ReaderSettings.Side.entry)
            var allowed: [Int]?
            if let n = t.node("actions") {
                if case .array(let items) = n {
                    allowed = []
                    for (i, item) in items.enumerated() {
                        guard case .int(let v) = item else {
                            t.fail("actions[\(i)]", "expected an action index, found \(item.typeName)"); continue
                        }
                        guard actions.contains(where: { $0.index == v }) else {
                            t.fail(
                                "actions[\(i)]",
                                "there is no action \(v) (actions: \(actions.map { "\($0.index)" }.joined(separator: ", ")))"
                            )
                            continue
                        }
                        allowed?.append(v)
                    }
                } else {
                    t.fail("actions", "expected an array of action indexes, found \(n.typeName)")
                }
            }
            var reader = ReaderSettings(name: name ?? "", kind: kind ?? .pn532, side: side, actions: allowed)
            switch kind {
            case .osdp?:
                let device = t.optionalString("device", Check.absolutePath)
                if !t.has("device") { t.fail("device", "is required: the serial line, \"/dev/ttyUSB0\"") }
                let baud = t.optionalInt("baud", 9600...115200)
                if let baud, !ReaderSettings.baudRates.contains(baud) {
                    t.fail(
                        "baud",
                        "\(baud) is not a serial rate: one of \(ReaderSettings.baudRates.map(String.init).joined(separator: ", "))"
                    )
                }
                let address = t.int("address", 0, 0...126)
                let insecure = t.bool("insecure", false)
                let osdp = ReaderSettings.OSDP(
                    device: device ?? "", baud: baud ?? 9600, address: address, insecure: insecure)
                reader.osdp = osdp
                if let device {
                    var bus = buses[device] ?? (osdp.baud, [:])
                    if bus.baud != osdp.baud {
                        t.fail(
                            "baud",
                            "\(osdp.baud) differs from \(bus.baud) of another reader on \(device): one bus, one rate")
                    }
                    if let other = bus.addresses[address] {
                        t.fail("address", "\(address) is also reader \"\(other)\"'s on \(device)")
                    }
                    bus.addresses[address] = name ?? "?"
                    buses[device] = bus
                }
            case .wiegand?:
                let chip = t.optionalString("chip", Check.text(max: 4096))
                let d0: LineRef?
                let d1: LineRef?
                if let chip, chip != boardChip {
                    var own = otherChips[chip] ?? LineRegistry(sink: root.sink)
                    (d0, d1) = (readLine(t, &own, key: "d0"), readLine(t, &own, key: "d1"))
                    otherChips[chip] = own
                } else {
                    (d0, d1) = (readLine(t, &lines, key: "d0"), readLine(t, &lines, key: "d1"))
                }
                let bits = t.optionalInt("bits", 26...37)
                if let bits, ![26, 34, 37].contains(bits) {
                    t.fail("bits", "\(bits) is not a Wiegand frame: 26, 34 or 37 (leave it out for any)")
                }
                let burst = t.optionalInt("keypad_burst", 4...8)
                if let burst, ![4, 8].contains(burst) {
                    t.fail("keypad_burst", "\(burst) is not a keypad burst: 4 or 8 (leave it out for both)")
                }
                let gap = t.int("frame_gap_ms", 50, 25...100)
                reader.wiegand = ReaderSettings.Wiegand(
                    d0: d0 ?? .offset(0), d1: d1 ?? .offset(0), chip: chip, bits: bits, keypadBurst: burst,
                    frameGapMilliseconds: gap)
            case .pn532?:
                if readers.contains(where: { $0.kind == .pn532 }) {
                    t.fail("kind", "a second \"pn532\": the door has one PN532, the one of [reader]")
                }
            case nil: break
            }
            t.finish()
            guard let name, kind != nil else { continue }
            if readers.contains(where: { $0.name == name }) {
                t.fail("name", "another reader is already named \"\(name)\"")
                continue
            }
            readers.append(reader)
        }
        return readers.isEmpty ? [.legacy] : readers
    }
}
