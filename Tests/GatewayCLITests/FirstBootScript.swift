import Foundation
import TestSupport

/// The image's shipped first-boot script (provisioning/firstboot/doorgateway-firstboot.sh),
/// run with every path it touches inside a test's directory: the boot partition
/// `dir/fb`, /etc/doorgateway `dir/etc` (or `etcName`), gatewayctl `dir/bin/gatewayctl`,
/// and its stamp, config.txt, firmware custom file, Wi-Fi file, systemd and ssh
/// directories directly under `dir` — nothing of the machine's.
enum FirstBootScript {
    static let path = Fixtures.root.appendingPathComponent("provisioning/firstboot/doorgateway-firstboot.sh")

    /// The script's environment for `dir`, with `extra` on top.
    static func environment(_ dir: URL, etcName: String = "etc", _ extra: [String: String] = [:]) -> [String: String] {
        func at(_ name: String) -> String { dir.appendingPathComponent(name).path }
        var env = ProcessInfo.processInfo.environment
        env["DOORGATEWAY_FIRSTBOOT_DIR"] = at("fb")
        env["DOORGATEWAY_ETC"] = at(etcName)
        env["DOORGATEWAY_STATE"] = at("state")
        env["GATEWAYCTL"] = at("bin/gatewayctl")
        env["DOORGATEWAY_CONFIG_TXT"] = at("config.txt")
        env["DOORGATEWAY_FIRMWARE_CUSTOM"] = at("raspi-firmware-custom")
        env["DOORGATEWAY_FIRSTBOOT_STAMP"] = at("firstboot.done")
        env["DOORGATEWAY_WPA"] = at("wpa/wpa_supplicant-wlan0.conf")
        env["DOORGATEWAY_SYSTEMD_ETC"] = at("systemd")
        env["DOORGATEWAY_ROOT_SSH"] = at("root-ssh")
        env.merge(extra) { _, new in new }
        return env
    }

    /// Runs the script for `dir` (its exit status is the caller's to check).
    static func run(_ dir: URL, etcName: String = "etc", _ extra: [String: String] = [:]) throws -> ProcessResult {
        try Run.process(
            URL(fileURLWithPath: "/bin/sh"), [path.path], environment: environment(dir, etcName: etcName, extra))
    }
}
