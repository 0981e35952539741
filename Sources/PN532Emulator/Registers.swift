/// The PN532 register file reachable through ReadRegister / WriteRegister
/// (PN532 UM0701-02 §7.2.4–7.2.5): the CIU at 6301h–633Fh and the SFRs at
/// FFxxh. Only the bits libnfc 1.8.0 relies on have behaviour; every other
/// address simply keeps what was written (unwritten ones read as 00h).
public struct Registers: Sendable, Equatable {
    // CIU addresses (libnfc pn53x-internal.h, PN532 C1 data sheet §8.6.23).
    public static let txMode: UInt16 = 0x6302  // bit 7 TxCRCEn, bits 6–4 speed, bits 1–0 framing
    public static let rxMode: UInt16 = 0x6303  // bit 7 RxCRCEn, bits 6–4 speed, bits 1–0 framing
    public static let txAuto: UInt16 = 0x6305
    public static let manualRCV: UInt16 = 0x630D  // bit 4 ParityDisable
    public static let status2: UInt16 = 0x6338  // bit 3 MFCrypto1On
    public static let control: UInt16 = 0x633C  // bits 2–0 RxLastBits, bit 4 Initiator
    public static let bitFraming: UInt16 = 0x633D  // bits 2–0 TxLastBits

    private var values: [UInt16: UInt8]

    /// Power-on values as libnfc assumes them: CRC on in both directions
    /// (`nfc_device_new` starts with bCrc = true), parity handled by the chip.
    public init() {
        values = [Self.txMode: 0x80, Self.rxMode: 0x80, Self.txAuto: 0x40, Self.control: 0x10]
    }

    public subscript(_ address: UInt16) -> UInt8 {
        get { values[address] ?? 0 }
        set { values[address] = newValue }
    }

    public var txCRC: Bool { self[Self.txMode] & 0x80 != 0 }
    public var rxCRC: Bool { self[Self.rxMode] & 0x80 != 0 }
    public var parityDisabled: Bool { self[Self.manualRCV] & 0x10 != 0 }
    public var txLastBits: Int { Int(self[Self.bitFraming] & 0x07) }
    /// Speed and framing bits zero in both directions: 106 kbit/s type A.
    public var isTypeA106: Bool { self[Self.txMode] & 0x73 == 0 && self[Self.rxMode] & 0x73 == 0 }

    mutating func setRxLastBits(_ bits: Int) {
        self[Self.control] = self[Self.control] & ~0x07 | UInt8(bits & 0x07)
    }

    /// What the firmware sets up itself to activate a 106 kbit/s type A
    /// target (InListPassiveTarget, InAutoPoll, InSelect): type A framing at
    /// 106 kbit/s. CRC, parity and TxLastBits stay as the host set them, so
    /// libnfc's register cache (`bCrc`, `bPar`, `ui8TxBits`) stays true.
    mutating func selectTypeA106() {
        self[Self.txMode] &= ~0x73
        self[Self.rxMode] &= ~0x73
    }
}
