import Foundation
import TestSupport
import XCTest

/// gatewayd's memory as `make bench` measures it (docs/reliability.md, "One activation
/// a tap, and RSS at 10 000 taps").
final class DaemonMemoryTests: XCTestCase {
    /// glibc gives a thread that meets a busy arena an arena of its own, up to 8 per
    /// core, each a heap mapped on its own: an anonymous read-write mapping aligned to
    /// HEAP_MAX_SIZE (64 MiB on 64-bit), its reserved rest (---p) up to the next 64 MiB.
    /// gatewayd sets M_ARENA_MAX = 1 before its threads start (MallocArenas): after start
    /// and a few granted taps it has no such heap, every thread allocates from the main
    /// one. (Before, the door's threads held 9 arenas after 1 500 taps.)
    func testGatewaydsThreadsShareOneMallocArena() throws {
        // Under qemu-user (test-e2e-arm64) /proc/PID/maps is the emulator's, not gatewayd's.
        guard !TestTiming.binaryIsForeign else { return }
        let g = try GatewayUnderTest()
        try g.start()
        let pid = try XCTUnwrap(g.process?.processIdentifier)
        for i in 0..<3 {
            let dump = try g.issueSticker(String(format: "04A1B2C3D4E6%02X", i))
            try g.tapSticker(dump, expect: "access_granted")
        }
        let maps = try String(contentsOfFile: "/proc/\(pid)/maps", encoding: .utf8)
        let heapSize: UInt64 = 64 << 20
        var regions: [(start: UInt64, end: UInt64, perms: Substring, path: Bool)] = []
        for line in maps.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            let range = f[0].split(separator: "-")
            guard f.count >= 5, range.count == 2, let lo = UInt64(range[0], radix: 16),
                let hi = UInt64(range[1], radix: 16)
            else { continue }
            regions.append((lo, hi, f[1], f.count > 5))
        }
        let arenas = regions.indices.filter { i in
            let r = regions[i]
            guard r.start % heapSize == 0, r.perms == "rw-p", !r.path else { return false }
            let next = i + 1 < regions.count ? regions[i + 1] : nil
            let end = next.map { $0.start == r.end && $0.perms == "---p" && !$0.path ? $0.end : r.end } ?? r.end
            return end - r.start == heapSize
        }
        XCTAssertEqual(arenas.count, 0, "malloc arenas besides the main heap:\n\(maps)")
        XCTAssertEqual(g.stop(), 0)
    }
}
