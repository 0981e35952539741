#if canImport(Glibc)
    import Glibc
#else
    import Darwin
#endif
import CPseudoTerminal
import DoorCore
import PN532Emulator

/// The PN532 on an I2C bus or an SPI chip select, presented by the kernel as
/// `/dev/i2c-N` (i2c-dev) or `/dev/spidevB.C` (spidev) through CUSE, so that
/// libnfc's `pn532_i2c` and `pn532_spi` drivers reach it with their own
/// open/ioctl/read/write calls. What the front answers follows the kernel
/// drivers (drivers/i2c/i2c-dev.c, drivers/spi/spidev.c) on a Raspberry Pi:
/// an address nobody acknowledges fails with EREMOTEIO (i2c-bcm2835), and the
/// SPI controller has no LSB-first mode (spi-bcm2835), so the host reverses
/// the bits itself, as libnfc does.
final class BusFront {
    enum Kind: Equatable {
        case i2c(hz: Int)
        case spi
    }

    struct Stats {
        var transfers = 0
        var notReady = 0
        var bytes = 0
        var nanos: UInt64 = 0
        /// I2C reads on which the chip held SCL while busy, and for how long.
        var busyStretches = 0
        var busyStretchNanos: UInt64 = 0
        /// Where the time goes, for `make bench-bus`: the kernel's requests
        /// on the device (an SPI_IOC_MESSAGE is three: spidev's two retries),
        /// the emulator's time on them (request read → reply written: the
        /// modelled bus time it sleeps, `sleptNanos`, and its own work), and
        /// the time between a reply and the host's next request (libnfc, the
        /// kernel's path through CUSE, the scheduler), apart after a
        /// not-ready answer (that gap holds libnfc's poll interval).
        var requests = 0
        var serveNanos: UInt64 = 0
        var sleptNanos: UInt64 = 0
        var hostGaps = 0
        var hostGapNanos: UInt64 = 0
        var pollGaps = 0
        var pollGapNanos: UInt64 = 0
        /// I2C transfers refused while the chip was reading a frame.
        var nacks = 0

        var summary: String {
            "bus_transfers=\(transfers) bus_not_ready=\(notReady) bus_bytes=\(bytes) bus_ms=\(nanos / 1_000_000)"
                + " bus_busy_stretches=\(busyStretches) bus_busy_stretch_ms=\(busyStretchNanos / 1_000_000)"
                + " bus_requests=\(requests) bus_serve_us=\(serveNanos / 1000) bus_slept_us=\(sleptNanos / 1000)"
                + " bus_wire_us=\(nanos / 1000) host_gaps=\(hostGaps) host_gap_us=\(hostGapNanos / 1000)"
                + " poll_gaps=\(pollGaps) poll_gap_us=\(pollGapNanos / 1000) bus_nacks=\(nacks)"
        }
    }

    /// When the last reply went out, and whether it answered "not ready"
    /// (0: none since the counters were reset).
    var lastReplyAt: UInt64 = 0
    var lastWasNotReady = false
    /// When the request being served arrived, and the bus time modelled for
    /// it so far: its reply goes out at `requestArrived + requestBusNanos`
    /// at the earliest, so the emulator's own work (and the request's way
    /// through the kernel) overlaps the modelled bus time instead of adding
    /// to it — a real controller starts clocking when the host asks.
    var requestArrived: UInt64 = 0
    var requestBusNanos: UInt64 = 0

    let kind: Kind
    let device: CUSEDevice
    var queue = ReadyQueue()
    var spi = PN532SPI()
    /// spidev's settings (SPI_IOC_WR_MODE32, _BITS_PER_WORD, _MAX_SPEED_HZ);
    /// the speed starts at a device-tree default of 500 kHz.
    var spiMode: UInt32 = 0
    var spiBitsPerWord: UInt8 = 8
    var spiSpeed: UInt32 = 500_000
    /// i2c-dev's I2C_SLAVE address, per open file.
    var addresses: [UInt64: UInt64] = [:]
    private var nextHandle: UInt64 = 1
    /// The chip does not answer on the bus at all (`absent`).
    var absent = false
    /// The chip's answers are ready no earlier than this (its RF work).
    var busyUntil: UInt64 = 0
    var stats = Stats()

    /// Waking from LowVBat or PowerDown takes the chip about this long: on
    /// I2C it stretches SCL meanwhile; on SPI the bytes of a shorter
    /// transaction are lost.
    static let wakeUpNanos: UInt64 = 1_000_000

    /// The longest the chip holds SCL on an I2C read while the answer it owes
    /// is not ready (`--i2c-busy-stretch`; 0: never).
    let busyStretchLimit: UInt64

    /// How long after a host frame the chip leaves its I2C address
    /// unacknowledged (`--i2c-nack-after-write`; 0: never), and until when.
    let nackAfterWrite: UInt64
    var nackUntil: UInt64 = 0

    init(kind: Kind, path: String, busyStretchLimit: UInt64 = 0, nackAfterWrite: UInt64 = 0) throws {
        self.kind = kind
        self.busyStretchLimit = busyStretchLimit
        self.nackAfterWrite = nackAfterWrite
        device = try CUSEDevice(path: path)
        // The bus waits end at their deadline, not up to 50 µs (the default
        // timer slack) after it: a transfer is as long as its clocks.
        _ = door_set_timer_slack_ns(1)
    }

    var name: String {
        switch kind {
        case .i2c(let hz):
            return "i2c \(device.path) address 0x24 at \(hz / 1000) kHz,"
                + " SCL held up to \(busyStretchLimit / 1000) µs while busy"
        case .spi: return "spi \(device.path) mode 0, LSB first"
        }
    }

    /// A frame from the host replaces whatever answer it left unread: the
    /// PN532 has one output buffer. A host that lost an exchange half-way
    /// (the chip off the bus, a timeout) must not read the old answer as the
    /// answer to its next command.
    func newHostFrame() {
        queue.removeAll()
        spi = PN532SPI()
    }

    func openFile() -> UInt64 {
        defer { nextHandle += 1 }
        return nextHandle
    }
}

extension Simulator {
    /// One request from the kernel on the bus device.
    func busReadable() throws {
        guard let bus else { return }
        let dev = bus.device
        let request = try dev.next()
        let arrived = Self.now()
        bus.requestArrived = arrived
        bus.requestBusNanos = 0
        if bus.lastReplyAt != 0 {
            let gap = arrived - bus.lastReplyAt
            if bus.lastWasNotReady {
                bus.stats.pollGaps += 1
                bus.stats.pollGapNanos += gap
            } else {
                bus.stats.hostGaps += 1
                bus.stats.hostGapNanos += gap
            }
        }
        let notReadyBefore = bus.stats.notReady
        defer {
            let done = Self.now()
            bus.stats.requests += 1
            bus.stats.serveNanos += done - arrived
            bus.lastReplyAt = done
            bus.lastWasNotReady = bus.stats.notReady != notReadyBefore
        }
        switch request {
        case .open(let unique, _):
            try dev.replyOpen(unique, fh: bus.openFile())
        case .release(let unique, let fh):
            bus.addresses[fh] = nil
            log("host closed \(dev.path)")
            try dev.reply(unique)
        case .read(let unique, let fh, let size):
            switch bus.kind {
            case .i2c(let hz):
                let r = try i2cTransfer(bus, fh: fh, hz: hz, write: nil, readCount: size)
                try r.error.map { try dev.reply(unique, error: $0) } ?? dev.reply(unique, r.bytes)
            case .spi:
                let miso = try spiMessage(
                    bus, [(tx: [UInt8](repeating: 0, count: size), hz: 0, delayMicros: 0, csChange: false)])
                try dev.reply(unique, miso)
            }
        case .write(let unique, let fh, let data):
            switch bus.kind {
            case .i2c(let hz):
                let r = try i2cTransfer(bus, fh: fh, hz: hz, write: data, readCount: 0)
                try r.error.map { try dev.reply(unique, error: $0) } ?? dev.replyWrite(unique, count: data.count)
            case .spi:
                _ = try spiMessage(bus, [(tx: data, hz: 0, delayMicros: 0, csChange: false)])
                try dev.replyWrite(unique, count: data.count)
            }
        case .ioctl(let unique, let fh, let command, let argument, let input, let outputSize):
            switch bus.kind {
            case .i2c: try i2cIoctl(bus, unique, fh, command, argument, outputSize)
            case .spi: try spiIoctl(bus, unique, command, argument, input, outputSize)
            }
        case .other:
            break
        }
    }

    // MARK: I2C (i2c-dev)

    private func i2cIoctl(
        _ bus: BusFront, _ unique: UInt64, _ fh: UInt64, _ command: UInt32, _ argument: UInt64, _ outputSize: Int
    ) throws {
        switch command {
        case UInt32(I2C_SLAVE), UInt32(I2C_SLAVE_FORCE):
            // i2c-dev only records the address; nothing goes on the bus yet.
            guard argument <= 0x7F else { return try bus.device.reply(unique, error: EINVAL) }
            bus.addresses[fh] = argument
            try bus.device.replyIoctl(unique, result: 0)
        case UInt32(I2C_FUNCS):
            guard outputSize >= 8 else { return try bus.device.retryIoctl(unique, input: [], output: [(argument, 8)]) }
            try bus.device.replyIoctl(unique, result: 0, output: CUSEDevice.bytes(of: UInt64(I2C_FUNC_I2C)))
        default:
            try bus.device.reply(unique, error: ENOTTY)
        }
    }

    /// One I2C transfer (START, address, data, STOP), at bus speed.
    private func i2cTransfer(_ bus: BusFront, fh: UInt64, hz: Int, write: [UInt8]?, readCount: Int) throws
        -> (bytes: [UInt8], error: Int32?)
    {
        let address = bus.addresses[fh] ?? 0
        guard address == UInt64(PN532I2C.address), !bus.absent else {
            // Nobody acknowledges the address byte.
            wait(bus, PN532I2C.transferNanos(bytes: 0, hz: hz))
            traceBus("i2c \(write == nil ? "r" : "w") @\(Hex.encode([UInt8(truncatingIfNeeded: address)])): NACK")
            return ([], EREMOTEIO)
        }
        if bus.requestArrived < bus.nackUntil {
            // Still reading the last frame: the address goes unacknowledged.
            wait(bus, PN532I2C.transferNanos(bytes: 0, hz: hz))
            bus.stats.nacks += 1
            traceBus("i2c \(write == nil ? "r" : "w"): NACK (busy with the last frame)")
            return ([], EREMOTEIO)
        }
        var stretch: UInt64 = 0
        if chip.busWakeUp(.i2c) {
            stretch = BusFront.wakeUpNanos
            log("woken up by its I2C address")
        }
        // A read while the chip is still preparing its answer: SCL held after
        // the address byte, the status byte sampled when it is released. The
        // transfer starts when the host's request arrived (the emulator's own
        // work is no bus time), and the status byte follows the address (and
        // a wake-up): an answer ready later in the transfer is not in it.
        let addressed = bus.requestArrived + stretch + PN532I2C.transferNanos(bytes: 0, hz: hz)
        let busy =
            write == nil
            ? PN532I2C.busyStretchNanos(readyAt: bus.queue.nextReadyAt, now: addressed, limit: bus.busyStretchLimit) : 0
        if busy > 0 {
            bus.stats.busyStretches += 1
            bus.stats.busyStretchNanos += busy
        }
        let count = write?.count ?? readCount
        wait(bus, stretch + busy + PN532I2C.transferNanos(bytes: count, hz: hz))
        bus.stats.bytes += count + 1
        if let write {
            traceBus("i2c w \(hexBytes(write))")
            bus.newHostFrame()
            if bus.nackAfterWrite > 0 {
                // The frame is read before anything is answered: the ACK, and
                // the RF work it starts, come after.
                let end = bus.requestArrived + bus.requestBusNanos
                bus.nackUntil = end + bus.nackAfterWrite
                bus.busyUntil = max(bus.busyUntil, bus.nackUntil)
            }
            try apply(chip.receive(write))
            chip.linkIdle()  // a STOP ends the frame
            return ([], nil)
        }
        let held = busy > 0 ? " (SCL held \(busy / 1000) µs, busy)" : ""
        let (bytes, frame) = PN532I2C.read(readCount, from: &bus.queue, at: addressed + busy)
        if let frame {
            traceBus("i2c r \(readCount)\(held): 01 \(hexBytes(frame))")
        } else {
            bus.stats.notReady += 1
            if options.trace && (busy > 0 || bus.stats.notReady % 50 == 1) {
                traceBus("i2c r \(readCount)\(held): 00 (not ready)")
            }
        }
        return (bytes, nil)
    }

    // MARK: SPI (spidev)

    private func spiIoctl(
        _ bus: BusFront, _ unique: UInt64, _ command: UInt32, _ argument: UInt64, _ input: [UInt8], _ outputSize: Int
    ) throws {
        let dev = bus.device
        let size = Int(door_ioc_size(command))
        if door_ioc_type(command) == UInt32(UInt8(ascii: "k")), door_ioc_nr(command) == 0,
            door_ioc_dir(command) == UInt32(_IOC_WRITE), size > 0, size % MemoryLayout<spi_ioc_transfer>.size == 0
        {
            return try spiIocMessage(
                bus, unique, argument, count: size / MemoryLayout<spi_ioc_transfer>.size, input, outputSize)
        }
        // The settings: one value each way, its size from the command.
        let isWrite = door_ioc_dir(command) == UInt32(_IOC_WRITE)
        if isWrite && input.count < size { return try dev.retryIoctl(unique, input: [(argument, size)], output: []) }
        if !isWrite && outputSize < size { return try dev.retryIoctl(unique, input: [], output: [(argument, size)]) }
        let value = input.prefix(size).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        func answer(_ v: UInt32) throws {
            try dev.replyIoctl(unique, result: 0, output: Array(CUSEDevice.bytes(of: v).prefix(size)))
        }
        switch command {
        case door_spi_ioc_rd_mode(), door_spi_ioc_rd_mode32(): try answer(bus.spiMode)
        case door_spi_ioc_rd_lsb_first(): try answer(bus.spiMode & door_spi_lsb_first() != 0 ? 1 : 0)
        case door_spi_ioc_rd_bits_per_word(): try answer(UInt32(bus.spiBitsPerWord))
        case door_spi_ioc_rd_max_speed_hz(): try answer(bus.spiSpeed)
        case door_spi_ioc_wr_mode(), door_spi_ioc_wr_mode32():
            // spi-bcm2835 has no LSB-first mode: spi_setup() refuses it.
            guard value & door_spi_lsb_first() == 0 else { return try dev.reply(unique, error: EINVAL) }
            bus.spiMode = command == door_spi_ioc_wr_mode() ? (bus.spiMode & ~0xFF) | value : value
            log("spidev mode \(bus.spiMode)")
            try dev.replyIoctl(unique, result: 0)
        case door_spi_ioc_wr_lsb_first():
            guard value == 0 else { return try dev.reply(unique, error: EINVAL) }
            try dev.replyIoctl(unique, result: 0)
        case door_spi_ioc_wr_bits_per_word():
            guard value == 0 || value == 8 else { return try dev.reply(unique, error: EINVAL) }
            bus.spiBitsPerWord = 8
            try dev.replyIoctl(unique, result: 0)
        case door_spi_ioc_wr_max_speed_hz():
            guard value > 0 else { return try dev.reply(unique, error: EINVAL) }
            if bus.spiSpeed != value { log("spidev speed \(value) Hz") }
            bus.spiSpeed = value
            try dev.replyIoctl(unique, result: 0)
        default:
            try dev.reply(unique, error: ENOTTY)
        }
    }

    /// SPI_IOC_MESSAGE(n): first the n transfer descriptors, then their
    /// transmit buffers, are asked for with retries; the receive buffers are
    /// the output.
    private func spiIocMessage(
        _ bus: BusFront, _ unique: UInt64, _ argument: UInt64, count: Int, _ input: [UInt8], _ outputSize: Int
    ) throws {
        let dev = bus.device
        let descriptorSize = count * MemoryLayout<spi_ioc_transfer>.size
        guard input.count >= descriptorSize else {
            return try dev.retryIoctl(unique, input: [(argument, descriptorSize)], output: [])
        }
        let transfers = (0..<count).map { i in
            input.withUnsafeBytes {
                $0.loadUnaligned(fromByteOffset: i * MemoryLayout<spi_ioc_transfer>.size, as: spi_ioc_transfer.self)
            }
        }
        let txRanges = transfers.filter { $0.tx_buf != 0 && $0.len > 0 }.map { ($0.tx_buf, Int($0.len)) }
        let rxRanges = transfers.filter { $0.rx_buf != 0 && $0.len > 0 }.map { ($0.rx_buf, Int($0.len)) }
        let txTotal = txRanges.reduce(0) { $0 + $1.1 }, rxTotal = rxRanges.reduce(0) { $0 + $1.1 }
        if txTotal + rxTotal > 0 && input.count == descriptorSize && outputSize == 0 {
            return try dev.retryIoctl(unique, input: [(argument, descriptorSize)] + txRanges, output: rxRanges)
        }
        guard input.count == descriptorSize + txTotal, outputSize == rxTotal else {
            return try dev.reply(unique, error: EFAULT)
        }
        var txOffset = descriptorSize
        var parts: [(tx: [UInt8], hz: UInt32, delayMicros: UInt16, csChange: Bool)] = []
        for t in transfers {
            let len = Int(t.len)
            var tx = [UInt8](repeating: 0, count: len)
            if t.tx_buf != 0 {
                tx = Array(input[txOffset..<txOffset + len])
                txOffset += len
            }
            parts.append((tx, t.speed_hz, t.delay_usecs, t.cs_change != 0))
        }
        let miso = try spiMessage(bus, parts)
        var output: [UInt8] = []
        var offset = 0
        for t in transfers {
            if t.rx_buf != 0 { output += miso[offset..<offset + Int(t.len)] }
            offset += Int(t.len)
        }
        try dev.replyIoctl(unique, result: Int32(offset), output: output)
    }

    /// Clocks a message's transfers through the chip: chip select stays low
    /// across them unless a transfer asks to drop it (`cs_change`). Bytes
    /// are on the wire MSB first, so the chip (LSB first) sees each reversed.
    private func spiMessage(_ bus: BusFront, _ parts: [(tx: [UInt8], hz: UInt32, delayMicros: UInt16, csChange: Bool)])
        throws -> [UInt8]
    {
        var miso: [UInt8] = []
        var mosi: [UInt8] = []
        var nanos: UInt64 = 0
        func endTransaction() throws {
            guard !mosi.isEmpty else { return }
            let reversed = bus.spiMode & door_spi_lsb_first() == 0
            let chipBytes = reversed ? mosi.map(PN532SPI.reversed) : mosi
            wait(bus, nanos)
            bus.stats.bytes += mosi.count
            var out: [UInt8]
            if bus.absent {
                out = [UInt8](repeating: 0xFF, count: mosi.count)  // MISO pulled high, nobody drives it
            } else if chip.isAsleep {
                out = [UInt8](repeating: 0xFF, count: mosi.count)
                if chip.busWakeUp(.spi) { log("woken up by chip select") }
                // The bytes of a transaction shorter than the wake-up are lost.
                if nanos >= BusFront.wakeUpNanos, chipBytes.first == PN532SPI.dataWrite {
                    traceBus("spi DW \(hexBytes(Array(chipBytes.dropFirst()))) (while waking)")
                    bus.newHostFrame()
                    try apply(chip.receive(Array(chipBytes.dropFirst())))
                    chip.linkIdle()
                }
            } else {
                let (chipOut, written) = bus.spi.transaction(chipBytes, queue: &bus.queue, at: Self.now())
                out = chipOut
                traceSPI(bus, chipBytes, chipOut)
                if let written {
                    bus.newHostFrame()
                    try apply(chip.receive(written))
                    chip.linkIdle()  // chip select high ends the frame
                }
            }
            miso += reversed ? out.map(PN532SPI.reversed) : out
            mosi = []
            nanos = 0
        }
        for p in parts {
            mosi += p.tx
            nanos += PN532SPI.transferNanos(bytes: p.tx.count, hz: Int(p.hz == 0 ? bus.spiSpeed : p.hz))
            nanos += UInt64(p.delayMicros) * 1000
            if p.csChange { try endTransaction() }
        }
        try endTransaction()
        return miso
    }

    private func traceSPI(_ bus: BusFront, _ mosi: [UInt8], _ miso: [UInt8]) {
        switch mosi.first {
        case PN532SPI.dataWrite: traceBus("spi DW \(hexBytes(Array(mosi.dropFirst())))")
        case PN532SPI.statusRead:
            if miso.last == 0x01 {
                traceBus("spi SR: 01")
            } else {
                bus.stats.notReady += 1
                if options.trace && bus.stats.notReady % 50 == 1 { traceBus("spi SR: 00 (not ready)") }
            }
        case PN532SPI.dataRead: traceBus("spi DR \(mosi.count - 1): \(hexBytes(Array(miso.dropFirst())))")
        default: traceBus("spi peek: \(hexBytes(miso))")
        }
    }

    /// The bus is busy this long: the host's call returns no sooner than
    /// this much bus time after its request arrived (the request's earlier
    /// transfers included).
    private func wait(_ bus: BusFront, _ nanos: UInt64) {
        bus.stats.transfers += 1
        bus.stats.nanos += nanos
        bus.requestBusNanos += min(nanos, 1_000_000_000)
        let start = Self.now()
        let deadline = bus.requestArrived + bus.requestBusNanos
        if deadline > start {
            var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
        }
        bus.stats.sleptNanos += Self.now() - start
    }

    private func hexBytes(_ bytes: [UInt8]) -> String {
        bytes.map { Hex.encode([$0]) }.joined(separator: " ")
    }

    /// The line is only built when tracing: hex-dumping every frame cost the
    /// emulator more than the bus time it models (a real chip spends nothing).
    func traceBus(_ line: @autoclosure () -> String) {
        guard options.trace else { return }
        log(line())
    }
}
