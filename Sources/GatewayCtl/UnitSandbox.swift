import GatewayControl
@preconcurrency import Glibc

/// `config check --broker` inside gatewayd.service's sandbox: gatewayctl
/// runs itself again with `systemd-run --wait --pipe`, as a transient service
/// given the unit's own settings that decide what the door can reach — its
/// user, the network filters (IPAddressDeny=/IPAddressAllow=,
/// RestrictAddressFamilies=), the file system's view (ProtectHome=,
/// ProtectSystem=, PrivateTmp=, …) and its credentials (LoadCredential=) — read
/// from `systemctl cat gatewayd.service`, drop-ins included. So the check sees
/// what gatewayd will see: a `.local` name whose mDNS query the unit drops, a
/// broker outside the allowed ranges, a key only the unit's credential holds.
enum UnitSandbox {
    static let unit = "gatewayd.service"
    /// Set in the sandboxed run: the unit it stands in for.
    static let marker = "DOORGATEWAY_UNIT_SANDBOX"
    /// The [Service] settings carried over (every other one is the daemon's own business).
    static let carried: Set<String> = [
        "User", "Group", "SupplementaryGroups", "PrivateTmp", "ProtectHome", "ProtectSystem", "PrivateNetwork",
        "RestrictAddressFamilies", "IPAddressDeny", "IPAddressAllow", "LoadCredential", "ReadOnlyPaths",
        "ReadWritePaths", "InaccessiblePaths", "BindPaths", "BindReadOnlyPaths", "NoNewPrivileges",
        "CapabilityBoundingSet", "PrivateDevices", "ProtectHostname",
    ]

    /// Why the check cannot run in the sandbox here (nil: it can).
    static func unavailable() -> String? {
        guard access("/run/systemd/system", F_OK) == 0 else { return "systemd is not running here" }
        guard getuid() == 0 else { return "not root (systemd-run needs root)" }
        guard systemdRun() != nil else { return "no systemd-run" }
        // systemd-run --wait --pipe talks to systemd over D-Bus (its direct
        // socket does not carry them).
        guard access("/run/dbus/system_bus_socket", F_OK) == 0 else {
            return "no D-Bus system bus (systemd-run --wait needs it; apt install dbus)"
        }
        return nil
    }

    static func systemdRun() -> String? {
        ["/usr/bin/systemd-run", "/bin/systemd-run"].first { access($0, X_OK) == 0 }
    }

    /// `KEY=VALUE` lines of the unit's [Service] sections, in order (the unit
    /// file, then its drop-ins, as `systemctl cat` prints them); nil when
    /// systemctl does not know the unit.
    static func serviceSettings() -> [(String, String)]? {
        guard let pipe = popen("systemctl cat --no-pager \(unit) 2>/dev/null", "r") else { return nil }
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, pipe)
            if n <= 0 { break }
            text += buffer[..<n]
        }
        guard pclose(pipe) == 0 else { return nil }
        return parse(String(decoding: text, as: UTF8.self))
    }

    /// The [Service] `KEY=VALUE` lines of unit text (a unit file, or
    /// `systemctl cat`'s file and drop-ins), in order; an empty value (a reset)
    /// is kept.
    static func parse(_ text: String) -> [(String, String)] {
        var section = ""
        var out: [(String, String)] = []
        var pending = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = pending + raw.trimmingLeadingBlanks
            pending = ""
            if line.hasSuffix("\\") {  // a continued line
                line.removeLast()
                pending = line.trimmingBlanks + " "
                continue
            }
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                section = line
                continue
            }
            guard section == "[Service]", let eq = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<eq]).trimmingBlanks
            let value = String(line[line.index(after: eq)...]).trimmingBlanks
            out.append((key, value))
        }
        return out
    }

    /// systemd-run's arguments for the check: the carried settings, a
    /// LoadCredential= only where its file exists (the unit's SetCredential=
    /// fallback stands in for a missing one; a transient unit would fail on it).
    static func arguments(settings: [(String, String)], configFile: String, check: [String], binary: String)
        -> [String]
    {
        var args = [
            "--wait", "--pipe", "--quiet", "--collect", "--service-type=exec",
            "--unit=gatewayctl-broker-check-\(getpid())", "--setenv=\(marker)=\(unit)",
        ]
        for (key, value) in settings where carried.contains(key) {
            if key == "LoadCredential", let colon = value.firstIndex(of: ":") {
                let source = String(value[value.index(after: colon)...])
                if source.hasPrefix("/") && access(source, F_OK) != 0 { continue }
            }
            args.append("--property=\(key)=\(key.hasPrefix("IPAddress") ? expandingIPNames(value) : value)")
        }
        // The file under check, wherever it is (ProtectHome= would hide /root).
        args.append("--property=BindReadOnlyPaths=\(configFile)")
        return args + ["--", binary, "ctl"] + check
    }

    /// IPAddressAllow=/IPAddressDeny= with the unit file's symbolic names
    /// written out (systemd 252's systemd-run parses only prefixes there:
    /// "Failed to parse IP address prefix: localhost").
    static func expandingIPNames(_ value: String) -> String {
        let names: [String: String] = [
            "any": "0.0.0.0/0 ::/0", "localhost": "127.0.0.0/8 ::1/128", "link-local": "169.254.0.0/16 fe80::/64",
            "multicast": "224.0.0.0/4 ff00::/8",
        ]
        return value.split(separator: " ").map { names[String($0)] ?? String($0) }.joined(separator: " ")
    }

    /// Replaces this process with the sandboxed check (returns only if exec
    /// failed, with the reason).
    static func exec(configFile: String, check: [String]) -> String {
        guard let settings = serviceSettings() else { return "\(unit) is not installed (systemctl cat \(unit))" }
        guard let run = systemdRun() else { return "no systemd-run" }
        let binary = Files.resolvingSymlinks("/proc/self/exe")
        let argv = [run] + arguments(settings: settings, configFile: configFile, check: check, binary: binary)
        fflush(stdout)
        let cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        execv(run, cArgs)
        return "exec \(run): \(String(cString: strerror(errno)))"
    }

    /// In the sandboxed run: a TLS path under /run/credentials/gatewayd.service/
    /// (the unit's credentials, as gateway.toml names them) is read from this
    /// run's own $CREDENTIALS_DIRECTORY, which holds the same files.
    static func credentialPath(_ path: String?, environment: [String: String]) -> String? {
        guard let path, environment[marker] != nil, let creds = environment["CREDENTIALS_DIRECTORY"] else {
            return path
        }
        let prefix = "/run/credentials/\(unit)/"
        return path.hasPrefix(prefix) ? creds + "/" + path.dropFirst(prefix.count) : path
    }
}

extension StringProtocol {
    fileprivate var trimmingLeadingBlanks: String { String(drop { $0 == " " || $0 == "\t" }) }
    fileprivate var trimmingBlanks: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
}
