import Foundation
import XCTest

/// The systemd unit the package ships (board/gatewayd.service): its hardening
/// lines are there, and systemd's own scorer rates it at most 3.0.
final class ServiceUnitTests: XCTestCase {
    static let unitPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("board/gatewayd.service").path

    /// `[Service]` settings: key → every value given, in order.
    func serviceSettings() throws -> [String: [String]] {
        let text = try String(contentsOfFile: Self.unitPath, encoding: .utf8)
        var section = ""
        var settings: [String: [String]] = [:]
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.drop { $0 == " " }
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                section = String(line)
                continue
            }
            guard section == "[Service]", let eq = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<eq]), default: []].append(String(line[line.index(after: eq)...]))
        }
        return settings
    }

    func testHardeningLines() throws {
        let s = try serviceSettings()
        let exact: [String: String] = [
            "Type": "notify", "User": "doorgateway", "Group": "doorgateway",
            "NoNewPrivileges": "yes", "CapabilityBoundingSet": "", "AmbientCapabilities": "",
            "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes", "PrivateMounts": "yes",
            "ProtectHostname": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
            "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes", "ProtectProc": "invisible",
            "ProcSubset": "pid", "RestrictNamespaces": "yes", "RestrictRealtime": "yes",
            "RestrictSUIDSGID": "yes", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
            "SystemCallArchitectures": "native", "SystemCallErrorNumber": "EPERM", "UMask": "0077",
            "DevicePolicy": "closed", "IPAddressDeny": "any", "StateDirectoryMode": "0700",
        ]
        for (key, value) in exact.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(s[key], [value], "\(key)= in \(Self.unitPath)")
        }
        let filter = (s["SystemCallFilter"] ?? []).joined(separator: " ").split(separator: " ").map(String.init)
        XCTAssertEqual(filter.first, "@system-service")
        let devices = Set((s["DeviceAllow"] ?? []).map { $0.split(separator: " ").first.map(String.init) ?? "" })
        for d in ["gpiochip", "i2c", "spi", "ttyS", "ttyAMA", "ttyUSB", "ttyACM"] {
            XCTAssertTrue(devices.contains("char-\(d)"), "DeviceAllow=char-\(d)")
        }
        let families = Set((s["RestrictAddressFamilies"] ?? []).joined(separator: " ").split(separator: " "))
        // AF_NETLINK for getifaddrs: the mDNS query goes out on every interface.
        XCTAssertEqual(families, ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"])
        let allowed = (s["IPAddressAllow"] ?? []).joined(separator: " ")
        XCTAssertTrue(allowed.contains("localhost"), "IPAddressAllow= keeps loopback (local broker)")
        // A NAME.local broker: the one-shot mDNS query goes to the mDNS group,
        // which IPAddressDeny=any drops unless allowed; exactly that group, no
        // other multicast.
        let entries = Set(allowed.split(separator: " ").map(String.init))
        XCTAssertTrue(entries.contains("224.0.0.251"), "IPAddressAllow= lacks the mDNS group 224.0.0.251: \(allowed)")
        XCTAssertTrue(entries.contains("ff02::fb"), "IPAddressAllow= lacks the mDNS group ff02::fb: \(allowed)")
        for wide in ["multicast", "224.0.0.0/4", "224.0.0.0/24", "ff00::/8", "ff02::/16", "any"] {
            XCTAssertFalse(entries.contains(wide), "IPAddressAllow= allows \(wide), more than the mDNS group")
        }
        XCTAssertNil(s["PrivateNetwork"], "MQTT needs the network")
        XCTAssertNil(s["PrivateDevices"], "GPIO, I2C and SPI need /dev")
        // gatewayctl reaches the 0660 socket through the runtime directory.
        let runtimeMode = Int(s["RuntimeDirectoryMode"]?.last ?? "", radix: 8) ?? 0
        XCTAssertEqual(runtimeMode & 0o005, 0o005, "RuntimeDirectoryMode= must let gatewayctl through")
    }

    /// Security review L4: the audit key reaches gatewayd as standard input
    /// opened by systemd as root (read once, then dropped), not as a
    /// credential, which would stay readable by the service's user.
    func testTheAuditKeyIsStandardInputOpenedAsRoot() throws {
        let s = try serviceSettings()
        XCTAssertEqual(s["StandardInput"], ["file:/etc/doorgateway/audit.key"])
        XCTAssertEqual(s["StandardOutput"], ["journal"])
        XCTAssertEqual(s["Environment"], ["DOORGATEWAY_AUDIT_KEY=stdin"])
        XCTAssertFalse((s["LoadCredential"] ?? []).contains { $0.contains("audit") })
    }

    /// The daemon reads the kernel's clock-synchronised flag with adjtimex
    /// (glibc: clock_adjtime). ProtectClock=yes refuses both outright, read-only
    /// calls included (systemd.exec(5)), so it stays off and the filter lets
    /// them through; without CAP_SYS_TIME they cannot set the clock.
    func testClockFlagStaysReadable() throws {
        let s = try serviceSettings()
        XCTAssertNotEqual(s["ProtectClock"]?.last, "yes", "ProtectClock=yes blocks even read-only adjtimex")
        let filter = Set((s["SystemCallFilter"] ?? []).joined(separator: " ").split(separator: " ").map(String.init))
        XCTAssertTrue(filter.isSuperset(of: ["adjtimex", "clock_adjtime"]), "SystemCallFilter= allows the clock reads")
        XCTAssertFalse(filter.contains("@clock"), "only the reading calls, not @clock")
        XCTAssertEqual(s["CapabilityBoundingSet"], [""], "no CAP_SYS_TIME")
    }

    func testExposureAtMostThree() throws {
        let tool = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let tool else {
            throw XCTSkip("systemd-analyze is not installed (Debian: package systemd); exposure not measured")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = ["security", "--offline=true", "--no-pager", Self.unitPath]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = Pipe()
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let marker = "Overall exposure level for gatewayd.service: "
        guard let line = text.split(separator: "\n").first(where: { $0.contains(marker) }),
            let range = line.range(of: marker),
            let exposure = Double(line[range.upperBound...].prefix { $0.isNumber || $0 == "." })
        else {
            return XCTFail("no exposure in systemd-analyze output:\n\(text)")
        }
        XCTAssertLessThanOrEqual(exposure, 3.0, text)
    }
}
