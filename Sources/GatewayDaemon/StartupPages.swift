import GatewayControl
#if canImport(Glibc)
    import Glibc
#endif

/// Once the door is up, gatewayd gives back the pages of its own binary that
/// only starting needed (configuration and TOML reading, migrations, libnfc's
/// probe, the first TLS handshake). Those are clean pages of the read-only
/// mappings of the executable: `MADV_DONTNEED` unmaps them, the page cache
/// keeps them, and a page touched again is mapped again by a minor fault (with
/// the kernel's fault-around, 64 KiB around it). RSS then shows the pages the
/// running door uses rather than everything it touched once.
///
/// Only mappings of the executable that are not writable and hold no
/// private copy of a page (`Anonymous: 0 kB` in smaps: nothing was written,
/// as a debugger's breakpoint or a relocated RELRO page would be) are
/// dropped, so no content can change. Writable data, the heap and stacks
/// are never touched.
enum StartupPages {
    struct Region: Equatable {
        var start: UInt
        var end: UInt
        var size: UInt { end - start }
    }

    /// The regions of `executable` that may be dropped, from /proc/self/smaps text.
    static func droppable(smaps: String, executable: String) -> [Region] {
        var result: [Region] = []
        var current: (region: Region, eligible: Bool)?
        func close() {
            if let c = current, c.eligible { result.append(c.region) }
            current = nil
        }
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
            if let header = mappingHeader(line) {
                close()
                let eligible =
                    header.path == executable && header.perms.count == 4
                    && header.perms[header.perms.index(after: header.perms.startIndex)] == "-"
                current = (header.region, eligible)
            } else if current != nil, line.hasPrefix("Anonymous:") {
                let kb = line.dropFirst("Anonymous:".count).split(separator: " ").first.flatMap { Int($0) }
                if kb != 0 { current?.eligible = false }
            } else if current != nil, line.hasPrefix("VmFlags:") {
                // Locked pages (mlock) stay where they are.
                if line.split(separator: " ").contains("lo") { current?.eligible = false }
            }
        }
        close()
        return result
    }

    /// `00400000-00c00000 r-xp 00000000 08:01 1234   /usr/bin/gateway`
    private static func mappingHeader(_ line: Substring) -> (region: Region, perms: Substring, path: String)? {
        let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
        guard fields.count >= 5, let dash = fields[0].firstIndex(of: "-"),
            let start = UInt(fields[0][..<dash], radix: 16),
            let end = UInt(fields[0][fields[0].index(after: dash)...], radix: 16), end > start
        else { return nil }
        let path = fields.count == 6 ? String(fields[5].drop { $0 == " " }) : ""
        return (Region(start: start, end: end), fields[1], path)
    }

    /// Drops the regions; returns the bytes of the regions dropped (nil: smaps unreadable).
    static func drop() -> (regions: Int, bytes: UInt)? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0, let bytes = Files.contents("/proc/self/smaps") else { return nil }
        let smaps = String(decoding: bytes, as: UTF8.self)
        let executable = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var count = 0
        var dropped: UInt = 0
        for region in droppable(smaps: smaps, executable: executable) {
            if madvise(UnsafeMutableRawPointer(bitPattern: region.start), Int(region.size), MADV_DONTNEED) == 0 {
                count += 1
                dropped += region.size
            }
        }
        return (count, dropped)
    }
}
