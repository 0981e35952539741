import DoorCore

/// The Raspberry Pi firmware's hold of one relay line: a `gpio=` line in
/// config.txt (`gpio=17=op,dh,pu`: output, drive high, pull up), which the
/// VideoCore firmware applies at power-on, before Linux and gatewayd run, so
/// the relay sits in its *locked* state from the first instant
/// (board/wiring.md). The pull is the locked level's too: Debian's kernel
/// returns a released line to an input, where only the pull holds it, and it
/// is the same pull gatewayd requests with the line (DoorIO's OutputLine).
public struct FirmwareHold: Equatable, Sendable {
    public var output: String
    /// The BCM GPIO number, as config.txt's `gpio=` counts (`GPIO17` → 17).
    public var pin: Int
    public var activeLow: Bool
    public var lockedLevel: CoilLevel

    public init(output: String, pin: Int, activeLow: Bool, lockedLevel: CoilLevel) {
        self.output = output
        self.pin = pin
        self.activeLow = activeLow
        self.lockedLevel = lockedLevel
    }

    /// The electrical level of the locked state.
    public var level: LineLevel {
        GatewayConfiguration.Output.lineLevel(of: lockedLevel, activeLow: activeLow)
    }

    /// `gpio=17=op,dh,pu` (or `op,dl,pd`): output, driven to the locked
    /// level, and pulled to it for when the line is an input again.
    public var line: String { "gpio=\(pin)=op,\(level == .high ? "dh,pu" : "dl,pd")" }

    /// The hold as written before it carried the pull (`gpio=17=op,dh`): the
    /// right drive, but a released line falls to GPIO17's reset pull-down.
    public var lineWithoutPull: String { "gpio=\(pin)=op,\(level == .high ? "dh" : "dl")" }

    /// One comment line saying why: `# strike (GPIO17): active-low relay, locked de-energised (strike): line high while locked`.
    public var explanation: String {
        "# \(output) (GPIO\(pin)): \(activeLow ? "active-low" : "active-high") relay, locked "
            + (lockedLevel == .deenergised ? "de-energised (strike)" : "energised (maglock)")
            + ": line \(level.rawValue) while locked, pulled \(level == .high ? "up" : "down")"
    }

    public static let beginMarker = "# >>> doorgateway relay hold"
    public static let endMarker = "# <<< doorgateway relay hold"

    /// The block `gatewayctl config firmware --write` keeps in config.txt and
    /// /etc/default/raspi-firmware-custom, from its begin marker to its end marker.
    public static func block(_ holds: [FirmwareHold]) -> [String] {
        [
            beginMarker + " (written by `gatewayctl config firmware --write` from gateway.toml; board/wiring.md)",
            "# Each relay line at its locked level from power-on, before Linux and gatewayd.",
        ] + holds.flatMap { [$0.explanation, $0.line] } + [endMarker]
    }

    /// The pins a `gpio=` line sets (`gpio=17=…`, `gpio=16,17=…`, `gpio=4-7=…`),
    /// nil for any other line.
    static func pins(ofConfigLine line: Substring) -> Set<Int>? {
        let text = line.drop { $0 == " " || $0 == "\t" }
        guard text.hasPrefix("gpio=") else { return nil }
        let spec = text.dropFirst(5).prefix { $0 != "=" }
        var pins = Set<Int>()
        for part in spec.split(separator: ",") {
            let ends = part.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(ends.count), let a = Int(ends[0]), let b = Int(ends.last!), a <= b, b < 1000
            else { return nil }
            pins.formUnion(a...b)
        }
        return pins.isEmpty ? nil : pins
    }

    /// What a file holds for `pin`: the last `gpio=` line that sets it (the
    /// firmware applies them in order), nil when none does.
    public static func current(in text: String, pin: Int) -> String? {
        text.split(separator: "\n", omittingEmptySubsequences: false).last {
            pins(ofConfigLine: $0)?.contains(pin) ?? false
        }.map { String($0.drop { $0 == " " || $0 == "\t" }) }
    }

    public struct RewriteError: Error, Equatable, Sendable, CustomStringConvertible {
        /// 1-based line of a `gpio=` line that sets one of the relay pins together with others.
        public var line: Int
        public var text: String
        public var description: String {
            "line \(line) (\(text)) sets a relay pin together with other pins: edit it by hand, then run this again"
        }
    }

    /// `text` (config.txt or raspi-firmware-custom) with the relay hold block
    /// for `holds`: an earlier block is replaced where it stands; otherwise the
    /// first `gpio=` line for one of the relay pins makes way for it; otherwise
    /// it is appended under `[all]`. Every other `gpio=` line for those pins
    /// goes (a later one would win over the block). A line that sets a relay
    /// pin together with other pins is not guessed at: an error.
    public static func rewrite(_ text: String, holds: [FirmwareHold]) throws(RewriteError) -> String {
        let relayPins = Set(holds.map(\.pin))
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let hadFinalNewline = text.hasSuffix("\n")
        if hadFinalNewline { lines.removeLast() }
        var kept: [String] = []
        var insertAt: Int?
        var inBlock = false
        for (i, line) in lines.enumerated() {
            if line.hasPrefix(beginMarker) {
                inBlock = true
                insertAt = insertAt ?? kept.count
                continue
            }
            if inBlock {
                if line.hasPrefix(endMarker) { inBlock = false }
                continue
            }
            if let pins = pins(ofConfigLine: Substring(line)), !pins.isDisjoint(with: relayPins) {
                guard pins.isSubset(of: relayPins) else { throw RewriteError(line: i + 1, text: line) }
                insertAt = insertAt ?? kept.count
                continue
            }
            kept.append(line)
        }
        let block = Self.block(holds)
        if let insertAt {
            kept.insert(contentsOf: block, at: insertAt)
        } else {
            if let last = kept.last, !last.isEmpty { kept.append("") }
            // Appended after whatever conditional section ([pi4], [cm4] …) ends the file.
            kept += ["[all]"] + block
        }
        return kept.joined(separator: "\n") + "\n"
    }
}

/// Why a relay's firmware hold cannot be derived from the configuration.
public struct FirmwareHoldError: Error, Equatable, Sendable, CustomStringConvertible {
    public var output: String
    public var message: String
    public init(output: String, message: String) {
        self.output = output
        self.message = message
    }
    public var description: String { "output \"\(output)\": \(message)" }
}

extension GatewayConfiguration.Output {
    /// The electrical level of a coil level: the coil is energised while the
    /// line is high, or, active-low, while it is low.
    public static func lineLevel(of coil: CoilLevel, activeLow: Bool) -> LineLevel {
        (coil == .energised) != activeLow ? .high : .low
    }

    /// The electrical level of the locked state: an active-low module with a
    /// strike (locked = de-energised) is locked while its line is *high*.
    public var lockedLineLevel: LineLevel { Self.lineLevel(of: lockedLevel, activeLow: activeLow) }
}

extension GatewayConfiguration {
    /// Chips whose line offsets are BCM GPIO numbers on the Pi 3, 4 and Zero 2 W
    /// (the image's boards; a Pi 5's header chip is named by line, `GPIO17`).
    static let bcmChips: Set<String> = ["gpiochip0", "/dev/gpiochip0", "0", "pinctrl-bcm2835", "pinctrl-bcm2711"]

    /// The firmware hold of every output: each relay's BCM pin and the level
    /// of its locked state. A line that is neither `GPIOn` nor an offset on
    /// the Pi's own GPIO chip has no `gpio=` line: an error naming the output.
    public func firmwareHolds() throws(FirmwareHoldError) -> [FirmwareHold] {
        try outputs.map { o throws(FirmwareHoldError) in
            let pin: Int?
            switch o.line {
            case .name(let n):
                let digits = n.dropFirst(4)
                pin =
                    n.hasPrefix("GPIO") && !digits.isEmpty && digits.count <= 2
                        && digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) ? Int(digits) : nil
            case .offset(let v):
                pin = Self.bcmChips.contains(chip) ? Int(v) : nil
            }
            guard let pin, pin <= 53 else {
                throw FirmwareHoldError(
                    output: o.name,
                    message:
                        "line \(o.line) on chip \(chip) is not a Raspberry Pi GPIO the firmware can hold (config.txt gpio=): "
                        + "name it \"GPIOn\", or hold it at its locked level in hardware (a pull resistor)")
            }
            return FirmwareHold(output: o.name, pin: pin, activeLow: o.activeLow, lockedLevel: o.lockedLevel)
        }
    }
}
