import PN532Emulator
import XCTest

/// The I2C and SPI host interfaces: what libnfc's pn532_i2c and pn532_spi
/// drivers read from the chip, byte for byte.
final class HostBusTests: XCTestCase {
    /// GetFirmwareVersion's answer, the example in libnfc's pn532_spi.c is a
    /// shorter one; any frame shows the chunking.
    let answer: [UInt8] = [0x00, 0x00, 0xFF, 0x02, 0xFE, 0xD5, 0x15, 0x16, 0x00]

    func testI2CReadsTheReadyByteThenTheWholeFrame() {
        var queue = ReadyQueue()
        var r = PN532I2C.read(7, from: &queue, at: 100)
        XCTAssertEqual(r.bytes, [0, 0, 0, 0, 0, 0, 0])  // not ready
        XCTAssertNil(r.frame)
        queue.push(answer, readyAt: 200)
        XCTAssertNil(PN532I2C.read(7, from: &queue, at: 150).frame)  // the chip is still busy
        r = PN532I2C.read(12, from: &queue, at: 200)
        XCTAssertEqual(r.bytes, [0x01] + answer + [0, 0])
        XCTAssertEqual(queue.count, 0)  // read once
    }

    /// Clock stretching while busy: SCL held until the answer owed is ready,
    /// at most the limit; the status byte is sampled when SCL is released.
    func testI2CBusyStretchHoldsSCLUntilTheAnswerIsReadyAtMostTheLimit() {
        var queue = ReadyQueue()
        XCTAssertNil(queue.nextReadyAt)
        // Nothing owed (an idle chip, or InAutoPoll still waiting for a tag): no stretch.
        XCTAssertEqual(PN532I2C.busyStretchNanos(readyAt: queue.nextReadyAt, now: 0, limit: 1_000_000), 0)
        queue.push(answer, readyAt: 5_000_000)
        XCTAssertEqual(queue.nextReadyAt, 5_000_000)
        XCTAssertEqual(PN532I2C.busyStretchNanos(readyAt: 5_000_000, now: 4_600_000, limit: 1_000_000), 400_000)
        XCTAssertEqual(PN532I2C.busyStretchNanos(readyAt: 5_000_000, now: 1_000_000, limit: 1_000_000), 1_000_000)
        XCTAssertEqual(PN532I2C.busyStretchNanos(readyAt: 5_000_000, now: 1_000_000, limit: 0), 0)
        XCTAssertEqual(PN532I2C.busyStretchNanos(readyAt: 5_000_000, now: 5_000_000, limit: 1_000_000), 0)
        // A stretch cut at the limit ends not ready; one that reaches readyAt
        // delivers the answer in the same read.
        XCTAssertEqual(PN532I2C.read(7, from: &queue, at: 1_000_000 + 1_000_000).bytes.first, 0x00)
        let held = PN532I2C.busyStretchNanos(readyAt: queue.nextReadyAt, now: 4_600_000, limit: 1_000_000)
        XCTAssertEqual(PN532I2C.read(12, from: &queue, at: 4_600_000 + held).bytes, [0x01] + answer + [0, 0])
    }

    func testI2CTransferTimeCountsAddressAndAcknowledgeClocks() {
        // 266 bytes read at 100 kHz: (265 + 1) × 9 + 2 clocks.
        XCTAssertEqual(PN532I2C.transferNanos(bytes: 265, hz: 100_000), 23_960_000)
    }

    /// libnfc `pn532_spi_receive`: SR until ready, DR + 4, then each chunk as
    /// a receive-only peek and a DR transaction (its comment's transfer log).
    func testSPIChunkedReadAsLibnfcDoesIt() {
        var queue = ReadyQueue()
        var spi = PN532SPI()
        XCTAssertEqual(spi.transaction([0x02, 0x00], queue: &queue, at: 0).miso, [0x00, 0x00])
        queue.push(answer, readyAt: 0)
        XCTAssertEqual(spi.transaction([0x02, 0x00], queue: &queue, at: 0).miso[1], 0x01)
        // First chunk: the status under DR, then 00 00 FF 02 (a long preamble).
        XCTAssertEqual(spi.transaction([0x03, 0, 0, 0, 0], queue: &queue, at: 0).miso, [0x01, 0x00, 0x00, 0xFF, 0x02])
        // One more byte (LCS): peek, then DR alone clocks it out again.
        XCTAssertEqual(spi.transaction([0x00], queue: &queue, at: 0).miso, [0xFE])
        XCTAssertEqual(spi.transaction([0x03], queue: &queue, at: 0).miso, [0xFE])
        // TFI and the command code: peek D5, DR + 1 → 15.
        XCTAssertEqual(spi.transaction([0x00], queue: &queue, at: 0).miso, [0xD5])
        XCTAssertEqual(spi.transaction([0x03, 0x00], queue: &queue, at: 0).miso, [0xD5, 0x15])
        // DCS and postamble.
        XCTAssertEqual(spi.transaction([0x00], queue: &queue, at: 0).miso, [0x16])
        XCTAssertEqual(spi.transaction([0x03, 0x00], queue: &queue, at: 0).miso, [0x16, 0x00])
        // Read out: not ready until the next answer.
        XCTAssertEqual(spi.transaction([0x02, 0x00], queue: &queue, at: 0).miso[1], 0x00)
    }

    func testSPIDataWriteHandsTheFrameToTheChip() {
        var queue = ReadyQueue()
        var spi = PN532SPI()
        let w = spi.transaction([0x01, 0x00, 0x00, 0xFF, 0x02, 0xFE, 0xD4, 0x02, 0x2A, 0x00], queue: &queue, at: 0)
        XCTAssertEqual(w.written, [0x00, 0x00, 0xFF, 0x02, 0xFE, 0xD4, 0x02, 0x2A, 0x00])
    }

    func testBitReversalMatchesLibnfc() {
        XCTAssertEqual(PN532SPI.reversed(0x01), 0x80)
        XCTAssertEqual(PN532SPI.reversed(0x03), 0xC0)
        XCTAssertEqual(PN532SPI.reversed(0xD4), 0x2B)
        for b in 0...255 { XCTAssertEqual(PN532SPI.reversed(PN532SPI.reversed(UInt8(b))), UInt8(b)) }
    }

    func testChipWakesOnItsBusAddressAndStaysAsleepWhenPowerDownForbidsIt() {
        var chip = PN532Chip()
        XCTAssertTrue(chip.isAsleep)
        XCTAssertTrue(chip.busWakeUp(.i2c))
        XCTAssertFalse(chip.isAsleep)
        // PowerDown with WakeUpEnable = HSU only (10h): I2C does not wake it.
        _ = chip.receive([0x00, 0x00, 0xFF, 0x03, 0xFD, 0xD4, 0x16, 0x10, 0x06, 0x00])
        XCTAssertTrue(chip.isAsleep)
        XCTAssertFalse(chip.busWakeUp(.i2c))
        XCTAssertTrue(chip.isAsleep)
    }
}
