import XCTest

@testable import GatewayControl
@testable import GatewayCtl
@testable import GatewayDaemon

/// Which mappings gatewayd may give back after start (StartupPages): only
/// the executable's read-only ones without a private copy of any page.
final class StartupPagesTests: XCTestCase {
    static let exe = "/usr/bin/gateway"

    static func mapping(_ range: String, _ perms: String, _ path: String, anonymous: Int = 0, flags: String = "rd mr")
        -> String
    {
        """
        \(range) \(perms) 00000000 08:01 1234                       \(path)
        Size:               1024 kB
        Rss:                 512 kB
        Private_Dirty:         0 kB
        Anonymous:           \(anonymous) kB
        VmFlags: \(flags)
        """
    }

    func testOnlyTheExecutablesCleanReadOnlyMappings() {
        let smaps = [
            Self.mapping("00400000-00600000", "r--p", Self.exe),
            Self.mapping("00600000-01200000", "r-xp", Self.exe, flags: "rd ex mr mw me"),
            // Written once (a relocated RELRO page, a breakpoint): keeps its copy.
            Self.mapping("01200000-01300000", "r--p", Self.exe, anonymous: 8),
            Self.mapping("01300000-01400000", "rw-p", Self.exe),
            Self.mapping("01400000-01500000", "rw-p", "[heap]", anonymous: 100),
            Self.mapping("7f0000000000-7f0000100000", "r-xp", "/usr/lib/other.so"),
            Self.mapping("7f0000100000-7f0000200000", "r-xp", Self.exe, flags: "rd ex lo"),
            Self.mapping("7ffd00000000-7ffd00021000", "rw-p", "[stack]", anonymous: 20),
            Self.mapping("7ffe00000000-7ffe00002000", "r-xp", "[vdso]"),
        ].joined(separator: "\n")
        XCTAssertEqual(
            StartupPages.droppable(smaps: smaps, executable: Self.exe),
            [
                StartupPages.Region(start: 0x40_0000, end: 0x60_0000),
                StartupPages.Region(start: 0x60_0000, end: 0x120_0000),
            ])
    }

    func testAReplacedBinaryAndGarbageAreHandled() {
        // After an upgrade the running binary shows as "(deleted)", as /proc/self/exe does.
        let deleted = Self.exe + " (deleted)"
        XCTAssertEqual(
            StartupPages.droppable(smaps: Self.mapping("00400000-00600000", "r-xp", deleted), executable: deleted),
            [StartupPages.Region(start: 0x40_0000, end: 0x60_0000)])
        XCTAssertEqual(
            StartupPages.droppable(smaps: Self.mapping("00400000-00600000", "r-xp", deleted), executable: Self.exe),
            [])
        for garbage in [
            "", "zz-yy r-xp 0 0 0 /usr/bin/gateway", "00600000-00400000 r-xp 0 0 0 /usr/bin/gateway",
            "Anonymous: 5 kB\n", "00400000-00600000 r-xp",
        ] {
            XCTAssertEqual(StartupPages.droppable(smaps: garbage, executable: Self.exe), [], garbage)
        }
        // An unreadable Anonymous line counts as a private copy.
        let odd = Self.mapping("00400000-00600000", "r-xp", Self.exe).replacingOccurrences(
            of: "Anonymous:           0 kB", with: "Anonymous: lots kB")
        XCTAssertEqual(StartupPages.droppable(smaps: odd, executable: Self.exe), [])
    }

    /// This test process's own smaps: what would be dropped is read-only and the executable's.
    func testTheLiveSmapsOfThisProcess() throws {
        let smaps = try String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let regions = StartupPages.droppable(smaps: smaps, executable: exe)
        XCTAssertFalse(regions.isEmpty, "the test binary's text is a clean read-only mapping")
        for r in regions {
            let header = smaps.split(separator: "\n").first {
                $0.hasPrefix(String(r.start, radix: 16, uppercase: false).leftPadded(to: 8) + "-")
            }
            XCTAssertNotNil(header, "\(r)")
            XCTAssertEqual(header?.split(separator: " ")[1].dropFirst().first, "-", "not writable: \(header ?? "")")
        }
    }
}

extension String {
    fileprivate func leftPadded(to n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}
