import DoorCore

/// The commented example file `gatewayctl config example` prints: every key
/// with its default (keys without one, or whose default is derived, are
/// commented out). The simulated board's loads without errors and equals the
/// defaults. The Pi's leaves the relay's `active_low` and `locked_level`
/// commented out, both choices shown: a real board has no default for them,
/// so the file is refused, naming exactly those two keys, until the user (or
/// the image's first boot) picks.
public enum ConfigExample {
    public enum Board: String, CaseIterable, Sendable {
        /// The simulated board and a pn532-sim emulator: runs on any Linux machine.
        case sim
        /// A Raspberry Pi with the reference wiring.
        case pi
    }

    public static let deviceID = "front-door"
    /// A well-formed account public key (a random one) for the commented example.
    public static let natsAccountKeyExample = "ABI7XHMZW2VYSDWXLQLWGAVYXJQ5FETZMFIC5ZYM3UXIAELP3M662Y7G"

    public static func text(board: Board) -> String {
        typealias D = GatewayConfiguration.Defaults
        let output = D.outputs[0]
        let kind: BoardKind = board == .pi ? .real : .sim
        func toml(_ line: LineRef) -> String {
            switch line {
            case .offset(let o): return "\(o)"
            case .name(let n): return "\"\(n)\""
            }
        }
        let indicators = D.indicators.map { i in
            """
            [indicators.\(i.name)]
            line = \(toml(i.line))
            active_low = \(i.activeLow)
            """
        }.joined(separator: "\n\n")
        let actions = DoorSettings.defaultActions(output: output.name).map { a in
            let steps = a.steps.map { step -> String in
                switch step {
                case .pulse(let o, let d): return "{ pulse = \"\(o)\", ms = \(d.millisecondsClamped) }"
                case .wait(let d): return "{ wait_ms = \(d.millisecondsClamped) }"
                }
            }
            return """
                [[actions]]
                index = \(a.index)
                name = "\(a.name)"
                steps = [\(steps.joined(separator: ", "))]
                credentials = [\(CredentialKind.defaults.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))]
                """
        }.joined(separator: "\n\n")
        let mapping = CommandJudge.defaultMapping.sorted { $0.key < $1.key }.map { number, target in
            switch target {
            case .action(let a): return "\(number) = \(a)"
            case .report: return "\(number) = \"report\""
            case .mode, .clearLockout, .provision, .cancelProvisioning, .approval:
                return "# \(number): \(target) (not a compat command)"
            }
        }.joined(separator: "\n")

        return """
            # DoorGateway configuration (/etc/doorgateway/gateway.toml), written by
            # `gatewayctl config example --board \(board.rawValue)`; check it with `gatewayctl config check FILE`.
            #
            # Every key below shows its default; device.id and board.kind are
            # required, and on a real board each [[outputs]] relay's active_low and
            # locked_level too (they have no default). Unknown keys are errors.
            # Secrets never go here: keys live in the store, and the MQTT client key
            # is named by its file. Durations are in the unit their key ends with
            # (_ms, _s). systemd's STATE_DIRECTORY and RUNTIME_DIRECTORY, when set,
            # win over [paths].

            [device]
            # The door's name in events, topics and reports: letters, digits, '-'
            # and '_', 1…64. Required.
            id = "\(deviceID)"

            [board]
            # "real": GPIO lines through libgpiod and a PN532 through libnfc.
            # "sim": a simulated board (line changes are logged) and a pn532-sim
            # emulator; line settings below are then checked but not used. Required.
            kind = "\(kind.rawValue)"
            # The GPIO chip: name ("gpiochip0"), path ("/dev/gpiochip4"), label
            # ("pinctrl-rp1") or number. Lines given by name below hold on a Pi 3, 4 and 5.
            chip = "\(D.chip)"

            [reader]
            # libnfc connstring of the PN532 (real board): "pn532_i2c:/dev/i2c-1",
            # "pn532_spi:/dev/spidev0.0:500000" or "pn532_uart:/dev/ttyS1" (the header's
            # UART under Debian's kernel; Raspberry Pi OS: "pn532_uart:/dev/serial0").
            connstring = "\(D.connstring)"
            # Simulated board: "spawn" starts a pn532-sim child; an absolute path
            # is the control socket of a pn532-sim already running.
            simulator = "spawn"

            # More readers (issue 35; default: the PN532 above alone, named "pn532"). A door
            # may have several, one [[readers]] table each; with [[readers]] the door has
            # exactly the readers listed (list the PN532 as kind = "pn532" to keep it).
            # Every event and audit row names the reader. Keys: name (letters, digits,
            # - and _), kind ("pn532", "osdp" or "wiegand"), side ("entry" or "exit"),
            # actions (the action indexes its credentials may open; default: all).
            # An OSDP reader on RS-485 (board/wiring.md): device, baud (9600, 19200,
            # 38400, 57600 or 115200; readers on one device share it), address (0…126,
            # unique on the device). Secure Channel is enforced with the reader's own
            # key, set by `gatewayctl reader osdp install NAME`; insecure = true is the
            # explicit opt-out for a reader that cannot do it. A Wiegand reader
            # (board/wiring.md: D0 and D1 through a 5 V → 3.3 V level shifter): d0 and
            # d1 (GPIO lines, not used by anything else), chip (default: [board] chip),
            # frame_gap_ms (the silence that ends a frame, 25…100), bits (the card frame
            # it sends, 26, 34 or 37; default: any) and keypad_burst (4 or 8; default: both).
            #
            #     [[readers]]
            #     name = "pn532"
            #     kind = "pn532"
            #     side = "entry"
            #
            #     [[readers]]
            #     name = "street"
            #     kind = "osdp"
            #     side = "entry"
            #     actions = [0]
            #     device = "/dev/ttyUSB0"
            #     baud = 9600
            #     address = 0
            #     insecure = false
            #
            #     [[readers]]
            #     name = "gate"
            #     kind = "wiegand"
            #     side = "entry"
            #     d0 = "GPIO6"
            #     d1 = "GPIO13"
            #     frame_gap_ms = 50
            #     # chip = "\(D.chip)"
            #     # bits = 26
            #     # keypad_burst = 4

            # Relay outputs, one [[outputs]] table each\(board == .pi ? "" : " (default: this one)").
            # line: an offset on the chip (17) or a line name ("GPIO17"). Names are
            # unique; actions name them.
            [[outputs]]
            name = "\(output.name)"
            line = \(toml(output.line))
            \(board == .pi ? piLevels : simLevels(output))

            # LED and buzzer lines, [indicators.NAME] each (default: these three).
            # The stock feedback patterns use "green", "red" and "buzzer"; lines a
            # stock pattern names but the board lacks are left out of it.
            \(indicators)

            [inputs.button]
            # The push button: a short press runs button.exit_action on release; a
            # hold of button.hold_ms arms provisioning.
            line = \(toml(D.button.line))
            # true: pressed reads low (a switch to ground with a pull-up).
            active_low = \(D.button.activeLow)
            # "pull-up", "pull-down", "disable" or "as-is".
            bias = "\(D.button.bias.rawValue)"
            debounce_ms = \(D.button.debounceMilliseconds)

            # An optional door contact (default: none). open_level is the level the
            # line reads while the door is open ("high" for a reed switch to ground
            # with a pull-up).
            # [inputs.door_contact]
            # line = "GPIO5"
            # open_level = "high"
            # bias = "pull-up"
            # debounce_ms = 30

            # An optional request-to-exit button or PIR on the inside (default: none;
            # docs/policy.md "Door contact"): a press makes the next opening an exit,
            # not forced ([request_to_exit]). A maglock's own hardware REX, in series
            # with the lock's supply, must not depend on the Pi (board/wiring.md).
            # [inputs.request_to_exit]
            # line = "GPIO18"
            # active_low = true
            # bias = "pull-up"
            # debounce_ms = 30

            # An optional fire alarm panel's dry contact (default: none; docs/policy.md
            # "Fire alarm", board/wiring.md). In alarm every output whose on_fire is
            # "release" unlocks within 100 ms and stays unlocked, over any schedule,
            # lockdown, lockout or tap, until the input clears AND `gatewayctl fire
            # reset`. alarm_level: what the line reads in alarm. supervised (default
            # true): a cut wire must read as alarm, so wire the panel's contact
            # normally closed to GND with the pull-up and alarm_level "high".
            # debounce_ms: at most 50.
            # [fire_alarm]
            # line = "GPIO21"
            # alarm_level = "high"
            # bias = "pull-up"
            # debounce_ms = 20
            # supervised = true

            [door]
            # Every relay pulse is clamped to pulse_min_ms…pulse_max_ms; pulse_max_ms
            # is at most \(PulseLimits.absoluteMaximum.millisecondsClamped).
            pulse_min_ms = 50
            pulse_max_ms = 10000
            # A sticker left on the reader fires once: its UID is ignored until it
            # has been away at least this long.
            same_tag_quiet_ms = 1000
            # Mode at start: "normal", "passage" (outputs held unlocked) or
            # "lockdown" (only the exit button and admin commands open).
            mode = "normal"
            # Passage mode inside this [[schedules]] window, normal outside
            # (docs/policy.md); a mode set by hand lasts until the next edge.
            # passage_schedule = "shop"

            # Weekly schedules (docs/policy.md), named by door.passage_schedule, an
            # action's `schedule = "NAME"` (its stickers open only inside a window)
            # or a tag's (gatewayctl tags issue --schedule NAME). A window includes
            # `from` and excludes `to`, local time in clock.time_zone; "24:00" ends
            # the day. No window applies on a holiday. Outside: denied outside_schedule.
            # With first_person_in, the passage schedule unlocks a window only after a
            # valid grant in it (first person in); it ends at its end, a restart keeps it.
            # [[schedules]]
            # name = "shop"
            # windows = [{ days = ["mon", "tue", "wed", "thu", "fri"], from = "09:00", to = "18:30" }, { days = ["sat"], from = "10:00", to = "14:00" }]
            # holidays = ["2026-12-25", "2026-12-26"]
            # first_person_in = false

            # Actions, numbered 0…N-1 without gaps: a sticker's idx, the number in
            # gatewayctl's `--action N`, and the target of remote commands.
            # Default: four actions, each pulsing the first output for 3 s.
            # A step is { pulse = "OUTPUT", ms = N } (N within the pulse limits) or
            # { wait_ms = N }. A garage door's open–stop–close on three relays:
            #   steps = [{ pulse = "open", ms = 500 }, { wait_ms = 10000 }, { pulse = "stop", ms = 500 }, { wait_ms = 50000 }, { pulse = "close", ms = 500 }]
            # `credentials` (docs/ntag424.md): what a tap may open the action with, of
            # "ntag424" (NTAG 424 DNA proving its key), "sticker-v2" (bound to its
            # tag's UID), "sticker-v1" (phone-written) and "uid" (a plain key fob or
            # card known by its UID only: trivially cloned, opt-in; gatewayctl tags
            # enroll-uid). Default: the first three.
            # An action may ask first (docs/policy.md "Approval"): a tap waits up to
            # timeout_s (10…900) for a yes from one of `by` (home_assistant, phone, gatewayctl):
            #   approval = { timeout_s = 120, by = ["home_assistant", "phone", "gatewayctl"] }
            # In lockdown (docs/policy.md "Lockdown") only an action marked so opens:
            #   lockdown_exempt = true
            # Anti-passback (docs/policy.md "Entry, exit and anti-passback"), with an entry
            # and an exit reader in [[readers]]: "off" (default), "soft" (a second entry
            # opens, granted passback) or "hard" (denied passback); an entry counts as
            # out again after passback_reset_minutes (optional):
            #   passback = "hard"
            #   passback_reset_minutes = 720
            \(actions)

            # Feedback patterns. A [feedback.NAME] table overrides any of steps,
            # repeat and priority of that stock pattern (shown below, commented out).
            # Each step lights the indicators in `on` for `ms` (the rest are off); a
            # repeating pattern loops until replaced; a higher priority (0…100)
            # preempts a lower one. The patterns: \(FeedbackKind.allCases.prefix(4).map(\.rawValue).joined(separator: ", ")),
            # \(FeedbackKind.allCases.dropFirst(4).map(\.rawValue).joined(separator: ", ")).
            \(feedback)

            [lockout]
            # Repeated denials lock out: one tag after per_tag_threshold denials of its
            # UID (unknown, revoked, expired, forged, …; never a foreign card or one
            # outside its schedule); the whole reader only after global_threshold failed
            # proofs (forged or copied stickers, a 424 failing its key or SUN) of any
            # UIDs, so unknown tags (a factory NTAG 424) never lock the others out.
            # Never the exit button, remote or admin commands.
            enabled = true
            # Denials of one UID, and failed proofs of any, within window_s.
            per_tag_threshold = 3
            global_threshold = 10
            window_s = 60
            # The first lockout; each further one in a row doubles, up to cap_s.
            duration_s = 30
            cap_s = 300

            [button]
            # The action a short press runs (an exit request), or "none".
            exit_action = 0
            # Presses shorter than this are ignored.
            min_press_ms = 50
            # A press at least this long arms provisioning and opens nothing.
            hold_ms = 5000

            [provisioning]
            # Whether a button hold arms provisioning (never in lockdown).
            button_armed = true
            # The action the next sticker is written for.
            action = 0
            # Arming ends after this long without a sticker.
            timeout_s = 60
            # Password-protect written stickers (NTAG PWD/PACK from the device key).
            protect = false
            # NTAG AUTHLIM: 0 = unlimited failed password attempts, 1…7 = at most 2^n.
            auth_limit = 0

            [door_contact]
            # Alarms from [inputs.door_contact]; default: on when that input exists.
            # enabled = false
            # Held open (outside passage mode), in stages; 0 turns a stage off:
            # the held_open pattern at the door until it closes,
            warn_s = 15
            # the door_held_open alert (Home Assistant's door alarm). An older file's
            # (held_open_s = N) is still read as this one, with warn_s and escalate_s
            # then off unless given: it behaves as before the stages.
            alert_s = 30
            # door_held_open_escalated, for the site.
            escalate_s = 120
            # After an action's last step the door may still be opened this long.
            open_grace_s = 10

            [request_to_exit]
            # With [inputs.request_to_exit]: an opening this long after a press (or
            # while it is held) is an exit, not forced.
            grace_s = 10
            # "none": only that (a maglock with its own hardware REX); an action
            # index: a press also runs it (pulses the strike), in lockdown too.
            action = "none"

            [clock]
            # Treat the wall clock as synchronised without asking the kernel
            # (adjtimex). Only for simulations and tests: compat commands are refused
            # while the clock is not synchronised.
            declare_synchronised = false
            # The zone schedules read local time in (a name under /usr/share/zoneinfo);
            # default: the system's, /etc/localtime.
            # time_zone = "Europe/Berlin"

            [mqtt]
            enabled = false
            host = "localhost"
            # Default: 8883 with TLS, 1883 without.
            # port = 8883
            # Default: device.id.
            # client_id = "\(deviceID)"
            # "3.1.1" or "5".
            protocol = "3.1.1"
            keepalive_s = 60
            # Events, availability and telemetry go under this prefix; the native
            # command topic is PREFIX/command. Default: "doorgateway/<device.id>".
            # topic_prefix = "doorgateway/\(deviceID)"
            # How events name a sticker's UID: "hmac" (keyed hash with the device
            # key) or "full".
            uid_in_events = "hmac"
            # Publish Home Assistant discovery messages (a lock, an access event
            # entity, a tag scanner, the last access, lockout, the door contact,
            # diagnostics); entities no longer offered are removed from HA.
            home_assistant_discovery = true
            # The device's name and suggested area in Home Assistant.
            # home_assistant_name = "Front door"
            # home_assistant_area = "Hallway"
            # Let Home Assistant act on the door: OPEN/UNLOCK, the mode selector,
            # "clear lockout" and the action buttons. They carry no MAC: anyone
            # allowed to publish on those topics can open the door.
            home_assistant_open = false
            # Home Assistant as the admin screen: arm and cancel provisioning (an
            # action selector, a label, two buttons), the issued tags and the last
            # denied one (hashed UIDs), revoke a tag chosen by label; every change
            # audited. Arming is as strong as opening: a blank sticker held to the
            # door while armed becomes a key. docs/home-assistant.md
            home_assistant_admin = false
            # Put a sticker's label (given at provisioning) on its access events.
            # Off by default: labels are often people's names.
            label_in_events = false
            # Events kept while the broker is away.
            outbox_limit = 10000
            # Seconds between telemetry messages.
            telemetry_s = 60
            # A broker login (Home Assistant OS's Mosquitto add-on: a Home Assistant
            # user made for the door; a shared mosquitto's password_file). The
            # password is never written here: password_file names a file holding
            # it (one line; mode 0640, root:doorgateway) or, as a bare name, a
            # systemd credential (LoadCredential=mqtt.password:/etc/doorgateway/mqtt.password).
            # username = "front-door"
            # password_file = "/etc/doorgateway/mqtt.password"
            # A password over plain TCP (tls off) to a *.local broker is refused: the
            # name is found by multicast DNS, and whoever answers first gets the
            # password. true sends it all the same (config check warns).
            # allow_password_over_plain_mdns = false

            [mqtt.tls]
            # With TLS on (the default) and MQTT enabled, ca_file or ca_dir is
            # required: the broker's certificate is checked against it and its host
            # name. cert_file and key_file (together) give a client certificate
            # for mutual TLS; without them the broker knows the door by its login
            # (TLS with a server certificate only). enabled = false is plain TCP:
            # the login and every event cross the network readable; config check
            # and the log warn about it.
            enabled = true
            # ca_file = "/etc/doorgateway/ca.crt"
            # ca_dir = "/etc/ssl/certs"
            # cert_file = "/etc/doorgateway/door.crt"
            # The key stays root-only (0600) in /etc/doorgateway/door.key: the unit
            # hands it to gatewayd as the credential door.key (LoadCredential=),
            # which gatewayd, running as doorgateway, reads here:
            # key_file = "/run/credentials/gatewayd.service/door.key"
            # Skip checking the broker's host name against its certificate (the
            # chain is still checked against ca_file/ca_dir): for tests only.
            insecure = false

            [mqtt.commands]
            # Topics where the phone app's compat commands arrive (default: none).
            compat_topics = []
            # A command is fresh when |now - ts| <= tolerance_s (at most \(CommandJudge.maximumTolerance)).
            tolerance_s = 5

            [mqtt.commands.mapping]
            # Compat command number = action index, or "report" (the device report).
            # A mapping given here replaces the default one below whole.
            \(mapping)

            [remote]
            # What carries events and commands: "mqtt" ([mqtt] above) or "nats"
            # ([nats] below). [mqtt]'s command rules, uid_in_events, outbox_limit
            # and telemetry_s apply to both; mqtt.enabled is ignored with "nats".
            transport = "mqtt"

            [nats]
            # Servers, tried in order: tls://HOST:PORT (or nats://HOST:PORT).
            # Required with transport = "nats".
            # servers = ["tls://nats.example:4222"]
            # Subjects are PREFIX.<device.id>.event|telemetry|state|availability,
            # commands arrive on PREFIX.<device.id>.command.*; see docs/nats.md.
            prefix = "doorgateway"
            # Decentralised auth: the user JWT (user.jwt) and its nkey seed
            # (user.nk, 0600) in this directory, installed by `gatewayctl creds
            # import`. Default: <state_dir>/nats.
            # creds_dir = "\(D.stateDirectory)/nats"
            # Or two explicit files (both or neither).
            # jwt_file = "/etc/doorgateway/nats/user.jwt"
            # seed_file = "/etc/doorgateway/nats/user.nk"
            # The account public keys (A..., as `nsc describe account` prints them:
            # the account's own key and/or its signing keys) that must sign a JWT
            # pushed on PREFIX.<device.id>.creds.jwt. Empty (the default): pushed
            # JWTs are refused and none is asked for; renew by `gatewayctl creds
            # import` instead. A pushed JWT is installed only once the server has
            # accepted it on a trial connection.
            # account_keys = ["\(natsAccountKeyExample)"]
            # Or a server's own users instead of a JWT (then none of the four keys
            # above): user and a password file, or a token file alone (an absolute
            # path, 0640 root:doorgateway, or the systemd credential nats.password
            # / nats.token). Never the secret itself here.
            #   user = "\(deviceID)"
            #   password_file = "/etc/doorgateway/nats.password"
            #   token_file = "/etc/doorgateway/nats.token"
            # Either over plain TCP to a *.local server (found by multicast DNS,
            # which anyone may answer) is refused unless
            #   allow_password_over_plain_mdns = true
            # Delete outbox rows on JetStream's acknowledgement (a stream must
            # cover the door's subjects); otherwise after a publish and a flush.
            jetstream = false
            # libnats' wait between reconnect attempts.
            reconnect_wait_ms = 500
            # Ask for a new JWT (on PREFIX.<device.id>.creds.request) after this
            # share of its lifetime, in percent.
            refresh_percent = 75
            # The JetStream key-value bucket of the fleet's documents ([fleet]); each
            # door writes the key <site_id>.<device.id> and reads <site_id>.*.
            fleet_bucket = "doorgateway-fleet"

            [nats.tls]
            # With TLS on (the default) and transport = "nats", ca_file is required;
            # cert_file and key_file (together) give a client certificate, or none
            # (the server's certificate only, with user/token login). enabled =
            # false is plain TCP: config check and the log warn about it.
            # ca_file = "/etc/doorgateway/nats-ca.pem"
            # cert_file = "/etc/doorgateway/\(deviceID)-nats.crt"
            # key_file = "/etc/doorgateway/\(deviceID)-nats.key"
            enabled = true

            [control]
            # The gatewayctl socket. Default: <runtime_dir>/control.sock.
            # socket = "\(D.runtimeDirectory)/control.sock"
            # Members of this group may run admin commands.
            admin_group = "\(D.adminGroup)"

            [paths]
            state_dir = "\(D.stateDirectory)"
            runtime_dir = "\(D.runtimeDirectory)"

            [fleet]
            # Revocations and issued stickers shared by the site's doors, as signed
            # documents: retained on the MQTT broker (needs mqtt.enabled), or in
            # nats.fleet_bucket with remote.transport = "nats" (docs/fleet.md).
            enabled = false
            # The site's name; every signed document names it.
            # site_id = "main-site"
            # The site's Ed25519 public key (64 hex digits): `gatewayctl fleet keygen`.
            # site_public_key = "\(String(repeating: "0", count: 64))"
            # Where documents are read over MQTT. Default: every door's,
            # "doorgateway/+/fleet/<site_id>".
            # subscribe = "doorgateway/+/fleet/main-site"
            # The site box private key (a 0600 file, `gatewayctl fleet keygen --box`):
            # opens the action secrets and remote keys documents carry sealed.
            # box_key_file = "/etc/doorgateway/site-box.key"

            """
    }

    /// A real board's relay: both keys required, both choices shown, none
    /// taken (`config check` names these two keys until one line of each is
    /// uncommented; the image's first boot does it from the boot partition's
    /// `relay` and `lock` files).
    static let piLevels = """
        # REQUIRED, no default: gatewayd will not start until both are chosen for
        # the relay at hand. Uncomment one line of each (check first, before a lock
        # is wired: board/wiring.md, `gatewayctl gpio pulse`).
        # active_low: how the relay's input switches its coil on.
        # active_low = true    # opto-isolated relay module (common 1/2/4-channel boards): on while the input is low
        # active_low = false   # transistor/MOSFET stage or relay HAT: on while the line is high
        # locked_level: the coil level that locks the door; every exit path
        # drives each output to it.
        # locked_level = "deenergised"   # fail-secure strike: locked without power
        # locked_level = "energised"     # maglock: locked while powered
        # The firmware hold for config.txt (power-on until gatewayd starts) follows
        # from these two: `gatewayctl config firmware`.
        \(onFireLines)
        """

    /// `on_fire`, the same on a real board's relay and a simulated one's.
    static let onFireLines = """
        # on_fire: what a fire alarm ([fire_alarm]) does to this output: "release"
        # (unlocked until the alarm clears and is reset) or "keep". Default:
        # "release" when locked_level = "energised" (a maglock: released is
        # unpowered), "keep" when "deenergised" (a fail-secure strike: its coil is
        # not rated to stay energised; its lever gives the way out).
        # on_fire = "release"
        """

    /// The simulated board keeps the old defaults (active-high, strike).
    static func simLevels(_ output: GatewayConfiguration.Output) -> String {
        """
        # true: the coil is energised while the line is low (opto-isolated relay
        # modules); false: while it is high (transistor/MOSFET stage, relay HAT).
        # Required on a real board; the simulated board defaults to false.
        active_low = \(output.activeLow)
        # "deenergised": locked without power (fail-secure strike);
        # "energised": locked while powered (maglock). Every exit path drives
        # each output to this level. Required on a real board; the simulated
        # board defaults to "deenergised".
        locked_level = "\(output.lockedLevel.rawValue)"
        \(onFireLines)
        """
    }

    /// The stock patterns as commented-out `[feedback.NAME]` tables.
    static var feedback: String {
        FeedbackKind.allCases.compactMap { kind in
            guard let p = FeedbackPattern.defaultPatterns[kind] else { return nil }
            let steps = p.steps.map { s in
                "#   { on = [\(s.on.sorted().map { "\"\($0)\"" }.joined(separator: ", "))], ms = \(s.duration.millisecondsClamped) },"
            }
            return
                (["# [feedback.\(kind.rawValue)]", "# steps = ["] + steps + [
                    "# ]", "# repeat = \(p.repeats)", "# priority = \(p.priority)",
                ])
                .joined(separator: "\n")
        }.joined(separator: "\n\n")
    }
}
