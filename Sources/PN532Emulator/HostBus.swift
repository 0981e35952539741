/// Frames the chip has sent on its I2C or SPI host interface, each waiting
/// until it is ready (the chip answers only after its RF exchanges) and then
/// until the host reads it. HSU pushes bytes at the host; on I2C and SPI the
/// host pulls them, polling a ready flag first (UM0701-02 §6.2.4, §6.2.5).
public struct ReadyQueue: Sendable {
    struct Item: Sendable {
        var bytes: [UInt8]
        var readyAt: UInt64
    }

    private var items: [Item] = []

    public init() {}

    /// Queues a frame the host may read from `readyAt` (monotonic nanoseconds) on.
    public mutating func push(_ bytes: [UInt8], readyAt: UInt64) {
        items.append(Item(bytes: bytes, readyAt: readyAt))
    }

    public func isReady(at now: UInt64) -> Bool { items.first.map { $0.readyAt <= now } ?? false }

    /// When the oldest frame is (or was) ready; nil when nothing is queued.
    public var nextReadyAt: UInt64? { items.first?.readyAt }

    /// The oldest frame, when it is ready.
    public mutating func pop(at now: UInt64) -> [UInt8]? {
        guard isReady(at: now) else { return nil }
        return items.removeFirst().bytes
    }

    public mutating func removeAll() { items.removeAll() }

    public var count: Int { items.count }
}

/// The PN532's I2C interface (UM0701-02 §6.2.4; PN532 datasheet §8.3.2.2):
/// slave address 24h (48h/49h with the R/W bit). A host read starts with the
/// status byte — 01h when a frame is ready, then the frame; 00h when not —
/// and libnfc `pn532_i2c_wait_rdyframe` polls exactly that.
public enum PN532I2C {
    public static let address: UInt8 = 0x24

    /// What the chip clocks out for a host read of `count` bytes; a ready
    /// frame is consumed whole, and the bytes after it read as 00h.
    public static func read(_ count: Int, from queue: inout ReadyQueue, at now: UInt64) -> (
        bytes: [UInt8], frame: [UInt8]?
    ) {
        guard count > 0 else { return ([], nil) }
        guard let frame = queue.pop(at: now) else { return ([UInt8](repeating: 0, count: count), nil) }
        var out = [UInt8(0x01)] + frame.prefix(count - 1)
        out += [UInt8](repeating: 0, count: count - out.count)
        return (out, frame)
    }

    /// How long the chip holds SCL low after acknowledging its address on a
    /// host read, before the status byte, while it is still preparing the
    /// answer it owes (`readyAt` in the future: the RF exchanges of the
    /// command): until the answer is ready, at most `limit`. The status byte
    /// is sampled when SCL is released, so a stretch that lasts until
    /// `readyAt` delivers the answer in this very read. Nothing queued, or a
    /// command that waits indefinitely (InAutoPoll for a tag), is no stretch:
    /// the chip answers 00h at once.
    public static func busyStretchNanos(readyAt: UInt64?, now: UInt64, limit: UInt64) -> UInt64 {
        guard let readyAt, readyAt > now else { return 0 }
        return min(readyAt - now, limit)
    }

    /// Bus time of one transfer at `hz`: START, the address byte and `bytes`
    /// data bytes at 9 clocks each (8 bits and the acknowledge), STOP.
    public static func transferNanos(bytes: Int, hz: Int) -> UInt64 {
        UInt64((bytes + 1) * 9 + 2) * 1_000_000_000 / UInt64(max(hz, 1))
    }
}

/// The PN532's SPI interface (UM0701-02 §6.2.5): mode 0, LSB first; each
/// transaction (chip select low to high) starts with DW 01h (data write: a
/// frame follows), SR 02h (status read: 01h when a frame is ready) or DR 03h
/// (data read: the frame follows).
///
/// Reading a frame in chunks, as libnfc `pn532_spi_receive_next_chunk`
/// does, relies on what its comment documents of the chip: a transaction
/// without a DR byte (a receive-only transfer, the host sends 00h) shows the
/// next byte without consuming it, and the DR transaction after such a peek
/// clocks that byte out again under its DR byte and moves on; the first DR
/// of a frame clocks out the status under its DR byte.
public struct PN532SPI: Sendable {
    public static let dataWrite: UInt8 = 0x01
    public static let statusRead: UInt8 = 0x02
    public static let dataRead: UInt8 = 0x03

    private var frame: [UInt8] = []
    private var position = 0
    private var peeked = false

    public init() {}

    /// One transaction: `mosi` in the chip's bit order; returns the chip's
    /// bytes in its bit order, and the frame bytes of a DW transaction.
    public mutating func transaction(_ mosi: [UInt8], queue: inout ReadyQueue, at now: UInt64)
        -> (miso: [UInt8], written: [UInt8]?)
    {
        guard let op = mosi.first else { return ([], nil) }
        var miso = [UInt8](repeating: 0, count: mosi.count)
        let wasPeek = peeked
        peeked = false
        switch op {
        case Self.dataWrite:
            // A new command: whatever was left of the last answer is gone.
            frame = []
            position = 0
            return (miso, Array(mosi.dropFirst()))
        case Self.statusRead:
            let ready = position < frame.count || queue.isReady(at: now)
            for i in 1..<mosi.count { miso[i] = ready ? 0x01 : 0x00 }
            return (miso, nil)
        case Self.dataRead:
            if position >= frame.count, let next = queue.pop(at: now) {
                frame = next
                position = 0
                miso[0] = 0x01
            } else if wasPeek, position < frame.count {
                miso[0] = frame[position]
                position += 1
            }
            for i in 1..<mosi.count where position < frame.count {
                miso[i] = frame[position]
                position += 1
            }
            return (miso, nil)
        default:
            peeked = true
            if position < frame.count { miso = miso.map { _ in frame[position] } }
            return (miso, nil)
        }
    }

    /// Bit order reversed: what an MSB-first controller puts on the wire
    /// for an LSB-first byte (libnfc `bit_reversal`).
    public static func reversed(_ b: UInt8) -> UInt8 {
        var x = b
        x = (x & 0xAA) >> 1 | (x & 0x55) << 1
        x = (x & 0xCC) >> 2 | (x & 0x33) << 2
        return x >> 4 | x << 4
    }

    /// Bus time of `bytes` bytes at `hz` (8 clocks a byte).
    public static func transferNanos(bytes: Int, hz: Int) -> UInt64 {
        UInt64(bytes * 8) * 1_000_000_000 / UInt64(max(hz, 1))
    }
}
