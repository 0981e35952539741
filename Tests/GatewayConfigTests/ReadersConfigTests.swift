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
        XCTAssertEqual(c.readers.map(\.name), ["pn532", "street", "yard"])
        XCTAssertEqual(c.readers[1].kind, .osdp)
        XCTAssertEqual(c.readers[1].osdp, .init(device: "/dev/ttyUSB0", baud: 9600, address: 0, insecure: false))
        XCTAssertEqual(c.readers[1].actions, [0])
        XCTAssertFalse(c.readers[1].allows(action: 1))
        XCTAssertEqual(c.readers[2].wiegand, .init(d0: .name("GPIO6"), d1: .name("GPIO13"), bits: 26, keypadBurst: 4))
        XCTAssertEqual(c.readers[2].side, .exit)
        XCTAssertTrue(
            c.summary.contains(
                "readers pn532 pn532 entry, street osdp /dev/ttyUSB0@9600 #0 entry actions 0, yard wiegand d0@GPIO6 d1@GPIO13 26 bits exit"
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
}
