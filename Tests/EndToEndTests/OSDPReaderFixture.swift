#if canImport(Glibc)
    import Glibc
#endif
import Foundation
import TestSupport
import XCTest

/// OSDP readers at a real gatewayd (issue 35): libosdp's peripheral device (scripts/osdp/pd.py)
/// on a pseudo-terminal each, which the configuration names through a symlink, as
/// /dev/serial/by-id/… names /dev/ttyUSB0. `stop()` (in a defer) stops them and removes the links.
final class OSDPReaderFixture {
    struct Reader {
        var name: String
        var address: UInt8
        /// More keys of its `[[readers]]` table (`side = "exit"`, `actions = [1]`).
        var keys: [String] = []
    }

    let readers: [Reader]
    /// The peripheral devices by reader name.
    let pd: [String: LibosdpReader]
    private let base: String

    /// `label` keeps one test's links apart from another's.
    init(_ label: String, _ readers: [Reader]) throws {
        self.readers = readers
        base = "\(FileManager.default.temporaryDirectory.path)/osdp-e2e-\(label)-\(getpid())"
        var pd: [String: LibosdpReader] = [:]
        for reader in readers {
            pd[reader.name] = try LibosdpReader(scbk: nil, address: reader.address)
        }
        self.pd = pd
        for reader in readers {
            try? FileManager.default.removeItem(atPath: device(reader.name))
            try FileManager.default.createSymbolicLink(
                atPath: device(reader.name), withDestinationPath: pd[reader.name]!.tty)
        }
    }

    /// The symlink the configuration names as the reader's device.
    func device(_ name: String) -> String { "\(base)-\(name)" }

    /// The `[[readers]]` tables, the door's PN532 first when `pn532`.
    func section(pn532: Bool = true) -> String {
        var lines = pn532 ? ["[[readers]]", "name = \"pn532\"", "kind = \"pn532\""] : []
        for reader in readers {
            lines += ["[[readers]]", "name = \"\(reader.name)\"", "kind = \"osdp\""] + reader.keys
            lines += ["device = \"\(device(reader.name))\"", "baud = 115200", "address = \(reader.address)"]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `gatewayctl reader osdp install` for each reader (its key installed over the air).
    func install(_ g: GatewayUnderTest) throws {
        for reader in readers { try g.ctlJSON(["reader", "osdp", "install", reader.name, "--seconds", "20"]) }
    }

    /// Until each reader is online over Secure Channel (`gatewayctl reader osdp status`).
    func waitOnline(_ g: GatewayUnderTest, timeout: TimeInterval = 10) throws {
        for reader in readers {
            try waitFor("\(reader.name) online", timeout: timeout, interval: 0.05, context: { g.log }) {
                try g.ctlJSON(["reader", "osdp", "status"]).arrayValue?.first {
                    $0["reader"]?.stringValue == reader.name && $0["secure_channel"]?.boolValue == true
                }
            }
        }
    }

    func stop() {
        for reader in readers {
            pd[reader.name]?.stop()
            try? FileManager.default.removeItem(atPath: device(reader.name))
        }
    }
}
