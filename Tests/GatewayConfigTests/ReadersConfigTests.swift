import DoorCore
import XCTest

@testable import GatewayConfig

/// `[[readers]]` (issue 35): each reader's keys, the errors naming them, the single `[reader]`
/// file unchanged (the migration path) and the shipped example's commented block.
final class ReadersConfigTests: XCTestCase {
    static let base = LoaderTests.base

    func load(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> GatewayConfiguration {
        do { return try GatewayConfiguration.load(toml: text) } catch {
            XCTFail("unexpected issues:\n\(error)", file: file, line: line)
            throw error
        }
    }

    func issues(_ text: String) -> [ConfigIssue] {
        do {
            _ = try GatewayConfiguration.load(toml: text)
            return []
        } catch { return error.issues }
    }

    /// The migration path: a file of before issue 35, with `[reader]` and no `[[readers]]`, loads
    /// as it did (same connstring, same summary) with the PN532 as its one reader.
    func testTheSingleReaderFileKeepsWorking() throws {
        let text = Self.base + "[reader]\nconnstring = \"pn532_spi:/dev/spidev0.0\"\nsimulator = \"spawn\"\n"
        let c = try load(text)
        XCTAssertEqual(c.reader.connstring, "pn532_spi:/dev/spidev0.0")
        XCTAssertEqual(c.readers, [ReaderSettings(name: "pn532", kind: .pn532, side: .entry, actions: nil)])
        XCTAssertFalse(c.summary.contains { $0.hasPrefix("readers ") }, "\(c.summary)")
        XCTAssertTrue(c.readers[0].allows(action: 0) && c.readers[0].allows(action: 3))
        // No new key is asked of a file without [[readers]]: the reload table and the example
        // check of before see the same keys.
        XCTAssertFalse(GatewayConfiguration.knownKeys(readingSource: text).contains { $0.hasPrefix("readers") })
    }

    /// The example's commented [[readers]] block, uncommented as written, loads: a PN532, an OSDP
    /// reader and a Wiegand reader.
    func testTheExamplesReadersBlockLoads() throws {
        let example = ConfigExample.text(board: .pi)
        XCTAssertTrue(example.contains("#     [[readers]]"))
        let uncommented = LoaderTests.uncommented(example).split(separator: "\n", omittingEmptySubsequences: false).map
        { line in
            line.hasPrefix("#     ") ? String(line.dropFirst(6)) : line == "#" ? "" : String(line)
        }.joined(separator: "\n")
        let c = try load(uncommented)
        XCTAssertEqual(c.readers.map(\.name), ["pn532", "street", "gate"])
        XCTAssertEqual(c.readers[1].kind, .osdp)
        XCTAssertEqual(c.readers[1].osdp, .init(device: "/dev/ttyUSB0", baud: 9600, address: 0, insecure: false))
        XCTAssertEqual(c.readers[1].actions, [0])
        XCTAssertFalse(c.readers[1].allows(action: 1))
        XCTAssertEqual(c.readers[2].wiegand, .init(d0: .name("GPIO6"), d1: .name("GPIO13"), frameGapMilliseconds: 50))
        XCTAssertEqual(c.readers[2].side, .entry)
        XCTAssertNil(c.readers[2].actions)
        // Its commented keys, uncommented as written, load too.
        let keys = try load(
            uncommented.replacingOccurrences(of: "# chip = ", with: "chip = ")
                .replacingOccurrences(of: "# bits = ", with: "bits = ")
                .replacingOccurrences(of: "# keypad_burst = ", with: "keypad_burst = "))
        XCTAssertEqual(
            keys.readers[2].wiegand,
            .init(d0: .name("GPIO6"), d1: .name("GPIO13"), chip: "gpiochip0", bits: 26, keypadBurst: 4))
        XCTAssertTrue(
            c.summary.contains(
                "readers pn532 pn532 entry, street osdp /dev/ttyUSB0@9600 #0 entry actions 0, gate wiegand d0@GPIO6 d1@GPIO13 entry"
            ), "\(c.summary)")
    }

    func testDefaultsAndTheInsecureOptIn() throws {
        let c = try load(
            Self.base + """
                [[readers]]
                name = "gate"
                kind = "osdp"
                device = "/dev/ttyAMA0"
                [[readers]]
                name = "old"
                kind = "osdp"
                device = "/dev/ttyAMA0"
                address = 5
                insecure = true

                """)
        XCTAssertEqual(c.readers[0].osdp, .init(device: "/dev/ttyAMA0", baud: 9600, address: 0, insecure: false))
        XCTAssertEqual(c.readers[0].side, .entry)
        XCTAssertNil(c.readers[0].actions)
        XCTAssertEqual(c.readers[1].osdp?.insecure, true)
        XCTAssertEqual(c.osdpReaders.map(\.name), ["gate", "old"])
        XCTAssertTrue(c.summary.contains { $0.contains("old osdp /dev/ttyAMA0@9600 #5 INSECURE") }, "\(c.summary)")
    }

    /// Each bad value is an issue naming its key (and line).
    func testErrorsNameTheKey() {
        let found = issues(
            Self.base + """
                [[readers]]
                name = "a b"
                kind = "osdp"
                device = "ttyUSB0"
                baud = 12345
                address = 127
                [[readers]]
                name = "w"
                kind = "wiegand"
                d0 = "GPIO17"
                bits = 30
                keypad_burst = 6
                [[readers]]
                name = "x"
                kind = "nfc"
                side = "inside"
                actions = [0, 9]
                [[readers]]
                name = "w"
                kind = "pn532"
                device = "/dev/ttyUSB0"

                """)
        let keys = found.map(\.key)
        for key in [
            "readers[0].name", "readers[0].device", "readers[0].baud", "readers[0].address", "readers[1].d0",
            "readers[1].d1", "readers[1].bits", "readers[1].keypad_burst", "readers[2].kind", "readers[2].side",
            "readers[2].actions[1]", "readers[3].device", "readers[3].name",
        ] {
            XCTAssertTrue(keys.contains(key), "\(key) not in \(found.map(\.description))")
        }
        XCTAssertTrue(found.allSatisfy { $0.line != nil }, "\(found)")
        XCTAssertTrue(found.contains { $0.key == "readers[1].d0" && $0.message.contains("already used by outputs") })
        XCTAssertTrue(found.contains { $0.key == "readers[3].name" && $0.message.contains("already named") })
    }

    /// Readers on one RS-485 line share its rate and each has its own address.
    func testOneBusOneRateAndUniqueAddresses() {
        let found = issues(
            Self.base + """
                [[readers]]
                name = "a"
                kind = "osdp"
                device = "/dev/ttyUSB0"
                address = 1
                [[readers]]
                name = "b"
                kind = "osdp"
                device = "/dev/ttyUSB0"
                address = 1
                baud = 115200

                """)
        XCTAssertEqual(found.map(\.key).sorted(), ["readers[1].address", "readers[1].baud"], "\(found)")
        XCTAssertTrue(
            found.contains { $0.message == "1 is also reader \"a\"'s on /dev/ttyUSB0" }, "\(found)")
    }

    func testRequiredKeysAndTwoPN532s() {
        let found = issues(
            Self.base + "[[readers]]\nkind = \"osdp\"\n[[readers]]\nname = \"a\"\nkind = \"pn532\"\n"
                + "[[readers]]\nname = \"b\"\nkind = \"pn532\"\n[[readers]]\nname = \"c\"\n")
        XCTAssertEqual(
            Set(found.map(\.key)), ["readers[0].name", "readers[0].device", "readers[2].kind", "readers[3].kind"],
            "\(found)")
        XCTAssertEqual(issues("readers = []\n" + Self.base).map(\.key), ["readers"])
    }

    /// A Wiegand reader's wiring errors, each naming its key: a line missing, the same line for
    /// D0 and D1, a line the relay, the button or the fire input holds; an unknown chip key type,
    /// a frame gap out of range. Lines on a chip of their own do not meet the board's.
    func testWiegandWiringErrorsNameTheKey() throws {
        let found = issues(
            Self.base + """
                [inputs.button]
                line = "GPIO27"
                [fire_alarm]
                line = "GPIO21"
                [[readers]]
                name = "a"
                kind = "wiegand"
                d1 = "GPIO13"
                [[readers]]
                name = "b"
                kind = "wiegand"
                d0 = "GPIO19"
                d1 = "GPIO19"
                [[readers]]
                name = "c"
                kind = "wiegand"
                d0 = "GPIO27"
                d1 = "GPIO21"
                frame_gap_ms = 10
                [[readers]]
                name = "d"
                kind = "wiegand"
                d0 = "GPIO17"
                d1 = "GPIO13"
                chip = 4

                """)
        func message(_ key: String) -> String? { found.first { $0.key == key }?.message }
        XCTAssertEqual(message("readers[0].d0"), "is required: an offset on the chip (17) or a line name (\"GPIO17\")")
        XCTAssertTrue(message("readers[1].d1")?.contains("already used by readers[1].d0") ?? false, "\(found)")
        XCTAssertTrue(message("readers[2].d0")?.contains("already used by inputs.button.line") ?? false, "\(found)")
        XCTAssertTrue(message("readers[2].d1")?.contains("already used by fire_alarm.line") ?? false, "\(found)")
        XCTAssertNotNil(message("readers[2].frame_gap_ms"), "\(found)")
        XCTAssertTrue(message("readers[3].d0")?.contains("already used by outputs") ?? false, "\(found)")
        XCTAssertTrue(message("readers[3].d1")?.contains("already used by readers[0].d1") ?? false, "\(found)")
        XCTAssertTrue(message("readers[3].chip")?.contains("expected a string") ?? false, "\(found)")
        XCTAssertTrue(found.allSatisfy { $0.line != nil }, "\(found)")

        // On a chip of its own, GPIO17 is not the strike's line; two readers on that chip still
        // cannot share one.
        let own = issues(
            Self.base + """
                [[readers]]
                name = "a"
                kind = "wiegand"
                chip = "gpio-sim.0"
                d0 = "GPIO17"
                d1 = "GPIO27"
                [[readers]]
                name = "b"
                kind = "wiegand"
                chip = "gpio-sim.0"
                d0 = "GPIO17"
                d1 = "GPIO5"

                """)
        XCTAssertEqual(own.map(\.key), ["readers[1].d0"], "\(own)")
        XCTAssertEqual(
            try load(Self.base + "[[readers]]\nname = \"w\"\nkind = \"wiegand\"\nd0 = 6\nd1 = 13\n")
                .readers[0].wiegand, .init(d0: .offset(6), d1: .offset(13)))
    }
}
