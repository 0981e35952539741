import DoorCore

extension GatewayConfiguration {
    /// The effective configuration, one line per section, for the daemon's
    /// start log and `gatewayctl config check` (DEVELOPERS.md "Conventions" §13). The file holds
    /// no secrets; key and certificate files are named, never read here.
    public var summary: [String] {
        func ms(_ d: Duration) -> String { "\(d.millisecondsClamped) ms" }
        func s(_ d: Duration) -> String { "\(d.components.seconds) s" }
        func input(_ i: Input) -> String {
            "@\(i.line)\(i.activeLow ? " active-low" : "") \(i.bias.rawValue) debounce \(i.debounceMilliseconds) ms"
        }
        func step(_ st: OutputStep) -> String {
            switch st {
            case .pulse(let o, let d): return "\(o) \(ms(d))"
            case .wait(let d): return "wait \(ms(d))"
            }
        }
        let d = door
        var lines = ["device \(deviceID), board \(board.rawValue)" + (board == .real ? ", chip \(chip)" : "")]
        lines.append("reader " + (board == .sim ? "pn532-sim (\(reader.simulator))" : reader.connstring))
        if readers != [.legacy] {
            lines.append("readers " + readers.map(\.summary).joined(separator: ", "))
        }
        lines.append(
            "outputs "
                + outputs.map {
                    "\($0.name)@\($0.line)\($0.activeLow ? " active-low" : "") locked \($0.lockedLevel.rawValue)"
                }.joined(separator: ", "))
        if board == .real {
            // What config.txt must hold so the relays are locked from power-on.
            do throws(FirmwareHoldError) {
                lines.append(
                    "firmware hold " + (try firmwareHolds()).map(\.line).joined(separator: " ")
                        + " (config.txt: gatewayctl config firmware)")
            } catch {
                lines.append("firmware hold none: \(error)")
            }
        }
        lines.append(
            "indicators "
                + (indicators.isEmpty
                    ? "none"
                    : indicators.map {
                        "\($0.name)@\($0.line)\($0.activeLow ? " active-low" : "")"
                    }.joined(separator: ", ")))
        lines.append("inputs button \(input(button)), door contact " + (doorContact.map(input) ?? "none"))
        lines.append(
            "door pulse \(d.pulseLimits.minimum.millisecondsClamped)…\(ms(d.pulseLimits.maximum)), same tag quiet \(ms(d.sameTagQuiet)), mode \(d.initialMode.rawValue)"
        )
        lines.append(
            "actions "
                + d.actions.map { "\($0.index) \"\($0.name)\" (\($0.steps.map(step).joined(separator: ", ")))" }.joined(
                    separator: "; "))
        // Anti-passback (issue 36), only when an action has it.
        let passback = d.actions.filter { $0.passback.mode != .off }.map { a in
            "\(a.index) \(a.passback.mode.rawValue)" + (a.passback.resetAfter.map { " (reset \($0 / 60) min)" } ?? "")
        }
        if !passback.isEmpty { lines.append("passback " + passback.joined(separator: ", ")) }
        let custom = FeedbackKind.allCases.filter { d.patterns[$0] != FeedbackPattern.defaultPatterns[$0] }
        lines.append(
            "feedback "
                + (custom.isEmpty ? "stock patterns" : "custom: " + custom.map(\.rawValue).joined(separator: ", ")))
        lines.append(
            "lockout "
                + (d.lockout.enabled
                    ? "\(d.lockout.perTagThreshold) per tag / \(d.lockout.globalThreshold) in all within \(s(d.lockout.window)), \(s(d.lockout.duration)) doubling to \(s(d.lockout.cap))"
                    : "off"))
        lines.append(
            "button exit " + (d.button.exitAction.map { "action \($0)" } ?? "none")
                + ", hold \(ms(d.button.provisioningHold)) arms provisioning")
        lines.append(
            "provisioning " + (d.provisioning.buttonArmed ? "button-armed" : "admin only")
                + ", action \(d.provisioning.action), timeout \(s(d.provisioning.timeout))"
                + (d.provisioning.protect
                    ? ", password-protected (auth limit \(d.provisioning.authLimit))" : ", unprotected"))
        lines.append(
            "door contact "
                + (d.doorContact.enabled
                    ? "held open " + heldOpenSummary(d.doorContact) + ", grace \(s(d.doorContact.openGrace))" : "off"))
        if let rex = requestToExit {
            lines.append(
                "request to exit \(input(rex)), grace \(s(d.requestToExit.grace)), "
                    + (d.requestToExit.action.map { "runs action \($0)" } ?? "shunt only"))
        }
        lines.append("clock " + (declareClockSynchronised ? "declared synchronised" : "from adjtimex"))
        lines.append("mqtt " + (mqtt.enabled ? mqttSummary : "off"))
        if remote.transport == .nats {
            let n = nats
            let tls = n.tls.enabled ? "TLS" + (n.tls.certFile.map { " cert \($0)" } ?? "") : "plain TCP"
            let creds = n.credentialPaths(stateDirectory: paths.stateDirectory)
            let login: String
            switch n.login {
            case .jwt:
                login =
                    "jwt \(creds.jwt), refresh at \(n.refreshPercent) %"
                    + (n.accountKeys.isEmpty
                        ? ", pushed JWTs signed by the issuer of the JWT in place"
                        : ", pushed JWTs signed by \(n.accountKeys.count) account key(s)")
            case .password: login = "login \(n.user ?? "") password from \(n.passwordFile ?? "")"
            case .token: login = "token from \(n.tokenFile ?? "")"
            }
            lines.append(
                "remote nats \(n.servers.joined(separator: " ")), \(tls), prefix \(n.prefix).\(deviceID), "
                    + login + (n.jetStream ? ", JetStream acks" : ""))
        }
        lines.append("control socket \(controlSocket), admin group \(control.adminGroup)")
        lines.append("paths state \(paths.stateDirectory), runtime \(paths.runtimeDirectory)")
        return lines
    }

    /// Settings that are allowed but weaker than they look: `config check`
    /// prints them as warnings, the daemon logs them once at start.
    public var warnings: [String] {
        var w: [String] = []
        if mqtt.enabled && remote.transport == .mqtt && !mqtt.tls.enabled {
            w.append(
                "mqtt.tls.enabled = false: plain TCP to \(mqtt.host):\(mqtt.port) — "
                    + (mqtt.username == nil ? "" : "the login, ")
                    + "events and commands cross the network readable and forgeable; use TLS outside a trusted LAN")
        }
        if remote.transport == .mqtt && mqtt.sendsPasswordOverPlainMulticastDNS {
            w.append(
                "mqtt.allow_password_over_plain_mdns = true: the broker password goes over plain TCP to whoever "
                    + "answers the multicast DNS query for \(mqtt.host) first")
        }
        if mqtt.enabled && remote.transport == .mqtt && mqtt.tls.enabled && mqtt.tls.insecure {
            w.append(
                "mqtt.tls.insecure = true: the broker's host name is not checked against its certificate; "
                    + "a server certificate from the same CA on another host passes")
        }
        if remote.transport == .nats && nats.sendsSecretOverPlainMulticastDNS {
            w.append(
                "nats.allow_password_over_plain_mdns = true: the "
                    + (nats.login == .token ? "token" : "password")
                    + " goes over plain TCP to whoever answers the multicast DNS query for the server first")
        }
        if remote.transport == .nats && !nats.tls.enabled {
            let login = nats.login == .jwt ? "" : nats.login == .token ? "the token, " : "the password, "
            w.append(
                "nats.tls.enabled = false: plain TCP to \(nats.servers.joined(separator: " ")) — "
                    + login + "events and commands cross the network readable and forgeable; "
                    + "use TLS outside a trusted LAN")
        }
        if mqtt.homeAssistantAdmin && (remote.transport != .mqtt || !mqtt.enabled) {
            w.append(
                "mqtt.home_assistant_admin = true does nothing without MQTT (mqtt.enabled = true and "
                    + "remote.transport = \"mqtt\"): Home Assistant's admin screen travels over MQTT only")
        }
        if remote.transport == .nats && nats.login == .jwt && nats.accountKeys.isEmpty {
            w.append(
                "nats.account_keys is empty: a JWT pushed on creds.jwt is trusted only when signed by the issuer of "
                    + "the JWT in place; list the account's keys to allow a rotated signing key")
        }
        w += credentialWarnings
        return w
    }

    private var mqttSummary: String {
        let m = mqtt
        var parts = ["\(m.host):\(m.port) MQTT \(m.protocolVersion.rawValue) as \(m.clientID)"]
        if m.tls.enabled {
            var tls =
                "TLS" + (m.tls.caFile.map { " ca \($0)" } ?? "") + (m.tls.caDirectory.map { " ca-dir \($0)" } ?? "")
            if let cert = m.tls.certFile, let key = m.tls.keyFile { tls += " cert \(cert) key \(key)" }
            if m.tls.insecure { tls += " VERIFICATION OFF" }
            parts.append(tls)
        } else {
            parts.append("plain TCP")
        }
        if let user = m.username {
            parts.append("login \(user)" + (m.passwordFile.map { " password from \($0)" } ?? " without a password"))
        }
        parts.append("prefix \(m.topicPrefix)")
        let mapping = m.commandMapping.sorted { $0.key < $1.key }.map { "\($0.key)→\($0.value)" }.joined(separator: " ")
        parts.append(
            "compat topics " + (m.compatCommandTopics.isEmpty ? "none" : m.compatCommandTopics.joined(separator: " "))
                + " (\(mapping))")
        parts.append("tolerance \(m.toleranceSeconds) s, uid \(m.uidInEvents.rawValue), outbox \(m.outboxLimit)")
        if m.homeAssistantDiscovery { parts.append("Home Assistant discovery") }
        if m.homeAssistantAdmin { parts.append("Home Assistant admin screen (provisioning, revoking)") }
        return parts.joined(separator: ", ")
    }
}
