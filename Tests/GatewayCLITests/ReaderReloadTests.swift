import DoorCore
import XCTest

@testable import GatewayConfig
@testable import GatewayDaemon

/// `[[readers]]` in a reload (issue 35; the pattern of ReloadTableTests, whose table H1 keeps):
/// each reader is opened at start, so every change to one is refused, naming the key; a file
/// that keeps its readers reloads as before.
final class ReaderReloadTests: XCTestCase {
    static let base =
        LoaderTestsBase.text + """
            [[readers]]
            name = "pn532"
            kind = "pn532"
            [[readers]]
            name = "street"
            kind = "osdp"
            device = "/dev/ttyUSB0"
            address = 1
            actions = [0]
            [[readers]]
            name = "yard"
            kind = "wiegand"
            d0 = "GPIO25"
            d1 = "GPIO26"

            """

    /// One row per reader key: the edit and the name a reload refuses it by.
    static let rows: [(key: String, refused: String, edit: @Sendable (String) -> String)] = [
        ("readers[].name", "[[readers]]", { $0.replacingOccurrences(of: "\"street\"", with: "\"gate\"") }),
        ("readers[]", "[[readers]]", { $0.components(separatedBy: "[[readers]]\nname = \"yard\"")[0] }),
        (
            "readers[].kind", "[[readers]] kind",
            {
                $0.replacingOccurrences(
                    of: "name = \"pn532\"\nkind = \"pn532\"",
                    with: "name = \"pn532\"\nkind = \"osdp\"\ndevice = \"/dev/ttyUSB1\"")
            }
        ),
        (
            "readers[].side", "[[readers]] side",
            { $0.replacingOccurrences(of: "kind = \"pn532\"\n", with: "kind = \"pn532\"\nside = \"exit\"\n") }
        ),
        (
            "readers[].actions", "[[readers]] actions",
            { $0.replacingOccurrences(of: "actions = [0]", with: "actions = [0, 1]") }
        ),
        (
            "readers[].device", "[[readers]] device",
            { $0.replacingOccurrences(of: "/dev/ttyUSB0", with: "/dev/ttyAMA0") }
        ),
        (
            "readers[].baud", "[[readers]] baud",
            { $0.replacingOccurrences(of: "address = 1\n", with: "address = 1\nbaud = 115200\n") }
        ),
        (
            "readers[].address", "[[readers]] address",
            { $0.replacingOccurrences(of: "address = 1\n", with: "address = 2\n") }
        ),
        (
            "readers[].insecure", "[[readers]] insecure",
            { $0.replacingOccurrences(of: "address = 1\n", with: "address = 1\ninsecure = true\n") }
        ),
        ("readers[].d0", "[[readers]] d0", { $0.replacingOccurrences(of: "d0 = \"GPIO25\"", with: "d0 = \"GPIO20\"") }),
        ("readers[].d1", "[[readers]] d1", { $0.replacingOccurrences(of: "d1 = \"GPIO26\"", with: "d1 = \"GPIO21\"") }),
        ("readers[].bits", "[[readers]] bits", { $0 + "bits = 34\n" }),
        ("readers[].keypad_burst", "[[readers]] keypad_burst", { $0 + "keypad_burst = 8\n" }),
        ("readers[].chip", "[[readers]] chip", { $0 + "chip = \"gpiochip4\"\n" }),
        ("readers[].frame_gap_ms", "[[readers]] frame_gap_ms", { $0 + "frame_gap_ms = 100\n" }),
    ]

    func testEveryReaderKeyHasARow() {
        let known = GatewayConfiguration.knownKeys(
            readingSource: Self.base + "bits = 26\nkeypad_burst = 4\nchip = \"gpiochip0\"\nframe_gap_ms = 50\n"
        )
        .filter { $0.hasPrefix("readers") && $0 != "readers" }
        XCTAssertEqual(known.count, 14, "\(known.sorted())")
        for key in known.sorted() where !Self.rows.contains(where: { $0.key == key }) {
            XCTFail("\(key) has no row: say whether a reload applies it or refuses it, naming it")
        }
    }

    func testEveryReaderChangeIsRefusedByName() throws {
        let old = try GatewayConfiguration.load(toml: Self.base)
        for row in Self.rows {
            let new: GatewayConfiguration
            do { new = try GatewayConfiguration.load(toml: row.edit(Self.base)) } catch {
                XCTFail("\(row.key): the changed file does not load: \(error)")
                continue
            }
            XCTAssertNotEqual(old, new, "\(row.key): the change made no difference")
            let refused = LiveConfiguration.restartRequired(from: old, to: new)
            XCTAssertTrue(refused.contains(row.refused), "\(row.key): expected \(row.refused), got \(refused)")
            XCTAssertFalse(refused.contains("a setting read at start only"), "\(row.key) not named: \(refused)")
        }
    }

    /// The migration: a single-reader file that gains [[readers]] listing only its PN532 changes
    /// the list's name ("pn532" both times) — nothing to refuse, the same reader keeps running.
    func testTheSameReadersReloadAndTheLegacyPN532IsTheListedOne() throws {
        let legacy = try GatewayConfiguration.load(toml: LoaderTestsBase.text)
        let listed = try GatewayConfiguration.load(
            toml: LoaderTestsBase.text + "[[readers]]\nname = \"pn532\"\nkind = \"pn532\"\n")
        XCTAssertEqual(LiveConfiguration.restartRequired(from: legacy, to: listed), [])
        let old = try GatewayConfiguration.load(toml: Self.base)
        XCTAssertEqual(LiveConfiguration.restartRequired(from: old, to: old), [])
    }
}

enum LoaderTestsBase {
    static let text = "[device]\nid = \"d1\"\n[board]\nkind = \"sim\"\n"
}
