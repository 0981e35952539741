import DoorCore
import Foundation
import GatewayConfig
import TestSupport
import XCTest

/// Issue 23, the relay from power-on: `gatewayctl config firmware` and the
/// image's first boot (provisioning/firstboot/doorgateway-firstboot.sh, run
/// here with its directories pointed at a temporary tree), which take the
/// relay's polarity and lock kind from the boot partition and write both the
/// configuration's outputs and config.txt's `gpio=` hold.
final class FirmwareHoldCLITests: TemporaryDirectoryTestCase {
    var dir: URL!
    static let repo = Fixtures.root
    /// The image's firmware settings as shipped (the undecided hold block).
    static let stockCustom = repo.appendingPathComponent("provisioning/firstboot/config.txt.custom")

    override func setUpWithError() throws { dir = try temporaryDirectory("firmware-hold") }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        try Data(text.utf8).write(to: dir.appendingPathComponent(name))
        return path(name)
    }

    func read(_ name: String) throws -> String { try String(contentsOfFile: path(name), encoding: .utf8) }

    /// config.txt as raspi-firmware writes it: its own lines, then the custom file.
    func stockConfigTxt() throws -> String {
        "# Do not modify this file!\n[all]\narm_64bit=1\nenable_uart=1\n"
            + (try String(contentsOf: Self.stockCustom, encoding: .utf8))
    }

    static func chosen(activeLow: Bool, lock: CoilLevel) -> String {
        ConfigExample.text(board: .pi)
            .replacingOccurrences(of: "\n# active_low = \(activeLow) ", with: "\nactive_low = \(activeLow) ")
            .replacingOccurrences(
                of: "\n# locked_level = \"\(lock.rawValue)\" ", with: "\nlocked_level = \"\(lock.rawValue)\" ")
    }

    static let block = """
        # >>> doorgateway relay hold (written by `gatewayctl config firmware --write` from gateway.toml; board/wiring.md)
        # Each relay line at its locked level from power-on, before Linux and gatewayd.
        # strike (GPIO17): active-low relay, locked de-energised (strike): line high while locked, pulled up
        gpio=17=op,dh,pu
        # <<< doorgateway relay hold

        """

    // MARK: gatewayctl config firmware

    func testTheImageShipsTheRelayUndecidedNotDrivenToEitherLevel() throws {
        let stock = try String(contentsOf: Self.stockCustom, encoding: .utf8)
        XCTAssertEqual(FirmwareHold.current(in: stock, pin: 17), "gpio=17=ip,pd")
        XCTAssertEqual(stock.components(separatedBy: "\ngpio=").count, 2, "one gpio= line, the undecided hold")
    }

    func testItPrintsTheBlockAndSaysThatConfigTxtDoesNotHoldItYet() throws {
        let conf = try write("gateway.toml", Self.chosen(activeLow: true, lock: .deenergised))
        let txt = try write("config.txt", try stockConfigTxt())
        let r = try Run.gatewayctl(["config", "firmware", "--config-txt", txt, conf])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, Self.block)
        XCTAssertEqual(
            r.stderr,
            "config firmware: \(txt): GPIO17 (strike) is gpio=17=ip,pd: the relay is not held locked from power-on; "
                + "run `gatewayctl config firmware --write` as root, then reboot\n")
        XCTAssertEqual(try read("config.txt"), try stockConfigTxt(), "nothing written without --write")
    }

    func testWriteReplacesTheHoldInConfigTxtAndTheCustomFileThenCheckAgrees() throws {
        let conf = try write("gateway.toml", Self.chosen(activeLow: true, lock: .deenergised))
        let txt = try write("config.txt", try stockConfigTxt())
        let custom = try write("raspi-firmware-custom", try String(contentsOf: Self.stockCustom, encoding: .utf8))
        let r = try Run.gatewayctl(["config", "firmware", "--write", "--config-txt", txt, "--custom", custom, conf])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.stdout, Self.block)
        XCTAssertEqual(
            r.stderr,
            """
            config firmware: wrote \(txt) (was: GPIO17 (strike) is gpio=17=ip,pd): the firmware applies it at the next power-on (reboot)
            config firmware: wrote \(custom) (was: GPIO17 (strike) is gpio=17=ip,pd): the firmware applies it at the next power-on (reboot)

            """)
        for name in ["config.txt", "raspi-firmware-custom"] {
            let text = try read(name)
            XCTAssertEqual(text.components(separatedBy: "\ngpio=17=").count, 2, "one line for GPIO17 in \(name)")
            XCTAssertEqual(FirmwareHold.current(in: text, pin: 17), "gpio=17=op,dh,pu", name)
            XCTAssertTrue(text.contains("\ndtparam=strict_gpiod\n"), "the rest is kept")
        }
        XCTAssertTrue(try read("config.txt").hasPrefix("# Do not modify this file!\n[all]\narm_64bit=1\n"))

        let again = try Run.gatewayctl(["config", "firmware", "--write", "--config-txt", txt, "--custom", custom, conf])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stderr.contains("config firmware: \(txt) unchanged (holds these already)"), again.stderr)

        let check = try Run.gatewayctl(["config", "check", "--config-txt", txt, conf])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(check.stderr, "", "config.txt holds the configured relay")

        // The relay changes to a maglock later: the file is valid, config.txt is stale.
        let maglock = try write("maglock.toml", Self.chosen(activeLow: true, lock: .energised))
        let stale = try Run.gatewayctl(["config", "check", "--config-txt", txt, maglock])
        XCTAssertEqual(stale.status, 0, stale.stderr)
        XCTAssertTrue(stale.stdout.contains("  firmware hold gpio=17=op,dl,pd (config.txt"), stale.stdout)
        XCTAssertEqual(
            stale.stderr,
            "warning: \(txt): GPIO17 (strike) is gpio=17=op,dh,pu, not gpio=17=op,dl,pd: from power-on until gatewayd "
                + "starts the relay is not held locked; run `gatewayctl config firmware --write` as root, then reboot\n"
        )
    }

    /// Issue 33: a door whose config.txt holds the relay without a pull (the
    /// hold before issue 33: `gpio=17=op,dh`) is told, and `--write` adds the pull
    /// — Debian's kernel leaves a released line at its pull, and a hold that
    /// drives the line but leaves GPIO17's reset pull-down leaves an
    /// active-low relay to gatewayd's own pull alone once the line is released.
    func testAHoldWithoutThePullIsStaleAndRewrittenWithIt() throws {
        let conf = try write("gateway.toml", Self.chosen(activeLow: true, lock: .deenergised))
        let old = try stockConfigTxt().replacingOccurrences(of: "gpio=17=ip,pd", with: "gpio=17=op,dh")
        XCTAssertNotEqual(old, try stockConfigTxt(), "the stock hold line moved (update this test)")
        let txt = try write("config.txt", old)
        let check = try Run.gatewayctl(["config", "check", "--config-txt", txt, conf])
        XCTAssertEqual(check.status, 0, check.stderr)
        XCTAssertEqual(
            check.stderr,
            "warning: \(txt): GPIO17 (strike) is gpio=17=op,dh, not gpio=17=op,dh,pu: the relay is driven locked "
                + "from power-on but not pulled there: while gatewayd is not running only the pull gatewayd requested "
                + "holds it (none on a kernel that refuses it); run `gatewayctl config firmware --write` as root, then reboot\n"
        )
        let told = try Run.gatewayctl(["config", "firmware", "--config-txt", txt, conf])
        XCTAssertEqual(told.status, 0, told.stderr)
        XCTAssertTrue(told.stderr.contains("but not pulled there"), told.stderr)
        let r = try Run.gatewayctl([
            "config", "firmware", "--write", "--config-txt", txt, "--custom", path("none"), conf,
        ])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("wrote \(txt) (was: GPIO17 (strike) is gpio=17=op,dh)"), r.stderr)
        let text = try read("config.txt")
        XCTAssertEqual(FirmwareHold.current(in: text, pin: 17), "gpio=17=op,dh,pu")
        XCTAssertEqual(text.components(separatedBy: "\ngpio=17=").count, 2, "one line for GPIO17")
    }

    func testNoHoldIsWrittenFromAFileThatLeavesTheRelayUnchosen() throws {
        let conf = try write("gateway.toml", ConfigExample.text(board: .pi))
        let txt = try write("config.txt", try stockConfigTxt())
        let r = try Run.gatewayctl([
            "config", "firmware", "--write", "--config-txt", txt, "--custom", path("none"), conf,
        ])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.stdout, "")
        XCTAssertTrue(r.stderr.contains(": outputs[0].active_low: output \"strike\": is required"), r.stderr)
        XCTAssertTrue(r.stderr.hasSuffix("config firmware: no relay hold without a valid configuration\n"), r.stderr)
        XCTAssertEqual(try read("config.txt"), try stockConfigTxt())
    }

    // MARK: First boot (the image): relay and lock files on the boot partition

    struct FirstBoot {
        var status: ProcessResult
        var statusFile: String
    }

    /// Runs the first-boot script with `files` in its boot-partition folder,
    /// the stock (unchosen) configuration installed and the image's firmware files.
    /// The first-boot script's paths inside this test's directory (nothing of
    /// the machine's: its stamp, Wi-Fi file, systemd and ssh directories too).
    /// `etcName` lets a test put the configuration directory under another name.
    func firstBoot(_ files: [String: String], again: Bool = false, etcName: String = "etc") throws -> FirstBoot {
        let fb = dir.appendingPathComponent("fb"), etc = dir.appendingPathComponent(etcName)
        let bin = dir.appendingPathComponent("bin")
        if !again {
            for d in [fb, etc, bin] {
                try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
            }
            try FileManager.default.createSymbolicLink(
                at: bin.appendingPathComponent("gatewayctl"), withDestinationURL: Run.product("gateway"))
            try Data(ConfigExample.text(board: .pi).utf8).write(to: etc.appendingPathComponent("gateway.toml"))
            try write("config.txt", try stockConfigTxt())
            try write("raspi-firmware-custom", try String(contentsOf: Self.stockCustom, encoding: .utf8))
        }
        for (name, text) in files { try Data(text.utf8).write(to: fb.appendingPathComponent(name)) }
        let r = try FirstBootScript.run(dir, etcName: etcName)
        XCTAssertEqual(r.status, 0, r.stderr)
        if FileManager.default.fileExists(atPath: path("firstboot.done")) && again {
            return FirstBoot(
                status: r,
                statusFile: (try? String(contentsOf: fb.appendingPathComponent("STATUS.txt"), encoding: .utf8)) ?? "")
        }
        for name in files.keys {
            XCTAssertFalse(
                FileManager.default.fileExists(atPath: fb.appendingPathComponent(name).path), "\(name) consumed")
        }
        return FirstBoot(
            status: r, statusFile: try String(contentsOf: fb.appendingPathComponent("STATUS.txt"), encoding: .utf8))
    }

    func testFirstBootWritesTheOutputsAndTheFirmwareHoldForAllFourCombinations() throws {
        let cases: [(String, String, Bool, CoilLevel, String)] = [
            ("active-low", "strike", true, .deenergised, "gpio=17=op,dh,pu"),
            ("active-high", "strike", false, .deenergised, "gpio=17=op,dl,pd"),
            ("active-low", "maglock", true, .energised, "gpio=17=op,dl,pd"),
            ("active-high", "maglock", false, .energised, "gpio=17=op,dh,pu"),
        ]
        for (relay, lock, activeLow, level, line) in cases {
            try tearDownWithError()
            try setUpWithError()
            // As people type them: a CRLF from a Windows editor, or the key repeated.
            let run = try firstBoot(["relay": relay + "\r\n", "lock": "lock = \"\(lock)\"\n"])
            XCTAssertFalse(run.statusFile.contains("ERROR"), run.statusFile)
            XCTAssertTrue(run.statusFile.contains("relay hold from power-on: \(line) in "), run.statusFile)
            let config = try GatewayConfiguration.load(file: path("etc/gateway.toml"))
            XCTAssertEqual(config.outputs.map(\.name), ["strike"])
            XCTAssertEqual(config.outputs.map(\.line), [.name("GPIO17")])
            XCTAssertEqual(config.outputs.map(\.activeLow), [activeLow], "\(relay) \(lock)")
            XCTAssertEqual(config.outputs.map(\.lockedLevel), [level], "\(relay) \(lock)")
            for name in ["config.txt", "raspi-firmware-custom"] {
                let text = try read(name)
                XCTAssertEqual(FirmwareHold.current(in: text, pin: 17), line, "\(relay) \(lock): \(name)")
                XCTAssertFalse(text.contains("gpio=17=ip,pd"), name)
            }
            // The other choice stays shown, commented out.
            let installed = try read("etc/gateway.toml")
            XCTAssertTrue(installed.contains("\n# active_low = \(!activeLow) "), installed)
        }
    }

    func testFirstBootWithoutTheLockKindRejectsTheFileAndLeavesTheFirmwareUndecided() throws {
        let run = try firstBoot(["relay": "active-low\n"])
        XCTAssertTrue(
            run.statusFile.contains("ERROR: configuration rejected by gatewayctl config check"), run.statusFile)
        XCTAssertTrue(
            run.statusFile.contains("outputs[0].locked_level: output \"strike\": is required"), run.statusFile)
        XCTAssertTrue(run.statusFile.contains("ERROR: gatewayd will not start with "), run.statusFile)
        XCTAssertEqual(FirmwareHold.current(in: try read("config.txt"), pin: 17), "gpio=17=ip,pd")
        XCTAssertEqual(try read("etc/gateway.toml"), ConfigExample.text(board: .pi), "the stock file stays")
    }

    func testFirstBootRefusesAnUnknownRelayAndSaysTheDoorWaits() throws {
        let run = try firstBoot(["relay": "low\n", "lock": "strike\n"])
        XCTAssertTrue(
            run.statusFile.contains(
                "ERROR: relay 'low': want active-low (opto-isolated relay module) or active-high (transistor/MOSFET stage, relay HAT)"
            ), run.statusFile)
        XCTAssertEqual(FirmwareHold.current(in: try read("config.txt"), pin: 17), "gpio=17=ip,pd")

        try tearDownWithError()
        try setUpWithError()
        let idOnly = try firstBoot(["device-id": "door-7\n"])
        XCTAssertTrue(
            idOnly.statusFile.contains("ERROR: gatewayd will not start with \(path("etc/gateway.toml")): "),
            idOnly.statusFile)
        XCTAssertTrue(idOnly.statusFile.contains("(put relay and lock files here: README.txt)"), idOnly.statusFile)
    }

    // MARK: First boot's own safety (docs/security.md "L5")

    /// One-shot: once a boot leaves the door complete, the folder is never
    /// read again — an ssh key put on the FAT partition later (someone with
    /// the card for a minute) is not installed. An incomplete first boot (the
    /// relay not chosen yet) leaves no stamp, so the folder is read again.
    func testFirstBootIsOneShotOnceTheDoorIsComplete() throws {
        let incomplete = try firstBoot(["device-id": "door-7\n"])
        XCTAssertTrue(incomplete.statusFile.contains("ERROR: gatewayd will not start"), incomplete.statusFile)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("firstboot.done")), "no stamp while incomplete")

        let complete = try firstBoot(["relay": "active-low\n", "lock": "strike\n"], again: true)
        XCTAssertFalse(complete.statusFile.contains("ERROR"), complete.statusFile)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path("firstboot.done")), complete.status.stdout)

        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyOfSomeoneWithTheCardForAMinute attacker"
        let later = try firstBoot(["authorized_keys": key + "\n"], again: true)
        XCTAssertTrue(later.status.stdout.contains("provisioned already"), later.status.stdout)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("root-ssh/authorized_keys")), "a key was installed")
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: dir.appendingPathComponent("fb/authorized_keys").path),
            "the file was left on the FAT partition (it is deleted unread)")
        XCTAssertTrue(later.statusFile.contains("NOT applied"), later.statusFile)
        XCTAssertTrue(later.statusFile.contains(" authorized_keys"), later.statusFile)
    }

    /// The same for everything else the folder can carry into `/etc/doorgateway`:
    /// after a complete first boot, a broker (`mqtt-broker`), a whole
    /// `gateway.toml`, a CA, a client certificate and key dropped on the FAT
    /// partition are not applied — the configuration, and the audit key made
    /// at the first boot, stay byte for byte; no certificate or key is installed.
    func testFirstBootAppliesNoBrokerConfigurationOrCertificateOnceTheDoorIsComplete() throws {
        let complete = try firstBoot(["relay": "active-low\n", "lock": "strike\n"])
        XCTAssertFalse(complete.statusFile.contains("ERROR"), complete.statusFile)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path("firstboot.done")), complete.status.stdout)
        let config = try read("etc/gateway.toml")
        let auditKey = FileManager.default.contents(atPath: path("etc/audit.key"))

        let pem = { (kind: String) in "-----BEGIN \(kind)-----\nMIIB\n-----END \(kind)-----\n" }
        let evil = config.replacingOccurrences(
            of: "[mqtt]\nenabled = false\nhost = \"localhost\"\n",
            with: "[mqtt]\nenabled = true\nhost = \"evil.example\"\n")
        XCTAssertNotEqual(evil, config, "the attacker's configuration differs (update this test)")
        let dropped = [
            "mqtt-broker": "mqtts://evil.example:8883\n", "gateway.toml": evil, "ca.crt": pem("CERTIFICATE"),
            "door.crt": pem("CERTIFICATE"), "door.key": pem("PRIVATE KEY"),
            "wifi.conf": "ssid=Neighbours\npsk=a secret passphrase\ncountry=DE\n",
        ]
        let later = try firstBoot(dropped, again: true)
        XCTAssertTrue(later.status.stdout.contains("provisioned already"), later.status.stdout)
        XCTAssertEqual(try read("etc/gateway.toml"), config, "the configuration was changed")
        let loaded = try GatewayConfiguration.load(file: path("etc/gateway.toml"))
        XCTAssertFalse(loaded.mqtt.enabled)
        XCTAssertNotEqual(loaded.mqtt.host, "evil.example")
        XCTAssertEqual(
            FileManager.default.contents(atPath: path("etc/audit.key")), auditKey, "the audit key was remade")
        for name in ["ca.crt", "door.crt", "door.key"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: path("etc/\(name)")), "\(name) was installed")
        }
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: path("wpa/wpa_supplicant-wlan0.conf")), "Wi-Fi was configured")
        // Not applied, and not left on the FAT partition in clear either (a
        // Wi-Fi passphrase, a private key): deleted unread, and STATUS.txt says so.
        for name in dropped.keys {
            XCTAssertFalse(
                FileManager.default.fileExists(atPath: dir.appendingPathComponent("fb/\(name)").path),
                "\(name) was left on the FAT partition")
            XCTAssertTrue(
                later.statusFile.contains(" \(name)"), "STATUS.txt does not list \(name): \(later.statusFile)")
        }
        XCTAssertTrue(later.statusFile.contains("NOT applied"), later.statusFile)
        XCTAssertFalse(later.statusFile.contains("secret passphrase"), later.statusFile)
    }

    /// A TOML string's escapes survive: a path holding a backslash is written
    /// as `\\` (awk -v used to turn it back into one `\`, an invalid escape).
    func testATOMLValueKeepsItsEscapes() throws {
        let ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        let run = try firstBoot(
            ["relay": "active-low\n", "lock": "strike\n", "ca.crt": ca, "mqtt-broker": "mqtts://broker.lan\n"],
            etcName: #"etc\door"#)
        XCTAssertFalse(run.statusFile.contains("ERROR"), run.statusFile)
        let config = try GatewayConfiguration.load(file: path(#"etc\door/gateway.toml"#))
        XCTAssertEqual(config.mqtt.tls.caFile, path(#"etc\door/ca.crt"#))
        XCTAssertEqual(config.mqtt.host, "broker.lan")
    }

    /// wifi.conf's values are data: a country carrying `\n` and a second
    /// network is refused (dash's echo used to write it as two lines), and a
    /// quote in the SSID cannot end the string (the SSID is written as hex).
    func testWiFiValuesCannotAddConfigurationLines() throws {
        let injected = try firstBoot([
            "relay": "active-low\n", "lock": "strike\n",
            "wifi.conf": "ssid=home\npsk=correct horse\ncountry=DE\\nnetwork={ssid=\"evil\" key_mgmt=NONE}\n",
        ])
        XCTAssertTrue(
            injected.statusFile.contains("ERROR: wifi.conf: country must be two letters"), injected.statusFile)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("wpa/wpa_supplicant-wlan0.conf")))

        try tearDownWithError()
        try setUpWithError()
        let quoted = try firstBoot([
            "relay": "active-low\n", "lock": "strike\n", "wifi.conf": "ssid=cafe\"\nkey_mgmt=NONE\ncountry=de\n",
        ])
        XCTAssertFalse(quoted.statusFile.contains("ERROR"), quoted.statusFile)
        let wpa = try read("wpa/wpa_supplicant-wlan0.conf")
        XCTAssertTrue(wpa.contains("\tssid=6361666522\n"), wpa)
        XCTAssertTrue(wpa.contains("country=DE\n"), wpa)
        XCTAssertEqual(wpa.components(separatedBy: "network={").count, 2, "one network: \(wpa)")
    }
}
